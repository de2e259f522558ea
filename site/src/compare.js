// The attention page's comparison with transformers.js, which the visitor starts: the sentence
// in the text field through transformers.js (its feature-extraction pipeline on ONNX Runtime
// Web's WebGPU execution provider, the same MiniLM weights exported to ONNX by
// scripts/export-onnx.py) and through Kiln's GPU path (the demo's wasm export embed_timed), each
// warmed up and then timed per forward on the wall clock, from the text to the mean-pooled
// embedding on the CPU; the two embeddings compared (relative L2). Nothing of transformers.js
// loads before the button is pressed. `?compare` starts it with the page; `compare-runs` and
// `compare-warm` set the counts. The result lands in #compare's data-result as JSON, for tests
// and measurement scripts.

const section = document.getElementById('compare');
const button = document.getElementById('compare-start');
const status = document.getElementById('compare-status');
const table = document.getElementById('compare-table');
const params = new URLSearchParams(location.search);
const count = (name, fallback, max) => {
  const n = Number(params.get(name) ?? fallback);
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
export function relL2(got, want) {
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
async function carried() {
  const listed = await fetch('models/index.json').then((r) => (r.ok ? r.json() : {})).catch(() => ({}));
  return (listed.compare ?? []).includes(MODEL);
}

// transformers.js, set to read this site's files only: the model from models/, ONNX Runtime's
// WebAssembly from vendor/transformers/ (its default is a CDN), no browser cache of its own.
async function transformers() {
  const here = (path) => new URL(path, location.href);
  const t = await import('./vendor/transformers/transformers.min.js');
  t.env.allowRemoteModels = false;
  t.env.allowLocalModels = true;
  // A path, not a URL: transformers.js reads a URL as a remote model.
  t.env.localModelPath = here('models/').pathname;
  t.env.useBrowserCache = false;
  t.env.backends.onnx.wasm.wasmPaths = {
    mjs: here('vendor/transformers/ort-wasm-simd-threaded.asyncify.mjs').href,
    wasm: here('vendor/transformers/ort-wasm-simd-threaded.asyncify.wasm').href,
  };
  return t;
}

// The page fetches the weights as it starts (loader.js); `?compare` may be here first.
async function modelFetched() {
  if (params.get('model') === 'synthetic') {
    throw new Error('the comparison needs the MiniLM weights, and this page runs on built-in synthetic ones (?model=synthetic)');
  }
  for (let waited = 0; !window.kilnModel; waited += 100) {
    if (waited > 300000) throw new Error('the model\'s weights did not arrive');
    status.textContent = 'waiting for the model\'s weights…';
    await new Promise((ok) => setTimeout(ok, 100));
  }
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
    `forward (medians of ${result.runs} after ${result.warm} warm-up each, wall clock, text to ` +
    `pooled embedding). Embeddings agree within ${result.rel_l2.toExponential(1)} (relative L2)` +
    `${result.same_tokens ? ', on the same tokens' : '; the tokens differ'}. Adapter: ${result.adapter}.`;
}

// A GPU left idle runs at low clocks at first: warm-up is `warm` calls and at least a second.
export async function warmUp(call, warm) {
  const start = performance.now();
  for (let i = 0; i < warm || performance.now() - start < 1000; i++) await call();
}

// The comparison itself, on a started Kiln module (its embed_timed export) and transformers.js's
// pipeline, also run by site/tests/measure-dawn.mjs under Dawn in Node: Kiln warmed up and
// timed, then transformers.js; the tokens and the mean-pooled embeddings compared. `prepare`
// runs before each side's warm-up (the measurement script brings the GPU's clocks up there).
export async function compareOn(module, extractor, text, { warm, runs, report = () => {}, prepare = async () => {} }) {
  report('Kiln: warming up and timing…');
  await prepare();
  await warmUp(() => module.embed_timed(text, 0, 1), warm);
  const kiln = JSON.parse(await module.embed_timed(text, 0, runs));
  report('transformers.js: warming up and timing…');
  const embed = () => extractor(text, { pooling: 'mean', normalize: false });
  await prepare();
  await warmUp(embed, warm);
  let output;
  const times = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    output = await embed();
    times.push(performance.now() - start);
  }
  const ids = Array.from((await extractor.tokenizer(text)).input_ids.data, Number);
  return {
    text, runs, warm, adapter: kiln.adapter,
    kiln: { tokens: kiln.ids.length, ms: kiln.ms, median_ms: median(kiln.ms), min_ms: Math.min(...kiln.ms) },
    transformers: { tokens: ids.length, ms: times, median_ms: median(times), min_ms: Math.min(...times) },
    same_tokens: ids.length === kiln.ids.length && ids.every((id, i) => id === kiln.ids[i]),
    rel_l2: relL2(Array.from(output.data), kiln.embedding),
  };
}

async function compare() {
  button.disabled = true;
  delete section.dataset.result;
  delete section.dataset.error;
  const text = document.getElementById('text').value;
  const report = (line) => { status.textContent = line; };
  try {
    await modelFetched();
    const module = await import('./attention/attention.js');
    await module.default().catch(() => {}); // already started by loader.js: returns at once
    report('loading transformers.js, ONNX Runtime Web and the ONNX model (about 75 MB)…');
    const t = await transformers();
    const extractor = await t.pipeline('feature-extraction', MODEL, { device: 'webgpu', dtype: 'fp32' });
    try {
      const result = await compareOn(module, extractor, text, { warm: WARM, runs: RUNS, report });
      result.transformers.version = t.env.version;
      show(result);
      section.dataset.result = JSON.stringify(result);
    } finally {
      await extractor.dispose();
    }
  } catch (e) {
    status.textContent = `The comparison could not run: ${e.message ?? e}`;
    section.dataset.error = String(e.message ?? e);
  } finally {
    if (!button.title) button.disabled = false; // disableForGpu leaves its reason there
  }
}

if (section) {
  if (await carried()) {
    button.addEventListener('click', compare);
    if (params.has('compare')) compare();
  } else {
    button.disabled = true;
    status.textContent = 'This build of the site carries no ONNX export of the model or no ' +
      'transformers.js (scripts/build-site.sh adds both when it can fetch them).';
  }
}
