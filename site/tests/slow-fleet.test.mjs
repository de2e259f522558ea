// The fleet page for a visitor on a slow or software adapter (issue 62), in headless Chromium
// with WebGPU on SwiftShader and without an adapter: a campaign that ran nothing is not offered
// for sending and the page says why, while one that ran is; the campaign's progress says how
// long is left; the walkthrough shows the adapter within 3 s of opening and builds the ceilings'
// kernels only when their stage asks. Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import { launch, openPage, useSite } from './browser.mjs';

const site = useSite('fleet/fleet_web_bg.wasm');
const SLOW = 600000;
// A collector nobody listens at: nothing is sent in these tests, only offered or not.
const COLLECTOR = 'http://127.0.0.1:9/';

async function done(page) {
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, { timeout: SLOW });
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done', await page.textContent('#error'));
}

test('a campaign that ran nothing is not offered for sending, and one that ran is, with its time left said', async () => {
  const { page, errors } = await site.open(`/fleet.html?collector=${encodeURIComponent(COLLECTOR)}&budget=5`);
  // Every line the progress showed.
  await page.evaluate(() => {
    window.steps = [];
    new MutationObserver(() => window.steps.push(document.getElementById('step').textContent))
      .observe(document.getElementById('step'), { childList: true, characterData: true, subtree: true });
  });
  // Cancelled before its first variant: an empty report.
  await page.waitForSelector('#run:not([disabled])', { timeout: 60000 });
  await page.click('#run');
  await page.waitForSelector('#cancel:not([disabled])', { timeout: 120000 });
  await page.click('#cancel');
  await done(page);
  const empty = JSON.parse(await page.evaluate(() => window.kilnFleetReport));
  assert.equal(empty.results.length, 0);
  assert.equal(await page.isVisible('#send'), false, 'an empty report is offered for sending');
  assert.equal(await page.isVisible('#send-why'), true);
  assert.match(await page.textContent('#send-why'), /Nothing to send: the campaign ran no variant \(it was cancelled before the first\)/);
  assert.equal(await page.isVisible('#download'), true);

  // Run through (a 5 s budget: each family's first variant): the progress said the time left,
  // and the report is offered.
  await page.evaluate(() => { window.steps = []; });
  await page.click('#run');
  await done(page);
  const lines = await page.evaluate(() => window.steps);
  console.log(`${lines.length} progress lines, e.g. ${lines.slice(-2).join(' | ')}`);
  assert.ok(lines.some((l) => /the budget of 5 s ends it in .* at most|about .* left, from the \d+ variants since the first|the budget ends it in|the budget is spent/.test(l)),
    lines.slice(0, 5).join(' | '));
  const report = JSON.parse(await page.evaluate(() => window.kilnFleetReport));
  assert.ok(report.results.length > 0);
  assert.equal(await page.isVisible('#send'), true);
  assert.equal(await page.isVisible('#send-why'), false);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the walkthrough shows the adapter within 3 s and builds the ceilings only for their stage', async () => {
  const { page, errors } = await site.open('/fleet.html?talk');
  // The first thing the device panel shows, and when (the page's own clock, from its start).
  const first = await page.waitForFunction(() => {
    const p = document.getElementById('device-panel');
    if (!p.dataset.early && !p.dataset.ready) return null;
    return { at: Number(p.dataset.early ?? performance.now()), early: Boolean(p.dataset.early), text: p.textContent };
  }, null, { timeout: 120000 }).then((h) => h.jsonValue());
  console.log(`device panel after ${first.at} ms (${first.early ? 'the browser\'s view' : 'Kiln\'s view'})`);
  assert.ok(first.at <= 3000, `the device panel was empty for ${first.at} ms`);
  assert.ok(first.early, 'no view of the adapter before Kiln\'s');
  await page.waitForFunction(() => document.getElementById('talk-counter').textContent === '1 / 4', null, { timeout: 120000 });
  console.log(`stages after ${await page.evaluate(() => document.body.dataset.walkthrough)} ms`);
  assert.equal(await page.textContent('#talk-title'), 'Device census');
  // Kiln's view replaced the browser's; nothing of stages 2 and 3 was measured.
  await page.waitForSelector('#device-panel[data-ready]', { timeout: 60000 });
  assert.match(await page.textContent('#device-panel'), /device class webgpu\//);
  assert.equal(await page.$eval('#ceilings', (c) => c.dataset.samples ?? null), null);
  assert.equal(await page.$eval('#race', (c) => c.dataset.samples ?? '0'), '0');
  // Stage 2 asks for the ceilings: their kernels are built and measured then.
  await page.keyboard.press('ArrowRight');
  await page.waitForSelector('#ceilings[data-samples]', { state: 'attached', timeout: 120000 });
  assert.deepEqual(errors, []);
  await page.close();
});

let plain;
after(async () => { await plain?.close(); });

test('no adapter: the walkthrough explains itself within 3 s, and nothing can be run or sent', async () => {
  plain = await launch({ webgpu: false });
  const { page, errors } = await openPage(plain, site.url(`/fleet.html?talk&collector=${encodeURIComponent(COLLECTOR)}`));
  await page.waitForSelector('#error', { state: 'visible', timeout: 60000 });
  // When the explanation was on the screen, by the page's clock (its thread may be busy after).
  const at = await page.evaluate(() => Number(document.body.dataset.explained));
  assert.ok(Number.isFinite(at), 'the page did not mark when it explained itself');
  console.log(`explanation after ${at.toFixed(0)} ms`);
  assert.ok(at <= 3000, `the explanation came after ${at} ms`);
  assert.match(await page.textContent('#error'), /offers no adapter/);
  assert.equal(await page.isDisabled('#run'), true);
  assert.equal(await page.isVisible('#send'), false);
  assert.deepEqual(errors, []);
  await page.close();
});
