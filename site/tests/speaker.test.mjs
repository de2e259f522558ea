// The speaker's tools of presenter mode (site/src/talk.js) on a page made for the test: the
// speaker view (S opens it; notes, next stage, timer) kept in step with the audience window in
// both directions, B and . blanking the audience screen, keys left alone while typing, and the
// first stage's QR code, decoded (npm's jsqr, a decoder independent of the encoder) to the
// page's address. The offline mode is offline.test.mjs.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launch, serve, sourceSite } from './browser.mjs';

const STAGES = [1, 2, 3].map((i) => ({ title: `Stage ${i}`, text: `The words of stage ${i}.`, code: null }));

const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Kiln · test</title>
<link rel="icon" href="data:,"><link rel="stylesheet" href="style.css"></head><body>
<header><h1>Test</h1></header>
<main><div id="error" role="alert"></div>
<canvas id="visual" data-talk-visual width="64" height="64"></canvas>
<input id="field" type="text" data-talk-visual></main>
<script type="module" src="talk.js"></script>
<script type="module">kiln.setStages(${JSON.stringify(STAGES)});</script></body></html>`;

let server, browser, context;
const errors = [];
before(async () => {
  server = await serve(sourceSite(), { '/t.html': PAGE });
  browser = await launch();
  // One context: the audience and speaker windows share its BroadcastChannel.
  context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  context.on('page', (page) => {
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('pageerror', (e) => errors.push(String(e)));
  });
});
after(async () => { await browser?.close(); server?.close(); });

async function open(path) {
  const page = await context.newPage();
  await page.goto(server.url + path);
  await page.waitForSelector('#talk[data-ready]');
  return page;
}

const state = (page) => page.evaluate(() => ({
  counter: document.getElementById('talk-counter').textContent,
  blank: document.getElementById('talk-blank') ? !document.getElementById('talk-blank').hidden : null,
  next: document.getElementById('speaker-next')?.textContent ?? null,
  told: document.getElementById('speaker-blank')?.textContent ?? null,
}));

// Waits until `page`'s state has `want`'s values.
async function until(page, want) {
  const end = Date.now() + 5000;
  let got;
  do {
    got = await state(page);
    if (Object.entries(want).every(([k, v]) => got[k] === v)) return;
    await page.waitForTimeout(50);
  } while (Date.now() < end);
  assert.deepEqual(got, { ...got, ...want });
}

test('S opens the speaker view, and either window moves both', async () => {
  const audience = await open('/t.html?talk&stage=2');
  const [speaker] = await Promise.all([context.waitForEvent('page'), audience.keyboard.press('s')]);
  await speaker.waitForSelector('#talk[data-ready]');
  const url = new URL(speaker.url());
  assert.ok(url.searchParams.has('speaker') && url.searchParams.has('talk'), speaker.url());
  assert.equal(url.pathname, '/t.html');
  await until(speaker, { counter: '2 / 3', next: 'Next: Stage 3', blank: null });
  assert.match(await speaker.textContent('#talk-text'), /The words of stage 2\./);
  assert.equal(await speaker.isVisible('#talk-qr'), false, 'no QR code in the speaker view');
  assert.match(await speaker.title(), /^Speaker · Stage 2/);

  // The timer runs, and resets.
  await speaker.waitForFunction(() => document.getElementById('speaker-timer').textContent === '0:01');
  await speaker.click('#speaker-reset');
  assert.equal(await speaker.textContent('#speaker-timer'), '0:00');

  // The audience window drives the speaker view...
  await audience.keyboard.press('ArrowRight');
  await until(speaker, { counter: '3 / 3', next: 'Next: (the last stage)' });
  await audience.keyboard.press('Home');
  await until(speaker, { counter: '1 / 3', next: 'Next: Stage 2' });
  // ...and the speaker view the audience window: keys and buttons.
  await speaker.keyboard.press('ArrowRight');
  await until(audience, { counter: '2 / 3' });
  await speaker.keyboard.press('3');
  await until(audience, { counter: '3 / 3' });
  await speaker.click('#talk-prev');
  await until(audience, { counter: '2 / 3' });
  assert.equal(new URL(audience.url()).searchParams.get('stage'), '2', 'the audience URL keeps the place');
  // Both windows' URLs keep their flags bare, as typed (`?talk&…&speaker`, never `speaker=`).
  for (const w of [audience, speaker]) assert.doesNotMatch(w.url(), /(talk|speaker)=/, w.url());

  // B in the speaker view blanks the audience screen, and says so; B or . brings it back.
  await speaker.keyboard.press('b');
  await until(audience, { blank: true });
  await until(speaker, { told: 'The audience screen is blank (B shows it).' });
  assert.equal(await speaker.isVisible('#talk-panel, #talk'), true, 'the speaker view itself stays');
  await audience.keyboard.press('.');
  await until(audience, { blank: false });
  await until(speaker, { told: '' });
  await audience.keyboard.press('B');
  await until(speaker, { told: 'The audience screen is blank (B shows it).' });
  assert.equal(await audience.isVisible('#talk-blank'), true);
  const box = await audience.locator('#talk-blank').boundingBox();
  assert.deepEqual(box, { x: 0, y: 0, width: 1280, height: 720 }, 'the whole screen is black');
  await speaker.keyboard.press('.');
  await until(audience, { blank: false });

  // A window that opens later joins where the talk stands; the index's embedded previews don't.
  const late = await open('/t.html?talk&stage=1');
  await until(late, { counter: '2 / 3' });
  const embed = await context.newPage();
  await embed.goto(`${server.url}/t.html?talk&stage=1&embed`);
  await embed.waitForSelector('#talk[data-ready]', { state: 'attached' });
  await speaker.keyboard.press('End');
  await until(audience, { counter: '3 / 3' });
  await until(late, { counter: '3 / 3' });
  await embed.waitForTimeout(300);
  assert.equal((await state(embed)).counter, '1 / 3');
  assert.deepEqual(errors, []);
  for (const p of [audience, speaker, late, embed]) await p.close();
});

test('the keys are left alone while typing', async () => {
  const page = await open('/t.html?talk&stage=1');
  await page.focus('#field');
  const popups = [];
  context.on('page', (p) => popups.push(p));
  await page.keyboard.type('bs. 3');
  await page.keyboard.press('ArrowRight');
  await page.waitForTimeout(300);
  assert.equal(await page.inputValue('#field'), 'bs. 3');
  assert.deepEqual(await state(page), { counter: '1 / 3', blank: false, next: null, told: null });
  assert.equal(popups.length, 0, 'no speaker view opened');
  assert.deepEqual(errors, []);
  await page.close();
});

// Decodes the QR code in a PNG screenshot with jsQR, in a blank page of the browser.
async function decodeQr(png) {
  const page = await context.newPage();
  await page.addScriptTag({ path: fileURLToPath(new URL('../node_modules/jsqr/dist/jsQR.js', import.meta.url)) });
  const text = await page.evaluate(async (b64) => {
    const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
    const bitmap = await createImageBitmap(blob);
    const ctx = new OffscreenCanvas(bitmap.width, bitmap.height).getContext('2d');
    ctx.drawImage(bitmap, 0, 0);
    const { data } = ctx.getImageData(0, 0, bitmap.width, bitmap.height);
    return window.jsQR(data, bitmap.width, bitmap.height)?.data ?? null;
  }, png.toString('base64'));
  await page.close();
  return text;
}

test('the first stage shows a QR code of the page, large enough and decoding to its address', async () => {
  for (const viewport of [{ width: 1280, height: 720 }, { width: 1920, height: 1080 }]) {
    const page = await open('/t.html?talk&stage=1');
    await page.setViewportSize(viewport);
    await page.waitForSelector('#talk-qr svg');
    const box = await page.locator('#talk-qr svg').boundingBox();
    assert.ok(box.width >= 0.2 * viewport.height && box.width === box.height,
      `${viewport.width}×${viewport.height}: the QR code is ${box.width}×${box.height} px`);
    // Wholly on screen.
    assert.ok(box.x >= 0 && box.y >= 0 && box.x + box.width <= viewport.width && box.y + box.height <= viewport.height);
    const want = `${server.url}/t.html`;
    assert.equal(await decodeQr(await page.locator('#talk-qr svg').screenshot()), want);
    assert.match(await page.textContent('#talk-qr figcaption'), /This page: http:\/\/127\.0\.0\.1:\d+\/t\.html \(this machine only/);
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.isVisible('#talk-qr'), false, 'only on the first stage');
    await page.keyboard.press('ArrowLeft');
    assert.equal(await page.isVisible('#talk-qr svg'), true);
    await page.close();
  }
  assert.deepEqual(errors, []);
});
