// Measures what one forward pass of the attention page asks of WebGPU in headless Chromium
// (SwiftShader): the page's own benchmark (`attention.html?bench`) run at two frame counts, with
// GPUQueue.submit, writeBuffer, GPUDevice.createBuffer and createBindGroup counted; the
// difference between the two runs, over the difference in forward passes, is the cost of one
// forward pass. Not a test: a measurement, printed as JSON.
//   node site/tests/measure-forward.mjs SITE_DIR FORWARDS_PER_FRAME [FRAMES_A FRAMES_B]
// FORWARDS_PER_FRAME: forward passes the benchmark runs per requested frame (2 for this build:
// timed and profiled; 1 for builds before the recording).
import { launch, serve } from './browser.mjs';

const [dir, perFrame = '2', fa = '4', fb = '12'] = process.argv.slice(2);
const hook = () => {
  const counts = { submit: 0, writeBuffer: 0, createBuffer: 0, createBindGroup: 0 };
  window.__gpuCounts = counts;
  const wrap = (proto, name) => {
    const f = proto[name];
    proto[name] = function (...args) { counts[name] += 1; return f.apply(this, args); };
  };
  wrap(GPUQueue.prototype, 'submit');
  wrap(GPUQueue.prototype, 'writeBuffer');
  wrap(GPUDevice.prototype, 'createBuffer');
  wrap(GPUDevice.prototype, 'createBindGroup');
};

async function run(browser, url, frames) {
  const page = await browser.newPage();
  await page.addInitScript(hook);
  await page.goto(`${url}/attention.html?bench&json&model=synthetic&frames=${frames}`);
  await page.waitForFunction(() => document.querySelector('#report')?.textContent?.trim().startsWith('{'), null, { timeout: 600_000 });
  const report = JSON.parse(await page.textContent('#report'));
  const counts = await page.evaluate(() => window.__gpuCounts);
  await page.close();
  return { report, counts };
}

const server = await serve(dir);
const browser = await launch();
try {
  const a = await run(browser, server.url, Number(fa));
  const b = await run(browser, server.url, Number(fb));
  const forwards = (Number(fb) - Number(fa)) * Number(perFrame);
  const per = Object.fromEntries(Object.keys(a.counts).map((k) => [k, (b.counts[k] - a.counts[k]) / forwards]));
  console.log(JSON.stringify({
    site: dir, adapter: b.report.adapter, tokens: b.report.checks.tokens.length,
    wall_ms_per_forward: b.report.gpu.median_ms, cpu_ms_per_forward: b.report.cpu.median_ms,
    clock: b.report.gpu.clock, per_forward_webgpu_calls: per,
    per_forward_kiln: b.report.checks.per_forward ?? null,
  }));
} finally {
  await browser.close();
  server.close();
}
