// Kiln's kernels in real Chromium WebGPU (SwiftShader): the stored browser profile still
// describes the browser, and every variant rendered for it compiles into a compute pipeline.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launch, serve } from './browser.mjs';
import { BLANK, readProfile } from './profile.mjs';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const kiln = process.env.KILN_BIN ?? `${repo}target/debug/kiln`;
const storedPath = `${repo}kernels/profiles/chromium-swiftshader.json`;

let browser, server, page;
const consoleErrors = [];

before(async () => {
  server = await serve('/nonexistent', BLANK);
  browser = await launch();
  page = await browser.newPage();
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  await page.goto(server.url + '/');
});

after(async () => {
  await browser?.close();
  server?.close();
});

test('the stored Chromium profile matches the browser in hand', async () => {
  const live = await page.evaluate(readProfile);
  assert.equal(live.error, undefined, live.error);
  const stored = JSON.parse(readFileSync(storedPath, 'utf8'));
  const refresh = 'refresh it: (cd site && node tests/capture-profile.mjs > ../kernels/profiles/chromium-swiftshader.json)';
  assert.deepEqual(live.features, stored.features, `browser features changed; ${refresh}`);
  assert.deepEqual(live.limits, stored.limits, `browser limits changed; ${refresh}`);
  console.log(`browser adapter: ${live.name} (${live.driver_info})`);
});

test('every variant rendered for the browser compiles in Chromium WebGPU', async () => {
  const listing = JSON.parse(execFileSync(kiln,
    ['kernels', '--profile', storedPath, '--json', '--wgsl'], { maxBuffer: 64 << 20 }));
  const variants = listing.variants.filter((v) => v.valid);
  assert.ok(variants.length >= 30, `only ${variants.length} variants for the browser profile`);
  const failures = await page.evaluate(async (variants) => {
    const adapter = await navigator.gpu.requestAdapter();
    const l = adapter.limits;
    const device = await adapter.requestDevice({
      requiredFeatures: ['subgroups', 'timestamp-query', 'shader-f16'].filter((f) => adapter.features.has(f)),
      requiredLimits: {
        maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
        maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
        maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
        maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
        maxBufferSize: l.maxBufferSize,
      },
    });
    const failures = [];
    for (const v of variants) {
      device.pushErrorScope('validation');
      const module = device.createShaderModule({ code: v.wgsl, label: `${v.family}/${v.variant}` });
      const errors = (await module.getCompilationInfo()).messages
        .filter((m) => m.type === 'error')
        .map((m) => `line ${m.lineNum}: ${m.message}`);
      try {
        await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
      } catch (e) {
        errors.push(String(e));
      }
      const scoped = await device.popErrorScope();
      if (scoped) errors.push(scoped.message);
      if (errors.length) failures.push(`${v.family}/${v.variant}: ${errors.join('; ')}`);
    }
    return failures;
  }, variants);
  assert.deepEqual(failures, []);
  assert.deepEqual(consoleErrors, []);
  console.log(`${variants.length} variants compiled in Chromium WebGPU`);
});
