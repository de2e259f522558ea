// The attention page's comparison with transformers.js in headless Chromium (WebGPU on
// SwiftShader): nothing of transformers.js or the ONNX model loads before the visitor presses the
// button; then the same sentence (special tokens in it) runs through transformers.js's WebGPU
// pipeline and Kiln's GPU path, on the same tokens, with mean-pooled embeddings that agree.
// Times are recorded, not asserted. Needs site/dist built with the model, its ONNX export and
// transformers.js (scripts/build-site.sh); with CI=true a build without them is a failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { useSite } from './browser.mjs';

const site = useSite('attention/attention_bg.wasm');

// Relative L2 between the two embeddings: 8.3e-7 measured on SwiftShader (both read the same f16
// weights, both compute in f32); ten times that is allowed, well inside the 1e-3.
const TOLERANCE = 8e-6;
const TEXT = 'Kiln runs [MASK] kernels on the GPU, and [SEP] stays whole.';

test('the comparison with transformers.js loads on demand, runs both, and they agree', async (t) => {
  const listed = await fetch(site.url('/models/index.json')).then((r) => r.json());
  if (!(listed.compare ?? []).includes('all-minilm-l6-v2')) {
    assert.ok(!process.env.CI, 'CI built the site without the comparison (see build-site.sh\'s output)');
    t.skip('this site was built without the ONNX export or transformers.js');
    return;
  }
  // One timed run a side after the warm-up's one call (a transformers.js forward takes 15 s on
  // SwiftShader), within a budget that leaves both their runs (slow-attention.test.mjs checks a
  // short one).
  const query = `text=${encodeURIComponent(TEXT)}&compare-runs=1&compare-warm=0&compare-budget=600`;
  const { page, errors } = await site.open(`/attention.html?${query}`, { width: 1280, height: 1100 });
  // Everything the page fetched, from its first request on (the browser's own record).
  const fetched = () => page.evaluate(() => performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname));
  await page.waitForFunction(() => /tokens: \[CLS\] ki/.test(document.getElementById('hud').textContent),
    null, { timeout: 120000 }).catch(async (e) => {
    throw new Error(`${e.message}; the HUD: ${await page.textContent('#hud')}; errors: ${errors}`);
  });
  const before = await fetched();
  assert.ok(before.some((p) => p.endsWith('/model.safetensors')), `the page's record misses its own model: ${before}`);
  const early = before.filter((p) => /vendor\/transformers|\/onnx\/|tokenizer/.test(p));
  assert.deepEqual(early, [], 'the comparison loaded files before it was started');

  await page.click('#compare-start');
  await page.waitForFunction(() => {
    const s = document.getElementById('compare').dataset;
    return s.result || s.error;
  }, null, { timeout: 600000 }); // the budget asked for; both sides' runs end well within it
  const error = await page.getAttribute('#compare', 'data-error');
  assert.equal(error, null, `the comparison failed: ${error}`);
  const r = JSON.parse(await page.getAttribute('#compare', 'data-result'));
  const line = `kiln ${r.kiln.median_ms.toFixed(1)} ms, transformers.js ${r.transformers.median_ms.toFixed(1)} ms ` +
    `per forward (${r.kiln.tokens} tokens, ${r.adapter}); embeddings ${r.rel_l2.toExponential(2)} apart`;
  console.log(line);
  t.diagnostic(line);
  assert.equal(r.text, TEXT);
  assert.ok(r.same_tokens, 'transformers.js and Kiln tokenized the sentence differently');
  assert.ok(r.rel_l2 <= TOLERANCE, `embeddings ${r.rel_l2} apart (relative L2), over ${TOLERANCE}`);
  assert.ok(r.kiln.warm_calls >= 1 && r.transformers.warm_calls >= 1);
  assert.equal(r.kiln.ms.length, 1);
  assert.equal(r.transformers.ms.length, 1);
  assert.ok(r.kiln.ms.concat(r.transformers.ms).every((ms) => ms > 0));
  // The visitor reads both rows and the verdict.
  assert.equal(await page.locator('#compare-table tbody tr').count(), 2);
  assert.match(await page.textContent('#compare-status'), /per forward .* agree within/);
  const after = await fetched();
  assert.ok(after.some((p) => p.endsWith('/onnx/model.onnx')), 'transformers.js did not read the ONNX export');
  assert.deepEqual(errors, []);
  await page.close();
});
