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
  await page.evaluate(defineOpenDevice);
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

/** Gives the page `openKilnDevice()`: a device with the features and limits kiln asks for. */
function defineOpenDevice() {
  window.openKilnDevice = async () => {
    const adapter = await navigator.gpu.requestAdapter();
    const l = adapter.limits;
    return adapter.requestDevice({
      requiredFeatures: ['subgroups', 'timestamp-query', 'shader-f16'].filter((f) => adapter.features.has(f)),
      requiredLimits: {
        maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
        maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
        maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
        maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
        maxBufferSize: l.maxBufferSize,
      },
    });
  };
}

function listing() {
  return JSON.parse(execFileSync(kiln,
    ['kernels', '--profile', storedPath, '--json', '--wgsl', '--explain'], { maxBuffer: 64 << 20 }));
}

test('every variant rendered for the browser passes Chromium\'s shader compiler', async () => {
  const variants = listing().variants.filter((v) => v.valid);
  assert.ok(variants.length >= 30, `only ${variants.length} variants for the browser profile`);
  const failures = await page.evaluate(async (variants) => {
    const device = await window.openKilnDevice();
    const failures = [];
    for (const v of variants) {
      device.pushErrorScope('validation');
      const module = device.createShaderModule({ code: v.wgsl, label: `${v.family}/${v.variant}` });
      const errors = (await module.getCompilationInfo()).messages
        .filter((m) => m.type === 'error')
        .map((m) => `line ${m.lineNum}: ${m.message}`);
      const scoped = await device.popErrorScope();
      if (scoped) errors.push(scoped.message);
      if (errors.length) failures.push(`${v.family}/${v.variant}: ${errors.join('; ')}`);
    }
    return failures;
  }, variants);
  assert.deepEqual(failures, []);
  assert.deepEqual(consoleErrors, []);
  console.log(`${variants.length} variants validated by Chromium's shader compiler`);
});

// Building a pipeline is where SwiftShader spends its seconds (about 2.3 s a variant: 16 minutes
// for all of them on 2 cores). Every variant the selector picks for the sample calls on this
// profile is built, and one variant of every other code path (family, route or form, reduction,
// dtype), so each branch of each template reaches the backend compiler.
test('the variants the browser runs, and one of every code path, build into pipelines', async () => {
  const all = listing();
  const valid = all.variants.filter((v) => v.valid);
  const picked = new Set((all.explain ?? []).map((p) => `${p.family}/${p.variant}`).filter((k) => !k.endsWith('/null')));
  const path = (v) => [v.family, ...['dtype', 'route', 'form', 'reduce', 'epilogue', 'residual', 'causal']
    .map((k) => `${k}=${v.values?.[k] ?? ''}`)].join(' ');
  const seen = new Set();
  const chosen = valid.filter((v) => {
    const key = path(v);
    const keep = picked.has(`${v.family}/${v.variant}`) || !seen.has(key);
    seen.add(key);
    return keep;
  });
  assert.ok(picked.size >= 10, `only ${picked.size} picks for the browser profile`);
  const failures = await page.evaluate(async (variants) => {
    const device = await window.openKilnDevice();
    const failures = [];
    for (const v of variants) {
      device.pushErrorScope('validation');
      const module = device.createShaderModule({ code: v.wgsl, label: `${v.family}/${v.variant}` });
      const errors = [];
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
  }, chosen);
  assert.deepEqual(failures, []);
  assert.deepEqual(consoleErrors, []);
  console.log(`${chosen.length} of ${valid.length} variants built into pipelines (${picked.size} picks)`);
});
