// The waves page's fallback: where the GPU paths cannot run (device.js says why), loader.js
// hands over to window.kilnWithoutWebGPU, which explains (kiln.noWebGPU) and draws the CPU path
// instead — the same frame computed by the demo's wasm export CpuWaves (demos/waves/src/web.rs),
// on one thread, put into the canvas as image data — so the page is never blank. The buttons
// that make sense on the CPU path (pause, fewer or more waves, a new seed) work; switching to the
// GPU and changing the resolution are off, saying why. In presenter mode (?talk) the walkthrough's
// stages come from the same export, each stage's picture computed on the CPU path.
import { disableForGpu } from './device.js';

const WAVES = [8, 16, 32, 64, 128];
// One thread of wasm draws a 256×256 frame of 128 waves in 0.15–0.5 s (headless Chromium on a
// shared 2-core machine): larger would not animate.
const SIZE = 256;
// The walkthrough's colour-mapping stage shows the frame itself (demos/waves/src/main.rs).
const COLOUR_STAGE = 3;

// The header's product and frame size, and the wave-count buttons, follow what is drawn: the
// running demo publishes its settings (kiln:settings), the CPU path below tells its own.
function showSettings({ res, waves, fewest, most }) {
  document.getElementById('product').textContent = `[4·${res}, ${2 * waves}] × [${2 * waves}, ${res}]`;
  document.getElementById('frame-now').textContent = `: here ${res}×${res} pixels and ${waves} waves`;
  for (const [key, off, why] of [['-', fewest, `${waves} waves is the fewest`], ['+', most, `${waves} waves is the most`]]) {
    const button = document.querySelector(`button[data-key="${key}"]`);
    button.disabled = off;
    button.title = off ? why : '';
  }
}
document.addEventListener('kiln:settings', (e) => showSettings(e.detail));
// The walkthrough picture's texts (each box and letter height, in the picture's pixels).
document.addEventListener('kiln:texts', (e) => {
  const canvas = document.querySelector('#waves-stage canvas');
  if (canvas) canvas.dataset.texts = JSON.stringify(e.detail);
});

window.kilnWithoutWebGPU = async (demo, missing) => {
  const kiln = window.kiln;
  kiln.noWebGPU(missing,
    'Below, the waves come from the CPU path instead: the same frame, computed by this page\'s ' +
    'WebAssembly on one thread, no GPU.');
  const hud = document.getElementById('hud');
  const canvas = document.getElementById('canvas');
  const button = (key) => document.querySelector(`button[data-key="${key}"]`);
  disableForGpu([button('g'), button('r')],
    `the GPU path and its resolutions need WebGPU (here: ${missing.short}); the CPU path draws ` +
    `${SIZE}×${SIZE}.`);
  try {
    const module = await import(`./${demo}/${demo}.js`);
    // Starts the module; without WebGPU the demo's main opens no window and returns.
    await module.default();
    let count = 128;
    let seed = 1;
    let paused = false;
    let waves = new module.CpuWaves(count, SIZE, seed);
    const counts = () => showSettings({ res: waves.size, waves: count,
      fewest: count === WAVES[0], most: count === WAVES.at(-1) });
    counts();
    if (kiln.presenting) kiln.setStages(JSON.parse(waves.talk_stages()));
    canvas.dataset.path = 'cpu';
    canvas.setAttribute('aria-label', 'waves animation drawn by the CPU path (no WebGPU here); keys: space, plus, minus, s');
    // The page's buttons press these keys on the canvas (loader.js).
    canvas.addEventListener('keydown', (e) => {
      const at = WAVES.indexOf(count);
      if (e.key === ' ') paused = !paused;
      else if (e.key === '+' && at < WAVES.length - 1) count = WAVES[at + 1];
      else if (e.key === '-' && at > 0) count = WAVES[at - 1];
      else if (e.key === 's') seed += 1;
      else return;
      e.preventDefault();
      if (e.key !== ' ') {
        waves.free?.();
        waves = new module.CpuWaves(count, SIZE, seed);
        counts();
        if (kiln.presenting) kiln.setStages(JSON.parse(waves.talk_stages()));
      }
    });
    const ctx = canvas.getContext('2d');
    let t = 0;
    let last = performance.now();
    let frames = 0;
    let since = last;
    let rate = null;
    const draw = (now) => {
      if (!paused) t += Math.min(0.25, (now - last) / 1000);
      last = now;
      const stage = kiln.presenting ? kiln.stage : COLOUR_STAGE;
      const picture = stage === COLOUR_STAGE;
      const side = picture ? waves.size : waves.stage_size;
      const rgba = picture ? waves.frame(t) : waves.stage(stage, t);
      if (canvas.width !== side) canvas.width = canvas.height = side;
      const pixels = new Uint8ClampedArray(rgba.buffer, rgba.byteOffset, rgba.length);
      ctx.putImageData(new ImageData(pixels, side, side), 0, 0);
      canvas.dataset.drawn = String(stage);
      frames += 1;
      if (now - since >= 1000) {
        rate = (frames * 1000) / (now - since);
        frames = 0;
        since = now;
      }
      hud.textContent = `drawing: CPU path (no WebGPU)${paused ? ' (paused)' : ''}\n` +
        `${waves.settings}\n` +
        `${rate === null ? 'measuring…' : `${rate.toFixed(1)} frames/s`} ` +
        '(wall clock; this page\'s WebAssembly, one thread)';
      requestAnimationFrame(draw);
    };
    requestAnimationFrame(draw);
  } catch (e) {
    hud.textContent = 'not running';
    const error = document.getElementById('error');
    error.append(Object.assign(document.createElement('p'), { textContent: `The CPU path could not start either: ${e}` }));
  }
};
