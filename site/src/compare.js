// The attention page's comparison with transformers.js, which the visitor starts: the sentence
// in the text field through transformers.js (its feature-extraction pipeline on ONNX Runtime
// Web's WebGPU execution provider, the same MiniLM weights exported to ONNX by
// scripts/export-onnx.py) and through Kiln's GPU path (the demo's wasm export embed_timed), each
// warmed up and then timed per forward on the wall clock, from the text to the mean-pooled
// embedding on the CPU; the two embeddings compared (relative L2). Nothing of transformers.js
// loads before the button is pressed. `?compare` starts it with the page; `compare-runs` and
// `compare-warm` (the fewest warm-up calls; at least a second of them) set the counts. The
// result lands in #compare's data-result as JSON, for tests and measurement scripts.

import { listedModels } from './model.js';

const section = document.getElementById('compare');
const button = document.getElementById('compare-start');
const status = document.getElementById('compare-status');
const table = document.getElementById('compare-table');
const params = new URLSearchParams(location.search);
// A count from the URL, or `fallback` when it is absent, empty or out of range.
const count = (name, fallback, max) => {
  const n = Number(params.get(name) || fallback);
  return Number.isInteger(n) && n >= 0 && n <= max ? n : fallback;
};
const RUNS = Math.max(1, count('compare-runs', 10, 200));
const WARM = count('compare-warm', 3, 50);
const MODEL = 'all-minilm-l6-v2';

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
function relL2(got, want) {
  let num = 0;
  let den = 0;
  for (let i = 0; i < want.length; i++) {
    num += (got[i] - want[i]) ** 2;
    den += want[i] ** 2;
  }
  return Math.sqrt(num / Math.max(den, 1e-30));
}

// Whether this build carries the ONNX export and transformers.js (scripts/build-site.sh lists
// them in models/index.json).
const carried = async () => (await listedModels('models')).compare.includes(MODEL);

// Sets transformers.js (`t`, its module) to read `models` (a path: transformers.js takes a URL
// for a remote model) and ONNX Runtime's WebAssembly from `wasm` ({mjs, wasm}; its default is
// a CDN), with no remote models and no cache of its own. Shared with measure-dawn.mjs.
export function configureTransformers(t, models, wasm) {
  t.env.allowRemoteModels = false;
  t.env.allowLocalModels = true;
  t.env.localModelPath = models;
  t.env.useBrowserCache = false;
  t.env.backends.onnx.wasm.wasmPaths = wasm;
}

// transformers.js's pipeline on this site's files, made once and kept for the next comparison.
let pipeline = null;
function extractor() {
  pipeline ??= (async () => {
    const here = (path) => new URL(path, location.href);
    // The comparison's files are left out of the offline copy: say so rather than fail on a
    // fetch deep inside transformers.js.
    const reachable = await fetch('vendor/transformers/VERSIONS', { cache: 'no-store' })
      .then((r) => r.ok).catch(() => false);
    if (!reachable) {
      throw new Error('its files (about 72 MB) are not in the offline copy, and the site\'s server did not answer');
    }
    const t = await import('./vendor/transformers/transformers.min.js');
    configureTransformers(t, here('models/').pathname, {
      mjs: here('vendor/transformers/ort-wasm-simd-threaded.asyncify.mjs').href,
      wasm: here('vendor/transformers/ort-wasm-simd-threaded.asyncify.wasm').href,
    });
    const e = await t.pipeline('feature-extraction', MODEL, { device: 'webgpu', dtype: 'fp32' });
    e.version = t.env.version;
    return e;
  })();
  // A failed start is tried again at the next press.
  pipeline.catch(() => { pipeline = null; });
  return pipeline;
}

// The page's GPU path running on the MiniLM weights (loader.js says when; `?compare` may ask
// before it has).
async function kilnReady() {
  if (params.get('model') === 'synthetic') {
    throw new Error('it needs the MiniLM weights, and this page runs on built-in synthetic ones (?model=synthetic)');
  }
  const path = await window.kilnStarted;
  if (!path?.gpu) throw new Error(`it runs both sides on WebGPU, and here ${path?.why ?? 'there is none'}`);
  if (!window.kilnModel) throw new Error('the page runs without the MiniLM weights');
}

const ms = (x) => `${x.toFixed(x < 10 ? 2 : 1)} ms`;

function show(result) {
  const rows = [
    ['Kiln (GPU path)', result.kiln],
    ['transformers.js (WebGPU)', result.transformers],
  ];
  const body = table.tBodies[0];
  body.replaceChildren(...rows.map(([name, side]) => {
    const tr = document.createElement('tr');
    for (const text of [name, String(side.tokens), ms(side.median_ms), ms(side.min_ms)]) {
      tr.append(Object.assign(document.createElement('td'), { textContent: text }));
    }
    return tr;
  }));
  table.hidden = false;
  const ratio = result.transformers.median_ms / result.kiln.median_ms;
  status.textContent =
    `Kiln ${ratio >= 1 ? `${ratio.toFixed(2)}× faster` : `${(1 / ratio).toFixed(2)}× slower`} per ` +
    `forward (medians of ${result.runs} after at least a second of warm-up each, wall clock, text to ` +
    `pooled embedding). Embeddings agree within ${result.rel_l2.toExponential(1)} (relative L2)` +
    `${result.same_tokens ? ', on the same tokens' : '; the tokens differ'}. Adapter: ${result.adapter}.`;
}

// A GPU left idle runs at low clocks at first: warm-up is `warm` calls and at least a second of
// them. Returns how many ran.
export async function warmUp(call, warm) {
  const start = performance.now();
  let calls = 0;
  for (; calls < warm || performance.now() - start < 1000; calls++) await call();
  return calls;
}

// Kiln's side alone: `prepare`, the warm-up, then `runs` calls of embed_timed; its JSON with
// the warm-up's count added.
export async function kilnSide(module, text, { warm, runs, prepare = async () => {} }) {
  await prepare();
  const warmCalls = await warmUp(() => module.embed_timed(text, 1), warm);
  return { ...JSON.parse(await module.embed_timed(text, runs)), warm_calls: warmCalls };
}

// The comparison itself, on a started Kiln module (its embed_timed export) and transformers.js's
// pipeline, also run by site/tests/measure-dawn.mjs under Dawn in Node: Kiln warmed up and
// timed, then transformers.js; the tokens and the mean-pooled embeddings compared. `prepare`
// runs before each side's warm-up (the measurement script brings the GPU's clocks up there).
export async function compareOn(module, extractor, text, { warm, runs, report = () => {}, prepare = async () => {} }) {
  report('Kiln: warming up and timing…');
  const kiln = await kilnSide(module, text, { warm, runs, prepare });
  report('transformers.js: warming up and timing…');
  const embed = () => extractor(text, { pooling: 'mean', normalize: false });
  await prepare();
  const theirWarm = await warmUp(embed, warm);
  let output;
  const times = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    output = await embed();
    times.push(performance.now() - start);
  }
  // Cut as the pipeline cuts (and Kiln, at the model's 512 positions).
  const ids = Array.from((await extractor.tokenizer(text, { truncation: true })).input_ids.data, Number);
  return {
    text, runs, adapter: kiln.adapter,
    kiln: { tokens: kiln.ids.length, warm_calls: kiln.warm_calls, ms: kiln.ms, median_ms: median(kiln.ms), min_ms: Math.min(...kiln.ms) },
    transformers: {
      version: extractor.version, tokens: ids.length, warm_calls: theirWarm,
      ms: times, median_ms: median(times), min_ms: Math.min(...times),
    },
    same_tokens: ids.length === kiln.ids.length && ids.every((id, i) => id === kiln.ids[i]),
    rel_l2: relL2(Array.from(output.data), kiln.embedding),
  };
}

// Whether the GPU path is missing here (the button then stays off, as disableForGpu left it).
let gpuMissing = false;

async function compare() {
  button.disabled = true;
  delete section.dataset.result;
  delete section.dataset.error;
  const text = document.getElementById('text').value;
  const report = (line) => { status.textContent = line; };
  try {
    await kilnReady();
    const module = await import('./attention/attention.js');
    // Started by loader.js already: this returns at once (winit's control-flow throw aside).
    await module.default().catch((e) => {
      if (!String(e).includes('Using exceptions for control flow')) throw e;
    });
    report('loading transformers.js, ONNX Runtime Web and the ONNX model (about 72 MB)…');
    const pipe = await extractor();
    const result = await compareOn(module, pipe, text, { warm: WARM, runs: RUNS, report });
    show(result);
    section.dataset.result = JSON.stringify(result);
  } catch (e) {
    status.textContent = `The comparison could not run: ${e.message ?? e}`;
    section.dataset.error = String(e.message ?? e);
  } finally {
    button.disabled = gpuMissing;
  }
}

if (section) {
  window.kilnStarted?.then((path) => { gpuMissing = !path.gpu; }, () => {});
  if (params.get('model') === 'synthetic') {
    // The page asked for its built-in weights (as the index's preview does): nothing to compare,
    // and nothing of the models folder is read.
    button.disabled = true;
    status.textContent = 'The comparison runs on the MiniLM weights; this page runs on built-in synthetic ones (?model=synthetic).';
  } else if (await carried()) {
    button.addEventListener('click', compare);
    if (params.has('compare')) compare();
  } else {
    button.disabled = true;
    status.textContent = 'This build of the site carries no ONNX export of the model or no ' +
      'transformers.js (scripts/build-site.sh adds both when it can fetch them).';
  }
}
