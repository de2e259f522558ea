// The GPU machine's measurement of the pages under Dawn (measure-dawn.mjs, which
// scripts/bench-dawn.sh runs beside the native binaries) run here, where Dawn finds SwiftShader
// through Chromium's own Vulkan driver: a page's benchmark reports through its stood-in page
// objects, its GPU and CPU paths agree, and bad arguments get a usage line, not a hang. Needs
// site/dist (scripts/build-site.sh) and Debian's Chromium (for its SwiftShader).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const dist = here('../dist/');
const webgpu = here('../node_modules/webgpu/index.js');
const icd = process.env.SWIFTSHADER_ICD ?? '/usr/lib/chromium/vk_swiftshader_icd.json';

function measure(...args) {
  return new Promise((done) => {
    execFile(process.execPath, [here('./measure-dawn.mjs'), webgpu, dist, ...args], {
      env: { ...process.env, VK_ICD_FILENAMES: icd, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' },
      timeout: 300_000,
    }, (error, stdout, stderr) => done({ code: error ? (error.code ?? error.signal) : 0, stdout, stderr }));
  });
}

test('the waves and attention pages benchmark under Dawn and their paths agree', async () => {
  assert.ok(existsSync(`${dist}waves/waves_bg.wasm`), 'site/dist is not built: run scripts/build-site.sh');
  assert.ok(existsSync(icd), `no SwiftShader Vulkan driver at ${icd} (Debian's chromium package)`);
  const runs = [
    ['waves', 'bench&json&frames=2&size=64', /^64×64, 128 waves/],
    ['attention', 'bench&json&frames=1&model=synthetic&text=the%20cat%20sat', /^5 tokens, f32; 2 layers/],
  ];
  for (const [demo, query, settings] of runs) {
    const { code, stdout, stderr } = await measure(demo, query);
    assert.equal(code, 0, `${demo}: ${stderr}`);
    const out = JSON.parse(stdout.trim().split('\n').at(-1));
    console.log(`${demo} under Dawn: ${out.dawn.description}, GPU ${out.report.gpu.median_ms.toFixed(2)} ms (${out.report.gpu.clock}), CPU ${out.report.cpu.median_ms.toFixed(2)} ms`);
    assert.equal(out.dawn.architecture, 'swiftshader');
    assert.equal(out.report.demo, demo);
    assert.equal(out.report.backend, 'webgpu');
    assert.match(out.report.settings, settings);
    assert.equal(out.report.checks.agree, true, JSON.stringify(out.report.checks));
    assert.ok(out.report.gpu.median_ms > 0 && out.report.cpu.median_ms > 0);
  }
});

test('measure-dawn.mjs refuses an unknown page with its usage line', async () => {
  const { code, stderr } = await measure('nope', 'bench');
  assert.equal(code, 2);
  assert.match(stderr, /^usage: node measure-dawn\.mjs/);
});
