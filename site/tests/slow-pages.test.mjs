// The index and the waves page for a visitor on a slow or software adapter (issue 62), in headless
// Chromium with WebGPU on SwiftShader and without an adapter: the index's poster captions are
// whole and cover none of their stills at 1280×720 and 1920×1080; the waves page and its
// walkthrough show one measurement of the same work (the later page shows the earlier one's,
// saying whose), not two that disagree. Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import { launch, openPage, useSite } from './browser.mjs';

const site = useSite('waves/waves_bg.wasm');

// Each card's caption under its still: how far it reaches into the picture (px, ≤ 0: not at
// all), and whether its text is cut (wider or taller than its box, or ellipsised).
function captions(page) {
  return page.$$eval('.thumb', (list) => list.map((t) => {
    const img = t.querySelector('img.poster');
    const cap = t.querySelector('.placeholder');
    const style = getComputedStyle(cap);
    return {
      text: cap.textContent,
      over: img ? img.getBoundingClientRect().bottom - cap.getBoundingClientRect().top : null,
      cut: cap.scrollWidth > cap.clientWidth + 1 || cap.scrollHeight > cap.clientHeight + 1
        || (style.textOverflow === 'ellipsis' && style.whiteSpace === 'nowrap'),
    };
  }));
}

let plain;
after(async () => { await plain?.close(); });

for (const [width, height] of [[1280, 720], [1920, 1080]]) {
  test(`the index's poster captions are whole and under their stills at ${width}×${height}`, async () => {
    plain ??= await launch({ webgpu: false });
    for (const [state, browser] of [['SwiftShader', site.browser], ['no adapter', plain]]) {
      const { page, errors } = await openPage(browser, site.url('/index.html'), { width, height });
      await page.waitForFunction(() => [...document.querySelectorAll('.thumb img.poster')].every((i) => i.complete && i.naturalWidth > 0),
        null, { timeout: 30000 });
      const list = await captions(page);
      console.log(`${state}, ${width}×${height}: ${list.map((c) => `${c.over.toFixed(0)} px over${c.cut ? ', cut' : ''}`).join('; ')}`);
      for (const c of list) {
        assert.ok(c.over <= 0.5, `${state}: "${c.text}" covers ${c.over} px of its still`);
        assert.equal(c.cut, false, `${state}: "${c.text}" is cut`);
      }
      assert.deepEqual(errors, []);
      await page.close();
    }
  });
}

// The HUD's lines about the uncapped rates.
const rates = (page) => page.evaluate(() => document.getElementById('hud').textContent.split('\n')
  .filter((l) => /uncapped|measurement/.test(l)));

test('the waves page and its walkthrough show one measurement of the same work', async () => {
  // One browser profile (the visitor's): the page first, then the walkthrough.
  const context = await site.browser.newContext({ viewport: { width: 1280, height: 720 } });
  const errors = [];
  const open = async (path) => {
    const page = await context.newPage();
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(site.url(path));
    await page.waitForFunction(() => /uncapped GPU: [\d.]+ frames\/s/.test(document.getElementById('hud').textContent),
      null, { timeout: 180000 });
    return page;
  };
  const plainPage = await open('/waves.html');
  const onPage = await rates(plainPage);
  const talk = await open('/waves.html?talk&stage=5');
  const onStage = await rates(talk);
  console.log(`page: ${onPage.join(' | ')}`);
  console.log(`walkthrough: ${onStage.join(' | ')}`);
  assert.match(onPage.join('\n'), /one measurement, taken on this page/);
  // The same figures, and the walkthrough says whose measurement they are.
  assert.deepEqual(onStage.slice(0, 2), onPage.slice(0, 2));
  assert.match(onStage.join('\n'), /the measurement waves\.html took \d+ (s|min) ago, for these settings/);
  // Where the CPU path wins, the line says why.
  if (/GPU\/CPU 0\./.test(onPage.join('\n'))) assert.match(onPage.join('\n'), /CPU faster: this adapter is a software one/);
  assert.deepEqual(errors, []);
  await context.close();
});
