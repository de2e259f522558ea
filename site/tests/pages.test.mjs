// Every page of the built site, at 1280×720: the structure a visitor and a screen reader rely on
// (a language, one h1, a name for every control, canvas and frame), the parts every demo page
// promises (a link to its walkthrough, a kernel-source view), the dark theme's contrast, and no
// console errors while it starts. Needs site/dist (scripts/build-site.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { useSite } from './browser.mjs';

const site = useSite('index.html');
const DEMOS = ['waves', 'attention', 'flash', 'fleet'];

// WCAG's contrast ratio of two 'rgb(r, g, b)' colours.
function contrast(a, b) {
  const lum = (c) => {
    const [r, g, bl] = c.match(/\d+(\.\d+)?/g).slice(0, 3).map((v) => {
      const s = Number(v) / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

for (const name of ['index', ...DEMOS]) {
  test(`${name}.html: names for every control, its promised parts, contrast, a clean console`, async () => {
    const { page, errors } = await site.open(`/${name}.html`, { width: 1280, height: 720 });
    // Let the page start its module (the demos ask for a device, the index for the adapter).
    await page.waitForTimeout(3000);
    const report = await page.evaluate(() => {
      const named = (e) => {
        const label = e.getAttribute('aria-label') || e.getAttribute('title') || e.getAttribute('aria-labelledby')
          || (e.id && document.querySelector(`label[for="${e.id}"]`)?.textContent) || e.textContent;
        return Boolean(label && label.trim());
      };
      const unnamed = [...document.querySelectorAll('button, input, select, textarea, canvas, iframe, a, progress')]
        .filter((e) => e.offsetParent !== null || e.tagName === 'IFRAME')
        .filter((e) => !named(e))
        .map((e) => `${e.tagName.toLowerCase()}#${e.id}`);
      const body = getComputedStyle(document.body);
      return {
        lang: document.documentElement.lang,
        h1: document.querySelectorAll('h1').length,
        unnamed,
        walkthrough: [...document.querySelectorAll('a')].some((a) => /[?&]talk\b/.test(a.getAttribute('href') ?? '')),
        kernels: Boolean(document.getElementById('kernels')),
        explained: document.body.dataset.webgpuState ?? null,
        scroll: Math.round(scrollY),
        fg: body.color,
        bg: body.backgroundColor,
        // A canvas's own background shows where its picture does not fill the box.
        canvases: [...document.querySelectorAll('canvas')]
          .map((c) => getComputedStyle(c).backgroundColor)
          .filter((c) => c === 'rgb(0, 0, 0)'),
        // The HUD stays inside its stage.
        hud: (() => {
          const hud = document.getElementById('hud');
          if (!hud || hud.offsetParent === null) return null;
          const [h, s] = [hud.getBoundingClientRect(), hud.parentElement.getBoundingClientRect()];
          return { right: h.right, stage: s.right, overflow: hud.scrollWidth - hud.clientWidth };
        })(),
      };
    });
    // WebGPU on SwiftShader: nothing to explain, and the page has not scrolled itself.
    assert.equal(report.explained, null, 'a WebGPU browser is told its GPU paths cannot run');
    assert.equal(report.scroll, 0, 'the page scrolled itself');
    assert.equal(report.lang, 'en');
    assert.equal(report.h1, 1, 'one h1');
    assert.deepEqual(report.unnamed, [], 'controls without an accessible name');
    assert.ok(report.walkthrough, 'a link to a walkthrough');
    if (name !== 'index') assert.ok(report.kernels, 'a kernel-source view (#kernels)');
    assert.deepEqual(report.canvases, [], 'black canvas backgrounds (bars beside a picture)');
    if (report.hud) {
      assert.ok(report.hud.right <= report.hud.stage + 0.5 && report.hud.overflow <= 1,
        `the HUD runs out of its stage: ${JSON.stringify(report.hud)}`);
    }
    const ratio = contrast(report.fg, report.bg);
    assert.ok(ratio >= 7, `text contrast ${ratio.toFixed(1)}:1`);
    // Tab reaches a control and shows where the focus is.
    await page.keyboard.press('Tab');
    const focus = await page.evaluate(() => {
      const e = document.activeElement;
      const s = getComputedStyle(e);
      return { tag: e.tagName, outline: s.outlineStyle !== 'none' || s.boxShadow !== 'none' };
    });
    assert.notEqual(focus.tag, 'BODY', 'Tab focuses nothing');
    assert.ok(focus.outline, `the focused ${focus.tag} shows no focus ring`);
    assert.deepEqual(errors, []);
    await page.close();
  });
}
