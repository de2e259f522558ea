// What a page waits for between GPU steps, measured where the page runs: a read-back's round
// trip (a copy submitted, `mapAsync`, the bytes out, `unmap`), `onSubmittedWorkDone` after an
// empty submission, and the page's own yields to the event loop (`setTimeout(0)` nested, as a
// loop of steps calls it, and a `MessageChannel` message). Not a test: a measurement, printed as
// one JSON line. Each is timed ROUNDS times after as many warm-up rounds; medians and 10th/90th
// percentiles in µs.
//   node measure-readback.mjs chromium                 headless Chromium (site/tests/browser.mjs)
//   node measure-readback.mjs dawn WEBGPU_PACKAGE      Dawn in Node (npm's `webgpu`, dawn.node)
// DAWN_FLAGS: comma-separated arguments for dawn.node's `create`, as for measure-dawn.mjs.
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

const ROUNDS = Number(process.env.ROUNDS ?? 200);

// Runs where navigator.gpu is; returns the figures. Self-contained: Playwright sends its text.
async function measure(rounds) {
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) return { error: 'no adapter' };
  const device = await adapter.requestDevice();
  const info = adapter.info ?? {};
  const stats = (us) => {
    const s = [...us].sort((a, b) => a - b);
    const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
    return { median_us: at(0.5), p10_us: at(0.1), p90_us: at(0.9), n: s.length };
  };
  const timed = async (body) => {
    for (let i = 0; i < rounds; i++) await body(); // warm-up
    const us = [];
    for (let i = 0; i < rounds; i++) {
      const t = performance.now();
      await body();
      us.push((performance.now() - t) * 1e3);
    }
    return stats(us);
  };
  // 64 losses of f32, the size of a training step's read.
  const bytes = 256;
  const src = device.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  const dst = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(src, 0, new Float32Array(bytes / 4).fill(1.5));
  const readback = await timed(async () => {
    const e = device.createCommandEncoder();
    e.copyBufferToBuffer(src, 0, dst, 0, bytes);
    device.queue.submit([e.finish()]);
    await dst.mapAsync(GPUMapMode.READ);
    const v = new Float32Array(dst.getMappedRange()).slice();
    dst.unmap();
    if (v[0] !== 1.5) throw new Error(`read ${v[0]}, wrote 1.5`);
  });
  const done = await timed(async () => {
    device.queue.submit([]);
    await device.queue.onSubmittedWorkDone();
  });
  // A loop of steps awaits its yield inside the previous timer's task: nested timers.
  const nested = await timed(() => new Promise((ok) => setTimeout(ok, 0)));
  const channel = new MessageChannel();
  const message = await timed(() => new Promise((ok) => {
    channel.port1.onmessage = () => ok();
    channel.port2.postMessage(0);
  }));
  channel.port1.close();
  device.destroy();
  return {
    adapter: [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' ') || 'unnamed',
    readback, submitted_work_done: done, set_timeout_0: nested, message_channel: message,
  };
}

const [where, pkg] = process.argv.slice(2);
let result;
if (where === 'dawn' && pkg) {
  const { create, globals } = await import(pathToFileURL(resolve(pkg)).href);
  Object.assign(globalThis, globals);
  const flags = (process.env.DAWN_FLAGS ?? '').split(',').filter(Boolean);
  globalThis.navigator = { gpu: create(flags) };
  result = { where: `Dawn in Node ${process.version}`, ...await measure(ROUNDS) };
} else if (where === 'chromium') {
  const { launch, serve } = await import('./browser.mjs');
  const server = await serve('/nonexistent', { '/': '<!doctype html><title>readback</title>' });
  const browser = await launch();
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}/`);
    result = { where: `headless Chromium ${browser.version()}`, ...await page.evaluate(measure, ROUNDS) };
  } finally {
    await browser.close();
    server.close();
  }
} else {
  console.error('usage: node measure-readback.mjs chromium | dawn WEBGPU_PACKAGE');
  process.exit(2);
}
console.log(JSON.stringify(result));
// dawn.node keeps its device's event loop alive: end the process once the figures are out.
process.exit(result.error ? 1 : 0);
