// The offline mode (site/src/sw.js, registered by talk.js in presenter mode): one visit to a
// walkthrough keeps every file of the build (offline.json, written by scripts/build-site.sh)
// in the service worker's cache; then the static server is stopped, and every page and every
// walkthrough loads again from the cache alone, its demo starts (the stages published, the
// visual drawn), and no console error is logged. Headless Chromium, WebGPU on SwiftShader.
// Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launch, pixelStats, serve } from './browser.mjs';

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

async function open(path) {
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(server.url + path);
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
      stats = await pixelStats(page, await page.locator('#talk-visuals').screenshot());
    } while (stats.std <= 0.05 && Date.now() - t0 < 60000);
    console.log(`${demo} walkthrough: stage 1 drawn from the cache in ${Date.now() - t0} ms`);
    assert.ok(stats.std > 0.05, `${demo}: nothing drawn ${JSON.stringify(stats)}`);
    assert.equal(await page.textContent('#talk-counter'), `1 / ${await page.evaluate(() => document.getElementById('talk-counter').textContent.split('/ ')[1])}`);
    await page.waitForSelector('body[data-offline="ready"]', { timeout: 10000 });
    assert.deepEqual(errors, [], demo);
    await page.close();
  }
});
