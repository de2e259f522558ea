// The PDF handout of the walkthroughs: every stage's screenshot with its title and narration,
// printed to PDF by headless Chromium (scripts/screenshots.sh, through capture-talk.mjs).
import { rmSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const escape = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

// Writes `${dir}/handout.pdf` from `stages`: [{ demo, stage, count, title, text, file }], `file`
// a PNG in `dir`; `note` says where and how the screenshots were taken. Returns the PDF's path.
export async function writeHandout(browser, dir, stages, note) {
  const demos = [...new Set(stages.map((s) => s.demo))];
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Kiln walkthroughs</title>
<style>
  @page { size: A4; margin: 12mm; }
  body { margin: 0; font: 10.5pt/1.4 system-ui, sans-serif; color: #111; }
  h1 { font-size: 18pt; margin: 0 0 2mm; }
  h1.demo { break-before: page; }
  .note { color: #555; margin: 0 0 5mm; }
  section { break-inside: avoid; margin: 0 0 6mm; }
  /* Two stages to a page: a 16:9 screenshot 165 mm wide is 93 mm high. */
  img { display: block; width: 165mm; margin: 0 auto; border: 0.3mm solid #999; }
  h2 { font-size: 12.5pt; margin: 2mm 0 1mm; }
  section h2, section p { width: 165mm; margin-left: auto; margin-right: auto; }
  h2 span { color: #777; font-weight: normal; }
  p { margin: 0; }
</style></head><body>
<h1>Kiln walkthroughs</h1>
<p class="note">${escape(note)}</p>
${demos.map((demo, i) => `<h1${i ? ' class="demo"' : ''}>${escape(demo)}</h1>
${stages.filter((s) => s.demo === demo).map((s) => `<section>
<img src="${escape(basename(s.file))}" alt="${escape(`${demo}, stage ${s.stage}`)}">
<h2><span>${s.stage} / ${s.count}</span> ${escape(s.title)}</h2>
<p>${escape(s.text)}</p>
</section>`).join('\n')}`).join('\n')}
</body></html>`;
  const page = join(resolve(dir), 'handout.html');
  writeFileSync(page, html);
  const pdf = join(resolve(dir), 'handout.pdf');
  const tab = await browser.newPage();
  try {
    await tab.goto(pathToFileURL(page).href, { waitUntil: 'load' });
    await tab.pdf({ path: pdf, preferCSSPageSize: true, printBackground: true });
  } finally {
    await tab.close();
    rmSync(page);
  }
  return pdf;
}
