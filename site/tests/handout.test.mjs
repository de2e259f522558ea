// The PDF handout (handout.mjs, written by scripts/screenshots.sh beside the screenshots): on
// two made-up stages of two demos, headless Chromium prints a PDF with both screenshots, a page
// per demo, and the HTML it printed from removed.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { launch } from './browser.mjs';
import { writeHandout } from './handout.mjs';

test('the handout holds every stage\'s screenshot, title and narration', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-handout-'));
  const browser = await launch({ webgpu: false });
  try {
    const page = await browser.newPage({ viewport: { width: 640, height: 360 } });
    const stages = [];
    for (const [demo, stage, colour] of [['waves', 1, '#c33'], ['flash', 1, '#3c3']]) {
      await page.setContent(`<body style="margin:0;background:${colour}"><h1>${demo}</h1></body>`);
      const file = join(dir, `web-${demo}-0${stage}.png`);
      await page.screenshot({ path: file });
      stages.push({ demo, stage, count: 1, file, title: `${demo} <b>title</b>`, text: 'Narration & more.' });
    }
    const pdf = await writeHandout(browser, dir, stages, 'A test.');
    const bytes = readFileSync(pdf);
    const text = bytes.toString('latin1');
    assert.equal(text.slice(0, 5), '%PDF-');
    assert.equal((text.match(/\/Type\s*\/Page\b/g) ?? []).length, 2, 'a page per demo');
    assert.ok((text.match(/\/Subtype\s*\/Image/g) ?? []).length >= 2, 'both screenshots');
    assert.deepEqual(readdirSync(dir).sort(), ['handout.pdf', 'web-flash-01.png', 'web-waves-01.png']);
    assert.ok(!existsSync(join(dir, 'handout.html')));
  } finally {
    await browser.close();
  }
});
