// Measures the attention page given a 100,000-character text (a pasted book stalled the page on
// SwiftShader): time until the cut shows, then until a short typed text shows. (The text goes
// into the field: the test server, like many hosts, refuses a 100 kB URL.) A measurement, not a test: node site/tests/measure-long-text.mjs (site built).
import { launch, serve } from './browser.mjs';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../dist', import.meta.url));
const server = await serve(dist);
const browser = await launch();
const page = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
const words = ['the', 'cat', 'sat', 'on', 'the', 'mat', 'because', 'it', 'was', 'tired.'];
const book = Array.from({ length: 20000 }, (_, i) => words[i % words.length]).join(' ').slice(0, 100000);
const hud = () => page.evaluate(() => document.getElementById('hud').textContent);
await page.goto(`${server.url}/attention.html`);
await page.waitForFunction(() => /tokens: \[CLS\] the cat/.test(document.getElementById('hud').textContent), null, { timeout: 300000 });
const t0 = Date.now();
await page.fill('#text', book);
await page.waitForFunction(() => /cut: /.test(document.getElementById('hud').textContent), null, { timeout: 600000 });
const cut = (Date.now() - t0) / 1000;
console.log(`the cut shows after ${cut.toFixed(1)} s: ${(await hud()).split('\n').filter((l) => /cut|tokens/.test(l)).join(' | ').slice(0, 200)}`);
const t1 = Date.now();
await page.fill('#text', 'a red car');
await page.waitForFunction(() => /tokens:\s+\[CLS\]\s+a\s+red\s+car\s+\[SEP\]/.test(document.getElementById('hud').textContent), null, { timeout: 600000 });
console.log(`a short text shows ${((Date.now() - t1) / 1000).toFixed(1)} s after it is typed`);
await browser.close();
server.close();
process.exit(0);
