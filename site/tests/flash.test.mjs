// The flash page in headless Chromium (WebGPU on SwiftShader): the kernel sweep runs on load
// and draws its two charts, table and chosen variants, and the kernel-source view shows the flash
// kernels' WGSL with template values marked; a short training run through the Train button draws
// both loss curves and the ms/step bars, and its report has finite losses on both paths with a
// small drift. The walkthrough (?talk) steps through its five stages with the keys, each with a
// live visual that differs from the stage before. A browser without WebGPU, or whose adapter
// request comes back empty, gets the explanation, the sweep's CPU column and the walkthrough.
// Every stage's visual at 1920×1080 and 1280×720: its texts readable on a projector and inside it.
// Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { assertLegible, pictureTexts, useSite, smallPageTexts } from './browser.mjs';

const site = useSite('flash/flash_bg.wasm');

// SwiftShader runs the kernels on the CPU: the sweep and the training take minutes.
const SLOW = 300000;
// The sweep's GPU paths against the CPU path: at most 10× what SwiftShader measured.
const SWEEP_TOLERANCE = 4e-6;
// The same in f16 (a browser whose adapter has shader-f16), per GPU path: 10× lavapipe's f16
// sweep, flash 2.3e-4 and naive 4.3e-4 (demos/flash/tests/sweep.rs).
const SWEEP_TOLERANCE_F16 = { flash: 2e-3, naive: 4e-3 };

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

const TITLES = ['The naive way: an N×N matrix', 'Tiles and the online softmax',
  "Backward: recompute, don't store", 'Speed and memory traffic', 'Generating: flash-decoding'];

// The walkthrough's visual: its size, the standard deviation of its luminance, and a sample of
// that luminance (every 7th pixel) to compare pictures with.
function visual(page) {
  return page.evaluate(() => {
    const c = document.getElementById('flash-visual');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const lum = [];
    for (let i = 0; i < d.length; i += 4 * 7) lum.push(0.3 * d[i] + 0.59 * d[i + 1] + 0.11 * d[i + 2]);
    const mean = lum.reduce((a, b) => a + b, 0) / lum.length;
    const sd = Math.sqrt(lum.reduce((a, b) => a + (b - mean) ** 2, 0) / lum.length);
    return { width: c.width, height: c.height, sd, lum };
  });
}

// The fraction of sampled pixels that differ clearly between two pictures of one size.
function differing(a, b) {
  assert.deepEqual([a.width, a.height], [b.width, b.height], 'the visual changed size');
  return a.lum.filter((v, i) => Math.abs(v - b.lum[i]) > 24).length / a.lum.length;
}

// Waits until the visual shows stage `i` (0-based).
function shown(page, i) {
  return page.waitForFunction((n) => document.getElementById('flash-visual').dataset.stage === String(n),
    i, { timeout: 30000 });
}

const FLASH = '#ffb454';
const NAIVE = '#6cb6ff';
const CPU = '#7ee787';

test('the sweep draws its charts, then a short training run compares both paths', async () => {
  const t0 = Date.now();
  const { page, errors } = await site.open('/flash.html');
  assert.match(await page.textContent('header'), /FlashAttention-2/);
  assert.match(await page.textContent('header'), /wasm build, on one thread/);
  // Train is off in the page as served, until its module has opened the device (then it may
  // start while the sweep runs, stopping the sweep first). Read from the markup: by the time
  // the page is asked, a quick adapter has already turned it on.
  const markup = await (await fetch(site.url('/flash.html'))).text();
  assert.match(markup, /<button id="train" disabled/);
  assert.equal(await page.getAttribute('#walkthrough', 'href'), 'flash.html?talk');

  // The kernel-source view: the flash path's kernels for this adapter, template values marked.
  await page.waitForSelector('#kernels[data-ready="true"]', { timeout: 120000 });
  const kernels = await page.$$eval('#kernels details', (d) => d.map((x) => ({
    family: x.dataset.family, summary: x.querySelector('summary').textContent,
    marks: x.querySelectorAll('pre code mark').length, code: x.querySelector('pre code').textContent,
  })));
  assert.deepEqual(kernels.map((k) => k.family), ['flash_fwd', 'flash_bwd_dq', 'flash_bwd_dkdv', 'attention_delta']);
  const fwd = kernels[0];
  assert.ok(fwd.marks > 0, 'flash_fwd has no marked template values');
  assert.match(fwd.code, /@compute/);
  assert.match(fwd.summary, /flash_fwd f(32|16)_d64_\S+ — (rule|tuned)/);
  await page.waitForFunction(() => document.body.dataset.sweep, null, { timeout: 60000 });
  await settled(page, 'sweep');
  const tSweep = (Date.now() - t0) / 1000;

  const sweep = JSON.parse(await page.textContent('#sweep-report'));
  assert.deepEqual(sweep.points.map((p) => p.seq), [64, 128, 256]);
  // The GPU paths run in f16 where the adapter has shader-f16 (SwiftShader has not), and the
  // page says which and why.
  const f16 = await page.evaluate(async () => (await navigator.gpu.requestAdapter()).features.has('shader-f16'));
  assert.equal(sweep.shape.dtype, f16 ? 'f16' : 'f32');
  assert.match(await page.textContent('#device'), f16 ? /in f16 \(this adapter has shader-f16\)/ : /in f32 \(f16 needs shader-f16/);
  assert.match(await page.textContent('#sweep-summary'), new RegExp(`GPU paths in ${sweep.shape.dtype}\\.`));
  for (const p of sweep.points) {
    assert.ok(p.flash_ms > 0 && p.naive_ms > 0 && p.cpu_ms > 0, JSON.stringify(p));
    // Both GPU paths' O, dQ, dK and dV against the CPU path.
    console.log(`sweep N ${p.seq}: rel. L2 flash ${p.flash_rel_l2}, naive ${p.naive_rel_l2}`);
    const bound = f16 ? SWEEP_TOLERANCE_F16 : { flash: SWEEP_TOLERANCE, naive: SWEEP_TOLERANCE };
    for (const [e, tol] of [[p.flash_rel_l2, bound.flash], [p.naive_rel_l2, bound.naive]]) {
      assert.ok(Number.isFinite(e) && e <= tol, JSON.stringify(p));
    }
    assert.ok(p.flash_mb > 0 && p.naive_mb > p.flash_mb, JSON.stringify(p));
    assert.match(p.gpu_clock, /^(gpu_timestamps|wall_clock)$/);
  }
  assert.ok(sweep.flash_variants.length >= 2, sweep.flash_variants.join(' | '));
  const variants = await page.$$eval('#variants li', (l) => l.map((x) => x.textContent));
  assert.deepEqual(variants, sweep.flash_variants);
  assert.equal(await page.$$eval('#points tbody tr', (r) => r.length), 3);
  assert.equal(await page.textContent('#sweep-step'), 'done');
  // Where the software adapter loses to the CPU path, the summary says why.
  const last = sweep.points.at(-1);
  const summary = await page.textContent('#sweep-summary');
  assert.equal(/software one/.test(summary), last.cpu_ms < last.flash_ms, summary);
  assert.equal(await page.$eval('#sweep-progress', (p) => p.value === p.max), true);
  assertDrawn(await pixels(page, 'time-chart', [FLASH, NAIVE, CPU]), 'time chart', [FLASH, NAIVE, CPU]);
  assertDrawn(await pixels(page, 'bytes-chart', [FLASH, NAIVE]), 'bytes chart', [FLASH, NAIVE]);

  // The presets are offered with their sizes; small is the default, 10 steps the page's.
  assert.equal(await page.inputValue('#preset'), 'small');
  assert.equal(await page.inputValue('#steps'), '10');
  const options = await page.$$eval('#preset option', (o) => o.map((x) => x.textContent));
  assert.equal(options.length, 5, options.join(' | '));
  assert.match(await page.textContent('#preset-info'), /parameters.*MB per layer per step/);

  // Train with the keyboard: the button is labelled and focusable.
  const steps = 3;
  await page.fill('#steps', String(steps));
  assert.equal(await page.isDisabled('#train'), false);
  await page.focus('#train');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.body.dataset.training, null, { timeout: 60000 });
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
  // 5.6e-8 measured here (3 steps, SwiftShader, 2026-12-03): the bound is 10× that, not the
  // 5 % it was (issue 36's finding 8).
  assert.ok(Number.isFinite(r.drift) && r.drift < 5e-7, `drift ${r.drift}`);
  assert.ok(r.speedup > 0);
  assert.equal(await page.$eval('#train-progress', (p) => [p.value, p.max].join('/')), `${2 * steps}/${2 * steps}`);
  assertDrawn(await pixels(page, 'loss-chart', [FLASH, CPU]), 'loss chart', [FLASH, CPU]);
  const bars = await page.$$eval('#step-bars .bar', (b) => b.map((x) => x.getBoundingClientRect().width));
  assert.ok(bars.length === 2 && bars.every((w) => w > 0), `bars ${bars}`);
  assert.match(await page.textContent('#train-summary'), /as fast as.*drift.*%/);

  // Generate from the trained model: the GPU path (flash-decoding against its key/value cache)
  // and the CPU path each continue the prompt, the texts and both rates shown.
  assert.equal(await page.isDisabled('#generate'), false);
  await page.fill('#prompt', 'the ');
  await page.fill('#gen-tokens', '12');
  await page.click('#generate');
  await page.waitForFunction(() => document.body.dataset.generation, null, { timeout: 60000 });
  await settled(page, 'generation');
  const g = JSON.parse(await page.evaluate(() => window.kilnFlashGeneration));
  for (const path of ['gpu', 'cpu']) {
    assert.ok(g[path].text.startsWith('the ') && [...g[path].text].length === 16, `${path}: ${g[path].text}`);
    assert.ok(g[path].tokens_per_s > 0 && g[path].prefill_ms > 0, JSON.stringify(g[path]));
    assert.equal(await page.textContent(`#generated-${path}`), g[path].text);
  }
  // The paths' logits agree within a bound from measurement, as the native test's (1e-5 on
  // lavapipe), over every step until the texts part: a wrong GPU logit fails here whatever the
  // tokens. SwiftShader measured 2.94e-5 (2026-12-07): the bound is 10× that. At temperature 0
  // the texts then agree, or part where rounding tips a near-tie.
  console.log(`generation: logits within relative L2 ${g.logit_rel_l2.toExponential(2)} a step`);
  assert.ok(Number.isFinite(g.logit_rel_l2) && g.logit_rel_l2 < 3e-4, `logits ${g.logit_rel_l2}`);
  assert.ok(g.same || /near-tie/.test(g.agreement), g.agreement);
  assert.match(await page.textContent('#generate-summary'),
    /12 tokens after a 4-token prompt: GPU [\d.,]+ tokens\/s .*CPU [\d.,]+ tokens\/s/);
  // A character outside the vocabulary is refused clearly, and Generate works again after.
  await page.fill('#prompt', 'THE ');
  await page.click('#generate');
  await page.waitForFunction(() => document.body.dataset.generation === 'error', null, { timeout: 60000 });
  assert.match(await page.textContent('#generate-summary'), /Generation failed: .*vocabulary has no 'T'/);
  assert.equal(await page.isDisabled('#generate'), false);
  console.log(`sweep ${tSweep.toFixed(0)} s on ${sweep.adapter} (${sweep.points.map((p) =>
    `N=${p.seq}: flash ${p.flash_ms.toFixed(2)} naive ${p.naive_ms.toFixed(2)} cpu ${p.cpu_ms.toFixed(2)} ms`).join('; ')}), ` +
    `training ${tTrain.toFixed(0)} s: ${r.gpu_median_ms_per_step.toFixed(1)} vs ${r.cpu_median_ms_per_step.toFixed(1)} ms/step, ` +
    `drift ${r.drift.toExponential(2)}; generation ${g.gpu.tokens_per_s.toFixed(1)} vs ` +
    `${g.cpu.tokens_per_s.toFixed(1)} tokens/s, ${g.same ? 'same text' : g.agreement}`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the walkthrough steps through five stages, each with its own live visual', async () => {
  const { page, errors } = await site.open('/flash.html?talk&stage=1', { width: 1280, height: 720 });
  // The stages arrive once the device is open and the flash kernels are rendered for it.
  await page.waitForSelector('#talk[data-ready="true"]', { timeout: 120000 });
  let previous = null;
  for (let i = 0; i < TITLES.length; i++) {
    if (i > 0) await page.keyboard.press('ArrowRight');
    await shown(page, i);
    assert.equal(await page.textContent('#talk-counter'), `${i + 1} / ${TITLES.length}`);
    assert.equal(await page.textContent('#talk-title'), TITLES[i]);
    assert.equal(new URL(page.url()).searchParams.get('stage'), String(i + 1));
    const v = await visual(page);
    assert.ok(v.width >= 200 && v.height >= 200, `stage ${i + 1}: ${v.width}×${v.height}`);
    assert.ok(v.sd > 20, `stage ${i + 1}: flat visual (standard deviation ${v.sd})`);
    if (previous) {
      const d = differing(previous, v);
      assert.ok(d > 0.1, `stage ${i + 1} looks like stage ${i}: ${(100 * d).toFixed(1)} % differ`);
    }
    previous = v;
    if (i === 1) {
      // The tiles stage shows flash_fwd rendered for this adapter, template values marked.
      assert.match(await page.textContent('#talk-caption'), /^flash_fwd f32_d64_\S+ rendered for /);
      assert.ok(await page.$$eval('#talk-code mark', (m) => m.length) > 0, 'no marked template values');
    }
  }
  // Right at the last stage stays; Home goes back to the first.
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.textContent('#talk-counter'), `${TITLES.length} / ${TITLES.length}`);
  await page.keyboard.press('Home');
  await shown(page, 0);
  assert.equal(await page.textContent('#talk-counter'), `1 / ${TITLES.length}`);
  assert.equal(await page.textContent('#talk-title'), TITLES[0]);
  assert.equal(new URL(page.url()).searchParams.get('stage'), '1');
  // Live: the score matrix fills in while the stage is up.
  const a = await visual(page);
  let moved = 0;
  for (let n = 0; n < 10 && moved <= 0.005; n++) {
    await page.waitForTimeout(1000);
    moved = differing(a, await visual(page));
  }
  assert.ok(moved > 0.005, 'the first stage\'s visual did not move');
  assert.deepEqual(errors, []);
  await page.close();
});

// Stage 4's chart from its first frame: while nothing is measured the empty chart says how far
// the sweep is; once the first length is in, its one x value has one label (the axis read
// "64 … 64", the point on it, for the 40 s the next length took). The picture publishes its
// texts' words (`strings`) beside their boxes.
test('stage 4 draws a sound chart from its first frame', async () => {
  const { page, errors } = await site.open('/flash.html?talk&stage=4', { width: 1280, height: 720 });
  const began = Date.now();
  const read = () => page.evaluate(() => {
    const t = document.getElementById('flash-visual').dataset.texts;
    return t ? JSON.parse(t) : null;
  });
  const until = async (ok) => {
    let t = null;
    while (Date.now() - began < SLOW) {
      t = await read();
      if (t && ok(t)) return t;
      await page.waitForTimeout(250);
    }
    return t;
  };
  const first = await until((t) => t.stage === 3);
  assert.equal(first?.stage, 3, 'stage 4 never drew');
  assert.equal(first.strings.length, first.texts.length, 'a word for every text box');
  console.log(`stage 4 first frame after ${((Date.now() - began) / 1000).toFixed(1)} s: ` +
    JSON.stringify(first.strings.slice(0, 4)));
  const summary = (t) => t.strings.some((w) => /^N = \d+: flash/.test(w));
  if (!summary(first)) {
    assert.ok(first.strings.some((w) => /measuring N = \d+|waiting for the sweep/.test(w)),
      `the empty chart does not say how far the sweep is: ${JSON.stringify(first.strings)}`);
  }
  const t = await until(summary);
  assert.ok(summary(t), 'no length measured');
  // The time chart is the top one: its labels are the numbers drawn above the byte chart.
  const u = Math.min(t.width / 564, t.height / 720);
  const top = (t.height - 720 * u) / 2 + 316 * u;
  const labels = t.strings.filter((w, i) => t.texts[i][1] < top && /^\d+(\.\d+)?$/.test(w));
  const twice = labels.filter((w, i) => labels.indexOf(w) !== i);
  console.log(`stage 4 after the first length (${((Date.now() - began) / 1000).toFixed(0)} s): ` +
    `the time chart's numbers ${JSON.stringify(labels)}`);
  assert.deepEqual(twice, [], `a label drawn twice on the time chart: ${JSON.stringify(labels)}`);
  assert.deepEqual(errors, []);
  await page.close();
});

// A page at `path` that runs `script` before the page's own (a browser without WebGPU, …),
// recording console errors. Opened directly rather than reloaded: a page with WebGPU would start
// its sweep first, and a software adapter's first pipelines can hold its thread for a while.
async function openWith(script, path) {
  const page = await site.browser.newPage({ viewport: { width: 1280, height: 720 } });
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.addInitScript(script);
  await page.goto(site.url(path));
  return { page, errors };
}

test('a browser without WebGPU gets the explanation, the CPU column and the walkthrough', async () => {
  const { page, errors } = await openWith(() => { delete Navigator.prototype.gpu; }, '/flash.html');
  await page.waitForSelector('#error', { state: 'visible', timeout: 60000 });
  const text = await page.textContent('#error');
  assert.match(text, /no WebGPU/);
  assert.match(text, /Chrome/);
  assert.match(text, /What runs here instead: the kernel sweep's CPU column/);
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'no-webgpu');
  assert.equal(await page.evaluate(() => document.body.dataset.webgpu), 'missing');
  assert.equal(await page.isDisabled('#train'), true);
  assert.match(await page.textContent('header'), /FlashAttention-2/);

  // The fallback is real: the CPU path timed at three lengths, drawn with the byte model.
  await settled(page, 'sweep');
  const s = JSON.parse(await page.textContent('#sweep-report'));
  assert.deepEqual(s.points.map((p) => p.seq), [64, 128, 256]);
  for (const p of s.points) assert.ok(p.cpu_ms > 0 && p.naive_mb > p.flash_mb && p.flash_mb > 0, JSON.stringify(p));
  assert.match(s.cpu_path, /wasm build, one thread/);
  assert.equal(await page.$$eval('#points tbody tr', (r) => r.length), 3);
  assert.match(await page.textContent('#sweep-summary'), /only the CPU path ran here/);
  assertDrawn(await pixels(page, 'time-chart', [CPU]), 'time chart (CPU only)', [CPU]);
  assertDrawn(await pixels(page, 'bytes-chart', [FLASH, NAIVE]), 'bytes chart', [FLASH, NAIVE]);
  assert.match(await page.textContent('#kernels'), /No kernel source here/);

  // The walkthrough runs too: its stages show the CPU arithmetic, its visuals are CPU-drawn.
  await page.goto(site.url('/flash.html?talk&stage=2'));
  await page.waitForSelector('#talk[data-ready="true"]', { timeout: 30000 });
  await shown(page, 1);
  assert.equal(await page.textContent('#talk-title'), TITLES[1]);
  assert.match(await page.textContent('#talk-caption'), /no WebGPU/);
  assert.match(await page.textContent('#talk-code'), /alpha/);
  const v = await visual(page);
  assert.ok(v.sd > 20, `flat visual: standard deviation ${v.sd}`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a browser whose adapter request comes back empty gets the explanation too', async () => {
  const { page } = await openWith(() => { GPU.prototype.requestAdapter = async () => null; }, '/flash.html');
  await page.waitForSelector('#error', { state: 'visible', timeout: 60000 });
  assert.match(await page.textContent('#error'), /offers no adapter/);
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'no-webgpu');
  await page.close();
});

// Every walkthrough stage at a projector's 1920×1080 and at 1280×720: each text the visual draws
// (demos/flash/src/chart.rs records them) is at least 18 px tall on screen at 1920×1080 (12 px at
// 1280×720: the same share of the screen) and lies inside the picture. The visuals are drawn on
// the CPU; the page with WebGPU, as a speaker shows it (without, the explanation above the
// walkthrough leaves the visual less room).
for (const [width, height] of [[1920, 1080], [1280, 720]]) {
  test(`walkthrough text is readable and inside the picture at ${width}×${height}`, async () => {
    const { page, errors } = await site.open('/flash.html?talk&stage=1', { width, height });
    await page.waitForSelector('#talk[data-ready="true"]', { timeout: 120000 });
    const least = (18 * height) / 1080;
    for (let stage = 0; stage < TITLES.length; stage++) {
      if (stage > 0) await page.keyboard.press('ArrowRight');
      await page.waitForFunction((s) => {
        const t = document.getElementById('flash-visual').dataset.texts;
        return t && JSON.parse(t).stage === s && JSON.parse(t).texts.length >= 5;
      }, stage, { timeout: 30000 });
      // A few moments of the stage's animation.
      for (let n = 0; n < 3; n++) {
        if (n > 0) await page.waitForTimeout(750);
        const r = await pictureTexts(page, 'flash-visual');
        if (n === 0) console.log(`${width}×${height} stage ${stage + 1}: ${r.texts} texts, smallest ${r.smallest.toFixed(1)} px, canvas ${r.size}`);
        assertLegible(r, least, stage);
      }
      assert.deepEqual(await smallPageTexts(page, least), [], `stage ${stage + 1}: the page's own text under ${least} px`);
    }
    assert.deepEqual(errors, []);
    await page.close();
  });
}
