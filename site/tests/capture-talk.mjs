// Screenshots of every walkthrough stage of every page, in presenter mode, at 1920×1080, and
// handout.pdf beside them: each stage's screenshot with its title and narration (not a test:
// scripts/screenshots.sh runs it). Usage: node site/tests/capture-talk.mjs OUT_DIR
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { launch, openPage, serve } from './browser.mjs';
import { writeHandout } from './handout.mjs';

const out = process.argv[2];
if (!out) throw new Error('usage: node site/tests/capture-talk.mjs OUT_DIR');
mkdirSync(out, { recursive: true });
const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const server = await serve(dist);
const browser = await launch();
let failed = 0;
const shots = [];
try {
  for (const demo of ['waves', 'attention', 'flash', 'fleet']) {
    const { page, errors } = await openPage(browser, `${server.url}/${demo}.html?talk&stage=1`,
      { width: 1920, height: 1080 });
    try {
      await page.waitForFunction(() => /\d+ \/ \d+/.test(document.getElementById('talk-counter')?.textContent ?? ''),
        null, { timeout: 180000 });
      const count = Number((await page.textContent('#talk-counter')).split('/')[1]);
      for (let stage = 1; stage <= count; stage++) {
        // Let the live visual run a moment on this stage.
        await page.waitForTimeout(2500);
        const file = `${out}/web-${demo}-${String(stage).padStart(2, '0')}.png`;
        await page.screenshot({ path: file });
        console.log(`wrote ${file}`);
        shots.push({ demo, stage, count, file, title: await page.textContent('#talk-title'),
          text: await page.textContent('#talk-text') });
        await page.keyboard.press('ArrowRight');
      }
      if (errors.length) console.log(`${demo}: console errors: ${errors.join(' | ')}`);
    } catch (e) {
      failed++;
      console.log(`${demo}: ${e.message.split('\n')[0]}`);
    } finally {
      await page.close();
    }
  }
  const day = new Date().toISOString().slice(0, 10);
  const pdf = await writeHandout(browser, out, shots,
    `Every stage of every walkthrough of the site, captured on ${day} at 1920×1080 in headless ` +
    `Chromium (WebGPU on SwiftShader, a software adapter): ${shots.length} stages.`);
  console.log(`wrote ${pdf}`);
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
