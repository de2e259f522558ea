// The waves page's fallback: in a browser without WebGPU, loader.js hands over to
// window.kilnWithoutWebGPU, which explains (kiln.noWebGPU) and draws the CPU path instead — the
// same frame computed by the demo's wasm export CpuWaves (demos/waves/src/web.rs), on one
// thread, put into the canvas as image data — so the page is never blank.

const WAVES = 128;
// One thread of wasm draws a 256×256 frame of 128 waves in 0.15–0.5 s (headless Chromium on a
// shared 2-core machine): larger would not animate.
const SIZE = 256;
const SEED = 1;

window.kilnWithoutWebGPU = async (demo, missing = 'This browser has no WebGPU.') => {
  window.kiln.noWebGPU(missing,
    'Below, the waves come from the CPU path instead: the same frame, computed by this page\'s ' +
    'WebAssembly on one thread, no GPU.');
  const hud = document.getElementById('hud');
  const canvas = document.getElementById('canvas');
  try {
    const module = await import(`./${demo}/${demo}.js`);
    // Starts the module; without WebGPU the demo's main opens no window and returns.
    await module.default();
    const waves = new module.CpuWaves(WAVES, SIZE, SEED);
    canvas.width = canvas.height = waves.size;
    canvas.dataset.path = 'cpu';
    canvas.setAttribute('aria-label', 'waves animation drawn by the CPU path (this browser has no WebGPU)');
    const ctx = canvas.getContext('2d');
    const start = performance.now();
    let frames = 0;
    let since = start;
    let rate = null;
    const draw = (now) => {
      const rgba = waves.frame((now - start) / 1000);
      const pixels = new Uint8ClampedArray(rgba.buffer, rgba.byteOffset, rgba.length);
      ctx.putImageData(new ImageData(pixels, waves.size, waves.size), 0, 0);
      frames += 1;
      if (now - since >= 1000) {
        rate = (frames * 1000) / (now - since);
        frames = 0;
        since = now;
      }
      hud.textContent = 'drawing: CPU path (no WebGPU)\n' +
        `${waves.settings}\n` +
        `${rate === null ? 'measuring…' : `${rate.toFixed(1)} frames/s`} ` +
        '(wall clock; this page\'s WebAssembly, one thread)';
      requestAnimationFrame(draw);
    };
    requestAnimationFrame(draw);
  } catch (e) {
    hud.textContent = 'not running';
    const error = document.getElementById('error');
    error.textContent += ` The CPU path could not start either: ${e}`;
  }
};
