// The fleet page: runs the campaign (wasm, WebGPU), shows per case the fastest variants as bars
// and every wrong or failed one, offers the report as a download and, only when the user ticks
// the consent box, sends it to the collector named by ?collector=URL.
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
let cancelled = false;

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

// The checked-in reports (copied into the site at build time) and their merged choices.
async function showFleet(wasm) {
  const index = await (await fetch('fleet/reports/index.json')).json();
  const reports = [];
  for (const name of index) reports.push(await (await fetch(`fleet/reports/${name}`)).json());
  $('devices').replaceChildren(...reports.map((r) => el('li',
    `${r.device.name} (${r.device.backend}, ${r.platform.driver}): ${r.results.length} variants, ` +
    `copy ${r.ceilings.copy_gb_per_s.toFixed(0)} GB/s, FMA ${r.ceilings.fma_gflop_per_s.toFixed(0)} GFLOP/s`)));
  const picks = JSON.parse(wasm.merge_reports(JSON.stringify(reports)));
  $('picks').tBodies[0].replaceChildren(...picks.map((p) => {
    const tr = el('tr');
    for (const v of [p.class, p.family, p.bucket || '(any)', p.variant, p.worst_ms.toFixed(4)]) tr.append(el('td', v));
    return tr;
  }));
  document.body.dataset.fleet = String(picks.length);
}

async function main() {
  if (!navigator.gpu) {
    fail('This browser has no WebGPU, and the campaign measures WebGPU kernels: there is no CPU ' +
         'fallback for it. Use a current Chrome or Edge, Safari 26, or Firefox 141+ (on Linux, ' +
         'Chrome needs --enable-unsafe-webgpu).');
    return;
  }
  const wasm = await import('./fleet/fleet_web.js');
  await wasm.default();
  const collector = params.get('collector');
  if (collector) {
    $('collector').textContent = collector;
    $('send').hidden = false;
  }
  $('consent').addEventListener('change', () => { $('post').disabled = !$('consent').checked; });
  $('cancel').addEventListener('click', () => { cancelled = true; $('step').textContent = 'cancelling…'; });
  if (params.has('budget')) {
    // A budget from the URL that the list lacks becomes an option of its own.
    const seconds = String(Number(params.get('budget')));
    if (![...$('budget').options].some((o) => o.value === seconds)) {
      $('budget').append(new Option(`${seconds} s`, seconds));
    }
    $('budget').value = seconds;
  }

  let report = null;
  $('post').addEventListener('click', async () => {
    if (!$('consent').checked || !report) return;
    $('sent').textContent = 'sending…';
    try {
      const r = await fetch(`${collector}/reports`, {
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

  async function run() {
    cancelled = false;
    $('run').disabled = true;
    $('cancel').disabled = false;
    $('done').hidden = true;
    document.body.dataset.state = 'running';
    const budget = Number($('budget').value);
    try {
      report = await wasm.run_campaign(budget, navigator.userAgent, (json) => {
        const p = JSON.parse(json);
        $('progress').max = p.total;
        $('progress').value = p.done;
        $('step').textContent = `${p.done} / ${p.total}: ${p.step}`;
      }, () => cancelled);
      wasm.validate_report(report);
      render(JSON.parse(report));
      $('download').href = URL.createObjectURL(new Blob([report], { type: 'application/json' }));
      window.kilnFleetReport = report;
      $('done').hidden = false;
      $('step').textContent = cancelled ? 'cancelled: the report lists what was skipped' : 'done';
      document.body.dataset.state = 'done';
    } catch (e) {
      fail(`The campaign failed: ${e}`);
    } finally {
      $('run').disabled = false;
      $('cancel').disabled = true;
    }
  }
  $('run').addEventListener('click', run);
  showFleet(wasm).catch((e) => {
    $('devices').replaceChildren(el('li', `the checked-in reports could not be read: ${e}`));
  });
  if (params.has('autorun')) run();
}

main().catch((e) => fail(`The fleet page could not start: ${e}`));
