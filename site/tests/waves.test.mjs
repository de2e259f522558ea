// The waves page in headless Chromium (WebGPU on SwiftShader), served from the built site:
// it reports its adapter, animates, draws real pixels, its GPU and CPU frames agree, it lists
// its kernels' source, its walkthrough steps through five live stages, a browser without WebGPU
// gets the CPU path drawn instead, and the console stays clean. Needs site/dist
// (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { assertLegible, boxShot, changedShare, pictureTexts, pixelStats, useSite, walkStages, smallPageTexts } from './browser.mjs';

const site = useSite('waves/waves_bg.wasm');

const open = (path) => site.open(path, { width: 1000, height: 1100 });

test('the waves page reports its adapter, animates and draws real pixels', async () => {
  const { page, errors } = await open('/waves.html');
  await page.waitForFunction(() => document.getElementById('hud').textContent.includes('adapter:'),
    null, { timeout: 60000 });
  const hud = await page.textContent('#hud');
  console.log(`hud: ${hud.split('\n').slice(1, 3).join(' | ')}`);
  assert.match(hud, /adapter: .*\(webgpu\)/);
  assert.match(hud, /drawing: GPU path/);
  // The header says what is drawn (256×256 on a software adapter, not 1024×1024), More waves at
  // the most is off and says so, and vsync is named only near the display's rate.
  const [, res, count] = hud.match(/^(\d+)×\d+, (\d+) waves/m);
  assert.equal(await page.textContent('#frame-now'), `: here ${res}×${res} pixels and ${count} waves`);
  assert.equal(await page.isDisabled('button[data-key="+"]'), count === '128');
  assert.equal(await page.getAttribute('button[data-key="+"]', 'title'), '128 waves is the most');
  const [, fps, why] = hud.match(/displayed ([\d.]+) frames\/s \((.*)\)/);
  assert.ok(Number(fps) >= 54 || !/vsync/.test(why), `displayed ${fps} frames/s: ${why}`);
  assert.equal(await page.evaluate(() => Math.round(scrollY)), 0, 'the page scrolled itself');
  // Hide the HUD: its changing text must not stand in for a moving picture.
  await page.addStyleTag({ content: '#hud { visibility: hidden; }' });
  const canvas = page.locator('#canvas');
  const first = await boxShot(canvas);
  await page.waitForTimeout(1500);
  const second = await boxShot(canvas);
  assert.notDeepEqual(first, second, 'two screenshots 1.5 s apart are identical: not animating');
  const stats = await pixelStats(page, second);
  console.log(`canvas: mean ${stats.mean.toFixed(3)}, spread ${stats.std.toFixed(3)}`);
  assert.ok(stats.std > 0.05 && stats.mean > 0.05 && stats.mean < 0.95, `blank canvas: ${JSON.stringify(stats)}`);
  assert.equal(await page.isVisible('#error'), false, await page.textContent('#error'));
  // The kernel-source view: the three kernels of a frame, the matmul's template values marked.
  await page.waitForSelector('#kernels[data-ready]', { timeout: 30000 });
  const kernels = await page.$$eval('#kernels details.kernel', (list) => list.map((d) => ({
    family: d.dataset.family,
    marks: d.querySelectorAll('pre code mark').length,
    code: d.querySelector('pre code').textContent.length,
  })));
  console.log(`kernels: ${kernels.map((k) => `${k.family} (${k.marks} marked)`).join(', ')}`);
  assert.deepEqual(kernels.map((k) => k.family), ['sinusoid', 'matmul', 'rgba8']);
  const matmul = kernels[1];
  assert.ok(matmul.marks > 0 && matmul.code > 500, JSON.stringify(matmul));
  assert.match(await page.textContent('#walkthrough'), /Walkthrough \(5 stages\)/);
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

test('the walkthrough steps through five live stages at 1280×720', async () => {
  const { page, errors } = await site.open('/waves.html?talk&stage=1', { width: 1280, height: 720 });
  await page.waitForSelector('#talk[data-ready]', { timeout: 120000 });
  // Hide the HUD: its changing text must not stand in for a changing picture.
  await page.addStyleTag({ content: '#hud { visibility: hidden; }' });
  const titles = ['The waves', 'Two factor matrices', 'One matmul', 'Colour mapping', 'GPU against CPU'];
  const canvas = page.locator('#canvas');
  // Screenshots are decoded in a page of their own: the demo's page is busy drawing.
  const decoder = await site.browser.newPage();
  const previous = await walkStages(page, decoder, canvas, titles, { minChange: 0.1 });
  // The last stage's picture is live too (the frame moves beside the bars).
  let live = 0;
  for (let i = 0; i < 10 && live <= 0.01; i++) {
    await page.waitForTimeout(1000);
    live = await changedShare(decoder, previous, await boxShot(canvas));
  }
  assert.ok(live > 0.01, `the last stage's picture is not live: ${live}`);
  await decoder.close();
  await page.keyboard.press('Home');
  assert.equal(await page.textContent('#talk-counter'), '1 / 5');
  assert.equal(new URL(page.url()).searchParams.get('stage'), '1');
  await page.keyboard.press('3');
  assert.equal(await page.textContent('#talk-counter'), '3 / 5');
  assert.equal(await page.textContent('#talk-title'), titles[2]);
  assert.equal(new URL(page.url()).searchParams.get('stage'), '3');
  // Stage 3 speaks plain words (the selector's rule is in the kernel-source view) and its code
  // pane opens at the kernel's inner loop, not at the parameters its first lines hold.
  const narration = await page.textContent('#talk-text');
  assert.doesNotMatch(narration, /rule|tuned|\(.*:.*\)/, narration);
  const pane = await page.evaluate(() => {
    const box = document.getElementById('talk-code');
    const lines = box.textContent.split('\n');
    const top = Math.round(box.scrollTop / (box.scrollHeight / lines.length));
    return { top, lines: lines.length, shown: lines.slice(top, top + 4).join(' / ') };
  });
  console.log(`stage 3 code pane: opens at line ${pane.top} of ${pane.lines}: ${pane.shown}`);
  assert.ok(pane.top > 0 && /for \(|fn main|@compute|workgroup/.test(pane.shown), JSON.stringify(pane));
  assert.equal(await page.isVisible('#error'), false, await page.textContent('#error'));
  assert.deepEqual(errors, []);
  await page.close();
});

test('a browser without WebGPU gets a clear message and the CPU path drawn, not a blank canvas', async () => {
  const page = await site.browser.newPage({ viewport: { width: 1000, height: 1100 } });
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  // navigator.gpu removed before any script runs.
  await page.addInitScript(() => { delete Navigator.prototype.gpu; });
  await page.goto(site.url('/waves.html'));
  await page.waitForSelector('#error', { state: 'visible', timeout: 60000 });
  assert.match(await page.textContent('#error'), /no WebGPU/);
  assert.equal(await page.getAttribute('body', 'data-webgpu'), 'missing');
  // The CPU path draws instead, labelled as such.
  await page.waitForSelector('#canvas[data-path="cpu"]', { timeout: 30000 });
  await page.waitForFunction(() => /frames\/s/.test(document.getElementById('hud').textContent),
    null, { timeout: 30000 });
  const hud = await page.textContent('#hud');
  console.log(`no WebGPU: ${hud.replaceAll('\n', ' | ')}`);
  assert.match(hud, /drawing: CPU path \(no WebGPU\)/);
  await page.addStyleTag({ content: '#hud { visibility: hidden; }' });
  const canvas = page.locator('#canvas');
  const first = await boxShot(canvas);
  await page.waitForTimeout(1500);
  const second = await boxShot(canvas);
  const moved = await changedShare(page, first, second);
  const stats = await pixelStats(page, second);
  console.log(`CPU fallback canvas: mean ${stats.mean.toFixed(3)}, spread ${stats.std.toFixed(3)}, ` +
    `${(100 * moved).toFixed(1)} % moved in 1.5 s`);
  assert.ok(stats.std > 0.05 && stats.mean > 0.05 && stats.mean < 0.95, `blank canvas: ${JSON.stringify(stats)}`);
  assert.ok(moved > 0.05, 'the CPU path is not animating');
  assert.deepEqual(errors, []);
  await page.close();
});

// Every walkthrough stage at a projector's 1920×1080 and at 1280×720: each text the picture draws
// (kiln_app's raster::Bitmap records them) is at least 18 px tall on screen at 1920×1080 (12 px at
// 1280×720) and lies inside the picture. Stage 4 shows the frame itself, without text.
for (const [width, height] of [[1920, 1080], [1280, 720]]) {
  test(`walkthrough text is readable and inside the picture at ${width}×${height}`, async () => {
    const { page, errors } = await site.open('/waves.html?talk&stage=1', { width, height });
    await page.waitForSelector('#talk[data-ready]', { timeout: 120000 });
    const least = (18 * height) / 1080;
    const count = Number((await page.textContent('#talk-counter')).split('/')[1]);
    for (let stage = 0; stage < count; stage++) {
      if (stage > 0) await page.keyboard.press('ArrowRight');
      if (stage === 3) continue;
      // A picture drawn from the GPU's tensors, not "copying from the GPU...".
      await page.waitForFunction((s) => {
        const t = document.getElementById('canvas').dataset.texts;
        return t && JSON.parse(t).stage === s && JSON.parse(t).texts.length >= 2;
      }, stage, { timeout: 60000 });
      const r = await pictureTexts(page, 'canvas');
      console.log(`${width}×${height} stage ${stage + 1}: ${r.texts} texts, smallest ${r.smallest.toFixed(1)} px`);
      assertLegible(r, least, stage);
      assert.deepEqual(await smallPageTexts(page, least), [], `stage ${stage + 1}: the page's own text under ${least} px`);
    }
    assert.deepEqual(errors, []);
    await page.close();
  });
}
