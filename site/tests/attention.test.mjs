// The attention page in headless Chromium (WebGPU on SwiftShader): it starts on the built-in
// weights, says they are synthetic, takes a typed sentence, draws the heatmap over its tokens,
// reads a weight under the pointer, switches to the CPU path, and logs no console error.
// Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { useSite } from './browser.mjs';

const site = useSite('attention/attention_bg.wasm');

const hud = (page) => page.textContent('#hud');

// Colour variety in the canvas's right half (the heatmap), decoded by the browser.
async function heatmapColours(page) {
  const png = await page.locator('#canvas').screenshot();
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
  assert.match(await page.textContent('#weights'), /synthetic/);
  assert.match(await page.textContent('#code'), /fn encoder_layer<T: TensorOps>/);

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
  await page.mouse.move(box.x + box.width * (980 / 1600), box.y + box.height * (170 / 900));
  await page.waitForFunction(() => /weight '.*' -> '.*': [0-9.]+/.test(document.getElementById('hud').textContent),
    null, { timeout: 30000 });
  text = await hud(page);
  console.log(text.split('\n').find((l) => l.startsWith('weight ')));

  // The GPU/CPU button switches the path.
  await page.click('button[data-key="Tab"]');
  await page.waitForFunction(() => /path: CPU/.test(document.getElementById('hud').textContent), null, { timeout: 30000 });
  assert.equal(await page.isVisible('#error'), false, await page.textContent('#error'));
  assert.deepEqual(errors, []);
  await page.close();
});

test('a text in the URL is the one the page shows', async () => {
  const { page, errors } = await site.open(`/attention.html?model=synthetic&text=${encodeURIComponent('a red car')}`, { width: 1280, height: 1100 });
  await page.waitForFunction(() => /tokens:\s+\[CLS\]\s+a\s+red\s+car\s+\[SEP\]/.test(document.getElementById('hud').textContent),
    null, { timeout: 90000 });
  assert.equal(await page.inputValue('#text'), 'a red car');
  assert.deepEqual(errors, []);
  await page.close();
});
