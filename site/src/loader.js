// Starts a demo's wasm module, or says clearly why it cannot run here.
const script = document.currentScript ?? document.querySelector('script[data-demo]');
const demo = script.dataset.demo;
const error = document.getElementById('error');

function fail(message) {
  error.textContent = message;
  error.style.display = 'block';
  const hud = document.getElementById('hud');
  if (hud) hud.textContent = 'not running';
}

// Buttons press the demo's keys on its canvas.
for (const button of document.querySelectorAll('button[data-key]')) {
  button.addEventListener('click', () => {
    const canvas = document.getElementById('canvas');
    canvas.focus();
    const init = { key: button.dataset.key, code: '', bubbles: true };
    canvas.dispatchEvent(new KeyboardEvent('keydown', init));
    canvas.dispatchEvent(new KeyboardEvent('keyup', init));
  });
}

if (!navigator.gpu) {
  fail('This browser has no WebGPU. Use a current Chrome or Edge, Safari 26, or Firefox 141+ ' +
       '(on Linux, Chrome needs --enable-unsafe-webgpu).');
} else {
  try {
    const module = await import(`./${demo}/${demo}.js`);
    await module.default();
  } catch (e) {
    // winit hands control back by throwing once its event loop runs: not an error.
    if (!String(e).includes('Using exceptions for control flow')) fail(`${demo}: ${e}`);
  }
}
