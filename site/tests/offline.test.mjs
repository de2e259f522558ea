// The offline mode (site/src/sw.js, registered by talk.js in presenter mode): one visit to a
// walkthrough keeps every file of the build (offline.json, written by scripts/build-site.sh)
// in the service worker's cache; then the static server is stopped, and every page and every
// walkthrough loads again from the cache alone, its demo starts (the stages published, the
// visual drawn), and no console error is logged. Headless Chromium, WebGPU on SwiftShader.
// Needs site/dist (scripts/build-site.sh). Also, on site/src with manifests of its own, a new
// build: its cache replaces the old one, and the open walkthrough reloads at its stage.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { boxShot, launch, pixelStats, serve, sourceSite } from './browser.mjs';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const DEMOS = ['waves', 'attention', 'flash', 'fleet'];

let server, browser, context;
before(async () => {
  if (!existsSync(`${dist}offline.json`)) throw new Error('site/dist is not built: run scripts/build-site.sh');
  server = await serve(dist);
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
});
after(async () => { await browser?.close(); server?.close(); });

async function open(path, base = server.url) {
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(base + path);
  return { page, errors };
}

test('after one visit the whole site runs with the server stopped', async () => {
  const manifest = JSON.parse(readFileSync(`${dist}offline.json`, 'utf8'));
  const started = Date.now();
  const { page: first, errors: firstErrors } = await open('/waves.html?talk&stage=1');
  await first.waitForSelector('body[data-offline="ready"]', { timeout: 60000 });
  const held = await first.evaluate(async (name) => (await (await caches.open(name)).keys()).length, manifest.cache);
  console.log(`cached ${held} files (${(manifest.bytes / 1e6).toFixed(1)} MB) in ${Date.now() - started} ms`);
  assert.equal(held, manifest.files.length);
  assert.deepEqual(await first.evaluate(() => caches.keys()), [manifest.cache], 'one cache, this build\'s');
  assert.deepEqual(firstErrors, []);
  await first.close();

  server.close();
  // The server is gone: a file that is not in the build cannot be had.
  const { page: probe } = await open('/index.html');
  assert.equal(await probe.evaluate(() => fetch('not-in-the-build.txt').then(() => 'fetched', () => 'failed')), 'failed');
  await probe.close();

  for (const path of ['/', '/index.html', ...DEMOS.map((d) => `/${d}.html`)]) {
    const t0 = Date.now();
    const { page, errors } = await open(path);
    assert.match(await page.title(), /Kiln/, path);
    assert.equal(await page.isVisible('#error'), false, `${path}: ${await page.textContent('#error')}`);
    console.log(`${path}: loaded from the cache in ${Date.now() - t0} ms`);
    assert.deepEqual(errors, [], path);
    await page.close();
  }
  for (const demo of DEMOS) {
    const t0 = Date.now();
    const { page, errors } = await open(`/${demo}.html?talk&stage=1`);
    await page.waitForSelector('#talk[data-ready]', { timeout: 60000 });
    // The stage's live visual draws real pixels.
    let stats;
    do {
      await page.waitForTimeout(500);
      stats = await pixelStats(page, await boxShot(page.locator('#talk-visuals')));
    } while (stats.std <= 0.05 && Date.now() - t0 < 60000);
    console.log(`${demo} walkthrough: stage 1 drawn from the cache in ${Date.now() - t0} ms`);
    assert.ok(stats.std > 0.05, `${demo}: nothing drawn ${JSON.stringify(stats)}`);
    assert.equal(await page.textContent('#talk-counter'), `1 / ${await page.evaluate(() => document.getElementById('talk-counter').textContent.split('/ ')[1])}`);
    // The cache check runs after the stage's first frames: on a loaded machine that took over
    // 10 s (a cold CI run timed out there), so it gets the minute the visual gets.
    await page.waitForSelector('body[data-offline="ready"]', { timeout: 60000 });
    assert.deepEqual(errors, [], demo);
    await page.close();
  }
});

// The manifest build-site.sh writes, into a copy of site/src: sw.js and offline.json.
function build(dir, version, files) {
  const manifest = { version, cache: `kiln-${version}`, bytes: 0, files };
  const sw = readFileSync(join(dir, 'sw.js'), 'utf8').replace(
    /\/\* build manifest \*\/ \{[^\n]*\};/, `${JSON.stringify(manifest)};`);
  assert.match(sw, new RegExp(`"kiln-${version}"`));
  writeFileSync(join(dir, 'sw.js'), sw);
  writeFileSync(join(dir, 'offline.json'), JSON.stringify(manifest));
}

test('a new build replaces the old cache, and an open walkthrough reloads at its stage', async (t) => {
  const dir = sourceSite();
  const original = readFileSync(join(dir, 'sw.js'), 'utf8');
  const stages = [1, 2, 3].map((i) => ({ title: `Stage ${i}`, text: `Words ${i}.`, code: null }));
  writeFileSync(join(dir, 't.html'), `<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Kiln · test</title><link rel="icon" href="data:,"><link rel="stylesheet" href="style.css"></head>
<body><main><div id="error"></div></main><script type="module" src="talk.js"></script>
<script type="module">kiln.setStages(${JSON.stringify(stages)});</script></body></html>`);
  const files = ['t.html', 'talk.js', 'dom.js', 'kernel-view.js', 'no-webgpu.js', 'offline.js', 'qr.js',
    'speaker.js', 'style.css', 'vendor/qrcode.mjs', 'offline.json'];
  build(dir, 'one', files);
  const site = await serve(dir);
  t.after(() => site.close());
  const { page, errors } = await open('/t.html?talk&stage=2', site.url);
  await page.waitForSelector('body[data-offline="ready"]', { timeout: 20000 });
  assert.deepEqual(await page.evaluate(() => caches.keys()), ['kiln-one']);
  await page.evaluate(() => { window.before = true; });

  writeFileSync(join(dir, 'sw.js'), original);
  build(dir, 'two', files);
  await Promise.all([
    page.waitForEvent('load', { timeout: 20000 }),
    page.evaluate(() => navigator.serviceWorker.getRegistration().then((r) => r.update())),
  ]);
  await page.waitForSelector('#talk[data-ready]');
  assert.equal(await page.evaluate(() => window.before), undefined, 'the page reloaded');
  assert.equal(await page.textContent('#talk-counter'), '2 / 3');
  await page.waitForFunction(async () => (await caches.keys()).join() === 'kiln-two', null, { timeout: 10000 });
  await page.waitForSelector('body[data-offline="ready"]', { timeout: 20000 });
  assert.deepEqual(errors, []);
  await page.close();
});
