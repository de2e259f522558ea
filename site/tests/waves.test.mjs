// The waves page in headless Chromium (WebGPU on SwiftShader), served from the built site:
// it reports its adapter, animates, draws real pixels, its GPU and CPU frames agree, and the
// console stays clean. Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { useSite } from './browser.mjs';

const site = useSite('waves/waves_bg.wasm');

const open = (path) => site.open(path, { width: 1000, height: 1100 });

// Mean and spread of a PNG's pixels, decoded by the browser itself.
async function pixelStats(page, png) {
  return page.evaluate(async (b64) => {
    const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
    const bitmap = await createImageBitmap(blob);
    const ctx = new OffscreenCanvas(bitmap.width, bitmap.height).getContext('2d');
    ctx.drawImage(bitmap, 0, 0);
    const { data } = ctx.getImageData(0, 0, bitmap.width, bitmap.height);
    let sum = 0, sq = 0, n = 0;
    for (let i = 0; i < data.length; i += 4) {
      const v = (data[i] + data[i + 1] + data[i + 2]) / (3 * 255);
      sum += v; sq += v * v; n++;
    }
    const mean = sum / n;
    return { mean, std: Math.sqrt(Math.max(0, sq / n - mean * mean)) };
  }, png.toString('base64'));
}

test('the waves page reports its adapter, animates and draws real pixels', async () => {
  const { page, errors } = await open('/waves.html');
  await page.waitForFunction(() => document.getElementById('hud').textContent.includes('adapter:'),
    null, { timeout: 60000 });
  const hud = await page.textContent('#hud');
  console.log(`hud: ${hud.split('\n').slice(1, 3).join(' | ')}`);
  assert.match(hud, /adapter: .*\(webgpu\)/);
  assert.match(hud, /drawing: GPU path/);
  // Hide the HUD: its changing text must not stand in for a moving picture.
  await page.addStyleTag({ content: '#hud { visibility: hidden; }' });
  const canvas = page.locator('#canvas');
  const first = await canvas.screenshot();
  await page.waitForTimeout(1500);
  const second = await canvas.screenshot();
  assert.notDeepEqual(first, second, 'two screenshots 1.5 s apart are identical: not animating');
  const stats = await pixelStats(page, second);
  console.log(`canvas: mean ${stats.mean.toFixed(3)}, spread ${stats.std.toFixed(3)}`);
  assert.ok(stats.std > 0.05 && stats.mean > 0.05 && stats.mean < 0.95, `blank canvas: ${JSON.stringify(stats)}`);
  assert.equal(await page.isVisible('#error'), false, await page.textContent('#error'));
  // The page's button switches the drawing path, as the `g` key does.
  await page.click('button[data-key="g"]');
  await page.waitForFunction(() => document.getElementById('hud').textContent.includes('drawing: CPU path'),
    null, { timeout: 30000 });
  assert.deepEqual(errors, []);
  await page.close();
});

test('in the page, the GPU and CPU frames agree', async () => {
  const { page, errors } = await open('/waves.html?bench&frames=2&size=128&json');
  await page.waitForSelector('#report[data-done]', { timeout: 120000 });
  const report = JSON.parse(await page.textContent('#report'));
  console.log(`browser bench: GPU ${(1e3 / report.gpu.median_ms).toFixed(1)} frames/s (${report.gpu.clock}), ` +
    `CPU ${(1e3 / report.cpu.median_ms).toFixed(1)} frames/s (wasm), max diff ${report.checks.max_channel_diff_gpu_vs_cpu}/255`);
  assert.equal(report.backend, 'webgpu');
  assert.ok(report.checks.max_channel_diff_gpu_vs_cpu <= 2, JSON.stringify(report.checks));
  assert.ok(report.gpu.median_ms > 0 && report.cpu.median_ms > 0);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a browser without WebGPU gets a clear message, not a blank canvas', async () => {
  const { page } = await open('/waves.html');
  // Reload with navigator.gpu removed before any script runs.
  await page.addInitScript(() => { delete Navigator.prototype.gpu; });
  await page.reload();
  await page.waitForSelector('#error', { state: 'visible', timeout: 10000 });
  assert.match(await page.textContent('#error'), /no WebGPU/);
  await page.close();
});
