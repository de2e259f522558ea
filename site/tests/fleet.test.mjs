// The fleet page in headless Chromium (WebGPU on SwiftShader): a short campaign completes, its
// results render, the report downloads and validates; cancel stops a long one with what was
// skipped listed; the report reaches a collector only after the consent box is ticked; a
// browser without WebGPU gets the explanation. Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';

import { useSite } from './browser.mjs';

const site = useSite('fleet/fleet_web_bg.wasm');

const open = (path) => site.open(path);

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
  for (const r of report.results.filter((r) => r.outcome !== 'ok')) {
    console.log(`  ${r.outcome}: ${r.family} ${r.variant} on ${r.case}: ${r.error}`);
  }
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
      received.push({ consent: req.headers['x-kiln-consent'], body });
      res.writeHead(201, { ...cors, 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'stored', id: received.length }));
    });
  });
  await new Promise((ok) => collector.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${collector.address().port}`;
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
    assert.equal(JSON.parse(received[0].body).schema, 'kiln-fleet-report');
    assert.deepEqual(errors, []);
    await page.close();
  } finally {
    collector.close();
  }
});

test('a browser without WebGPU gets the explanation, not a blank page', async () => {
  const { page } = await open('/fleet.html');
  await page.addInitScript(() => { delete Navigator.prototype.gpu; });
  await page.reload();
  await page.waitForSelector('#error', { state: 'visible', timeout: 10000 });
  assert.match(await page.textContent('#error'), /no WebGPU/);
  await page.close();
});
