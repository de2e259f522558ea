// The fleet page: runs the campaign (wasm, WebGPU), shows per case the fastest variants as bars
// and every wrong or failed one, offers the report as a download and, only when the user ticks
// the consent box, sends it to the collector named by ?collector=URL. Above it, the walkthrough's
// live visuals (the same measurements as `fleet talk`): this device, its ceilings beside the
// fleet's, a few matmul variants racing, and the selector's pick against the race's winner. In
// presenter mode (?talk, site/src/talk.js) they are the stages' visuals, measured as each stage
// is shown. Without a WebGPU adapter (device.js says why) the checked-in reports are still merged
// and shown, the buttons that measure are off with the reason, and the walkthrough shows its
// stages for the limits every WebGPU device guarantees (fleet-web's walkthrough_without_adapter),
// with the fleet's devices and the race's contenders as its visuals.
import { detectWebGPU, disableForGpu, plainError, renderAdapter, renderDevice } from './device.js';
import { duration, painted } from './work.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const kiln = window.kiln;
let cancelled = false;
// The checked-in reports, once read: the ceilings' comparison uses their devices.
let fleetReports = [];

function fail(message) {
  $('error').textContent = message;
  $('error').style.display = 'block';
  document.body.dataset.state = 'error';
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text; // text, never markup: device names are data
  if (cls) e.className = cls;
  return e;
}

function render(report) {
  const c = report.ceilings;
  const ok = report.results.filter((r) => r.outcome === 'ok').length;
  $('summary').textContent =
    `${report.device.name} (${report.device.backend}): ${report.results.length} variants run, ` +
    `${ok} correct and timed, ${report.results.length - ok} wrong or failed, ` +
    `${report.skipped.length} skipped, in ${report.elapsed_s.toFixed(1)} s. Ceilings: copy ` +
    `${c.copy_gb_per_s.toFixed(1)} GB/s, FMA ${c.fma_gflop_per_s.toFixed(1)} GFLOP/s, ` +
    `dispatch ${c.dispatch_latency_us.toFixed(0)} µs (${c.clock.replace('_', ' ')}).`;
  const results = $('results');
  results.replaceChildren();
  const cases = [...new Set(report.results.map((r) => r.case))];
  for (const name of cases) {
    const rows = report.results.filter((r) => r.case === name);
    const timed = rows.filter((r) => r.timing).sort((a, b) => a.timing.median_ms - b.timing.median_ms);
    const section = el('section', undefined, 'case');
    section.append(el('h3', name));
    const slowest = Math.max(...timed.map((r) => r.timing.median_ms), 1e-9);
    for (const r of timed.slice(0, 8)) {
      const row = el('div', undefined, 'bar-row');
      row.append(el('span', r.variant, 'bar-name'));
      const bar = el('span', undefined, 'bar');
      bar.style.width = `${Math.max(2, (100 * r.timing.median_ms) / slowest)}%`;
      row.append(bar);
      row.append(el('span', `${r.timing.median_ms.toFixed(4)} ms · ${(100 * (r.efficiency ?? 0)).toFixed(1)} % of ceiling`, 'bar-value'));
      section.append(row);
    }
    for (const r of rows.filter((r) => r.outcome !== 'ok')) {
      section.append(el('p', `${r.variant}: ${r.outcome} — ${r.error ?? ''}`, 'wrong'));
    }
    results.append(section);
  }
}

// ---- the walkthrough's live visuals ----

// Rates with three significant figures or so.
const figure = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));

// One labelled horizontal bar: label, a track filled to `fraction`, the value in words.
function hbar(label, fraction, value, cls = '') {
  const row = el('div', undefined, `hbar ${cls}`.trim());
  row.append(el('span', label, 'hbar-label'));
  const track = el('span', undefined, 'track');
  const fill = el('span', undefined, 'fill');
  fill.style.width = `${(100 * Math.min(1, Math.max(0, fraction))).toFixed(1)}%`;
  track.append(fill);
  row.append(track, el('span', value, 'hbar-value'));
  return row;
}

// `v` is the meter's view; `without` (a sentence) when there is no adapter to measure.
function renderCeilings(v, without = null) {
  const rows = [
    ['memory bandwidth (copy)', 'GB/s', v.copy_gb_per_s, (r) => r.ceilings.copy_gb_per_s, v.samples[0]],
    ['arithmetic (FMA chain)', 'GFLOP/s', v.fma_gflop_per_s, (r) => r.ceilings.fma_gflop_per_s, v.samples[1]],
  ];
  const box = $('ceiling-bars');
  box.replaceChildren();
  for (const [name, unit, here, theirs, samples] of rows) {
    const fleet = fleetReports.map((r) => [r.device.name, theirs(r)]);
    // One log scale for this device and the fleet's: a factor of 1000 apart is common.
    const all = [...fleet.map((f) => f[1]), ...(here ? [here] : [])].filter((x) => x > 0);
    const lo = Math.min(1, ...all) / 2;
    const hi = Math.max(10, ...all) * 2;
    const frac = (x) => Math.log(x / lo) / Math.log(hi / lo);
    const block = el('div', undefined, 'ceiling');
    block.append(el('h3', name), el('p', here ? `${figure(here)} ${unit}`
      : without ? 'not measured: no adapter here' : 'measuring…', 'figure'));
    block.append(hbar(without ? 'this device: no adapter' : `this device (${samples}/${v.of} samples)`,
      here ? frac(here) : 0, here ? `${figure(here)} ${unit}` : without ? '—' : '…', 'here'));
    for (const [device, x] of fleet) block.append(hbar(device, frac(x), `${figure(x)} ${unit}`, 'reference'));
    box.append(block);
  }
  const latency = v.dispatch_latency_us;
  box.append(el('p', `Dispatch latency (submit one tiny dispatch and wait): ${latency ? `${latency.toFixed(0)} µs`
    : without ? 'not measured (no adapter)' : 'measuring…'}`, 'latency'));
  const taken = v.samples.reduce((a, b) => a + b, 0);
  $('ceilings-status').textContent = without ?? (v.done ? `median of ${v.of} samples each; ${v.clock}`
    : `measuring: ${taken} of ${3 * v.of} samples`);
  $('ceilings').dataset.samples = String(taken);
  if (v.done) $('ceilings').dataset.done = 'true';
}

// `started`: whether the race has begun; `without`: no adapter, so it never will here.
function renderRace(v, started = true, without = false) {
  const best = Math.max(0, ...v.racers.map((r) => r.gflop_per_s ?? 0));
  const notes = { waiting: without ? 'not run' : 'waiting', wrong: 'wrong: not timed', failed: 'failed' };
  $('race-bars').replaceChildren(...v.racers.map((r) => {
    const value = notes[r.status] ?? (r.gflop_per_s ? `${figure(r.gflop_per_s)} GFLOP/s` : 'checked');
    const cls = [r.picked ? 'picked' : '', r.variant === v.fastest ? 'fastest' : '', r.status].join(' ');
    const row = hbar(r.picked ? `◆ ${r.variant}` : r.variant, best > 0 ? (r.gflop_per_s ?? 0) / best : 0, value, cls);
    row.title = r.error ?? (r.rel_l2 !== null ? `relative L2 error against the CPU reference: ${r.rel_l2.toExponential(1)}` : '');
    return row;
  }));
  const samples = v.racers.reduce((a, r) => a + r.samples, 0);
  $('race-status').textContent = without
    ? `${v.case}: the ${v.racers.length} variants a device with WebGPU's guaranteed limits would race; ` +
      '◆ the selector\'s pick. Nothing runs here without an adapter.'
    : !started ? `${v.case}, ${v.racers.length} variants; ◆ the selector's pick`
    : v.done ? `${v.case}: GFLOP/s, median of ${v.of} samples; ${v.clock}; ◆ the selector's pick, ★ the fastest`
      : `${v.case}: racing, ${samples} sample${samples === 1 ? '' : 's'} so far; ◆ the selector's pick`;
  $('race').dataset.samples = String(samples);
  const by = v.picked_by === 'tuned' ? `the tuned table's entry for this device class and bucket ${v.bucket}`
    : v.picked_by === 'rule' ? 'its rule of thumb: no campaign has measured this device class yet' : 'the caller';
  $('verdict-pick').replaceChildren('Kiln’s selector picks ', el('code', v.picked),
    ` for ${v.case} ${without ? 'on a device with WebGPU\'s guaranteed limits' : 'here'}, from ${by}.`);
  const result = $('verdict-result');
  if (without) {
    result.textContent = 'No race here: racing the variants needs a WebGPU adapter.';
    result.className = 'verdict';
  } else if (!started) {
    result.textContent = 'The race has not started yet: its stage, or “Start the race”, starts it.';
    result.className = 'verdict';
  } else if (!v.done) {
    result.textContent = 'The race is still running…';
    result.className = 'verdict';
  } else if (v.agree) {
    result.textContent = `The race agrees: ${v.picked} was the fastest of ${v.racers.length} here.`;
    result.className = 'verdict agree';
  } else {
    const ratio = v.picked_over_fastest ? `; the pick took ${v.picked_over_fastest.toFixed(2)}× as long` : '';
    result.textContent = `The race differs: ${v.fastest ?? 'another variant'} was fastest here${ratio}. ` +
      'A campaign on this device class would put its winner into the tuned table.';
    result.className = 'verdict differ';
  }
  if (v.done) {
    $('race').dataset.done = 'true';
    $('verdict').dataset.done = 'true';
  }
}

// The measurements share the device: one at a time, each run once.
let queue = Promise.resolve();
const started = {};
function once(name, work) {
  if (!started[name]) {
    started[name] = true;
    queue = queue.then(work).catch((e) => fail(`The ${name} stopped: ${plainError(e)}`));
  }
  return queue;
}

function measureCeilings(wasm) {
  $('measure').disabled = true;
  return once('ceilings', async () => {
    renderCeilings(JSON.parse(await wasm.measure_ceilings((json) => renderCeilings(JSON.parse(json)))));
  });
}

function startRace(wasm) {
  $('start-race').disabled = true;
  return once('race', async () => {
    renderRace(JSON.parse(await wasm.race((json) => renderRace(JSON.parse(json)))));
  });
}

// The walkthrough: the device, the stages and the kernel-source view; measurements start as
// their stage is shown (in presenter mode) or their button is pressed.
async function walkthrough(wasm) {
  const info = JSON.parse(await wasm.walkthrough());
  document.body.dataset.walkthrough = String(Math.round(performance.now()));
  renderDevice($('device-panel'), info);
  renderRace(info.race, false);
  kiln.setStages(info.stages);
  kiln.setKernels(info.kernels);
  document.body.dataset.deviceClass = info.class;
  highlightClass(info.class, info.race.bucket);
  $('measure').addEventListener('click', () => measureCeilings(wasm));
  $('start-race').addEventListener('click', () => startRace(wasm));
  kiln.onStage((stage) => {
    if (stage === 1) measureCeilings(wasm);
    if (stage >= 2) startRace(wasm);
  });
}

// The picks table's rows for this device's class (and the race's bucket) stand out.
function highlightClass(cls, bucket) {
  for (const tr of $('picks').tBodies[0].rows) {
    tr.classList.toggle('here', tr.dataset.class === cls && tr.dataset.family === 'matmul' && tr.dataset.bucket === bucket);
  }
  $('picks').dataset.deviceClass = cls;
}

// The checked-in reports (copied into the site at build time) and their merged choices.
async function showFleet(wasm) {
  const index = await (await fetch('fleet/reports/index.json')).json();
  const reports = [];
  for (const name of index) reports.push(await (await fetch(`fleet/reports/${name}`)).json());
  fleetReports = reports;
  $('devices').replaceChildren(...reports.map((r) => el('li',
    `${r.device.name} (${r.device.backend}, ${r.platform.driver}): ${r.results.length} variants, ` +
    `copy ${r.ceilings.copy_gb_per_s.toFixed(0)} GB/s, FMA ${r.ceilings.fma_gflop_per_s.toFixed(0)} GFLOP/s`)));
  const picks = JSON.parse(wasm.merge_reports(JSON.stringify(reports)));
  $('picks').tBodies[0].replaceChildren(...picks.map((p) => {
    const tr = el('tr');
    Object.assign(tr.dataset, { class: p.class, family: p.family, bucket: p.bucket });
    for (const v of [p.class, p.family, p.bucket || '(any)', p.variant, p.worst_ms.toFixed(4)]) tr.append(el('td', v));
    // A device class may break after its slashes (a line break opportunity), never inside a part.
    tr.cells[0].replaceChildren(...p.class.split('/').flatMap((part, i, all) =>
      (i < all.length - 1 ? [`${part}/`, document.createElement('wbr')] : [part])));
    return tr;
  }));
  document.body.dataset.fleet = String(picks.length);
}

// How long the campaign has left, in words: from the variants so far (the first ones include
// the ceilings, so the rate is measured from the first variant on), and the budget, which ends it
// sooner — after every family has run its first variant, whatever the budget.
function campaignLeft(p, budget, began, first) {
  const spent = (performance.now() - began) / 1000;
  const budgetLeft = Math.max(0, budget - spent);
  if (!first || p.done <= first.done) {
    return `the budget of ${budget} s ends it in ${duration(1000 * budgetLeft)} at most, once every family has run a variant`;
  }
  const per = (performance.now() - first.at) / (p.done - first.done);
  const byCount = per * (p.total - p.done);
  if (spent >= budget) return 'the budget is spent: the families not yet run run one variant each, the rest are skipped';
  return byCount < 1000 * budgetLeft
    ? `about ${duration(byCount)} left, from the ${p.done - first.done} variants since the first`
    : `the budget ends it in ${duration(1000 * budgetLeft)} (all ${p.total} would take about ${duration(byCount)} more, ` +
      `from the ${p.done - first.done} variants since the first)`;
}

// ?budget=N: whole seconds within these bounds, or null.
const BUDGET = { min: 5, max: 3600 };
function budgetParam(text) {
  const n = Number(text);
  return Number.isInteger(n) && n >= BUDGET.min && n <= BUDGET.max ? n : null;
}

// ?collector=URL: an http or https address, as a base the report's path joins (a trailing
// slash is added, so `https://host/fleet` posts to `https://host/fleet/reports`); else null.
function collectorParam(text) {
  if (!text) return null;
  try {
    const url = new URL(text);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    if (!url.pathname.endsWith('/')) url.pathname += '/';
    return url;
  } catch {
    return null;
  }
}

// The explanation and the controls off, at once: what follows needs the kernel registry
// (seconds to read on a slow machine).
function explainWithout(missing) {
  kiln.noWebGPU(missing,
    'The campaign and the walkthrough\'s measurements time WebGPU kernels, which have no CPU ' +
    'fallback. Below: the reports checked into Kiln, merged in this page, and the walkthrough ' +
    'for the limits every WebGPU device guarantees.');
  document.body.dataset.state = 'no-webgpu';
  const why = `times WebGPU kernels (here: ${missing.short}).`;
  disableForGpu([$('budget'), $('run'), $('cancel')], `the campaign ${why}`);
  disableForGpu([$('measure')], `measuring the ceilings ${why}`);
  disableForGpu([$('start-race')], `the race ${why}`);
  $('step').textContent = 'not run: needs a WebGPU adapter';
}

// No adapter: the explanation, the measuring controls off with the reason, and the walkthrough
// for WebGPU's guaranteed limits — its census, the fleet's ceilings, the race's contenders and
// the selector's pick — computed without a GPU.
function withoutAdapter(wasm, missing) {
  const info = JSON.parse(wasm.walkthrough_without_adapter());
  const profile = document.createElement('div');
  renderDevice(profile, info);
  const panel = $('device-panel');
  panel.replaceChildren(el('p', `No device to describe (here: ${missing.short}). What WebGPU guarantees ` +
    'every device instead:', 'muted no-device'), profile);
  panel.dataset.ready = 'true';
  renderCeilings({ samples: [0, 0, 0], of: 0, done: false },
    'No WebGPU adapter: nothing is measured here; the bars are the devices of the checked-in reports.');
  renderRace(info.race, false, true);
  kiln.setStages(info.stages);
}

async function main() {
  const webgpu = await detectWebGPU();
  // Without an adapter the page says so before anything loads (data-explained: when that was on
  // the screen, on the page's clock).
  if (!webgpu.ok) {
    explainWithout(webgpu);
    await painted();
    document.body.dataset.explained = String(Math.round(performance.now()));
  }
  const wasm = await import('./fleet/fleet_web.js');
  await wasm.default();
  // Merging the reports reads the kernel registry too: on a page with an adapter it waits for the
  // walkthrough, which the visitor sees first.
  const reports = () => showFleet(wasm).catch((e) => {
    $('devices').replaceChildren(el('li', `the checked-in reports could not be read: ${e}`));
  });
  if (!webgpu.ok) {
    // Merging needs no GPU: the fleet's reports are shown all the same.
    await reports();
    withoutAdapter(wasm, webgpu);
    return;
  }
  // At once, while Kiln opens the device (it reads its kernel registry first: seconds on a
  // software adapter): the adapter as the browser describes it, stage 1's picture.
  const adapter = await navigator.gpu.requestAdapter().catch(() => null);
  if (adapter) renderAdapter($('device-panel'), adapter);
  if (kiln.presenting && !document.body.dataset.walkthrough) {
    const text = document.getElementById('talk-text');
    if (text) {
      text.textContent = 'Kiln is opening this device and reading its kernel registry (every variant of ' +
        'every family: a few seconds on a software adapter). Meanwhile the picture shows the adapter ' +
        'as the browser describes it; the ceilings and the race are measured when their stages are shown.';
    }
  }
  // The walkthrough first (stage 1 needs only the device); the fleet's reports after it. The
  // campaign, if started meanwhile, waits for both (one thing at a time on the device).
  // data-early: when the adapter's view was on the screen, on the page's clock.
  const shown = painted().then(() => {
    if (adapter) $('device-panel').dataset.early = String(Math.round(performance.now()));
    return walkthrough(wasm);
  }).catch((e) => {
    const why = plainError(e);
    fail(`The walkthrough could not start: ${why}.`);
    $('device-panel').replaceChildren(el('p', `The adapter could not be opened: ${why}.`, 'muted'));
  }).then(reports);
  queue = queue.then(() => shown);
  // URL parameters are the visitor's to edit: a value that is not what it should be is left
  // out, and the page says so rather than offering it.
  const ignored = [];
  const collector = collectorParam(params.get('collector'));
  if (collector) {
    $('collector').textContent = collector.href;
    $('send').hidden = false;
  } else if (params.has('collector')) {
    ignored.push(`collector=${params.get('collector')} (not an http or https address)`);
  }
  $('consent').addEventListener('change', () => { $('post').disabled = !$('consent').checked; });
  $('cancel').addEventListener('click', () => { cancelled = true; $('step').textContent = 'cancelling…'; });
  if (params.has('budget')) {
    const seconds = budgetParam(params.get('budget'));
    if (seconds === null) {
      ignored.push(`budget=${params.get('budget')} (give whole seconds from ${BUDGET.min} to ${BUDGET.max})`);
    } else {
      // A budget from the URL that the list lacks becomes an option of its own.
      const value = String(seconds);
      if (![...$('budget').options].some((o) => o.value === value)) {
        $('budget').append(new Option(`${value} s`, value));
      }
      $('budget').value = value;
    }
  }
  if (ignored.length) {
    $('params-note').textContent = `Ignored from the address: ${ignored.join('; ')}.`;
    $('params-note').hidden = false;
  }

  let report = null;
  $('post').addEventListener('click', async () => {
    if (!$('consent').checked || !report) return;
    $('sent').textContent = 'sending…';
    try {
      const r = await fetch(new URL('reports', collector), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Kiln-Consent': 'yes' },
        body: report,
      });
      const answer = await r.json().catch(() => ({}));
      $('sent').textContent = r.ok ? `sent (${answer.status}, id ${answer.id})` : `refused: ${answer.error ?? r.status}`;
    } catch (e) {
      $('sent').textContent = `could not reach the collector: ${e}`;
    }
  });

  // One measurement at a time on the device: the campaign waits for the walkthrough's ceilings
  // or race, and they for it, so no report is timed beside other work.
  function run() {
    $('run').disabled = true;
    const job = queue.then(campaign);
    queue = job.catch(() => {});
    return job;
  }
  async function campaign() {
    cancelled = false;
    $('run').disabled = true;
    $('cancel').disabled = false;
    $('done').hidden = true;
    document.body.dataset.state = 'running';
    const budget = Number($('budget').value);
    const began = performance.now();
    let first = null;
    try {
      report = await wasm.run_campaign(budget, navigator.userAgent, (json) => {
        const p = JSON.parse(json);
        $('progress').max = p.total;
        $('progress').value = p.done;
        $('step').textContent = `${p.done} / ${p.total}: ${p.step}${cancelled ? ' — cancelling' : `; ${campaignLeft(p, budget, began, first)}`}`;
        if (p.done > 0 && first === null) first = { at: performance.now(), done: p.done };
      }, () => cancelled);
      wasm.validate_report(report);
      const parsed = JSON.parse(report);
      render(parsed);
      // A report with no result tells the fleet nothing: it is not offered for sending.
      const empty = parsed.results.length === 0;
      $('send').hidden = empty || !collector;
      $('send-why').hidden = !empty;
      $('send-why').textContent = empty
        ? `Nothing to send: the campaign ran no variant (${cancelled ? 'it was cancelled before the first'
          : 'none could run here'}), and a report without a result tells the fleet nothing. Run it again ` +
          'to have one to send.'
        : '';
      if (empty) report = null;
      const json = report ?? JSON.stringify(parsed);
      $('download').href = URL.createObjectURL(new Blob([json], { type: 'application/json' }));
      window.kilnFleetReport = json;
      $('done').hidden = false;
      $('step').textContent = cancelled ? 'cancelled: the report lists what was skipped' : 'done';
      document.body.dataset.state = 'done';
    } catch (e) {
      fail(`The campaign failed: ${plainError(e)}`);
    } finally {
      $('run').disabled = false;
      $('cancel').disabled = true;
    }
  }
  $('run').addEventListener('click', run);
  $('run').disabled = false;
  if (params.has('autorun')) run();
}

main().catch((e) => {
  fail(`The fleet page could not start: ${plainError(e)}`);
  $('device-panel').replaceChildren(el('p', 'The page could not start: nothing to describe.', 'muted'));
});
