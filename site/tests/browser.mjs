// Headless Chromium with WebGPU on SwiftShader, and a static file server on 127.0.0.1 (a
// secure context, which WebGPU requires). Shared by the browser tests and captures. Also the
// two other browser states the site must explain: WebGPU without an adapter (Debian's Chromium
// without the flags that enable it on Linux: navigator.gpu is there, requestAdapter resolves
// null) and a page that is not a secure context (plain HTTP from a host name that is not
// localhost, which the browser resolves to the same loopback server).
import { createServer } from 'node:http';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { existsSync } from 'node:fs';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';

const TYPES = {
  '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.wasm': 'application/wasm', '.css': 'text/css', '.json': 'application/json',
  '.png': 'image/png', '.svg': 'image/svg+xml',
};

// Serves `root` (and the given in-memory `pages`) on an ephemeral loopback port.
export async function serve(root, pages = {}) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (pages[path] !== undefined) {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(pages[path]);
    }
    const file = normalize(join(root, path.endsWith('/') ? path + 'index.html' : path));
    if (!file.startsWith(normalize(root))) { res.writeHead(403); return res.end(); }
    try {
      statSync(file);
      // With its length, as a static host sends it (the attention page's progress bar reads it).
      const body = readFileSync(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'content-length': body.length });
      res.end(body);
    } catch {
      res.writeHead(404); res.end('not found');
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  // Closing also ends the browser's kept-alive connections: the site is gone at once.
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => { server.close(); server.closeAllConnections(); },
  };
}

// site/src as it is, with what scripts/build-site.sh puts beside it that every presenter page
// loads (the QR encoder, the offline manifest; sw.js keeps its unbuilt, empty one), in a new
// temporary folder: for tests of talk.js on pages of their own, without building the wasm.
export function sourceSite() {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-site-'));
  cpSync(fileURLToPath(new URL('../src/', import.meta.url)), dir, { recursive: true });
  mkdirSync(join(dir, 'vendor'));
  copyFileSync(fileURLToPath(new URL('../node_modules/qrcode-generator/dist/qrcode.mjs', import.meta.url)),
    join(dir, 'vendor', 'qrcode.mjs'));
  writeFileSync(join(dir, 'offline.json'),
    JSON.stringify({ version: 'unbuilt', cache: 'kiln-unbuilt', bytes: 0, files: [] }));
  return dir;
}

// A host name that is not localhost, resolved by the browser to 127.0.0.1: a page served from
// it over plain HTTP is not a secure context (the insecure state).
export const INSECURE_HOST = 'kiln-site.test';

// Debian's Chromium, headless, with a fresh profile (Playwright makes a temporary one). With
// `webgpu` (the default): WebGPU on SwiftShader (Vulkan flags keep canvas presentation);
// without: no WebGPU flags, so navigator.gpu offers no adapter. Either way INSECURE_HOST
// resolves to 127.0.0.1, and plain HTTP stays plain (no HTTPS upgrade attempts).
export async function launch({ webgpu = true } = {}) {
  const gpu = webgpu
    ? ['--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader',
      '--use-angle=swiftshader', '--disable-gpu-sandbox']
    : [];
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    ignoreDefaultArgs: webgpu ? ['--disable-gpu'] : [],
    args: [
      '--headless=new', ...gpu, '--no-sandbox', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-quic', `--host-resolver-rules=MAP ${INSECURE_HOST} 127.0.0.1`,
      '--disable-features=HttpsUpgrades,HttpsFirstBalancedModeAutoEnable',
    ],
  });
}

// The address of a page of `server` as a visitor in `state` reaches it: the loopback address
// (a secure context), or INSECURE_HOST for the insecure state.
export function stateUrl(server, state, path) {
  const url = new URL(server.url + path);
  if (state === 'insecure') url.hostname = INSECURE_HOST;
  return url.toString();
}

// A new page at `url` that records console errors and uncaught exceptions in `errors`.
export async function openPage(browser, url, viewport = { width: 1280, height: 720 }) {
  const page = await browser.newPage({ viewport });
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  return { page, errors };
}

// The built site served and a browser launched for one test file: `site.open(path, viewport)`
// opens a page of it. `built` is a file of site/dist the tests need (scripts/build-site.sh).
export function useSite(built) {
  const dist = fileURLToPath(new URL('../dist/', import.meta.url));
  const site = {};
  before(async () => {
    if (!existsSync(`${dist}${built}`)) throw new Error('site/dist is not built: run scripts/build-site.sh');
    site.server = await serve(dist);
    site.browser = await launch();
  });
  after(async () => {
    await site.browser?.close();
    site.server?.close();
  });
  site.url = (path) => site.server.url + path;
  site.open = (path, viewport) => openPage(site.browser, site.url(path), viewport);
  return site;
}

// A screenshot of an element's box, taken as the page's own: an element screenshot waits for
// the element to be still, and a live canvas never is (one timed out on a loaded machine).
export async function boxShot(locator) {
  await locator.evaluate((e) => e.scrollIntoView({ block: 'nearest', inline: 'nearest' }));
  const box = await locator.boundingBox();
  if (!box) throw new Error(`no box to photograph: ${locator}`);
  return locator.page().screenshot({ clip: box });
}

// Statistics of a PNG screenshot, decoded by the browser in `page`: the mean and spread of its
// grey levels (0..1), its number of distinct colours, and the share of its pixels that stand out
// from the site's background (a frame of headings alone has few).
export async function pixelStats(page, png) {
  return page.evaluate(async (b64) => {
    const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
    const bitmap = await createImageBitmap(blob);
    const ctx = new OffscreenCanvas(bitmap.width, bitmap.height).getContext('2d');
    ctx.drawImage(bitmap, 0, 0);
    const { data } = ctx.getImageData(0, 0, bitmap.width, bitmap.height);
    let sum = 0, sq = 0, lit = 0;
    const colours = new Set();
    for (let i = 0; i < data.length; i += 4) {
      const v = (data[i] + data[i + 1] + data[i + 2]) / (3 * 255);
      sum += v; sq += v * v;
      colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
      if (Math.abs(data[i] - 13) + Math.abs(data[i + 1] - 13) + Math.abs(data[i + 2] - 18) > 60) lit++;
    }
    const n = data.length / 4;
    const mean = sum / n;
    return { mean, std: Math.sqrt(Math.max(0, sq / n - mean * mean)), colours: colours.size, lit: lit / n };
  }, png.toString('base64'));
}

// The share of pixels (0..1) whose red, green and blue differ by more than `threshold` in all
// (0..765) between two PNG screenshots; 1 when their sizes differ.
export async function changedShare(page, a, b, threshold = 12) {
  return page.evaluate(async ([x, y, t]) => {
    const read = async (b64) => {
      const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
      const bitmap = await createImageBitmap(blob);
      const ctx = new OffscreenCanvas(bitmap.width, bitmap.height).getContext('2d');
      ctx.drawImage(bitmap, 0, 0);
      return ctx.getImageData(0, 0, bitmap.width, bitmap.height).data;
    };
    const [p, q] = [await read(x), await read(y)];
    if (p.length !== q.length) return 1;
    let changed = 0;
    for (let i = 0; i < p.length; i += 4) {
      if (Math.abs(p[i] - q[i]) + Math.abs(p[i + 1] - q[i + 1]) + Math.abs(p[i + 2] - q[i + 2]) > t) changed++;
    }
    return changed / (p.length / 4);
  }, [a.toString('base64'), b.toString('base64'), threshold]);
}

// Steps a page's walkthrough from stage 1 with ArrowRight. At each stage the counter, the title
// and the URL's stage must match, and a screenshot of `visual` (a locator) must have contrast and
// differ from the previous stage's; it is looked at again until it does, for up to `wait` ms (a
// stage's picture may land a frame or two late on SwiftShader). Screenshots are decoded in
// `decoder`, a page of their own: the demo's page is busy drawing. `settle`: ms before each
// look; `onStage(k)`: more checks at stage k (1-based); `stages`: how many the walkthrough has,
// when `titles` are only its first few. Returns the last screenshot.
export async function walkStages(page, decoder, visual, titles,
  { threshold = 12, minChange = 0.05, minColours = 0, wait = 30000, settle = 500, stages = titles.length, onStage } = {}) {
  let previous = null;
  for (let k = 1; k <= titles.length; k++) {
    if (k > 1) await page.keyboard.press('ArrowRight');
    assert.equal(await page.textContent('#talk-counter'), `${k} / ${stages}`);
    assert.equal(await page.textContent('#talk-title'), titles[k - 1]);
    assert.equal(new URL(page.url()).searchParams.get('stage'), String(k));
    await onStage?.(k);
    const until = Date.now() + wait;
    let shot, stats, changed;
    do {
      await page.waitForTimeout(settle);
      shot = await boxShot(visual);
      stats = await pixelStats(decoder, shot);
      changed = previous ? await changedShare(decoder, previous, shot, threshold) : 1;
    } while ((stats.std <= 0.05 || stats.colours <= minColours || changed <= minChange) && Date.now() < until);
    console.log(`stage ${k}: spread ${stats.std.toFixed(3)}, ${stats.colours} colours, ` +
      `${(100 * changed).toFixed(1)} % differs from the previous stage`);
    assert.ok(stats.std > 0.05 && stats.colours > minColours, `stage ${k}: no real content ${JSON.stringify(stats)}`);
    assert.ok(changed > minChange, `stage ${k}: the picture hardly differs from stage ${k - 1}'s`);
    previous = shot;
  }
  return previous;
}

// What a walkthrough's picture says it drew (the canvas's data-texts, written by the demo: the
// picture's size and each text's box and letter height, in the picture's pixels), as the page
// shows it: how many texts, the smallest letter height in CSS pixels, and the boxes that are not
// wholly inside the picture.
export async function pictureTexts(page, canvasId) {
  return page.evaluate((id) => {
    const canvas = document.getElementById(id);
    const t = JSON.parse(canvas.dataset.texts);
    const box = canvas.getBoundingClientRect();
    const k = Math.min(box.width / t.width, box.height / t.height);
    return {
      texts: t.texts.length,
      size: `${t.width}×${t.height}`,
      smallest: Math.min(...t.texts.map((b) => b[4])) * k,
      outside: t.texts.filter(([x, y, w, h]) => x < 0 || y < 0 || x + w > t.width || y + h > t.height),
    };
  }, canvasId);
}

// Fails unless every text of `r` (pictureTexts) is at least `least` CSS pixels tall and inside.
export function assertLegible(r, least, stage) {
  assert.ok(r.smallest >= least - 0.01, `stage ${stage + 1}: text ${r.smallest.toFixed(1)} px tall, under ${least}`);
  assert.deepEqual(r.outside, [], `stage ${stage + 1}: texts cut off at the picture's edge`);
}

// The page's own texts (every visible element with text of its own: narration, code, captions,
// key hints, buttons, the banner), as the page shows them: those whose computed font size is
// under `least` CSS pixels, as "selector: size text".
export async function smallPageTexts(page, least) {
  return page.evaluate((least) => {
    const small = [];
    for (const el of document.querySelectorAll('body *')) {
      if (!el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
      const own = [...el.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.textContent).join('').trim();
      const box = el.getBoundingClientRect();
      if (!own || box.width === 0 || box.height === 0) continue;
      const px = parseFloat(getComputedStyle(el).fontSize);
      if (px < least - 0.01) small.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}: ${px} px "${own.slice(0, 30)}"`);
    }
    return small;
  }, least);
}
