// The flash page: the kernel-level sweep (flash, naive GPU, CPU path over sequence lengths) runs
// on load; Train runs the end-to-end comparison (GPU path on WebGPU, then CPU path in this wasm
// build on one thread). The wasm module (demos/flash/src/web.rs) does the work and reports JSON;
// this file draws it. The walkthrough (talk.js's presenter mode, flash.html?talk) gets its
// stages and the kernel-source view from the module, and each stage's live visual as pixels it
// draws on the CPU. Without WebGPU the sweep's CPU column runs alone and the walkthrough still
// shows. State for tests and tools: body data-sweep / data-training ("running" | "done" |
// "error"), data-state="no-webgpu" or "error"; #flash-visual[data-stage] is the stage (0-based)
// whose picture the visual shows.
import { detectWebGPU, plainError } from './device.js';
import { Tally, duration, painted, ticking } from './work.js';

const $ = (id) => document.getElementById(id);
const kiln = window.kiln; // talk.js, loaded before this module

const COLORS = {
  flash: '#ffb454', naive: '#6cb6ff', cpu: '#7ee787',
  gpu: '#ffb454', grid: '#2c2c38', text: '#a9a9b8', bg: '#111118',
};

function fail(message) {
  $('error').textContent = message;
  $('error').style.display = 'block';
  document.body.dataset.state = 'error';
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text; // text, never markup: adapter names are data
  if (cls) e.className = cls;
  return e;
}

const fmt = (x, digits = 3) => {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  if (x === 0) return '0';
  const a = Math.abs(x);
  if (a >= 1000) return x.toFixed(0);
  return Number(x.toPrecision(digits)).toString();
};
const clockName = (c) => ({ gpu_timestamps: 'GPU timestamps', wall_clock: 'wall clock' })[c] ?? c;

// ---- Charts (canvas 2D) ------------------------------------------------------------------

// Ticks for an axis: the given values, or decades (with 2 and 5 when the range is short) on a
// log axis, or about six round numbers on a linear one.
function ticks(lo, hi, log) {
  if (log) {
    const out = [];
    const short = Math.log10(hi / lo) < 2.5;
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const m of short ? [1, 2, 5] : [1]) {
        const v = m * 10 ** e;
        if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
      }
    }
    return out;
  }
  const raw = (hi - lo) / 6 || 1;
  const step = [1, 2, 5, 10].map((m) => m * 10 ** Math.floor(Math.log10(raw))).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

// Draws series [{name, color, points: [[x, y], ...], dash, width, marker}] on `canvas`; axes log
// or linear. Later series are drawn over earlier ones.
function drawChart(canvas, { series, logX = false, logY = false, xLabel, yLabel, xTicks }) {
  const dpr = window.devicePixelRatio || 1;
  const cssW = canvas.clientWidth || 600;
  const cssH = canvas.clientHeight || cssW / 2;
  canvas.width = Math.round(cssW * dpr);
  canvas.height = Math.round(cssH * dpr);
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.fillStyle = COLORS.bg;
  g.fillRect(0, 0, cssW, cssH);

  const pts = series.flatMap((s) => s.points).filter(([x, y]) =>
    Number.isFinite(x) && Number.isFinite(y) && (!logX || x > 0) && (!logY || y > 0));
  if (pts.length === 0) return;
  let [x0, x1] = [Math.min(...pts.map((p) => p[0])), Math.max(...pts.map((p) => p[0]))];
  let [y0, y1] = [Math.min(...pts.map((p) => p[1])), Math.max(...pts.map((p) => p[1]))];
  if (logY) { y0 /= 1.3; y1 *= 1.3; } else { const pad = (y1 - y0) * 0.08 || Math.abs(y1) * 0.05 || 1; y0 -= pad; y1 += pad; }
  if (x0 === x1) { if (logX) { x0 /= 2; x1 *= 2; } else { x0 -= 1; x1 += 1; } }
  const box = { l: 64, r: cssW - 16, t: 34, b: cssH - 40 };
  const tx = (x) => box.l + (box.r - box.l) * (logX ? Math.log(x / x0) / Math.log(x1 / x0) : (x - x0) / (x1 - x0));
  const ty = (y) => box.b - (box.b - box.t) * (logY ? Math.log(y / y0) / Math.log(y1 / y0) : (y - y0) / (y1 - y0));

  g.font = '12px system-ui, sans-serif';
  g.lineWidth = 1;
  g.strokeStyle = COLORS.grid;
  g.fillStyle = COLORS.text;
  g.textAlign = 'right';
  g.textBaseline = 'middle';
  for (const v of ticks(y0, y1, logY)) {
    const y = Math.round(ty(v)) + 0.5;
    g.beginPath(); g.moveTo(box.l, y); g.lineTo(box.r, y); g.stroke();
    g.fillText(fmt(v, 2), box.l - 6, y);
  }
  g.textAlign = 'center';
  g.textBaseline = 'top';
  for (const v of xTicks ?? ticks(x0, x1, logX)) {
    const x = Math.round(tx(v)) + 0.5;
    g.beginPath(); g.moveTo(x, box.t); g.lineTo(x, box.b); g.stroke();
    g.fillText(fmt(v, 4), x, box.b + 6);
  }
  g.fillText(xLabel, (box.l + box.r) / 2, box.b + 22);
  g.save();
  g.translate(14, (box.t + box.b) / 2);
  g.rotate(-Math.PI / 2);
  g.fillText(yLabel, 0, -6);
  g.restore();

  // Lines, then square markers on whole pixels (their centres keep the series' exact colour).
  for (const s of series) {
    const p = s.points.filter(([x, y]) => Number.isFinite(y) && (!logY || y > 0));
    g.strokeStyle = s.color;
    g.lineWidth = s.width ?? 2;
    g.setLineDash(s.dash ?? []);
    g.beginPath();
    p.forEach(([x, y], i) => (i ? g.lineTo(tx(x), ty(y)) : g.moveTo(tx(x), ty(y))));
    g.stroke();
    g.setLineDash([]);
    g.fillStyle = s.color;
    const size = p.length > 60 ? 0 : s.marker ?? 6;
    if (size) for (const [x, y] of p) g.fillRect(Math.round(tx(x) - size / 2), Math.round(ty(y) - size / 2), size, size);
  }

  // Legend, top left inside the plot.
  g.textAlign = 'left';
  g.textBaseline = 'middle';
  let lx = box.l + 8;
  for (const s of series) {
    g.fillStyle = s.color;
    g.fillRect(lx, 12, 12, 12);
    g.fillStyle = '#ececf1';
    g.fillText(s.name, lx + 18, 18);
    lx += 30 + g.measureText(s.name).width;
  }
}

// ---- Kernel level ------------------------------------------------------------------------

let sweep = null;

// The points of `P` that have `key`, as [N, value].
const column = (P, key) => P.filter((p) => Number.isFinite(p[key])).map((p) => [p.seq, p[key]]);

function drawSweep() {
  if (!sweep) return;
  const P = sweep.points;
  const xTicks = P.map((p) => p.seq);
  // Without WebGPU only the CPU column was measured: a series with no points is left out.
  const some = (series) => series.filter((x) => x.points.length);
  drawChart($('time-chart'), {
    logX: true, logY: true, xLabel: 'sequence length N', yLabel: 'ms (forward + backward)', xTicks,
    series: some([
      { name: 'flash (GPU)', color: COLORS.flash, points: column(P, 'flash_ms') },
      { name: 'naive (GPU)', color: COLORS.naive, points: column(P, 'naive_ms') },
      { name: 'CPU path', color: COLORS.cpu, points: column(P, 'cpu_ms') },
    ]),
  });
  drawChart($('bytes-chart'), {
    logX: true, logY: true, xLabel: 'sequence length N', yLabel: 'MB moved', xTicks,
    series: [
      { name: 'flash', color: COLORS.flash, points: column(P, 'flash_mb') },
      { name: 'naive', color: COLORS.naive, points: column(P, 'naive_mb') },
      { name: 'score matrices alone', color: COLORS.text, dash: [5, 4], marker: 4, points: column(P, 'score_matrix_mb') },
    ],
  });
}

function renderSweep(s) {
  sweep = s;
  drawSweep();
  if (!s.points.length) {
    $('sweep-summary').textContent = 'The sweep was stopped before its first length: nothing measured.';
    $('variants').replaceChildren(el('li', 'not run: the sweep was stopped'));
    $('sweep-report').textContent = JSON.stringify(s, null, 2);
    return;
  }
  const tbody = $('points').tBodies[0];
  tbody.replaceChildren(...s.points.map((p) => {
    const tr = el('tr');
    for (const v of [p.seq, fmt(p.flash_ms), fmt(p.naive_ms), p.cpu_ms === null ? 'left out' : fmt(p.cpu_ms),
      `${fmt(p.naive_ms / p.flash_ms, 2)}×`, fmt(p.flash_mb), fmt(p.naive_mb), fmt(p.score_matrix_mb),
      clockName(p.gpu_clock)]) tr.append(el('td', String(v)));
    return tr;
  }));
  $('points').hidden = false;
  const last = s.points[s.points.length - 1];
  const clocks = [...new Set(s.points.map((p) => clockName(p.gpu_clock)))].join(', ');
  $('sweep-summary').textContent =
    `${s.adapter}, batch ${s.shape.batch}, ${s.shape.heads} heads, head dimension ${s.shape.head_dim}, ` +
    `GPU paths in ${s.shape.dtype ?? 'f32'}. At N = ${last.seq} flash takes ${fmt(last.flash_ms)} ms against ${fmt(last.naive_ms)} ms for the naive ` +
    `GPU path (${fmt(last.naive_ms / last.flash_ms, 2)}×) and ` +
    (last.cpu_ms === null ? 'the CPU path was left out for time; ' : `${fmt(last.cpu_ms)} ms on the CPU path; `) +
    `it moves ${fmt(last.flash_mb)} MB where the naive path moves ${fmt(last.naive_mb)} MB ` +
    `(${fmt(last.score_matrix_mb)} MB of them score matrices). GPU times: ${clocks}; ` +
    `CPU path: ${s.cpu_path}, wall clock, in this page's wasm build.` +
    (s.stopped ? ` Stopped after ${s.points.length} of its ${s.lengths.length} lengths.` : '') +
    (last.cpu_ms !== null && last.cpu_ms < last.flash_ms && document.body.dataset.deviceType === 'cpu'
      ? ' The CPU path is faster here because this adapter is a software one: its "GPU" runs on the ' +
        'CPU too, through a rasterizer made for drawing, not for these kernels. On a hardware GPU the ' +
        'order reverses (the README\'s speed table).'
      : '');
  $('variants').replaceChildren(...s.flash_variants.map((v) => {
    const li = el('li');
    const [name, ...why] = v.split(' — ');
    li.append(el('code', name), document.createTextNode(why.length ? ` — ${why.join(' — ')}` : ''));
    return li;
  }));
  $('sweep-report').textContent = JSON.stringify(s, null, 2);
}

// The sweep's Stop button (and Train, which needs the GPU to itself) ask it to stop after the
// length it is timing; `sweepRun` settles when it has.
let stopSweep = false;
let sweepRun = Promise.resolve();

async function runSweep(wasm, lengths) {
  document.body.dataset.sweep = 'running';
  stopSweep = false;
  $('sweep-stop').disabled = false;
  // The estimate scales the lengths timed so far by N: on a software adapter a length's time goes
  // mostly to its launches, whose work grows with N (their score tiles with N² on a GPU), and the
  // first length also compiles the kernels, so an estimate from it alone runs high.
  const tally = new Tally(lengths.length, { unit: 'length', cost: (i) => lengths[i] / lengths[0] });
  let current = null;
  const say = () => {
    if (!current) return;
    const est = tally.estimate();
    $('sweep-step').textContent = `timing N = ${current.seq} (${current.done + 1} of ${current.total}): ` +
      `flash, naive GPU, CPU path…${est ? ` ${est} (scaled by N${tally.done === 1
        ? '; the first length also compiled the kernels, so this runs high' : ''})` : ''}` +
      `${stopSweep ? ' — stopping after this length' : ''}`;
  };
  const stopTicking = ticking(say);
  try {
    const json = await wasm.run_sweep((text) => {
      const p = JSON.parse(text);
      if (p.done > tally.done) tally.finished();
      $('sweep-progress').max = p.total;
      $('sweep-progress').value = p.done;
      current = p.done < p.total && !p.stopped ? p : null;
      say();
    }, () => stopSweep);
    const s = JSON.parse(json);
    renderSweep(s);
    $('sweep-step').textContent = s.stopped ? `stopped after ${s.points.length} of ${lengths.length} lengths` : 'done';
    document.body.dataset.sweep = s.stopped ? 'stopped' : 'done';
  } finally {
    stopTicking();
    $('sweep-stop').disabled = true;
  }
}

// Without WebGPU: the CPU column alone, with the byte model (arithmetic: no GPU needed).
function renderCpuSweep(s) {
  sweep = s;
  drawSweep();
  $('points').tBodies[0].replaceChildren(...s.points.map((p) => {
    const tr = el('tr');
    for (const v of [p.seq, 'no WebGPU', 'no WebGPU', fmt(p.cpu_ms), '—', fmt(p.flash_mb), fmt(p.naive_mb),
      fmt(p.score_matrix_mb), '—']) tr.append(el('td', String(v)));
    return tr;
  }));
  $('points').hidden = false;
  const last = s.points[s.points.length - 1];
  $('sweep-summary').textContent =
    `No WebGPU: only the CPU path ran here (${s.cpu_path}, wall clock). At N = ${last.seq} it takes ` +
    `${fmt(last.cpu_ms)} ms for causal forward + backward at batch ${s.shape.batch}, ${s.shape.heads} heads, ` +
    `head dimension ${s.shape.head_dim}. On a GPU the flash path would move ${fmt(last.flash_mb)} MB where ` +
    `the naive path moves ${fmt(last.naive_mb)} MB (Kiln's byte model, which needs no GPU).`;
  $('sweep-report').textContent = JSON.stringify(s, null, 2);
}

async function runCpuSweep(wasm) {
  document.body.dataset.sweep = 'running';
  const json = await wasm.run_cpu_sweep((text) => {
    const p = JSON.parse(text);
    $('sweep-progress').max = p.total;
    $('sweep-progress').value = p.done;
    $('sweep-step').textContent = p.done < p.total
      ? `timing the CPU path at N = ${p.seq} (${p.done + 1} of ${p.total})…`
      : 'done: the CPU path only';
  });
  renderCpuSweep(JSON.parse(json));
  $('sweep-step').textContent = 'done: the CPU path only';
  document.body.dataset.sweep = 'done';
}

// ---- Walkthrough ---------------------------------------------------------------------------

// In presenter mode: the stage's live visual, drawn by the wasm module on the CPU at the
// canvas's own pixel size, about 30 times a second; each stage's animation starts at its start.
function startVisual(wasm) {
  if (!kiln.presenting) return;
  const canvas = $('flash-visual');
  $('flash-visual-box').hidden = false;
  const g = canvas.getContext('2d');
  let stage = kiln.stage;
  let since = performance.now();
  kiln.onStage((i) => { stage = i; since = performance.now(); });
  let last = -Infinity;
  const frame = (now) => {
    requestAnimationFrame(frame);
    if (now - last < 30) return;
    last = now;
    const dpr = window.devicePixelRatio || 1;
    const box = canvas.getBoundingClientRect();
    const size = (v, fallback) => Math.min(2048, Math.max(64, Math.round(v * dpr) || fallback));
    const [w, h] = [size(box.width, 564), size(box.height, 720)];
    if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    const rgba = wasm.talk_frame(stage, (now - since) / 1000, w, h);
    g.putImageData(new ImageData(new Uint8ClampedArray(rgba.buffer, rgba.byteOffset, rgba.length), w, h), 0, 0);
    canvas.dataset.stage = String(stage);
    // Each text's box and letter height, for the tests (flash.test.mjs).
    canvas.dataset.texts = wasm.talk_texts();
  };
  requestAnimationFrame(frame);
}

// ---- End to end --------------------------------------------------------------------------

let presets = [];
let live = { gpu: [], cpu: [] };

function showPreset() {
  const p = presets.find((x) => x.name === $('preset').value);
  if (!p) return;
  const c = p.config;
  $('preset-info').textContent =
    `${p.name}: d_model ${c.d_model}, ${c.heads} heads, ${c.layers} layers, sequence ${c.seq}, ` +
    `batch ${c.batch}, vocabulary ${c.vocab}: ${p.parameters.toLocaleString('en')} parameters. ` +
    `Materialised attention scores would move ${fmt(p.score_traffic_mb)} MB per layer per step; ` +
    'the flash kernels never write them.';
}

function drawLosses(gpu, cpu) {
  drawChart($('loss-chart'), {
    xLabel: 'step', yLabel: 'loss',
    series: [
      // The curves should coincide: the GPU path wide underneath, the CPU path thin on top.
      { name: 'GPU path (WebGPU)', color: COLORS.gpu, width: 5, marker: 10, points: gpu.map((l, i) => [i + 1, l]) },
      { name: 'CPU path (wasm, one thread)', color: COLORS.cpu, width: 1.5, dash: [6, 4], marker: 4, points: cpu.map((l, i) => [i + 1, l]) },
    ],
  });
}

function renderTraining(r) {
  drawLosses(r.gpu.losses, r.cpu.losses);
  const bars = $('step-bars');
  bars.replaceChildren(el('h3', 'Median ms per step'));
  const slowest = Math.max(r.gpu_median_ms_per_step, r.cpu_median_ms_per_step, 1e-9);
  for (const [name, ms, total, cls] of [
    [r.gpu.path, r.gpu_median_ms_per_step, r.gpu_total_s, 'gpu'],
    [r.cpu.path, r.cpu_median_ms_per_step, r.cpu_total_s, 'cpu']]) {
    const row = el('div', undefined, `bar-row ${cls}`);
    row.append(el('span', name, 'bar-name'));
    const bar = el('span', undefined, 'bar');
    bar.style.width = `${Math.max(2, (100 * ms) / slowest)}%`;
    row.append(bar);
    row.append(el('span', `${fmt(ms)} ms/step · ${fmt(total)} s in all`, 'bar-value'));
    bars.append(row);
  }
  const faster = r.speedup >= 1
    ? `the GPU path is ${fmt(r.speedup, 3)}× as fast as the CPU path`
    : `the CPU path is ${fmt(1 / r.speedup, 3)}× as fast as the GPU path on this adapter, ${cpuWinsWhy('step')}`;
  $('train-summary').textContent =
    `${r.preset}, ${r.parameters.toLocaleString('en')} parameters, ${r.steps} steps per path on ${r.data}: ` +
    `${faster} (median ${fmt(r.gpu_median_ms_per_step)} against ${fmt(r.cpu_median_ms_per_step)} ms per step, ` +
    `${r.clock}). Loss drift at the last step, |GPU − CPU| ÷ CPU: ${(100 * r.drift).toPrecision(3)} % ` +
    `(final loss ${fmt(r.gpu.losses.at(-1), 5)} on the GPU path, ${fmt(r.cpu.losses.at(-1), 5)} on the CPU path).`;
}

// Why the CPU path beats the GPU path here, for a summary line: `unit` is what was timed (a
// training step, a generated token).
function cpuWinsWhy(unit) {
  if (document.body.dataset.deviceType === 'cpu') {
    return 'because this adapter is a software one: its "GPU" runs on the CPU too, through a ' +
      'rasterizer made for drawing, not for these kernels (on a hardware GPU the order reverses)';
  }
  return unit === 'token'
    ? 'because each token is a few small launches and a read-back the browser waits milliseconds ' +
      'for: at this model size that costs more than the sums (a larger preset gives the GPU more ' +
      'work per launch)'
    : 'because at this preset a step is many small launches, each costing the browser ' +
      'microseconds to encode and submit, more than their arithmetic (a larger preset gives the ' +
      'GPU more work per launch)';
}

// The last training run's report, for what generation says about the model it continues.
let trained = null;

// How far the model is trained, in a sentence, for the generated texts: after a short training
// the text is gibberish, and the page says so rather than let it pass for the model's best.
function trainingNote(r) {
  if (!r) return '';
  const vocab = presets.find((p) => p.name === r.preset)?.config.vocab;
  const loss = r.gpu.losses.at(-1);
  const uniform = vocab ? Math.log(vocab) : null;
  const base = `The model trained ${r.steps} step${r.steps === 1 ? '' : 's'} (final loss ${fmt(loss, 3)}` +
    (uniform ? `; guessing uniformly among its ${vocab} characters scores ${fmt(uniform, 3)})` : ')');
  const barely = uniform ? loss > 0.6 * uniform : r.steps < 100;
  return barely
    ? `${base}: it has barely learned yet, so expect gibberish; training for more steps brings the ` +
      'text closer to the corpus.'
    : `${base}.`;
}

// Training's Stop button asks it to stop before its next step.
let stopTraining = false;

async function train(wasm) {
  const steps = Number($('steps').value);
  if (!Number.isInteger(steps) || steps < 1 || steps > 1000) {
    $('train-step').textContent = 'steps must be a whole number from 1 to 1000';
    $('steps').focus();
    return;
  }
  const preset = $('preset').value;
  for (const id of ['train', 'preset', 'steps', 'generate']) $(id).disabled = true;
  document.body.dataset.training = 'running';
  $('train-summary').textContent = '';
  $('step-bars').replaceChildren();
  $('train-progress').max = 2 * steps;
  $('train-progress').value = 0;
  // The sweep shares the GPU: it stops after the length it is timing, then training starts.
  if (document.body.dataset.sweep === 'running') {
    stopSweep = true;
    $('train-step').textContent = 'waiting for the sweep to finish the length it is timing (Train stopped it)…';
    await sweepRun.catch(() => {});
  }
  stopTraining = false;
  $('train-stop').disabled = false;
  live = { gpu: [], cpu: [] };
  drawLosses([], []);
  const name = (path) => (path === 'gpu' ? 'GPU path (WebGPU)' : 'CPU path (wasm, one thread)');
  // What each phase does before its first step reports, said with the time it has taken so far.
  const PHASES = {
    open: 'opening the WebGPU device (kiln reads its kernel registry first: seconds on a software adapter)',
    build: 'building the model: its parameters made and uploaded',
    first: `step 1 of ${steps}, the first: it compiles every kernel a step runs for this adapter (on a ` +
      'software adapter each takes a while), so it is the slowest',
  };
  let phase = null;
  let since = performance.now();
  // Per path: the steps' times; the GPU path's first step (it compiles) is left out of its
  // estimate once a second one is in.
  const tallies = { gpu: new Tally(steps, { unit: 'step' }), cpu: new Tally(steps, { unit: 'step' }) };
  let last = null;
  const say = () => {
    const so = ` — ${duration(performance.now() - since)} so far`;
    if (phase) {
      $('train-step').textContent = `${name(phase.path)}: ${PHASES[phase.phase]}${so}${stopTraining ? '; stopping' : ''}`;
      return;
    }
    if (!last) return;
    const t = tallies[last.path];
    const est = t.estimate();
    const then = last.path === 'gpu' ? `; then the CPU path's ${steps} steps` : '';
    $('train-step').textContent = `${name(last.path)}: step ${last.step} of ${last.steps}, loss ${fmt(last.loss, 5)}` +
      `${est ? `; ${est}` : ''}${then}${stopTraining ? '; stopping before the next step' : ''}`;
  };
  const stopTicking = ticking(say);
  try {
    const json = await wasm.run_training(preset, steps, (text) => {
      const p = JSON.parse(text);
      if (p.phase) {
        phase = p;
        since = performance.now();
        tallies[p.path].restart();
        say();
        return;
      }
      phase = null;
      const t = tallies[p.path];
      t.finished();
      if (p.path === 'gpu' && p.step === 2 && steps > 2) {
        // The first step compiled the kernels: the estimate goes by the steps after it.
        t.times.shift();
        t.total = steps - 1;
      }
      last = p;
      live[p.path].push(p.loss);
      $('train-progress').value = (p.path === 'gpu' ? 0 : p.steps) + p.step;
      say();
      drawLosses(live.gpu, live.cpu);
    }, () => stopTraining);
    const r = JSON.parse(json);
    if (r.stopped) {
      $('train-step').textContent = `stopped at the ${name(r.path)}'s step ${r.done + 1} of ${r.steps}`;
      $('train-summary').textContent = r.path === 'gpu'
        ? `Stopped before the GPU path finished (${r.done} of ${r.steps} steps): nothing to compare.`
        : `Stopped during the CPU path (${r.done} of ${r.steps} steps, after all ${r.steps} on the GPU path): ` +
          'the losses so far are drawn; the comparison needs both paths\' steps.';
      document.body.dataset.training = 'stopped';
      return;
    }
    trained = r;
    renderTraining(r);
    $('report').textContent = JSON.stringify(r, null, 2);
    window.kilnFlashReport = json;
    $('train-step').textContent = 'done';
    document.body.dataset.training = 'done';
    $('generate-note').textContent =
      `The ${r.preset} model just trained continues the prompt (characters of its vocabulary). ${trainingNote(r)}`;
  } catch (e) {
    $('train-step').textContent = 'failed';
    document.body.dataset.training = 'error';
    fail(`Training failed: ${e}`);
  } finally {
    stopTicking();
    $('train-stop').disabled = true;
    for (const id of ['train', 'preset', 'steps']) $(id).disabled = false;
    $('generate').disabled = document.body.dataset.training !== 'done';
  }
}

// ---- Generation --------------------------------------------------------------------------

async function generate(wasm) {
  const tokens = Number($('gen-tokens').value);
  if (!Number.isInteger(tokens) || tokens < 1 || tokens > 500) {
    $('generate-summary').textContent = 'tokens must be a whole number from 1 to 500';
    $('gen-tokens').focus();
    return;
  }
  const prompt = $('prompt').value;
  for (const id of ['generate', 'train']) $(id).disabled = true;
  document.body.dataset.generation = 'running';
  $('generate-summary').textContent = 'generating on the GPU path…';
  $('generated-gpu').textContent = prompt;
  $('generated-cpu').textContent = '';
  try {
    const json = await wasm.run_generation(prompt, tokens, (text) => {
      const p = JSON.parse(text);
      $(`generated-${p.path}`).textContent = p.text;
      if (p.path === 'cpu') $('generate-summary').textContent = 'generating on the CPU path…';
    });
    const r = JSON.parse(json);
    $('generated-gpu').textContent = r.gpu.text;
    $('generated-cpu').textContent = r.cpu.text;
    const faster = r.gpu.tokens_per_s >= r.cpu.tokens_per_s
      ? `the GPU path ${fmt(r.gpu.tokens_per_s / Math.max(r.cpu.tokens_per_s, 1e-9), 3)}× the CPU path's rate`
      : `the CPU path ${fmt(r.cpu.tokens_per_s / Math.max(r.gpu.tokens_per_s, 1e-9), 3)}× the GPU path's rate on ` +
        `this adapter, ${cpuWinsWhy('token')}`;
    $('generate-summary').textContent =
      `${r.tokens} tokens after a ${r.prompt_tokens}-token prompt: GPU ${fmt(r.gpu.tokens_per_s)} tokens/s ` +
      `(prompt pass ${fmt(r.gpu.prefill_ms)} ms), CPU ${fmt(r.cpu.tokens_per_s)} tokens/s ` +
      `(prompt pass ${fmt(r.cpu.prefill_ms)} ms, wall clock): ${faster}. ${r.agreement} ${trainingNote(trained)}`;
    window.kilnFlashGeneration = json;
    document.body.dataset.generation = 'done';
  } catch (e) {
    document.body.dataset.generation = 'error';
    $('generate-summary').textContent = `Generation failed: ${plainError(e)}`;
  } finally {
    for (const id of ['generate', 'train']) $(id).disabled = false;
  }
}

// ---- Start -------------------------------------------------------------------------------

// What the page shows without WebGPU, after talk.js's standard explanation.
const FALLBACK =
  'What runs here instead: the kernel sweep\'s CPU column (kiln\'s standard attention, forward + ' +
  'backward, in this page\'s wasm build on one thread, at N = 64, 128 and 256) beside the byte ' +
  'model\'s traffic of both GPU paths, which is arithmetic and needs no GPU; and the walkthrough, ' +
  'whose stages the CPU draws, all but the measured charts. Training compares the GPU path with the CPU path, so it ' +
  'needs WebGPU. The native build runs everything: cargo run --release -p flash.';

async function noWebGpu(wasm, missing) {
  document.body.dataset.state = 'no-webgpu';
  document.body.classList.add('cpu-only');
  $('device').textContent = `The GPU paths cannot run here (${missing.short}); the CPU path runs instead.`;
  $('train').disabled = true;
  $('train').title = `Training needs WebGPU (here: ${missing.short}).`;
  $('train-step').textContent = 'not run: needs a WebGPU adapter';
  $('train-note').textContent = 'Training compares the GPU path with the CPU path, so it needs a ' +
    `WebGPU adapter (here: ${missing.short}): the training controls are off.`;
  $('generate-note').textContent = 'Generation compares the GPU path with the CPU path after ' +
    `training, so it needs a WebGPU adapter too (here: ${missing.short}).`;
  $('sweep-step').textContent = 'the CPU column only: the GPU paths need a WebGPU adapter';
  $('variants').replaceChildren(el('li', 'not run: needs a WebGPU adapter'));
  kiln.noWebGPU(missing, FALLBACK);
  kiln.setStages(JSON.parse(await wasm.talk_stages(false)));
  kiln.setKernels([]);
  try {
    await runCpuSweep(wasm);
  } catch (e) {
    document.body.dataset.sweep = 'error';
    $('sweep-step').textContent = 'failed';
    fail(`The CPU path failed: ${e}`);
  }
}

async function main() {
  const wasm = await import('./flash/flash.js');
  await wasm.default();
  startVisual(wasm);
  let resized = null;
  window.addEventListener('resize', () => {
    clearTimeout(resized);
    resized = setTimeout(() => {
      drawSweep();
      if (document.body.dataset.training === 'done') {
        const r = JSON.parse(window.kilnFlashReport);
        drawLosses(r.gpu.losses, r.cpu.losses);
      } else if (live.gpu.length) drawLosses(live.gpu, live.cpu);
    }, 150);
  });
  // The index's live thumbnail (?talk&embed) is the visual alone, which the CPU draws: no
  // device, no sweep, no training behind a card.
  if (kiln.presenting && new URLSearchParams(location.search).has('embed')) {
    kiln.setStages(JSON.parse(await wasm.talk_stages(false)));
    return;
  }
  const webgpu = await detectWebGPU();
  if (!webgpu.ok) {
    await noWebGpu(wasm, webgpu);
    return;
  }

  // At once, before Kiln opens the device (it reads its kernel registry first: seconds on a
  // software adapter): the adapter as the browser names it, and the presets to choose from.
  const named = await navigator.gpu.requestAdapter().then((a) => a?.info).catch(() => null);
  const what = [named?.description, named?.vendor, named?.architecture].filter(Boolean).join(', ');
  $('device').textContent = `Adapter: ${what || 'the browser\'s WebGPU adapter'}. Kiln is opening it and ` +
    'reading its kernel registry (a few seconds on a software adapter); the sweep starts then, and Train ' +
    'can start once it has.';
  presets = JSON.parse(wasm.presets());
  $('preset').replaceChildren(...presets.map((p) => new Option(
    `${p.name} — ${(p.parameters / 1e6).toPrecision(3)} M parameters, scores ${fmt(p.score_traffic_mb)} MB/layer`,
    p.name, p.name === 'small', p.name === 'small')));
  showPreset();
  $('preset').addEventListener('change', showPreset);
  $('train').addEventListener('click', () => train(wasm));
  $('train-stop').addEventListener('click', () => { stopTraining = true; $('train-stop').disabled = true; });
  $('sweep-stop').addEventListener('click', () => { stopSweep = true; $('sweep-stop').disabled = true; });
  $('generate').addEventListener('click', () => generate(wasm));
  // On the screen before the device opens (data-early: when, on the page's clock).
  await painted();
  document.body.dataset.early = String(Math.round(performance.now()));

  let info;
  try {
    info = JSON.parse(await wasm.describe());
  } catch (e) {
    await noWebGpu(wasm, { ok: false, state: 'no-adapter', short: 'the adapter could not be opened',
      reason: `This browser offers a WebGPU adapter, but it could not be opened (${plainError(e)}).`,
      fix: 'chrome://gpu shows the WebGPU status; an updated GPU driver may help.' });
    return;
  }
  document.body.dataset.deviceType = info.device_type;
  $('device').textContent =
    `Adapter: ${info.adapter} (${info.backend}, ${info.device_type}). Sequence lengths swept: ` +
    `${info.lengths.join(', ')}${info.device_type === 'cpu' ? ' (a software adapter: short ones)' : ''}, ` +
    (info.sweep_dtype === 'f16'
      ? 'in f16 (this adapter has shader-f16).'
      : 'in f32 (f16 needs shader-f16, which this adapter has not).');
  // Train may start while the sweep runs: it stops the sweep after its current length.
  $('train').disabled = false;
  $('train-note').textContent = 'Train runs the GPU path, then the CPU path; the sweep, if it is ' +
    'still running, stops first (both share the GPU, and running them together would spoil both timings).';
  // The walkthrough and the kernel view: the flash kernels rendered for this adapter.
  try {
    kiln.setStages(JSON.parse(await wasm.talk_stages(true)));
    kiln.setKernels(JSON.parse(await wasm.kernels()));
  } catch (e) {
    fail(`The flash kernels could not be rendered for this adapter: ${e}`);
    kiln.setStages(JSON.parse(await wasm.talk_stages(false)));
  }
  if (document.body.dataset.training === 'running') {
    $('sweep-step').textContent = 'not run: training took the GPU first (reload the page to sweep)';
    return;
  }
  sweepRun = runSweep(wasm, info.lengths).catch((e) => {
    document.body.dataset.sweep = 'error';
    $('sweep-step').textContent = 'failed';
    fail(`The kernel sweep failed: ${e}`);
  });
  await sweepRun;
}

main().catch((e) => fail(`The flash page could not start: ${e}`));
