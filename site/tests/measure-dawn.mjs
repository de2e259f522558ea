// Runs one page's own benchmark (`?bench&json&…`, what `attention.html?bench&json` runs in a
// browser) under Dawn, Chrome's WebGPU implementation, on whatever GPU Dawn finds: npm's
// `webgpu` package (dawn.node) in Node, with the built site's wasm module of one demo loaded as
// the page loads it. No browser runs: the few page objects the benchmark path reads (the window
// and its location, document's #report, #error, #text and body, navigator.gpu, the model the
// page's loader would fetch) are stood in for here, and nothing else is. Dawn runs in this
// process, where Chrome runs it in its GPU process behind an IPC wire, so a launch costs less
// here than in a visitor's tab: these are the kernels as Tint compiles them and Dawn runs them,
// not the browser's dispatch. Not a test: a measurement, the page's report printed as JSON with
// what Dawn said of the adapter. For the GPU machine (scripts/bench-dawn.sh carries it there).
//   node measure-dawn.mjs WEBGPU_PACKAGE SITE_DIR DEMO QUERY [MODEL_DIR]
// WEBGPU_PACKAGE: the `webgpu` package's index.js; DEMO: waves, attention, flash or fleet; QUERY:
// the page URL's query without `?` (`bench&json&frames=30&text=…`; `without=subgroups` turns the
// feature off, as on the pages); MODEL_DIR: a model directory
// (config.json, model.safetensors, vocab.txt) handed to the attention page as its loader does.
// DAWN_FLAGS: comma-separated arguments for dawn.node's `create` (Dawn toggles).
// With `compare` in an attention QUERY, after the page's benchmark: the page's comparison with
// transformers.js (compareOn of the site's compare.js) on each `compare-text` of the query
// (`compare-runs` timed after `compare-warm`): Kiln's embed_timed export, then transformers.js's
// WebGPU pipeline on the site's ONNX export, on this same Dawn device, in this same process.
// DEMO fleet with QUERY `prove[&families=a,b]`: every variant Dawn is offered of those families
// (all when left out) proven against the CPU reference on the proof cases, as site/tests/prove.mjs
// does in headless Chromium; the process fails when one is not proven. QUERY `device`: the
// device profile Kiln sees there and the variants offered per family.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [pkg, site, demo, query, modelDir] = process.argv.slice(2);
if (!pkg || !site || !['waves', 'attention', 'flash', 'fleet'].includes(demo) || query === undefined) {
  console.error('usage: node measure-dawn.mjs WEBGPU_PACKAGE SITE_DIR waves|attention|flash|fleet QUERY [MODEL_DIR]');
  process.exit(2);
}
const timeoutMs = Number(process.env.DAWN_TIMEOUT_MS ?? 540_000);
if (!(timeoutMs > 0)) {
  console.error(`DAWN_TIMEOUT_MS must be a number of milliseconds, got ${process.env.DAWN_TIMEOUT_MS}`);
  process.exit(2);
}
// However the page's work ends, or fails to, the process ends within the time allowed.
setTimeout(() => {
  console.error(`${demo}: no report after ${timeoutMs} ms`);
  process.exit(1);
}, timeoutMs).unref();
// The module logs through the console; its lines go to stderr, so that stdout holds the report.
for (const level of ['log', 'info', 'debug']) console[level] = console.error;

const { create, globals } = await import(pathToFileURL(resolve(pkg)).href);
Object.assign(globalThis, globals);
const flags = (process.env.DAWN_FLAGS ?? '').split(',').filter(Boolean);
const gpu = create(flags);

// The page objects: an element keeps its text and attributes.
class Element {
  constructor(id) { this.id = id; this.textContent = ''; this.attributes = new Map(); }
  setAttribute(name, value) { this.attributes.set(name, String(value)); }
  getAttribute(name) { return this.attributes.get(name) ?? null; }
}
const elements = { report: new Element('report'), error: new Element('error'), hud: new Element('hud') };
const body = new Element('body');
const document = {
  body,
  getElementById: (id) => elements[id] ?? null,
  querySelector: () => null,
};
// web-sys finds the window by `globalThis instanceof Window`, wgpu by a global `Window`.
globalThis.Window = class Window { static [Symbol.hasInstance](x) { return x === globalThis; } };
Object.assign(globalThis, {
  Element, document,
  location: { search: `?${query}`, href: `http://localhost/${demo}.html?${query}` },
  navigator: { gpu, userAgent: `node ${process.version}, dawn.node` },
});
Object.defineProperty(globalThis, 'window', { value: globalThis });

if (modelDir) {
  const file = (name) => new Uint8Array(readFileSync(join(modelDir, name)));
  globalThis.kilnModel = {
    source: `${modelDir} (read by measure-dawn.mjs)`,
    'config.json': file('config.json'),
    'model.safetensors': file('model.safetensors'),
    'vocab.txt': file('vocab.txt'),
  };
}

// What Dawn says of the adapter, beside the page's report: the features a page can ask for.
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) {
  process.stdout.write(`${JSON.stringify({ demo, query, error: 'Dawn found no adapter' })}\n`);
  process.exit(1);
}
const dawn = {
  vendor: adapter.info?.vendor, architecture: adapter.info?.architecture,
  description: adapter.info?.description, features: [...adapter.features].sort(), flags,
};

const started = performance.now();
const name = demo === 'fleet' ? 'fleet_web' : demo;
const module = await import(pathToFileURL(resolve(site, demo, `${name}.js`)).href);
try {
  await module.default({ module_or_path: readFileSync(resolve(site, demo, `${name}_bg.wasm`)) });
} catch (e) {
  // winit hands control back by throwing once its event loop runs (loader.js ignores it too).
  if (!String(e).includes('Using exceptions for control flow')) throw e;
}

// The attention and waves pages run their benchmark from the URL (`?bench`) on the module's own
// tasks: the report lands in #report (data-done), a fatal error in #error. The flash page's
// buttons call its exports instead, and so does this: `train` (run_training: the preset's steps
// on WebGPU, then on the wasm CPU path), `generate=N` after it (run_generation: N tokens from
// `prompt` on both paths), `sweep` (run_sweep: flash against naive attention over the lengths).
async function flash() {
  const q = new URLSearchParams(query);
  const quiet = () => {};
  if (q.has('sweep')) return { sweep: JSON.parse(await module.run_sweep(quiet)) };
  // When each GPU step's loss reached the page: the loop's own pace, its yields and reads in it.
  const landed = [];
  const noted = (json) => {
    const p = JSON.parse(json);
    if (p.path === 'gpu' && p.step !== undefined && p.loss !== undefined) landed.push(performance.now());
  };
  const training = JSON.parse(await module.run_training(q.get('preset') ?? 'medium', Number(q.get('steps') ?? 20), noted));
  const gaps = landed.slice(2).map((t, i) => t - landed[i + 1]).sort((a, b) => a - b);
  training.gpu_loop_ms_per_step = gaps.length ? gaps[Math.floor(gaps.length / 2)] : null;
  if (!q.has('generate')) return { training };
  const generation = JSON.parse(await module.run_generation(q.get('prompt') ?? 'the ', Number(q.get('generate')), quiet));
  return { training, generation };
}
// The fleet page's proofs: each family's proof (offered, proven, worst error per output).
async function fleet() {
  const q = new URLSearchParams(query);
  if (q.has('device')) return JSON.parse(await module.device());
  if (!q.has('prove')) throw new Error(`fleet: QUERY must be device or prove[&families=…], got ${query}`);
  const proofs = JSON.parse(await module.prove_every_variant(q.get('families') ?? '', (f) => console.error(`proving ${f}…`)));
  const sum = (k) => proofs.reduce((n, p) => n + p[k], 0);
  return { offered: sum('offered'), proven: sum('proven'), skipped: proofs.filter((p) => p.skipped).map((p) => p.family), proofs };
}
const text = demo === 'flash' || demo === 'fleet' ? null : await new Promise((done, fail) => {
  const poll = setInterval(() => {
    if (elements.report.getAttribute('data-done') === 'true') {
      clearInterval(poll);
      done(elements.report.textContent);
    } else if (elements.error.textContent) {
      clearInterval(poll);
      fail(new Error(`${demo}: ${elements.error.textContent}`));
    }
  }, 20);
});
// transformers.js as the attention page loads it (compare.js), in Node: it takes this process
// for a browser (a window with a document, a process that is not Node's while the module reads
// it), fetches the site's files through a stand-in fetch that reads them from SITE_DIR, and
// loads ONNX Runtime's WebAssembly from the file (Emscripten's Node path). Dawn's writeBuffer
// takes no view of shared memory, which ONNX Runtime's threaded build hands it: such a view is
// copied first.
async function transformers() {
  const vendor = resolve(site, 'vendor', 'transformers');
  if (!existsSync(join(vendor, 'transformers.min.js'))) throw new Error(`${vendor}: the site carries no transformers.js`);
  const nodeFetch = globalThis.fetch;
  globalThis.fetch = async (url, options) => {
    const u = new URL(String(url), location.href);
    if (u.host !== 'localhost') return nodeFetch(url, options);
    const file = join(site, decodeURIComponent(u.pathname));
    if (!existsSync(file)) return new Response('not found', { status: 404 });
    const body = readFileSync(file);
    return new Response(body, { headers: { 'content-length': String(body.length) } });
  };
  const write = GPUQueue.prototype.writeBuffer;
  GPUQueue.prototype.writeBuffer = function writeBuffer(buffer, offset, data, dataOffset = 0, size = undefined) {
    if (!ArrayBuffer.isView(data) || !(data.buffer instanceof SharedArrayBuffer)) {
      return write.call(this, buffer, offset, data, dataOffset, size);
    }
    const unit = data.BYTES_PER_ELEMENT ?? 1;
    const bytes = new Uint8Array(data.buffer, data.byteOffset + dataOffset * unit,
      size === undefined ? data.byteLength - dataOffset * unit : size * unit);
    return write.call(this, buffer, offset, bytes.slice());
  };
  globalThis.self = globalThis;
  const release = process.release;
  Object.defineProperty(process, 'release', { value: { name: 'browser' }, configurable: true });
  const t = await import(pathToFileURL(join(vendor, 'transformers.min.js')).href);
  Object.defineProperty(process, 'release', { value: release, configurable: true });
  const { configureTransformers } = await import(pathToFileURL(resolve(site, 'compare.js')).href);
  configureTransformers(t, '/models/', {
    mjs: pathToFileURL(join(vendor, 'ort-wasm-simd-threaded.asyncify.mjs')).href,
    wasm: join(vendor, 'ort-wasm-simd-threaded.asyncify.wasm'),
  });
  return t;
}

// Brings the GPU's clocks up before a side is timed: a forward of either side leaves the GPU
// mostly idle, and an H200 at low load stays at low clocks for seconds. Two seconds of kiln's
// bench::warm_up_clocks through the module's export (the clocks are the chip's, whichever device).
const heat = () => module.warm_up_clocks(2000);

async function compare() {
  const q = new URLSearchParams(query);
  const options = { runs: Number(q.get('compare-runs') ?? 10), warm: Number(q.get('compare-warm') ?? 3), prepare: heat };
  const { compareOn, kilnSide } = await import(pathToFileURL(resolve(site, 'compare.js')).href);
  const texts = q.getAll('compare-text');
  // Kiln alone first, before ONNX Runtime's device exists beside it.
  const alone = [];
  for (const sentence of texts) alone.push((await kilnSide(module, sentence, options)).ms);
  const t = await transformers();
  const extractor = await t.pipeline('feature-extraction', 'all-minilm-l6-v2', { device: 'webgpu', dtype: 'fp32' });
  extractor.version = t.env.version;
  const results = [];
  for (const [i, sentence] of texts.entries()) {
    const r = await compareOn(module, extractor, sentence, options);
    r.kiln_alone = { ms: alone[i], note: 'the same calls before transformers.js was loaded' };
    results.push(r);
  }
  await extractor.dispose();
  return results;
}

// A report the page printed as a table rather than JSON travels as its text.
const parse = (t) => { try { return JSON.parse(t); } catch { return { text: t }; } };
const report = text !== null ? parse(text) : demo === 'flash' ? await flash() : await fleet();
if (demo === 'attention' && new URLSearchParams(query).has('compare')) report.compare = await compare();
process.stdout.write(`${JSON.stringify({ demo, query, dawn, wall_s: (performance.now() - started) / 1e3, report })}\n`);
// dawn.node keeps its device's event loop alive: end the process once the report is out.
process.exit(demo === 'fleet' && 'proven' in report && report.proven !== report.offered ? 1 : 0);
