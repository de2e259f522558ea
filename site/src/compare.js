// The attention page's comparison with transformers.js, which the visitor starts: the sentence
// in the text field through transformers.js (its feature-extraction pipeline on ONNX Runtime
// Web's WebGPU execution provider, the same MiniLM weights exported to ONNX by
// scripts/export-onnx.py) and through Kiln's GPU path (the demo's wasm export embed_timed), each
// warmed up and then timed per forward on the wall clock, from the text to the mean-pooled
// embedding on the CPU; the two embeddings compared (relative L2). Nothing of transformers.js
// loads before the button is pressed. On the page the comparison keeps to a time budget (the
// #compare-budget list, or `compare-budget` seconds in the URL): each side's runs are sized to
// its share from the first forward's time, the status says how far it is and how long is left,
// Stop (or the budget running out, even in the middle of a forward that a slow adapter takes
// minutes over) ends it, and what it managed is shown as a partial result. `?compare` starts it
// with the page; `compare-runs` and `compare-warm` (the fewest warm-up calls; at least a second
// of them where the budget allows) set the counts. The result lands in #compare's data-result
// as JSON (`partial: true` when it stopped short), for tests and measurement scripts.

import { listedModels } from './model.js';
import { Tally, duration } from './work.js';

const section = document.getElementById('compare');
const button = document.getElementById('compare-start');
const stopButton = document.getElementById('compare-stop');
const budgetList = document.getElementById('compare-budget');
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
// The budget from the URL (whole seconds, 5 to 3600), else the list's choice.
const BUDGET_PARAM = (() => {
  const n = Number(params.get('compare-budget'));
  return Number.isInteger(n) && n >= 5 && n <= 3600 ? n : null;
})();

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

// The two sides' figures and the verdict; a side that did not finish a timed forward within
// the budget says so in its row, and the status says what the comparison managed.
function show(result) {
  const rows = [
    ['Kiln (GPU path)', result.kiln, result.missing?.kiln],
    ['transformers.js (WebGPU)', result.transformers, result.missing?.transformers],
  ];
  const body = table.tBodies[0];
  body.replaceChildren(...rows.map(([name, side, why]) => {
    const tr = document.createElement('tr');
    const cells = side?.ms?.length
      ? [name, String(side.tokens), ms(side.median_ms), ms(side.min_ms)]
      : [name, side?.tokens ? String(side.tokens) : '—', why ?? 'not run', '—'];
    for (const text of cells) tr.append(Object.assign(document.createElement('td'), { textContent: text }));
    return tr;
  }));
  table.hidden = false;
  const both = result.kiln?.ms?.length && result.transformers?.ms?.length;
  const runs = (side) => `${side.ms.length} timed forward${side.ms.length === 1 ? '' : 's'}`;
  const verdict = both ? (() => {
    const ratio = result.transformers.median_ms / result.kiln.median_ms;
    return `Kiln ${ratio >= 1 ? `${ratio.toFixed(2)}× faster` : `${(1 / ratio).toFixed(2)}× slower`} per ` +
      `forward (medians of ${runs(result.kiln)} and ${runs(result.transformers)}, each side after its ` +
      'warm-up, wall clock, text to pooled embedding).';
  })() : '';
  const agree = result.rel_l2 === undefined ? ''
    : ` Embeddings agree within ${result.rel_l2.toExponential(1)} (relative L2)` +
      `${result.same_tokens ? ', on the same tokens' : '; the tokens differ'}.`;
  const partial = result.partial
    ? `Partial result: ${result.stopped ? 'stopped' : `the budget of ${result.budget_s} s ran out`} after ` +
      `${duration(1000 * result.elapsed_s)}. ${[result.missing?.kiln && `Kiln: ${result.missing.kiln}.`,
        result.missing?.transformers && `transformers.js: ${result.missing.transformers}.`].filter(Boolean).join(' ')} ` +
      (result.kiln?.ms?.length ? `Kiln: ${runs(result.kiln)}, median ${ms(result.kiln.median_ms)}. ` : '') +
      (result.transformers?.ms?.length ? `transformers.js: ${runs(result.transformers)}, median ${ms(result.transformers.median_ms)}. ` : '') +
      'A larger budget gives both sides their runs.'
    : '';
  status.textContent = `${partial || verdict}${partial && verdict ? ` ${verdict}` : ''}${agree}` +
    (result.adapter ? ` Adapter: ${result.adapter}.` : '');
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

// The comparison ends early: Stop pressed, or the budget spent. `reason` is 'stopped' or 'budget'.
class Ended extends Error {
  constructor(reason) { super(reason); this.reason = reason; }
}

// A forward the last comparison abandoned (Stop, or the budget) still runs on the device: the
// next comparison waits for it rather than time its own forwards beside it.
let abandoned = Promise.resolve();

// The budgeted comparison on the page: Kiln's side gets half of the budget (its first forward,
// which also builds the embedder and compiles its kernels, the warm-up, then as many timed runs
// as fit, sized from the forwards so far), transformers.js the rest. `end` rejects with Ended
// when Stop is pressed or the budget runs out; every call is raced against it, so the comparison
// returns in time even when one forward takes minutes. Returns the result, `partial` when a
// side has no timed forward.
async function budgeted(module, text, { budgetMs, report, end }) {
  const began = performance.now();
  const spent = () => performance.now() - began;
  const result = { text, runs: RUNS, budget_s: budgetMs / 1000, partial: false, stopped: false, missing: {} };
  const race = (p) => {
    const q = Promise.resolve(p);
    abandoned = q.then(() => {}, () => {});
    return Promise.race([q, end]);
  };
  const budgetLeft = () => `${duration(Math.max(0, budgetMs - spent()))} of the ${duration(budgetMs)} budget left`;
  // One side until `until` (ms on the page's clock): `call()` resolves to a forward's output.
  async function side(name, call, until, first, into) {
    let warm = 0;
    let output;
    let per = 0;
    const times = into.times;
    const warmStart = performance.now();
    // Warm-up: `WARM` calls and at least a second of them, as far as the share allows.
    do {
      report(`${name}: ${warm === 0 ? first : `warm-up call ${warm + 1} (${duration(per)} a forward)`}; ${budgetLeft()}…`);
      const start = performance.now();
      output = await race(call());
      per = performance.now() - start;
      warm++;
      Object.assign(into, { warm, per, output });
    } while ((warm < WARM || performance.now() - warmStart < 1000) && performance.now() + per < until);
    // Timed runs: as many of RUNS as fit in the share at the last forward's time.
    const fit = Math.min(RUNS, Math.floor((until - performance.now()) / Math.max(per, 1e-3)));
    const tally = new Tally(Math.max(fit, 0), { unit: 'timed forward' });
    for (let i = 0; i < fit; i++) {
      if (i > 0 && performance.now() + Math.max(...times) > until) break;
      report(`${name}: ${tally.line()}; ${budgetLeft()}`);
      const start = performance.now();
      output = await race(call());
      into.output = output;
      const t = performance.now() - start;
      times.push(t);
      tally.finished(t);
    }
    return { times, warm, output, per };
  }
  const figures = (s, tokens) => ({
    tokens, warm_calls: s.warm, ms: s.times,
    median_ms: s.times.length ? median(s.times) : null, min_ms: s.times.length ? Math.min(...s.times) : null,
  });
  let kiln = null;
  const kilnRuns = { warm: 0, per: 0, times: [] };
  const theirRuns = { warm: 0, per: 0, times: [] };
  try {
    const k = await side('Kiln', async () => JSON.parse(await module.embed_timed(text, 1)), began + budgetMs / 2,
      'the first forward (it uploads the weights and compiles its kernels)', kilnRuns);
    kiln = k.output;
    result.adapter = kiln.adapter;
    result.kiln = figures(k, kiln.ids.length);
    if (!k.times.length) result.missing.kiln = `no timed forward fitted in its half of the budget (a forward took ${duration(k.per)})`;
    report(`loading transformers.js, ONNX Runtime Web and the ONNX model (about 72 MB); ${budgetLeft()}…`);
    result.transformers = { tokens: null, ms: [] };
    const pipe = await race(extractor());
    result.transformers.version = pipe.version;
    const embed = () => pipe(text, { pooling: 'mean', normalize: false });
    const t = await side('transformers.js', embed, began + budgetMs, 'the first forward (it builds its WebGPU session)', theirRuns);
    // Cut as the pipeline cuts (and Kiln, at the model's 512 positions).
    const ids = Array.from((await race(pipe.tokenizer(text, { truncation: true }))).input_ids.data, Number);
    result.transformers = { version: pipe.version, ...figures(t, ids.length) };
    if (!t.times.length) result.missing.transformers = `no timed forward fitted in what was left of the budget (a forward took ${duration(t.per)})`;
    result.same_tokens = ids.length === kiln.ids.length && ids.every((id, i) => id === kiln.ids[i]);
    result.rel_l2 = relL2(Array.from(t.output.data), kiln.embedding);
  } catch (e) {
    if (!(e instanceof Ended)) throw e;
    result.stopped = e.reason === 'stopped';
    const why = result.stopped ? 'stopped' : 'the budget ran out';
    if (!kiln && kilnRuns.output) {
      // Stopped during Kiln's timed runs: what it timed still counts.
      kiln = kilnRuns.output;
      result.adapter = kiln.adapter;
      result.kiln = figures(kilnRuns, kiln.ids.length);
      if (kilnRuns.times.length) result.missing.transformers = `${why} before it started`;
    }
    if (!kiln) result.missing.kiln = `${why} during its first forward or its warm-up`;
    else if (!result.kiln.ms.length) result.missing.kiln = `no timed forward fitted in its half of the budget (a forward took ${duration(kilnRuns.per)})`;
    if (kiln && theirRuns.times.length) {
      // Stopped during its timed runs: what it timed still counts.
      result.transformers = { version: result.transformers.version, ...figures(theirRuns, null) };
      result.missing.transformers = `${why} after ${theirRuns.times.length} timed forward${theirRuns.times.length === 1 ? '' : 's'}`;
    } else if (!result.transformers?.ms?.length && !result.missing.transformers) {
      result.missing.transformers = result.transformers?.version ? `${why} during its first forward or its warm-up`
        : `${why} while it loaded`;
    }
  }
  result.partial = !result.kiln?.ms?.length || !result.transformers?.ms?.length;
  result.elapsed_s = spent() / 1000;
  return result;
}

async function compare() {
  button.disabled = true;
  delete section.dataset.result;
  delete section.dataset.error;
  section.dataset.state = 'running';
  const text = document.getElementById('text').value;
  const report = (line) => { status.textContent = line; };
  const budgetMs = 1000 * Number(budgetList.value);
  let stop = () => {};
  let timer = null;
  const end = new Promise((_, no) => {
    stop = () => no(new Ended('stopped'));
  });
  end.catch(() => {});
  stopButton.onclick = () => { stopButton.disabled = true; report('stopping…'); stop(); };
  stopButton.disabled = false;
  try {
    await kilnReady();
    report('waiting for the forward the last comparison left running…');
    await abandoned;
    const module = await import('./attention/attention.js');
    // Started by loader.js already: this returns at once (winit's control-flow throw aside).
    await module.default().catch((e) => {
      if (!String(e).includes('Using exceptions for control flow')) throw e;
    });
    const budgetEnd = new Promise((_, no) => { timer = setTimeout(() => no(new Ended('budget')), budgetMs); });
    budgetEnd.catch(() => {});
    const result = await budgeted(module, text, { budgetMs, report, end: Promise.race([end, budgetEnd]) });
    show(result);
    section.dataset.result = JSON.stringify(result);
    section.dataset.state = result.partial ? 'partial' : 'done';
  } catch (e) {
    status.textContent = `The comparison could not run: ${e.message ?? e}`;
    section.dataset.error = String(e.message ?? e);
    section.dataset.state = 'error';
  } finally {
    clearTimeout(timer);
    stopButton.disabled = true;
    button.disabled = gpuMissing;
  }
}

if (section) {
  window.kilnStarted?.then((path) => { gpuMissing = !path.gpu; }, () => {});
  if (BUDGET_PARAM !== null) {
    const value = String(BUDGET_PARAM);
    if (![...budgetList.options].some((o) => o.value === value)) budgetList.append(new Option(`${value} s`, value));
    budgetList.value = value;
  }
  if (params.get('model') === 'synthetic') {
    // The page asked for its built-in weights (as the index's preview does): nothing to compare,
    // and nothing of the models folder is read.
    button.disabled = true;
    budgetList.disabled = true;
    status.textContent = 'The comparison runs on the MiniLM weights; this page runs on built-in synthetic ones (?model=synthetic).';
  } else if (await carried()) {
    button.addEventListener('click', compare);
    if (params.has('compare')) compare();
  } else {
    button.disabled = true;
    budgetList.disabled = true;
    status.textContent = 'This build of the site carries no ONNX export of the model or no ' +
      'transformers.js (scripts/build-site.sh adds both when it can fetch them).';
  }
}
