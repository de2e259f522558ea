// Warm-up times of the walkthroughs (not a test; README.md, "Giving a talk", quotes them): for
// each page in presenter mode at 1920×1080, the time from navigation to the stage list shown
// (#talk[data-ready]) and to stage 1's visual drawn (a screenshot of it with contrast), first
// in a fresh browser profile (nothing cached), then again in the same profile (the offline
// copy in place). Usage: node site/tests/measure-warmup.mjs (needs site/dist).
import { fileURLToPath } from 'node:url';

import { boxShot, launch, pixelStats, serve } from './browser.mjs';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const server = await serve(dist);
const browser = await launch();
const decoder = await browser.newPage();

async function time(context, path) {
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  const t0 = Date.now();
  await page.goto(server.url + path);
  await page.waitForSelector('#talk[data-ready]', { timeout: 180000 });
  const listed = Date.now() - t0;
  let stats;
  do {
    stats = await pixelStats(decoder, await boxShot(page.locator('#talk-visuals')));
    if (stats.std > 0.05) break;
    await page.waitForTimeout(200);
  } while (Date.now() - t0 < 180000);
  const drawn = Date.now() - t0;
  await page.waitForSelector('body[data-offline="ready"]', { timeout: 120000 }).catch(() => {});
  await page.close();
  return { listed, drawn, errors: errors.length };
}

const s = (ms) => `${(ms / 1000).toFixed(1)} s`;
console.log('| walkthrough | first visit: stages shown | first visit: stage 1 drawn | again (cached): stage 1 drawn |');
console.log('|---|---|---|---|');
for (const demo of ['waves', 'attention', 'flash', 'fleet']) {
  const context = await browser.newContext({ viewport: { width: 1920, height: 1080 } });
  const cold = await time(context, `/${demo}.html?talk&stage=1`);
  const warm = await time(context, `/${demo}.html?talk&stage=1`);
  console.log(`| ${demo} | ${s(cold.listed)} | ${s(cold.drawn)} | ${s(warm.drawn)} |` +
    (cold.errors + warm.errors ? ` (${cold.errors + warm.errors} console errors)` : ''));
  await context.close();
}
await browser.close();
server.close();
