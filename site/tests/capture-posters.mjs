// Poster frames for the index: each card's thumbnail — its demo's walkthrough at one stage,
// embedded — as a still JPEG in site/src/posters/<demo>.jpg, so that the index's first load
// carries no demo's WebAssembly (a card starts its live demo on hover, focus or click). Not a
// test: run it after a whole site build (scripts/build-site.sh) when a thumbnail's stage changes,
// and commit the pictures (about 50 KB each).
//   node site/tests/capture-posters.mjs [DEMO…]   (all four without arguments)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { launch, openPage, serve } from './browser.mjs';

const src = fileURLToPath(new URL('../src/', import.meta.url));
const dist = fileURLToPath(new URL('../dist/', import.meta.url));
// The thumbnails the index embeds: data-src of each card's .thumb, keyed by its card's demo.
const index = readFileSync(`${src}index.html`, 'utf8');
const cards = [...index.matchAll(/data-demo="(\w+)">\s*<div class="thumb" data-src="([^"]+)"/g)]
  .map(([, demo, url]) => ({ demo, url: url.replaceAll('&amp;', '&') }));
if (cards.length === 0) throw new Error('no thumbnails found in site/src/index.html');
const only = process.argv.slice(2);
const server = await serve(dist);
const browser = await launch();
let failed = 0;
try {
  for (const { demo, url } of cards.filter((c) => only.length === 0 || only.includes(c.demo))) {
    const { page, errors } = await openPage(browser, `${server.url}/${url}`, { width: 1280, height: 720 });
    try {
      await page.waitForSelector('#talk[data-ready]', { state: 'attached', timeout: 180000 });
      // Let the live visual draw (the fleet's race takes a while to fill in; the attention
      // walkthrough loads the model and builds its pipelines on a software adapter first).
      await page.waitForTimeout({ fleet: 20000, attention: 70000 }[demo] ?? 6000);
      const file = `${src}posters/${demo}.jpg`;
      await page.screenshot({ path: file, type: 'jpeg', quality: 60 });
      console.log(`wrote ${file}${errors.length ? `; console errors: ${errors.join(' | ')}` : ''}`);
    } catch (e) {
      failed++;
      console.error(`${demo}: ${e}`);
    } finally {
      await page.close();
    }
  }
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
