// The index in headless Chromium (WebGPU on SwiftShader) at 1280×720: the device panel shows the
// adapter the kernels are rendered for; each of the four demo cards links to its page and its
// walkthrough and holds a live thumbnail (the walkthrough embedded, lazy, out of the pointer's
// way) that draws real pixels; the console stays clean; without WebGPU the page explains it and
// is not blank. Needs the whole site built (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { boxShot, pixelStats, useSite } from './browser.mjs';

const site = useSite('fleet/fleet_web_bg.wasm');
const DEMOS = ['waves', 'attention', 'flash', 'fleet'];

test('the index shows this device and four live demo cards with walkthrough links', async () => {
  const { page, errors } = await site.open('/index.html');
  assert.equal(await page.locator('h1').textContent(), 'Kiln');
  // The device panel's module loads when asked.
  await page.click('#describe');
  await page.waitForSelector('#device-panel[data-ready]', { timeout: 60000 });
  const panel = await page.textContent('#device-panel');
  console.log(`device: ${panel.slice(0, 120)}`);
  assert.match(await page.textContent('#device-panel .device-name'), /\S/);
  assert.match(panel, /webgpu · .* device class webgpu\//);
  assert.equal(await page.locator('#device-panel .chips li').count(), 4);
  assert.equal(await page.locator('#device-panel table.limits:not(.offered) tr').count(), 5);
  // Every kernel family, with the count said.
  const families = await page.locator('#device-panel table.offered tr:not(.more)').count();
  console.log(`families listed: ${families}`);
  assert.ok(families >= 20, `only ${families} families listed`);
  assert.match(await page.textContent('#device-panel table.offered caption'), new RegExp(`all ${families} families`));
  assert.equal(await page.isVisible('#error'), false);

  // Poster frames first; a card's live demo starts when the pointer enters it.
  assert.equal(await page.locator('.card iframe').count(), 0, 'a live demo started unasked');
  // What pointing at the cards fetches (the demos' modules; no model weights).
  const fetched = [];
  page.on('response', async (r) => {
    const body = await r.body().catch(() => Buffer.alloc(0));
    fetched.push([new URL(r.url()).pathname, body.length]);
  });
  const posters = await page.$$eval('.card img.poster', (list) => list.map((i) => i.getAttribute('src')));
  assert.deepEqual(posters, DEMOS.map((d) => `posters/${d}.jpg`));
  // Each still's caption sits under it, whole: it covers none of the picture (slow-pages.test.mjs
  // checks both projector sizes).
  const overlap = await page.$$eval('.thumb', (list) => list.map((t) =>
    t.querySelector('img.poster').getBoundingClientRect().bottom - t.querySelector('.placeholder').getBoundingClientRect().top));
  assert.ok(overlap.every((o) => o <= 0.5), `captions over their stills by ${overlap} px`);
  for (const demo of DEMOS) {
    await page.hover(`.card[data-demo="${demo}"]`);
    await page.waitForSelector(`.card[data-demo="${demo}"] iframe`, { state: 'attached', timeout: 60000 });
  }
  const cards = await page.$$eval('.card', (list) => list.map((c) => ({
    demo: c.dataset.demo,
    heading: c.querySelector('h3 a')?.getAttribute('href'),
    walkthrough: [...c.querySelectorAll('a')].find((a) => a.textContent === 'Walkthrough')?.getAttribute('href'),
    frame: c.querySelector('iframe') && {
      src: c.querySelector('iframe').getAttribute('src'),
      title: c.querySelector('iframe').title,
      pointer: getComputedStyle(c.querySelector('iframe')).pointerEvents,
    },
  })));
  assert.deepEqual(cards.map((c) => c.demo), DEMOS);
  for (const c of cards) {
    assert.equal(c.heading, `${c.demo}.html`);
    assert.equal(c.walkthrough, `${c.demo}.html?talk`);
    // The attention preview runs the built-in weights: pointing at a card fetches no model.
    const extra = c.demo === 'attention' ? '&model=synthetic' : '';
    assert.match(c.frame.src, new RegExp(`^${c.demo}\\.html\\?talk&stage=\\d&embed${extra}$`));
    assert.ok(c.frame.title.length > 10, c.frame.title);
    assert.equal(c.frame.pointer, 'none');
  }
  // The card is one link: a click on its thumbnail opens the demo.
  const box = await page.locator('.card[data-demo="fleet"] .thumb').boundingBox();
  assert.ok(box.width > 150 && box.height > 80, `thumbnail ${JSON.stringify(box)}`);

  // Each thumbnail draws its walkthrough's visual: real pixels, not a blank frame or a frame
  // of headings (the four run at once on one software adapter: the slowest takes a while).
  const drawn = (s) => s.std > 0.05 && s.lit > 0.05;
  for (const demo of DEMOS) {
    const thumb = page.locator(`.card[data-demo="${demo}"] .thumb`);
    await thumb.scrollIntoViewIfNeeded();
    const frame = page.frameLocator(`.card[data-demo="${demo}"] iframe`);
    await frame.locator('#talk[data-ready]').waitFor({ state: 'attached', timeout: 120000 });
    let stats;
    const began = Date.now();
    do {
      await page.waitForTimeout(1000);
      stats = await pixelStats(page, await boxShot(thumb));
    } while (!drawn(stats) && Date.now() - began < 180000);
    console.log(`${demo} thumbnail: mean ${stats.mean.toFixed(3)}, spread ${stats.std.toFixed(3)}, ` +
      `${(100 * stats.lit).toFixed(1)} % lit after ${((Date.now() - began) / 1000).toFixed(0)} s`);
    assert.ok(drawn(stats), `${demo}: a blank thumbnail (${JSON.stringify(stats)})`);
    const hidden = await frame.locator('#talk').evaluate((t) => getComputedStyle(t).display);
    assert.equal(hidden, 'none', `${demo}: the embedded walkthrough shows its panel`);
  }
  const previews = fetched.reduce((sum, [, n]) => sum + n, 0);
  const models = fetched.filter(([p]) => p.includes('/models/')).map(([p, n]) => `${p} ${n}`);
  console.log(`the four previews fetched ${fetched.length} responses, ${(previews / 1e6).toFixed(1)} MB`);
  assert.deepEqual(models, [], 'a preview fetched model weights');
  // The four demos' modules: 18.1 MB measured (2026-12-03); the model alone would add 45 MB.
  assert.ok(previews < 25e6, `the previews fetched ${(previews / 1e6).toFixed(1)} MB`);
  // The thumbnails' demos never take the focus (their canvases are not made active).
  assert.notEqual(await page.evaluate(() => document.activeElement?.tagName), 'IFRAME',
    'a thumbnail took the focus');
  // The fleet's thumbnail is the race itself, measured in the card.
  await page.frameLocator('.card[data-demo="fleet"] iframe').locator('#race[data-samples]')
    .waitFor({ state: 'attached', timeout: 120000 });
  await page.click('.card[data-demo="fleet"] .thumb', { force: true });
  await page.waitForURL(/\/fleet\.html$/);
  assert.deepEqual(errors, []);
  await page.close();
});

// The first load: the page, its scripts and the poster frames; no WebAssembly until a card is
// pointed at or the device panel asked for.
test('the index loads under 2 MB before a card is pointed at', async () => {
  const page = await site.browser.newPage({ viewport: { width: 1280, height: 720 } });
  const loaded = [];
  page.on('response', async (r) => {
    const body = await r.body().catch(() => Buffer.alloc(0));
    loaded.push([new URL(r.url()).pathname, body.length]);
  });
  await page.goto(site.url('/index.html'));
  await page.waitForSelector('body[data-ready]', { timeout: 60000 });
  await page.waitForLoadState('networkidle');
  await page.waitForTimeout(1000);
  const total = loaded.reduce((sum, [, n]) => sum + n, 0);
  const largest = [...loaded].sort((a, b) => b[1] - a[1]).slice(0, 5)
    .map(([p, n]) => `${p} ${(n / 1e3).toFixed(0)} kB`);
  console.log(`first load: ${loaded.length} responses, ${(total / 1e6).toFixed(2)} MB; largest: ${largest.join(', ')}`);
  assert.equal(loaded.filter(([p]) => p.endsWith('.wasm')).length, 0, 'a module loaded unasked');
  assert.ok(total < 2e6, `the first load is ${(total / 1e6).toFixed(2)} MB`);
  await page.close();
});

test('without WebGPU the index explains it and keeps its cards', async () => {
  const { page } = await site.open('/index.html');
  await page.addInitScript(() => { delete Navigator.prototype.gpu; });
  await page.reload();
  await page.waitForSelector('#error', { state: 'visible', timeout: 60000 });
  assert.match(await page.textContent('#error'), /no WebGPU/);
  assert.equal(await page.getAttribute('body', 'data-webgpu'), 'missing');
  assert.equal(await page.locator('.card iframe').count(), 0, 'no blank embedded demos');
  const cards = await page.$$eval('.card', (c) => c.map((x) => x.innerText));
  assert.equal(cards.length, 4);
  assert.ok(cards.every((t) => /Walkthrough/.test(t) && /No live preview: no WebGPU in this browser/.test(t)), cards.join(' | '));
  assert.match(await page.textContent('#device-panel'), /No device to describe/);
  await page.close();
});
