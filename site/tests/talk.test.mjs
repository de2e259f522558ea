// The shared presenter mode and kernel-source view (site/src/talk.js) on a page made for the
// test: the keys, the stage in the URL, stage-limited visuals, marked code, the embed mode and
// the no-WebGPU explanation. Each demo's own walkthrough is tested in its page's test file.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';

import { launch, openPage, serve, sourceSite } from './browser.mjs';

const TALK = readFileSync(new URL('../src/talk.js', import.meta.url), 'utf8');
const CSS = readFileSync(new URL('../src/style.css', import.meta.url), 'utf8');

const STAGES = [1, 2, 3].map((i) => ({
  title: `Stage ${i}`,
  text: `The words of stage ${i}.`,
  code: i === 2 ? { caption: 'k rendered for a test', language: 'wgsl',
    pieces: [{ text: 'const TILE: u32 = ', marked: false }, { text: '64', marked: true }, { text: 'u;', marked: false }] } : null,
}));

const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Kiln · test</title>
<link rel="stylesheet" href="/style.css"></head><body>
<header><h1>Test</h1></header>
<main><div id="error" role="alert"></div>
<canvas id="always" data-talk-visual width="64" height="64"></canvas>
<canvas id="second" data-talk-visual data-talk-stages="2" width="64" height="64"></canvas>
<section id="kernels"><h2>Kernel source</h2></section></main>
<script type="module" src="/talk.js"></script>
<script type="module">
  window.seen = [];
  kiln.onStage((i) => window.seen.push(i));
  kiln.setStages(${JSON.stringify(STAGES)});
  kiln.publish('kernels', JSON.stringify([{ family: 'matmul', variant: 'f32_x', reason: 'rule: test',
    values: [['tile', '64']], code: ${JSON.stringify(STAGES[1].code)} }]));
</script></body></html>`;

let server, browser;
before(async () => {
  server = await serve(sourceSite(), { '/t.html': PAGE });
  browser = await launch();
});
after(async () => { await browser?.close(); server?.close(); });

// serve() answers in-memory pages as HTML; talk.js and the CSS need their own types.
async function open(path) {
  const { page, errors } = await openPage(browser, 'about:blank');
  await page.route('**/talk.js', (r) => r.fulfill({ body: TALK, contentType: 'text/javascript' }));
  await page.route('**/style.css', (r) => r.fulfill({ body: CSS, contentType: 'text/css' }));
  await page.goto(server.url + path);
  return { page, errors };
}

test('presenter keys move through the stages and the URL keeps the place', async () => {
  const { page, errors } = await open('/t.html?talk&stage=2');
  await page.waitForSelector('#talk[data-ready]');
  const state = () => page.evaluate(() => ({
    counter: document.getElementById('talk-counter').textContent,
    title: document.getElementById('talk-title').textContent,
    stage: new URL(location.href).searchParams.get('stage'),
    data: document.body.dataset.talkStage,
    second: !document.getElementById('second').hidden,
    header: getComputedStyle(document.querySelector('header')).display,
  }));
  assert.deepEqual(await state(), { counter: '2 / 3', title: 'Stage 2', stage: '2', data: '1', second: true, header: 'none' });
  assert.match(await page.textContent('#talk-code mark'), /^64$/);
  await page.keyboard.press('ArrowRight');
  assert.deepEqual(await state(), { counter: '3 / 3', title: 'Stage 3', stage: '3', data: '2', second: false, header: 'none' });
  await page.keyboard.press('ArrowRight');
  assert.equal((await state()).counter, '3 / 3', 'stays on the last stage');
  await page.keyboard.press('Home');
  assert.equal((await state()).counter, '1 / 3');
  await page.keyboard.press('Space');
  assert.equal((await state()).counter, '2 / 3');
  await page.keyboard.press('ArrowLeft');
  assert.equal((await state()).counter, '1 / 3');
  await page.keyboard.press('3');
  assert.equal((await state()).counter, '3 / 3');
  await page.keyboard.press('9');
  assert.equal((await state()).counter, '3 / 3', 'no ninth stage');
  await page.click('#talk-prev');
  assert.equal((await state()).counter, '2 / 3');
  assert.deepEqual(await page.evaluate(() => window.seen), [1, 2, 0, 1, 0, 2, 1]);
  // A reload keeps the place.
  await page.reload();
  await page.waitForSelector('#talk[data-ready]');
  assert.equal((await state()).counter, '2 / 3');
  assert.deepEqual(errors, []);
  await page.close();
});

test('the kernel-source view shows the variant, its reason, its variables and marked WGSL', async () => {
  const { page, errors } = await open('/t.html');
  await page.waitForSelector('#kernels[data-ready]');
  assert.match(await page.textContent('#kernels summary'), /matmul f32_x — rule: test/);
  assert.equal(await page.textContent('#kernels mark'), '64');
  assert.match(await page.textContent('#kernels table'), /tile\s*64/);
  assert.equal(await page.isVisible('#talk'), false, 'no presenter panel without ?talk');
  assert.deepEqual(errors, []);
  await page.close();
});

test('embed mode shows the visual without the panel; no WebGPU is explained', async () => {
  const { page, errors } = await open('/t.html?talk&stage=1&embed');
  await page.waitForSelector('#talk[data-ready]', { state: 'attached' });
  assert.equal(await page.isVisible('#talk'), false);
  assert.equal(await page.isVisible('#always'), true);
  await page.evaluate(() => kiln.noWebGPU({ ok: false, state: 'no-adapter', short: 'no WebGPU adapter',
    reason: 'This browser has WebGPU but offers no adapter.', fix: 'Try --enable-unsafe-webgpu.' },
  'The CPU path runs instead.'));
  const text = await page.textContent('#error');
  assert.match(text, /offers no adapter.*enable-unsafe-webgpu.*The CPU path runs instead/s);
  assert.equal(await page.getAttribute('body', 'data-webgpu'), 'missing');
  assert.equal(await page.getAttribute('body', 'data-webgpu-state'), 'no-adapter');
  // The walkthrough keeps its stages.
  assert.equal(await page.textContent('#talk-counter'), '1 / 3');
  assert.deepEqual(errors, []);
  await page.close();
});
