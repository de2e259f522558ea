// Runs every variant the browser's adapter is offered (WebGPU on SwiftShader in headless
// Chromium) against the CPU reference on each family's proof cases: the fleet page's module
// (`prove_every_variant`, the same kiln::cases::prove_family that tests/every_variant.rs runs
// natively). Not a test run by scripts/test.sh: SwiftShader builds a pipeline in about 2 s, so
// the 499 variants take tens of minutes. Prints one line per family and the totals as JSON.
//   node site/tests/prove.mjs SITE_DIR [OUT.json] [FAMILIES, comma-separated: all when left out]
import { writeFileSync } from 'node:fs';
import { launch, serve } from './browser.mjs';

const [dir = 'site/dist', outFile, families = ''] = process.argv.slice(2);
const server = await serve(dir);
const browser = await launch();
try {
  const page = await browser.newPage();
  page.on('console', (m) => m.type() === 'error' && console.error(`console: ${m.text()}`));
  await page.exposeFunction('kilnProofStep', (family) => console.error(`proving ${family}…`));
  await page.goto(`${server.url}/fleet.html`);
  const started = Date.now();
  const proofs = JSON.parse(await page.evaluate(async (families) => {
    const wasm = await import('./fleet/fleet_web.js');
    await wasm.default();
    return wasm.prove_every_variant(families, (family) => window.kilnProofStep(family));
  }, families));
  const adapter = await page.evaluate(async () => {
    const a = await navigator.gpu.requestAdapter();
    return `${a.info.vendor} ${a.info.architecture} ${a.info.description}`.trim();
  });
  let offered = 0, proven = 0;
  const skipped = [];
  for (const p of proofs) {
    offered += p.offered;
    proven += p.proven;
    if (p.skipped) {
      // Nothing offered here: a skip, never a pass.
      skipped.push(p.family);
      console.log(`${p.family}: skipped: ${p.skipped}`);
      continue;
    }
    console.log(`${p.family}: ${p.proven} of ${p.offered} proven in ${p.runs} runs`);
    for (const [kind, [err, tol]] of Object.entries(p.worst)) console.log(`  ${kind}: worst ${err.toExponential(2)} (allowed ${tol.toExponential(0)})`);
    for (const f of p.failures) console.log(`  ${f}`);
  }
  const summary = { adapter, offered, proven, skipped, seconds: (Date.now() - started) / 1000, proofs };
  console.log(JSON.stringify({ adapter, offered, proven, skipped, seconds: summary.seconds }));
  if (outFile) writeFileSync(outFile, JSON.stringify(summary, null, 1));
  process.exitCode = proven === offered ? 0 : 1;
} finally {
  await browser.close();
  server.close();
}
