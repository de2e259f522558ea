// The attention page in headless Chromium (WebGPU on SwiftShader): it starts on the built-in
// weights, says they are synthetic, takes a typed sentence, draws the heatmap over its tokens,
// reads a weight under the pointer, switches to the CPU path, lists its kernels with the
// template values marked, steps through the ten-stage walkthrough at 1280×720, falls back to the
// CPU path without WebGPU, and logs no console error. Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { assertLegible, boxShot, changedShare, pictureTexts, pixelStats, useSite, walkStages, smallPageTexts } from './browser.mjs';

const site = useSite('attention/attention_bg.wasm');

const hud = (page) => page.textContent('#hud');

// Colour variety in the canvas's right half (the heatmap), decoded by the browser.
async function heatmapColours(page) {
  const png = await boxShot(page.locator('#canvas'));
  return page.evaluate(async (b64) => {
    const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
    const bitmap = await createImageBitmap(blob);
    const ctx = new OffscreenCanvas(bitmap.width, bitmap.height).getContext('2d');
    ctx.drawImage(bitmap, 0, 0);
    const x0 = Math.floor(bitmap.width * 0.4);
    const { data } = ctx.getImageData(x0, 0, bitmap.width - x0, Math.floor(bitmap.height * 0.7));
    const colours = new Set();
    for (let i = 0; i < data.length; i += 4) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
    return colours.size;
  }, png.toString('base64'));
}

test('the attention page takes a sentence and draws its heatmap', async () => {
  const { page, errors } = await site.open(`/attention.html?model=synthetic`, { width: 1280, height: 1100 });
  await page.waitForFunction(() => /tokens: \[CLS\] the cat/.test(document.getElementById('hud').textContent),
    null, { timeout: 90000 });
  let text = await hud(page);
  console.log(text.split('\n').slice(0, 8).join(' | '));
  assert.match(text, /adapter: .*\(webgpu\)/);
  assert.match(text, /SYNTHETIC/);
  assert.match(text, /GPU in f32/);
  assert.match(await page.textContent('#weights'), /synthetic/);
  assert.match(await page.textContent('#code'), /fn encoder_layer<B: Backend>/);

  // Type a new sentence: the tokens and the heatmap follow.
  await page.fill('#text', 'the dog ran in the park');
  await page.waitForFunction(() => /tokens:\s+\[CLS\]\s+the\s+dog\s+ran\s+in\s+the\s+park\s+\[SEP\]/.test(document.getElementById('hud').textContent),
    null, { timeout: 60000 });
  await page.addStyleTag({ content: '#hud { visibility: hidden; }' });
  await page.waitForTimeout(1500);
  const colours = await heatmapColours(page);
  console.log(`heatmap region: ${colours} distinct colours`);
  assert.ok(colours > 20, `the heatmap region is nearly blank: ${colours} colours`);

  // The pointer over the heatmap reads a weight.
  const box = await page.locator('#canvas').boundingBox();
  // (940, 246) of the 1600×900 view: the first cell (demos/attention/src/heatmap.rs).
  await page.mouse.move(box.x + box.width * (940 / 1600), box.y + box.height * (246 / 900));
  await page.waitForFunction(() => /weight '.*' -> '.*': [0-9.]+/.test(document.getElementById('hud').textContent),
    null, { timeout: 30000 });
  text = await hud(page);
  console.log(text.split('\n').find((l) => l.startsWith('weight ')));

  // The kernel-source view: the kernels of a forward pass, template values marked.
  await page.waitForSelector('#kernels[data-ready]', { timeout: 30000 });
  const kernels = await page.$$eval('#kernels details.kernel', (list) => list.map((d) => ({
    family: d.dataset.family,
    marks: d.querySelectorAll('pre code mark').length,
    code: d.querySelector('pre code').textContent.length,
  })));
  console.log(`kernels: ${kernels.map((k) => `${k.family} (${k.marks} marked)`).join(', ')}`);
  for (const family of ['matmul', 'softmax', 'add', 'layernorm']) {
    const k = kernels.find((x) => x.family === family);
    assert.ok(k, `the kernel view does not list ${family}: ${JSON.stringify(kernels)}`);
    assert.ok(k.marks > 0 && k.code > 300, `${family}: ${JSON.stringify(k)}`);
  }
  assert.match(await page.textContent('#walkthrough'), /Walkthrough \(10 stages\)/);

  // The GPU/CPU button switches the path.
  await page.click('button[data-key="Tab"]');
  await page.waitForFunction(() => /path: CPU/.test(document.getElementById('hud').textContent), null, { timeout: 30000 });
  assert.equal(await page.isVisible('#error'), false, await page.textContent('#error'));
  assert.deepEqual(errors, []);
  await page.close();
});

// The labels' record (heatmap::Labels: px tall in the 1600×900 view, one every `stride`
// tokens, their box) and the size on screen it means.
async function labels(page) {
  return page.evaluate(() => {
    const canvas = document.getElementById('canvas');
    const l = JSON.parse(canvas.dataset.labels);
    return { ...l, cssPx: (l.px * canvas.getBoundingClientRect().width) / 1600 };
  });
}

test('a long text: the cut said plainly, the page stays short, the labels readable', async () => {
  const { page, errors } = await site.open('/attention.html?model=synthetic', { width: 1280, height: 1100 });
  await page.waitForFunction(() => /tokens: \[CLS\] the cat/.test(document.getElementById('hud').textContent),
    null, { timeout: 90000 });
  await page.waitForFunction(() => JSON.parse(document.getElementById('canvas').dataset.labels ?? '{}').tokens === 13,
    null, { timeout: 30000 });
  // The page's height without the advice and progress lines, which come and go with the
  // measurements and passes, not with the text's length.
  const height = () => page.evaluate(() => document.documentElement.scrollHeight
    - ['path-advice', 'forward-status'].map((id) => document.getElementById(id))
      .filter((e) => !e.hidden).reduce((sum, e) => sum + e.offsetHeight, 0));
  const short = await height();
  const few = await labels(page);
  console.log(`short text: page ${short} px; labels ${JSON.stringify(few)}`);
  assert.equal(few.stride, 1, 'a short sentence labels every token');
  // Longer than the synthetic model's 128 positions: the HUD says the cut, the heatmap shows
  // the 128 it takes, the labels keep their size (every few tokens labelled).
  const long = Array.from({ length: 30 }, (_, i) => `the cat number ${i} sat on the mat because it was tired`).join('. ');
  await page.fill('#text', long);
  await page.waitForFunction(() => /cut: (the text has|at least) [\d,]+ tokens; the model reads the first 128/.test(document.getElementById('hud').textContent),
    null, { timeout: 90000 });
  await page.waitForFunction(() => JSON.parse(document.getElementById('canvas').dataset.labels ?? '{}').tokens === 128,
    null, { timeout: 90000 });
  // Measured once no forward is under way: a pass in progress shows its progress (two HUD lines
  // and a line under the controls) until it ends.
  await page.waitForFunction(() => document.getElementById('forward-status').hidden
    && !/ s so far/.test(document.getElementById('hud').textContent), null, { timeout: 90000 });
  const text = await hud(page);
  const many = await labels(page);
  const tall = await height();
  console.log(`long text: ${text.split('\n').filter((l) => /tokens|cut/.test(l)).join(' | ')}`);
  console.log(`long text: page ${tall} px (short: ${short}); HUD ${text.split('\n').length} lines; labels ${JSON.stringify(many)}`);
  assert.ok(!text.includes(long.slice(0, 60)), 'the HUD repeats the text');
  assert.ok(text.split('\n').length <= 16, `the HUD has ${text.split('\n').length} lines`);
  // The long text adds the cut line and two token lines to the HUD (89 px with one wrapped at
  // this width, 2026-12-07); a HUD that listed the tokens would add hundreds.
  assert.ok(tall - short < 120, `the page grew from ${short} to ${tall} px`);
  for (const l of [few, many]) {
    assert.ok(l.px >= 16 && l.cssPx >= 10, `labels too small: ${JSON.stringify(l)}`);
    const [x, y, w, h] = l.bounds;
    assert.ok(x >= 0 && y >= 0 && x + w <= 1600 && y + h <= 900, `labels outside the view: ${JSON.stringify(l)}`);
  }
  assert.ok(many.stride > 1, 'labels would overlap at 128 tokens');
  assert.deepEqual(errors, []);
  await page.close();
});

test('the site carries the real model as f16, its download shown as a progress bar', async (t) => {
  const listed = await fetch(site.url('/models/index.json')).then((r) => r.json());
  if (!listed.models.includes('all-minilm-l6-v2')) {
    t.skip('this site was built without the model (scripts/fetch-model.sh had no network)');
    return;
  }
  const head = await fetch(site.url('/models/all-minilm-l6-v2/model.safetensors'), { method: 'HEAD' });
  const size = Number(head.headers.get('content-length'));
  const page = await site.browser.newPage({ viewport: { width: 1280, height: 1100 } });
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  // The bar's values and the note as the download runs, sampled on every change.
  await page.addInitScript(() => {
    window.seen = [];
    document.addEventListener('DOMContentLoaded', () => {
      const bar = document.getElementById('model-progress');
      new MutationObserver(() => window.seen.push([bar.value, bar.max, bar.hidden]))
        .observe(bar, { attributes: true });
      const note = document.getElementById('weights');
      new MutationObserver(() => window.seen.push([note.textContent]))
        .observe(note, { childList: true, characterData: true, subtree: true });
    });
  });
  await page.goto(site.url('/attention.html'));
  await page.waitForFunction(() => /tokens: \[CLS\] the cat/.test(document.getElementById('hud').textContent),
    null, { timeout: 120000 });
  const seen = await page.evaluate(() => window.seen);
  const text = await hud(page);
  console.log(`model: ${(size / 1e6).toFixed(1)} MB; the bar and note changed ${seen.length} times; ${JSON.stringify(seen.slice(-3))}`);
  assert.ok(size > 40e6 && size < 50e6, `model.safetensors is ${size} bytes: not the f16 copy (about 45 MB)`);
  assert.doesNotMatch(text, /SYNTHETIC/);
  // Named as the visitor knows it, not by its folder on the site.
  assert.equal(await page.textContent('#weights'), 'all-MiniLM-L6-v2');
  assert.equal(await page.isHidden('#model-progress'), true, 'the bar stays after the download');
  const bars = seen.filter((s) => s.length === 3 && s[1] === size);
  assert.ok(bars.length > 0, `the bar never showed the file's size: ${JSON.stringify(seen.slice(0, 5))}`);
  assert.ok(seen.some((s) => /MB of weights/.test(s[0])), 'the note never said how far the download was');
  assert.deepEqual(errors, []);
  await page.close();
});

// With `dtype=f16` too: the GPU path runs in f16 where the browser's adapter has shader-f16;
// where it has not (SwiftShader today), in f32, and the HUD says f16 was asked for and why not.
test('a text and a dtype in the URL are the ones the page runs, or it says why not', async () => {
  const { page, errors } = await site.open(`/attention.html?model=synthetic&dtype=f16&text=${encodeURIComponent('a red car')}`, { width: 1280, height: 1100 });
  await page.waitForFunction(() => /tokens:\s+\[CLS\]\s+a\s+red\s+car\s+\[SEP\]/.test(document.getElementById('hud').textContent),
    null, { timeout: 90000 });
  assert.equal(await page.inputValue('#text'), 'a red car');
  const f16 = await page.evaluate(async () => (await navigator.gpu.requestAdapter()).features.has('shader-f16'));
  const text = await hud(page);
  console.log(`dtype=f16 asked, the adapter ${f16 ? 'has' : 'has no'} shader-f16: ${text.split('\n').filter((l) => /GPU in|f16/.test(l)).join(' | ')}`);
  if (f16) {
    assert.match(text, /GPU in f16/);
    assert.doesNotMatch(text, /no shader-f16/);
  } else {
    assert.match(text, /GPU in f32/);
    assert.match(text, /f16 asked for: no shader-f16 here/);
  }
  // The page's control shows what the GPU path runs, offers f16 only where the adapter has it,
  // and a choice reloads the page with it and the text as it is.
  await page.waitForSelector('#dtype[data-f16]');
  assert.equal(await page.inputValue('#dtype'), f16 ? 'f16' : 'f32');
  assert.equal(await page.isDisabled('#dtype option[value="f16"]'), !f16);
  if (!f16) assert.match(await page.textContent('#dtype-note'), /shader-f16.*asked for in the URL/);
  await page.fill('#text', 'a blue car');
  await Promise.all([
    page.waitForURL(/dtype=f32/),
    page.evaluate(() => {
      const select = document.getElementById('dtype');
      select.value = 'f32';
      select.dispatchEvent(new Event('change'));
    }),
  ]);
  const url = new URL(page.url());
  assert.equal(url.searchParams.get('dtype'), 'f32');
  assert.equal(url.searchParams.get('text'), 'a blue car');
  assert.equal(url.searchParams.get('model'), 'synthetic');
  await page.waitForFunction(() => /GPU in f32/.test(document.getElementById('hud').textContent),
    null, { timeout: 90000 });
  assert.deepEqual(errors, []);
  await page.close();
});

test('the walkthrough steps through ten live stages at 1280×720', async () => {
  const { page, errors } = await site.open('/attention.html?talk&stage=1&model=synthetic&text=the%20cat%20sat%20on%20the%20mat',
    { width: 1280, height: 720 });
  await page.waitForSelector('#talk[data-ready]', { timeout: 90000 });
  const titles = ['Text', 'Tokens', 'Embeddings', 'Layer norm', 'Q, K, V', 'Scores', 'Softmax',
    'Weights · V', 'Add: the residual', 'Layer norm again'];
  const canvas = page.locator('#canvas');
  // Screenshots are decoded in a page of their own: the demo's page is busy drawing.
  const decoder = await site.browser.newPage();
  const previous = await walkStages(page, decoder, canvas, titles, { threshold: 24, minColours: 8 });
  // A still tensor is still live: the lit row moves on.
  await page.waitForTimeout(1200);
  const live = await changedShare(decoder, previous, await boxShot(canvas), 24);
  console.log(`stage 10 after 1.2 s: ${(100 * live).toFixed(2)} % changed`);
  assert.ok(live > 0.002, `the last stage's picture is not live: ${live}`);
  await decoder.close();
  await page.keyboard.press('Home');
  assert.equal(await page.textContent('#talk-counter'), '1 / 10');
  assert.equal(await page.textContent('#talk-title'), titles[0]);
  assert.equal(new URL(page.url()).searchParams.get('stage'), '1');
  assert.equal(await page.isVisible('#error'), false, await page.textContent('#error'));
  assert.deepEqual(errors, []);
  await page.close();
});

// Every walkthrough stage, at a projector's 1920×1080 and at 1280×720: each text the visual
// draws (demos/attention/src/heatmap.rs records them) is at least 18 px tall on screen at
// 1920×1080 (12 px at 1280×720: the same share of the screen) and lies inside the picture; the
// narration does not overflow its box. At 1280×720 with a long sentence (labels then every few
// tokens).
for (const [width, height, text] of [
  [1920, 1080, 'The cat sat on the mat because it was tired.'],
  [1280, 720, Array.from({ length: 6 }, () => 'the quick brown fox jumps over the lazy dog').join(' and ')],
]) {
  test(`walkthrough text is readable and inside the picture at ${width}×${height}`, async () => {
    const { page, errors } = await site.open(`/attention.html?talk&stage=1&model=synthetic&text=${encodeURIComponent(text)}`,
      { width, height });
    await page.waitForSelector('#talk[data-ready]', { timeout: 90000 });
    const least = (18 * height) / 1080;
    const count = Number((await page.textContent('#talk-counter')).split('/')[1]);
    for (let stage = 0; stage < count; stage++) {
      await page.waitForFunction((s) => {
        const t = document.getElementById('canvas').dataset.texts;
        // Five texts at least: a stage drawn from its tensors, not "computing...".
        return t && JSON.parse(t).stage === s && JSON.parse(t).texts.length >= 5;
      }, stage, { timeout: 60000 });
      const r = await pictureTexts(page, 'canvas');
      const narration = await page.$eval('#talk-text', (n) => n.scrollWidth <= n.clientWidth);
      console.log(`${width}×${height} stage ${stage + 1}: ${r.texts} texts, smallest ${r.smallest.toFixed(1)} px`);
      assertLegible(r, least, stage);
      assert.deepEqual(await smallPageTexts(page, least), [], `stage ${stage + 1}: the page's own text under ${least} px`);
      assert.ok(narration, `stage ${stage + 1}: the narration overflows`);
      await page.keyboard.press('ArrowRight');
    }
    assert.deepEqual(errors, []);
    await page.close();
  });
}

test('a browser without WebGPU gets the explanation and the CPU path heatmap', async () => {
  const page = await site.browser.newPage({ viewport: { width: 1280, height: 1100 } });
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  // navigator.gpu removed before any script runs.
  await page.addInitScript(() => { delete Navigator.prototype.gpu; });
  await page.goto(site.url('/attention.html?model=synthetic'));
  await page.waitForSelector('#error', { state: 'visible', timeout: 60000 });
  assert.match(await page.textContent('#error'), /no WebGPU/);
  assert.match(await page.textContent('#error'), /CPU path/);
  assert.equal(await page.getAttribute('body', 'data-webgpu'), 'missing');
  // The CPU path draws instead, labelled as such.
  await page.waitForSelector('#canvas[data-path="cpu"][data-drawn]', { timeout: 60000 });
  const text = await hud(page);
  console.log(`no WebGPU: ${text.replaceAll('\n', ' | ')}`);
  assert.match(text, /drawing: CPU path \(no WebGPU\)/);
  assert.match(text, /tokens: \[CLS\] the cat sat/);
  const drawnLabels = await labels(page);
  assert.ok(drawnLabels.px >= 16 && drawnLabels.stride === 1, JSON.stringify(drawnLabels));
  await page.addStyleTag({ content: '#hud { visibility: hidden; }' });
  const canvas = page.locator('#canvas');
  const first = await boxShot(canvas);
  const stats = await pixelStats(page, first);
  const colours = await heatmapColours(page);
  console.log(`CPU fallback canvas: spread ${stats.std.toFixed(3)}, ${colours} colours in the heatmap region`);
  assert.ok(stats.std > 0.05 && colours > 20, `blank canvas: ${JSON.stringify(stats)}, ${colours} colours`);
  // A new sentence is drawn again: more tokens, a different picture.
  const drawn = Number(await page.getAttribute('#canvas', 'data-drawn'));
  await page.fill('#text', 'the dog ran in the park with a red ball');
  await page.waitForFunction((n) => Number(document.getElementById('canvas').dataset.drawn) > n, drawn, { timeout: 30000 });
  assert.match(await hud(page), /tokens: \[CLS\] the dog ran in the park/);
  const changed = await changedShare(page, first, await boxShot(canvas), 24);
  console.log(`after typing: ${(100 * changed).toFixed(1)} % of the canvas changed`);
  assert.ok(changed > 0.01, 'the CPU path did not redraw for the new text');
  assert.deepEqual(errors, []);
  await page.close();
});
