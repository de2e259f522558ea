// Every page and every walkthrough stage in the two browser states where Kiln's GPU paths
// cannot run — WebGPU without an adapter (Debian's Chromium without the flags that enable
// WebGPU on Linux: navigator.gpu is there, requestAdapter resolves null) and a page that is not
// a secure context (plain HTTP from a host name that is not localhost, resolved to the same
// loopback server) — one browser per state. Each page gives that state's explanation and fix,
// turns off what needs the GPU with the reason, keeps its device panel and kernel-source view
// from waiting forever, does not scroll itself, and logs no console error; each walkthrough has
// every stage's title, words and code, a working counter, keys and buttons, and a picture at
// every stage (CPU-drawn, or the fleet's checked-in data; looked at in one state, the pictures
// being the same in both, and at the first stage in the other). The third state, WebGPU on
// SwiftShader, is each page's own test file (and pages.test.mjs checks it explains nothing).
// Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launch, openPage, pixelStats, serve, stateUrl, walkStages } from './browser.mjs';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));

const STATES = {
  'no-adapter': {
    webgpu: false,
    explanation: /has WebGPU but offers no adapter.*--enable-unsafe-webgpu/s,
    short: /no WebGPU adapter/,
    // Every stage's picture is looked at here; the insecure state draws the same pictures (the
    // same CPU-drawn visuals, no adapter either), so there its first stage's is.
    stages: 'all',
  },
  insecure: {
    webgpu: true,
    explanation: /plain HTTP from kiln-site\.test:\d+, which is not a secure context.*HTTPS.*localhost/s,
    short: /not a secure context/,
    stages: 'first',
  },
};

const WALKTHROUGHS = {
  waves: ['The waves', 'Two factor matrices', 'One matmul', 'Colour mapping', 'GPU against CPU'],
  attention: ['Text', 'Tokens', 'Embeddings', 'Layer norm', 'Q, K, V', 'Scores', 'Softmax',
    'Weights · V', 'Add: the residual', 'Layer norm again'],
  flash: ['The naive way: an N×N matrix', 'Tiles and the online softmax',
    "Backward: recompute, don't store", 'Speed and memory traffic', 'Generating: flash-decoding'],
  fleet: ['Device census', 'Ceilings', 'Variants racing', 'The tuned choice'],
};

// wgpu's list of the backends it tried: never for a visitor's eyes.
const RAW = /not compiled in|noop not requested|Asking the adapter/;

// What every page shows in a state without a GPU path, read in the page.
const summary = (page) => page.evaluate(() => ({
  error: document.getElementById('error')?.textContent ?? '',
  errorShown: getComputedStyle(document.getElementById('error')).display !== 'none',
  state: document.body.dataset.webgpuState,
  body: document.body.innerText,
  scroll: Math.round(scrollY),
  focus: document.activeElement?.tagName,
  kernels: document.querySelector('#kernels .kernel-list')?.textContent ?? null,
  off: [...document.querySelectorAll('button:disabled, select:disabled')]
    .map((b) => ({ id: b.id || b.dataset.key, title: b.title, note: b.getAttribute('aria-describedby') })),
}));

// The controls each page turns off for want of a GPU, by id (or data-key).
const OFF = {
  index: [],
  waves: ['g', 'r'],
  attention: ['Tab'],
  flash: ['train'],
  fleet: ['budget', 'run', 'cancel', 'measure', 'start-race'],
};

for (const [state, want] of Object.entries(STATES)) {
  describe(`${state}: the site explains itself and stays usable`, () => {
    let server, browser;
    before(async () => {
      if (!existsSync(`${dist}fleet/fleet_web_bg.wasm`)) throw new Error('site/dist is not built: run scripts/build-site.sh');
      server = await serve(dist);
      browser = await launch({ webgpu: want.webgpu });
    });
    after(async () => {
      await browser?.close();
      server?.close();
    });
    const open = (path, viewport) => openPage(browser, stateUrl(server, state, path), viewport);

    for (const name of ['index', 'waves', 'attention', 'flash', 'fleet']) {
      test(`${state}: ${name}.html gives the explanation and its fix, and works without the GPU`, async () => {
        const { page, errors } = await open(`/${name}.html`);
        await page.waitForFunction((s) => document.body.dataset.webgpuState === s, state, { timeout: 20000 });
        assert.equal(await page.evaluate(() => isSecureContext), state !== 'insecure');
        // What the page does without the GPU, settled.
        const ready = {
          index: '#device-panel .no-device',
          waves: '#canvas[data-path="cpu"][data-drawn]',
          attention: '#canvas[data-path="cpu"][data-drawn]',
          flash: 'body[data-sweep="done"]',
          fleet: 'body[data-fleet] #device-panel[data-ready] .no-device',
        }[name];
        await page.waitForSelector(ready, { state: 'attached', timeout: 60000 });
        const s = await summary(page);
        assert.ok(s.errorShown, 'the explanation is not shown');
        assert.match(s.error, want.explanation);
        assert.doesNotMatch(s.body, RAW);
        assert.equal(s.scroll, 0, 'the page scrolled itself');
        assert.equal(s.focus, 'BODY', 'something took the focus');
        // What needs the GPU is off, each control saying why.
        const off = s.off.filter((o) => OFF[name].includes(o.id));
        assert.deepEqual(off.map((o) => o.id).sort(), [...OFF[name]].sort(), JSON.stringify(s.off));
        for (const o of off) {
          assert.match(o.title, want.short, `${o.id}: ${o.title}`);
          assert.ok(o.note && await page.isVisible(`#${o.note}`), `${o.id}: no visible note`);
        }
        if (name === 'index') {
          assert.match(await page.textContent('#device-panel'), /No device to describe/);
          assert.equal(await page.locator('.card iframe').count(), 0);
          const placeholders = await page.$$eval('.thumb .placeholder', (p) => p.map((x) => x.textContent));
          assert.equal(placeholders.length, 4);
          assert.ok(placeholders.every((t) => want.short.test(t)), placeholders.join(' | '));
        } else {
          assert.match(s.kernels ?? '', /No kernel source here/);
        }
        if (name === 'waves') {
          // The header says what is drawn; More waves at the most is off, saying so.
          assert.match(await page.textContent('#frame-now'), /here 256×256 pixels and 128 waves/);
          assert.match(await page.textContent('#product'), /\[4·256, 256\] × \[256, 256\]/);
          assert.equal(await page.getAttribute('button[data-key="+"]', 'title'), '128 waves is the most');
          // A click as a visitor's (Playwright's own would scroll the button into view first).
          await page.$eval('button[data-key="-"]', (b) => b.click());
          assert.match(await page.textContent('#frame-now'), /64 waves/);
          assert.equal(await page.isDisabled('button[data-key="+"]'), false);
          assert.equal(await page.evaluate(() => Math.round(scrollY)), 0, 'a button scrolled the page');
        }
        if (name === 'fleet') {
          assert.match(await page.textContent('#device-panel'), /What WebGPU guarantees every device/);
          assert.match(await page.textContent('#verdict-result'), /No race here/);
          assert.ok(Number(await page.getAttribute('body', 'data-fleet')) > 0, 'the reports are merged');
        }
        console.log(`${state} ${name}: ${s.off.length} controls off; ${s.error.slice(0, 90)}…`);
        assert.deepEqual(errors, []);
        await page.close();
      });
    }

    test(`${state}: ${want.stages === 'all' ? 'every' : 'the first'} walkthrough stage has its words, code and picture, and navigation works`, async () => {
      const decoder = await browser.newPage();
      for (const [demo, titles] of Object.entries(WALKTHROUGHS)) {
        const began = Date.now();
        const { page, errors } = await open(`/${demo}.html?talk&model=synthetic`);
        await page.waitForSelector('#talk[data-ready]', { timeout: 60000 });
        assert.match(await page.textContent('#error'), want.explanation);
        assert.equal(await page.isVisible('#error'), true);
        assert.equal(await page.isDisabled('#talk-prev'), true, 'Back on the first stage');
        // The HUD's text must not stand in for a picture.
        await page.addStyleTag({ content: '#hud { visibility: hidden; }' });
        const words = [];
        const walked = want.stages === 'all' ? titles : titles.slice(0, 1);
        await walkStages(page, decoder, page.locator('#talk-visuals'), walked, {
          settle: 400,
          minChange: 0.02,
          wait: 20000,
          stages: titles.length,
          onStage: async (k) => {
            const stage = await page.evaluate(() => ({
              text: document.getElementById('talk-text').textContent,
              code: document.querySelector('#talk-code pre')?.textContent ?? '',
              caption: document.getElementById('talk-caption').textContent,
            }));
            assert.ok(stage.text.length > 80, `${demo} stage ${k}: no narration`);
            assert.ok(stage.code.trim().length > 40, `${demo} stage ${k}: no code`);
            assert.ok(stage.caption.length > 5, `${demo} stage ${k}: no caption`);
            // The narration names no cause of its own: the banner says which it is (an
            // insecure page has WebGPU and maybe an adapter; issue 36's finding 4).
            assert.doesNotMatch(stage.text, /offers no WebGPU adapter/, `${demo} stage ${k}`);
            words.push(stage.text);
          },
        });
        assert.equal(new Set(words).size, walked.length, `${demo}: stages share their words`);
        if (walked.length === titles.length) assert.equal(await page.isDisabled('#talk-next'), true, 'Next on the last stage');
        // Keys and buttons: Home, a digit, Next, Back; the URL keeps the place.
        const at = async (k) => {
          assert.equal(await page.textContent('#talk-counter'), `${k} / ${titles.length}`);
          assert.equal(await page.textContent('#talk-title'), titles[k - 1]);
          assert.equal(new URL(page.url()).searchParams.get('stage'), String(k));
        };
        await page.keyboard.press('Home');
        await at(1);
        await page.keyboard.press('2');
        await at(2);
        await page.click('#talk-next');
        await at(3);
        await page.click('#talk-prev');
        await at(2);
        await page.reload();
        await page.waitForSelector('#talk[data-ready]', { timeout: 60000 });
        await at(2);
        if (demo === 'fleet') assert.doesNotMatch(await page.evaluate(() => document.body.innerText), RAW);
        console.log(`${state} ${demo} walkthrough: ${walked.length} of ${titles.length} stages in ${((Date.now() - began) / 1000).toFixed(1)} s`);
        assert.deepEqual(errors, []);
        await page.close();
      }
      await decoder.close();
    });
  });
}
