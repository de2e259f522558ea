// The flash page in headless Chromium (WebGPU on SwiftShader): the kernel sweep runs on load
// and draws its two charts, table and chosen variants; a short training run through the Train
// button draws both loss curves and the ms/step bars, and its report has finite losses on both
// paths with a small drift; a browser without WebGPU, or whose adapter request comes back empty,
// gets the explanation. Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { useSite } from './browser.mjs';

const site = useSite('flash/flash_bg.wasm');

// SwiftShader runs the kernels on the CPU: the sweep and the training take minutes.
const SLOW = 300000;

async function settled(page, key) {
  await page.waitForFunction((k) => ['done', 'error'].includes(document.body.dataset[k]),
    key, { timeout: SLOW });
  const state = await page.evaluate((k) => document.body.dataset[k], key);
  assert.equal(state, 'done', await page.textContent('#error'));
}

// Pixels of a chart canvas that differ from its background (read at the top-left corner), and
// how many are (nearly) each of the given colours.
function pixels(page, id, colors) {
  return page.evaluate(([id, colors]) => {
    const c = document.getElementById(id);
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const hex = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
    const want = colors.map(hex);
    const bg = [d[0], d[1], d[2]];
    const out = { width: c.width, height: c.height, drawn: 0, colors: colors.map(() => 0) };
    for (let i = 0; i < d.length; i += 4) {
      const px = [d[i], d[i + 1], d[i + 2]];
      if (px.some((v, k) => Math.abs(v - bg[k]) > 8)) out.drawn++;
      want.forEach((w, j) => { if (px.every((v, k) => Math.abs(v - w[k]) <= 6)) out.colors[j]++; });
    }
    return out;
  }, [id, colors]);
}

function assertDrawn(p, name, colors) {
  assert.ok(p.width > 0 && p.height > 0, `${name}: ${p.width}×${p.height}`);
  assert.ok(p.drawn > 0.01 * p.width * p.height, `${name}: only ${p.drawn} drawn pixels`);
  p.colors.forEach((n, i) => assert.ok(n > 20, `${name}: colour ${colors[i]} has ${n} pixels`));
}

const FLASH = '#ffb454';
const NAIVE = '#6cb6ff';
const CPU = '#7ee787';

test('the sweep draws its charts, then a short training run compares both paths', async () => {
  const t0 = Date.now();
  const { page, errors } = await site.open('/flash.html');
  assert.match(await page.textContent('header'), /FlashAttention-2/);
  assert.match(await page.textContent('header'), /wasm build, on one thread/);
  // Train waits for the sweep.
  assert.equal(await page.isDisabled('#train'), true);
  await page.waitForFunction(() => document.body.dataset.sweep, null, { timeout: 60000 });
  await settled(page, 'sweep');
  const tSweep = (Date.now() - t0) / 1000;

  const sweep = JSON.parse(await page.textContent('#sweep-report'));
  assert.deepEqual(sweep.points.map((p) => p.seq), [64, 128, 256]);
  for (const p of sweep.points) {
    assert.ok(p.flash_ms > 0 && p.naive_ms > 0 && p.cpu_ms > 0, JSON.stringify(p));
    assert.ok(p.flash_mb > 0 && p.naive_mb > p.flash_mb, JSON.stringify(p));
    assert.match(p.gpu_clock, /^(gpu_timestamps|wall_clock)$/);
  }
  assert.ok(sweep.flash_variants.length >= 2, sweep.flash_variants.join(' | '));
  const variants = await page.$$eval('#variants li', (l) => l.map((x) => x.textContent));
  assert.deepEqual(variants, sweep.flash_variants);
  assert.equal(await page.$$eval('#points tbody tr', (r) => r.length), 3);
  assert.equal(await page.textContent('#sweep-step'), 'done');
  assert.equal(await page.$eval('#sweep-progress', (p) => p.value === p.max), true);
  assertDrawn(await pixels(page, 'time-chart', [FLASH, NAIVE, CPU]), 'time chart', [FLASH, NAIVE, CPU]);
  assertDrawn(await pixels(page, 'bytes-chart', [FLASH, NAIVE]), 'bytes chart', [FLASH, NAIVE]);

  // The presets are offered with their sizes; small is the default, 10 steps the page's.
  assert.equal(await page.inputValue('#preset'), 'small');
  assert.equal(await page.inputValue('#steps'), '10');
  const options = await page.$$eval('#preset option', (o) => o.map((x) => x.textContent));
  assert.equal(options.length, 4, options.join(' | '));
  assert.match(await page.textContent('#preset-info'), /parameters.*MB per layer per step/);

  // Train with the keyboard: the button is labelled and focusable.
  const steps = 3;
  await page.fill('#steps', String(steps));
  assert.equal(await page.isDisabled('#train'), false);
  await page.focus('#train');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.body.dataset.training, null, { timeout: 10000 });
  assert.equal(await page.isDisabled('#train'), true, 'Train stays enabled while training');
  await settled(page, 'training');
  const tTrain = (Date.now() - t0) / 1000 - tSweep;
  assert.equal(await page.isDisabled('#train'), false);

  const r = JSON.parse(await page.textContent('#report'));
  assert.equal(r.preset, 'small');
  assert.equal(r.steps, steps);
  for (const path of ['gpu', 'cpu']) {
    assert.equal(r[path].losses.length, steps, path);
    assert.ok(r[path].losses.every(Number.isFinite), `${path}: ${r[path].losses}`);
    assert.ok(r[path].step_ms.every((ms) => ms > 0), `${path}: ${r[path].step_ms}`);
  }
  assert.match(r.gpu.path, /WebGPU/);
  assert.match(r.cpu.path, /wasm build, one thread/);
  assert.ok(Number.isFinite(r.drift) && r.drift < 0.05, `drift ${r.drift}`);
  assert.ok(r.speedup > 0);
  assert.equal(await page.$eval('#train-progress', (p) => [p.value, p.max].join('/')), `${2 * steps}/${2 * steps}`);
  assertDrawn(await pixels(page, 'loss-chart', [FLASH, CPU]), 'loss chart', [FLASH, CPU]);
  const bars = await page.$$eval('#step-bars .bar', (b) => b.map((x) => x.getBoundingClientRect().width));
  assert.ok(bars.length === 2 && bars.every((w) => w > 0), `bars ${bars}`);
  assert.match(await page.textContent('#train-summary'), /as fast as.*drift.*%/);
  console.log(`sweep ${tSweep.toFixed(0)} s on ${sweep.adapter} (${sweep.points.map((p) =>
    `N=${p.seq}: flash ${p.flash_ms.toFixed(2)} naive ${p.naive_ms.toFixed(2)} cpu ${p.cpu_ms.toFixed(2)} ms`).join('; ')}), ` +
    `training ${tTrain.toFixed(0)} s: ${r.gpu_median_ms_per_step.toFixed(1)} vs ${r.cpu_median_ms_per_step.toFixed(1)} ms/step, ` +
    `drift ${r.drift.toExponential(2)}`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a browser without WebGPU gets the explanation, not a blank page', async () => {
  const { page } = await site.open('/flash.html');
  await page.addInitScript(() => { delete Navigator.prototype.gpu; });
  await page.reload();
  await page.waitForSelector('#error', { state: 'visible', timeout: 10000 });
  const text = await page.textContent('#error');
  assert.match(text, /no WebGPU/);
  assert.match(text, /Chrome/);
  assert.match(text, /without a GPU neither can run here/);
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'no-webgpu');
  assert.equal(await page.isDisabled('#train'), true);
  assert.match(await page.textContent('header'), /FlashAttention-2/);
  await page.close();
});

test('a browser whose adapter request comes back empty gets the explanation too', async () => {
  const { page } = await site.open('/flash.html');
  await page.addInitScript(() => { GPU.prototype.requestAdapter = async () => null; });
  await page.reload();
  await page.waitForSelector('#error', { state: 'visible', timeout: 10000 });
  assert.match(await page.textContent('#error'), /offered no adapter/);
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'no-webgpu');
  await page.close();
});
