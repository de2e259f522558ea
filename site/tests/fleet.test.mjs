// The fleet page in headless Chromium (WebGPU on SwiftShader): a short campaign completes, its
// results render, the report downloads and validates; cancel stops a long one with what was
// skipped listed; the report reaches a collector only after the consent box is ticked; the
// walkthrough (?talk) steps through four live stages; the kernel-source view shows the
// selector's picks; a browser without WebGPU gets the explanation and the merged reports.
// Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';

import { boxShot, useSite, smallPageTexts } from './browser.mjs';

const site = useSite('fleet/fleet_web_bg.wasm');

const open = (path) => site.open(path);

// Decodes PNGs in the page: mean and spread of the grey levels of one, and the share of pixels
// whose grey level differs by more than 4/255 between two (1 when their sizes differ).
async function pixels(page, pngs) {
  return page.evaluate(async (list) => {
    const grey = async (b64) => {
      const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
      const bitmap = await createImageBitmap(blob);
      const ctx = new OffscreenCanvas(bitmap.width, bitmap.height).getContext('2d');
      ctx.drawImage(bitmap, 0, 0);
      const { data } = ctx.getImageData(0, 0, bitmap.width, bitmap.height);
      const out = new Float32Array(data.length / 4);
      for (let i = 0; i < out.length; i++) out[i] = (data[4 * i] + data[4 * i + 1] + data[4 * i + 2]) / 3;
      return out;
    };
    const [p, q] = await Promise.all(list.map(grey));
    let sum = 0, sq = 0;
    for (const v of p) { sum += v / 255; sq += (v / 255) ** 2; }
    const mean = sum / p.length;
    const result = { mean, std: Math.sqrt(Math.max(0, sq / p.length - mean * mean)) };
    if (q) {
      let n = 0;
      if (p.length === q.length) for (let i = 0; i < p.length; i++) if (Math.abs(p[i] - q[i]) > 4) n++;
      result.changed = p.length === q.length ? n / p.length : 1;
    }
    return result;
  }, pngs.map((b) => b.toString('base64')));
}

async function finished(page) {
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state),
    null, { timeout: 300000 });
  const state = await page.evaluate(() => document.body.dataset.state);
  assert.equal(state, 'done', await page.textContent('#error'));
}

// The downloadable report, read through its link as a user's browser would.
async function downloaded(page) {
  return page.evaluate(async () => {
    const r = await fetch(document.getElementById('download').href);
    return r.json();
  });
}

test('a short campaign completes, renders its results and offers a valid report', async () => {
  const { page, errors } = await open('/fleet.html?budget=15&autorun');
  await finished(page);
  const report = await downloaded(page);
  assert.equal(report.schema, 'kiln-fleet-report');
  assert.equal(report.version, 1);
  assert.equal(report.platform.os, 'web');
  assert.match(report.platform.browser, /Chrome/);
  assert.equal(report.device.backend, 'webgpu');
  const ok = report.results.filter((r) => r.outcome === 'ok');
  const families = new Set(ok.map((r) => r.family));
  console.log(`${report.results.length} results (${ok.length} ok) over ${families.size} families, ` +
    `${report.skipped.length} skipped, ${report.elapsed_s.toFixed(1)} s on ${report.device.name}`);
  // A wrong or failed variant in the browser is a defect of that variant, as natively: the
  // test fails on it, listing each.
  const bad = report.results.filter((r) => r.outcome !== 'ok')
    .map((r) => `${r.outcome}: ${r.family} ${r.variant} on ${r.case}: ${r.error}`);
  assert.deepEqual(bad, [], bad.join('\n'));
  assert.ok(families.size >= 5, `only ${[...families]}`);
  assert.ok(ok.every((r) => r.timing.median_ms > 0 && r.rel_l2 <= r.tolerance));
  const sections = await page.$$eval('#results .case', (s) => s.length);
  assert.ok(sections >= 5, `${sections} cases rendered`);
  const bars = await page.$$eval('#results .bar', (b) => b.map((x) => x.getBoundingClientRect().width));
  assert.ok(bars.length >= 5 && bars.every((w) => w > 0), `bars ${bars}`);
  assert.match(await page.textContent('#summary'), /Ceilings: copy .* GB\/s/);
  // No collector named: nothing offers to send the report.
  assert.equal(await page.isVisible('#send'), false);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the page merges the checked-in reports and shows the choices per device class', async () => {
  const { page, errors } = await open('/fleet.html');
  await page.waitForFunction(() => Number(document.body.dataset.fleet) > 0, null, { timeout: 60000 });
  const devices = await page.$$eval('#devices li', (l) => l.map((x) => x.textContent));
  assert.ok(devices.some((d) => d.includes('NVIDIA H200')), devices.join(' | '));
  assert.ok(devices.some((d) => d.includes('llvmpipe')), devices.join(' | '));
  const rows = await page.$$eval('#picks tbody tr', (r) => r.map((x) => x.textContent));
  assert.ok(rows.length >= 20, `${rows.length} rows`);
  assert.ok(rows.some((r) => r.includes('vulkan/discrete/10de')), rows[0]);
  assert.deepEqual(errors, []);
  await page.close();
});

test('cancel stops a long campaign and the report lists what was skipped', async () => {
  const { page, errors } = await open('/fleet.html?budget=300&autorun');
  await page.waitForFunction(() => document.getElementById('progress').value > 3, null, { timeout: 120000 });
  await page.click('#cancel');
  await finished(page);
  const report = await downloaded(page);
  assert.ok(report.skipped.length > 0);
  assert.ok(report.skipped.every((s) => s.why === 'the campaign was cancelled'), report.skipped[0]?.why);
  assert.match(await page.textContent('#step'), /cancelled/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the report goes to the collector only after the user consents', async () => {
  const received = [];
  const collector = createServer((req, res) => {
    const cors = {
      'access-control-allow-origin': '*',
      'access-control-allow-headers': 'content-type, x-kiln-consent',
      'access-control-allow-methods': 'POST',
    };
    if (req.method === 'OPTIONS') { res.writeHead(204, cors); return res.end(); }
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      received.push({ consent: req.headers['x-kiln-consent'], path: req.url, body });
      res.writeHead(201, { ...cors, 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'stored', id: received.length }));
    });
  });
  await new Promise((ok) => collector.listen(0, '127.0.0.1', ok));
  // With a trailing slash, as a visitor may write it: the report still goes to /reports.
  const url = `http://127.0.0.1:${collector.address().port}/`;
  try {
    const { page, errors } = await open(`/fleet.html?budget=5&autorun&collector=${encodeURIComponent(url)}`);
    await finished(page);
    assert.equal(await page.isVisible('#send'), true);
    assert.equal(await page.isDisabled('#post'), true, 'Send is enabled before consent');
    assert.equal(received.length, 0);
    await page.check('#consent');
    await page.click('#post');
    await page.waitForFunction(() => document.getElementById('sent').textContent.startsWith('sent'),
      null, { timeout: 30000 });
    assert.equal(received.length, 1);
    assert.equal(received[0].consent, 'yes');
    assert.equal(received[0].path, '/reports');
    assert.equal(JSON.parse(received[0].body).schema, 'kiln-fleet-report');
    assert.deepEqual(errors, []);
    await page.close();
  } finally {
    collector.close();
  }
});

test('bad budget and collector parameters are left out, and the page says so', async () => {
  // Issue 36's finding 5: budget=abc added "NaN s", -5 and 1e9 were offered, and
  // collector=javascript:… was offered as a collector.
  for (const [query, note] of [
    ['budget=abc&collector=javascript:alert(1)', /collector=javascript:alert\(1\) \(not an http or https address\).*budget=abc/],
    ['budget=-5', /budget=-5 \(give whole seconds from 5 to 3600\)/],
    ['budget=1e9', /budget=1e9/],
    ['budget=2.5', /budget=2\.5/],
  ]) {
    const { page, errors } = await open(`/fleet.html?${query}`);
    await page.waitForSelector('#params-note:not([hidden])', { timeout: 60000 });
    assert.match(await page.textContent('#params-note'), note, query);
    const options = await page.$$eval('#budget option', (o) => o.map((x) => x.value));
    assert.deepEqual(options, ['15', '60', '300'], query);
    assert.equal(await page.inputValue('#budget'), '60', query);
    assert.equal(await page.isHidden('#send'), true, `${query}: a collector offered`);
    assert.deepEqual(errors, []);
    await page.close();
  }
  // A whole number of seconds in range is offered and chosen; nothing is said.
  const { page, errors } = await open('/fleet.html?budget=7');
  await page.waitForFunction(() => document.getElementById('budget').value === '7', null, { timeout: 60000 });
  assert.equal(await page.isHidden('#params-note'), true);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the walkthrough steps through four live stages at 1280×720', async () => {
  const { page, errors } = await open('/fleet.html?talk&stage=1');
  await page.waitForSelector('#talk[data-ready]', { timeout: 60000 });
  const state = () => page.evaluate(() => ({
    counter: document.getElementById('talk-counter').textContent,
    title: document.getElementById('talk-title').textContent,
    stage: new URL(location.href).searchParams.get('stage'),
    visuals: [...document.querySelectorAll('#talk-visuals > [data-talk-visual]')]
      .filter((v) => !v.hidden && v.getBoundingClientRect().height > 0).map((v) => v.id),
  }));
  const shot = () => boxShot(page.locator('#talk-visuals'));
  const fills = (selector) => page.$$eval(selector, (f) => f.map((x) => x.getBoundingClientRect().width));
  const shots = [];

  // 1: the census of this adapter.
  assert.deepEqual(await state(), { counter: '1 / 4', title: 'Device census', stage: '1', visuals: ['device'] });
  await page.waitForSelector('#device-panel[data-ready]', { timeout: 60000 });
  assert.match(await page.textContent('#device-panel .device-name'), /\S/);
  assert.match(await page.textContent('#device-panel'), /webgpu · /);
  assert.equal(await page.locator('#device-panel .chips li').count(), 4);
  assert.ok((await fills('#device-panel .fill')).filter((w) => w > 0).length >= 8, 'limit and variant bars');
  assert.match(await page.textContent('#talk-code'), /pub struct DeviceProfile/);
  // The race starts at its stage: until then the verdict does not claim it is running.
  assert.match(await page.textContent('#verdict-result'), /has not started yet/);
  shots.push(await shot());

  // 2: the ceilings, measured live beside the fleet's devices.
  await page.keyboard.press('ArrowRight');
  assert.deepEqual(await state(), { counter: '2 / 4', title: 'Ceilings', stage: '2', visuals: ['ceilings'] });
  await page.waitForFunction(() => document.getElementById('ceilings').dataset.done, null, { timeout: 120000 });
  const here = await fills('#ceiling-bars .hbar.here .fill');
  assert.equal(here.length, 2);
  assert.ok(here.every((w) => w > 0), `ceiling bars ${here}`);
  const figures = await page.$$eval('#ceiling-bars .figure', (f) => f.map((x) => x.textContent));
  assert.match(figures.join(' '), /^[\d.]+ GB\/s [\d.]+ GFLOP\/s$/);
  assert.ok((await page.$$eval('#ceiling-bars .hbar.reference', (r) => r.map((x) => x.textContent)))
    .some((t) => t.includes('NVIDIA H200')), 'the fleet\'s devices beside this one');
  assert.match(await page.textContent('#talk-caption'), /^fma_chain /);
  shots.push(await shot());

  // 3: the race; bars appear as samples arrive, and every correct racer ends timed.
  await page.keyboard.press('ArrowRight');
  assert.deepEqual(await state(), { counter: '3 / 4', title: 'Variants racing', stage: '3', visuals: ['race'] });
  await page.waitForFunction(() => Number(document.getElementById('race').dataset.samples) > 0, null, { timeout: 240000 });
  const early = await fills('#race-bars .fill');
  await page.waitForFunction(() => document.getElementById('race').dataset.done, null, { timeout: 240000 });
  const late = await fills('#race-bars .fill');
  const racers = await page.$$eval('#race-bars .hbar', (r) => r.map((x) => ({ cls: x.className, text: x.textContent })));
  console.log(`race: ${racers.map((r) => r.text).join(' | ')}`);
  assert.ok(racers.length >= 3, `${racers.length} racers`);
  assert.equal(racers.filter((r) => r.cls.includes('picked')).length, 1, 'the selector\'s pick races');
  assert.ok(early.filter((w) => w > 0).length < late.filter((w) => w > 0).length, `bars grew: ${early} → ${late}`);
  assert.ok(racers.every((r, i) => late[i] > 0 || /wrong|failed/.test(r.cls)), 'every correct racer was timed');
  shots.push(await shot());

  // 4: the tuned choice against the race, and the tuned table's matmul rows.
  await page.keyboard.press('ArrowRight');
  assert.deepEqual(await state(), { counter: '4 / 4', title: 'The tuned choice', stage: '4', visuals: ['verdict', 'fleet'] });
  const verdict = await page.textContent('#verdict-result');
  console.log(`verdict: ${verdict}`);
  assert.match(verdict, /^The race (agrees|differs)/);
  const pick = await page.textContent('#verdict-pick code');
  assert.match(await page.textContent('#talk-text'), new RegExp(pick));
  const rows = await page.$$eval('#picks tbody tr', (r) => r.filter((x) => x.getBoundingClientRect().height > 0)
    .map((x) => x.dataset.family));
  assert.ok(rows.length >= 2 && rows.every((f) => f === 'matmul'), `visible rows ${rows}`);
  shots.push(await shot());

  for (const [i, png] of shots.entries()) {
    const s = await pixels(page, i ? [png, shots[i - 1]] : [png]);
    console.log(`stage ${i + 1}: mean ${s.mean.toFixed(3)}, spread ${s.std.toFixed(3)}` +
      (i ? `, ${(100 * s.changed).toFixed(1)} % changed from stage ${i}` : ''));
    assert.ok(s.std > 0.05, `stage ${i + 1}: no contrast`);
    if (i) assert.ok(s.changed > 0.02, `stage ${i + 1} looks like stage ${i}`);
  }

  // The keys: past the end stays, Home to the first, End to the last; the URL follows.
  await page.keyboard.press('ArrowRight');
  assert.equal((await state()).counter, '4 / 4');
  await page.keyboard.press('Home');
  assert.deepEqual(await state(), { counter: '1 / 4', title: 'Device census', stage: '1', visuals: ['device'] });
  await page.keyboard.press('End');
  assert.equal((await state()).stage, '4');
  assert.deepEqual(errors, []);
  await page.close();
});

test('the kernel-source view shows the selector\'s picks on this device, why, and marked WGSL', async () => {
  const { page, errors } = await open('/fleet.html');
  await page.waitForSelector('#kernels[data-ready]', { timeout: 60000 });
  const kernels = await page.$$eval('#kernels details.kernel', (list) => list.map((d) => ({
    family: d.dataset.family,
    summary: d.querySelector('summary').textContent,
    values: d.querySelectorAll('table.values tr').length,
    marks: d.querySelectorAll('pre code mark').length,
    code: d.querySelector('pre code').textContent,
  })));
  console.log(`kernels: ${kernels.map((k) => k.summary).join(' | ')}`);
  const families = kernels.map((k) => k.family);
  for (const f of ['matmul', 'softmax', 'layernorm', 'add', 'copy', 'fma_chain']) {
    assert.ok(families.includes(f), `no ${f}: ${families}`);
  }
  for (const k of kernels) {
    assert.match(k.summary, /tuned table: class|rule: /, k.summary);
    assert.ok(k.values > 0 && k.marks > 0, `${k.family}: ${k.values} values, ${k.marks} marks`);
    assert.match(k.code, /@compute/);
  }
  await page.click('#kernels details.kernel[data-family="matmul"] summary');
  assert.ok(await page.isVisible('#kernels details.kernel[data-family="matmul"] pre'));
  assert.equal(await page.getAttribute('#walkthrough', 'href'), 'fleet.html?talk');
  assert.equal(await page.textContent('#walkthrough'), 'Walkthrough (4 stages)');
  await page.waitForSelector('#device-panel[data-ready]');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a browser without WebGPU gets the explanation and the merged reports, not a blank page', async () => {
  const { page } = await open('/fleet.html');
  await page.addInitScript(() => { delete Navigator.prototype.gpu; });
  await page.reload();
  // The explanation follows the page's module loads: give a loaded machine time (10 s ran out once).
  await page.waitForSelector('#error', { state: 'visible', timeout: 60000 });
  assert.match(await page.textContent('#error'), /no WebGPU/);
  assert.match(await page.textContent('#error'), /merged in this page/);
  await page.waitForFunction(() => Number(document.body.dataset.fleet) > 0, null, { timeout: 60000 });
  assert.ok(await page.isDisabled('#run'));
  await page.close();
});

// Every walkthrough stage at a projector's 1920×1080 and at 1280×720: each text of the stage's
// visual (HTML here) is at least 18 px tall at 1920×1080 (12 px at 1280×720), lies inside the
// visuals' column, is not cut by its box (the fleet's 37538 GFLOP/s, a long device name) and
// wraps between words only (a device class after a slash).
for (const [width, height] of [[1920, 1080], [1280, 720]]) {
  test(`walkthrough text is readable and inside the picture at ${width}×${height}`, async () => {
    const { page, errors } = await site.open('/fleet.html?talk&stage=1', { width, height });
    await page.waitForSelector('#talk[data-ready]', { timeout: 60000 });
    await page.waitForSelector('#device-panel[data-ready]', { timeout: 60000 });
    await page.waitForFunction(() => Number(document.body.dataset.fleet) > 0, null, { timeout: 60000 });
    const least = (18 * height) / 1080;
    for (let stage = 0; stage < 4; stage++) {
      if (stage > 0) await page.keyboard.press('ArrowRight');
      await page.waitForTimeout(1500);
      const r = await page.evaluate(() => {
        const column = document.getElementById('talk-visuals').getBoundingClientRect();
        const out = { texts: 0, smallest: Infinity, outside: [], cut: [], split: [] };
        const walker = document.createTreeWalker(document.getElementById('talk-visuals'), NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const e = node.parentElement;
          if (!node.textContent.trim() || !e.getClientRects().length) continue;
          const range = document.createRange();
          range.selectNodeContents(node);
          const rects = [...range.getClientRects()].filter((b) => b.width > 0);
          if (!rects.length) continue;
          out.texts++;
          out.smallest = Math.min(out.smallest, parseFloat(getComputedStyle(e).fontSize));
          const what = node.textContent.trim().slice(0, 40);
          if (rects.some((b) => b.left < column.left - 0.5 || b.right > column.right + 0.5
            || b.top < column.top - 0.5 || b.bottom > column.bottom + 0.5)) out.outside.push(what);
          if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible') out.cut.push(what);
          // Each word on one line.
          for (const m of node.textContent.matchAll(/\S+/g)) {
            const w = document.createRange();
            w.setStart(node, m.index);
            w.setEnd(node, m.index + m[0].length);
            const lines = new Set([...w.getClientRects()].filter((b) => b.width > 0).map((b) => Math.round(b.top)));
            if (lines.size > 1) out.split.push(m[0]);
          }
        }
        return out;
      });
      console.log(`${width}×${height} stage ${stage + 1}: ${r.texts} texts, smallest ${r.smallest.toFixed(1)} px`);
      assert.ok(r.texts >= 3, `stage ${stage + 1}: ${r.texts} texts`);
      assert.ok(r.smallest >= least - 0.01, `stage ${stage + 1}: text ${r.smallest.toFixed(1)} px tall, under ${least}`);
      assert.deepEqual(r.outside, [], `stage ${stage + 1}: texts outside the visuals' column`);
      assert.deepEqual(r.cut, [], `stage ${stage + 1}: texts cut by their box`);
      assert.deepEqual(r.split, [], `stage ${stage + 1}: words broken across lines`);
      assert.deepEqual(await smallPageTexts(page, least), [], `stage ${stage + 1}: the page's own text under ${least} px`);
    }
    assert.deepEqual(errors, []);
    await page.close();
  });
}
