// Starts a demo's wasm module, or says clearly why it cannot run here (device.js decides, for
// every page alike) and hands over to the page's CPU path (window.kilnWithoutWebGPU) where it
// has one.
import { detectWebGPU } from './device.js';
import { fetchModel } from './model.js';

const script = document.currentScript ?? document.querySelector('script[data-demo]');
const demo = script.dataset.demo;
const error = document.getElementById('error');

function fail(message) {
  error.textContent = message;
  error.style.display = 'block';
  const hud = document.getElementById('hud');
  if (hud) hud.textContent = 'not running';
}

// Buttons press the demo's keys on its canvas (which takes the focus without scrolling the
// page to it).
for (const button of document.querySelectorAll('button[data-key]')) {
  button.addEventListener('click', () => {
    const canvas = document.getElementById('canvas');
    canvas.focus({ preventScroll: true });
    const init = { key: button.dataset.key, code: '', bubbles: true };
    canvas.dispatchEvent(new KeyboardEvent('keydown', init));
    canvas.dispatchEvent(new KeyboardEvent('keyup', init));
  });
}

// Settles once the page knows its path: `{ gpu: true }` when the demo's module runs on WebGPU
// (its model fetched first), `{ gpu: false, why }` when it cannot, rejected when starting
// failed. The attention page's comparison with transformers.js waits on it.
let started;
window.kilnStarted = new Promise((ok, no) => { started = { ok, no }; });
window.kilnStarted.catch(() => {}); // a failure is shown by fail(); nobody need be listening

const webgpu = await detectWebGPU();
if (!webgpu.ok) started.ok({ gpu: false, why: webgpu.short });
if (!webgpu.ok && window.kilnWithoutWebGPU) {
  // The page draws its CPU path instead, and explains.
  window.kilnWithoutWebGPU(demo, webgpu);
} else if (!webgpu.ok) {
  window.kiln.noWebGPU(webgpu, '');
  const hud = document.getElementById('hud');
  if (hud) hud.textContent = 'not running';
} else {
  try {
    const params = new URLSearchParams(location.search);
    // A text in the URL (?text=…) goes into the page's text field, which the demo follows.
    const field = document.getElementById('text');
    if (field && params.has('text')) field.value = params.get('text');
    const asked = params.get('model');
    if (script.dataset.model && asked !== 'synthetic') await fetchModel(script.dataset.model);
    else if (asked === 'synthetic') document.getElementById('weights').textContent = 'built-in synthetic weights (asked for in the URL)';
    const module = await import(`./${demo}/${demo}.js`);
    await module.default();
    started.ok({ gpu: true });
  } catch (e) {
    // winit hands control back by throwing once its event loop runs: not an error.
    if (String(e).includes('Using exceptions for control flow')) {
      started.ok({ gpu: true });
    } else {
      fail(`${demo}: ${e}`);
      started.no(e);
    }
  }
}
