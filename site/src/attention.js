// The attention page's fallback: where the GPU paths cannot run (device.js says why), loader.js
// hands over to window.kilnWithoutWebGPU, which explains (kiln.noWebGPU) and runs the CPU path
// instead — the same encoder on kiln's CPU loops, in the demo's WebAssembly (CpuAttention,
// demos/attention/src/web.rs), on one thread — drawing its heatmap into the canvas as image
// data, again whenever the text changes. In presenter mode (?talk) the walkthrough runs on it
// too: the stages from the same export, each stage's visual drawn from the CPU forward pass.
// The page is never blank.

import { disableForGpu } from './device.js';
import { fetchModel } from './model.js';

// How the heatmap's labels were drawn (their size in canvas pixels, one every how many tokens,
// their bounding box): the GPU path publishes it (kiln:labels), the CPU path sets it below; the
// page's test checks it.
document.addEventListener('kiln:labels', (e) => {
  document.getElementById('canvas').dataset.labels = JSON.stringify(e.detail);
});
// The walkthrough stage's texts (each box and letter height, in the picture's pixels), likewise.
document.addEventListener('kiln:texts', (e) => {
  document.getElementById('canvas').dataset.texts = JSON.stringify(e.detail);
});

// The GPU path's number format, as the URL's `dtype` gives it to the demo (the window's --dtype):
// the choice reloads the page with it (and the text as it is). f16 is offered where the adapter
// has shader-f16; elsewhere the option is off and the note says why, and the select shows f32,
// what the GPU path then runs.
async function dtypeControl() {
  const select = document.getElementById('dtype');
  const note = document.getElementById('dtype-note');
  const params = new URLSearchParams(location.search);
  const asked = params.get('dtype') === 'f16' ? 'f16' : 'f32';
  const adapter = await navigator.gpu?.requestAdapter().catch(() => null);
  const f16 = Boolean(adapter?.features.has('shader-f16'));
  select.dataset.f16 = String(f16);
  select.value = f16 ? asked : 'f32';
  if (!adapter) {
    select.disabled = true;
    note.textContent = 'the GPU path needs WebGPU';
  } else if (!f16) {
    select.querySelector('option[value="f16"]').disabled = true;
    note.textContent = `f16 needs shader-f16, which this adapter has not${asked === 'f16' ? ' (asked for in the URL)' : ''}`;
  }
  select.addEventListener('change', () => {
    params.set('dtype', select.value);
    params.set('text', document.getElementById('text').value);
    location.search = params.toString();
  });
}
dtypeControl();

// Presses a key on the demo's canvas, as the page's buttons do (loader.js).
function pressOnCanvas(key) {
  const canvas = document.getElementById('canvas');
  canvas.focus({ preventScroll: true });
  const init = { key, code: '', bubbles: true };
  canvas.dispatchEvent(new KeyboardEvent('keydown', init));
  canvas.dispatchEvent(new KeyboardEvent('keyup', init));
}

const figure = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toPrecision(2));

// The GPU path's measurement found the CPU path faster (kiln:advice, from the demo's uncapped
// rates): the page says so once, with the reason, and offers the CPU path; a long text runs on
// it by itself (the demo moves it, the HUD says so).
let advised = false;
document.addEventListener('kiln:advice', (e) => {
  const a = e.detail;
  if (!a.cpu_faster || advised) return;
  advised = true;
  const why = a.software
    ? 'this adapter is a software one: its "GPU" runs on the CPU too, through a renderer made for drawing, not for these kernels'
    : 'at this text\'s length each of the GPU path\'s many small launches costs more than its arithmetic';
  document.getElementById('path-advice-text').textContent =
    `Measured here, the CPU path is faster: ${figure(a.cpu_fps)} forward passes a second against ` +
    `${figure(a.gpu_fps)} on the GPU path (${a.gpu_clock.replace('_', ' ')}), because ${why}. ` +
    `Texts of ${a.long_text} tokens or more run on the CPU path by themselves; Tab switches back.`;
  const box = document.getElementById('path-advice');
  const use = document.getElementById('use-cpu');
  use.hidden = !a.on_gpu;
  use.onclick = () => {
    use.hidden = true;
    pressOnCanvas('Tab');
  };
  box.hidden = false;
  box.dataset.shown = 'true';
});

// A forward pass under way (kiln:forward): a long one on the GPU path can be stopped — the page
// draws it on the CPU path instead and drops the GPU's result when it lands.
let forwardShown = null;
document.addEventListener('kiln:forward', (e) => {
  const f = e.detail;
  const box = document.getElementById('forward-status');
  clearTimeout(forwardShown);
  box.dataset.running = String(Boolean(f.running));
  if (!f.running || f.path !== 'GPU') {
    box.hidden = true;
    return;
  }
  const began = performance.now();
  const say = () => {
    const so = Math.round((performance.now() - began) / 1000);
    document.getElementById('forward-text').textContent =
      `The GPU path is computing ${f.tokens} tokens: ${so} s so far` +
      (f.estimate_s ? `, about ${Math.round(f.estimate_s)} s in all by the last pass.` : '.');
  };
  // Shown once a pass has taken a second: a quick one comes and goes unseen.
  forwardShown = setTimeout(function tick() {
    say();
    box.hidden = false;
    if (box.dataset.running === 'true') forwardShown = setTimeout(tick, 1000);
  }, 1000);
  document.getElementById('forward-stop').onclick = () => {
    box.hidden = true;
    pressOnCanvas('Tab');
  };
});

window.kilnWithoutWebGPU = async (demo, missing) => {
  const kiln = window.kiln;
  kiln.noWebGPU(missing,
    'Below, the attention weights come from the CPU path instead: the same encoder, run by ' +
    'this page\'s WebAssembly on one thread, no GPU.');
  const hud = document.getElementById('hud');
  const canvas = document.getElementById('canvas');
  const field = document.getElementById('text');
  const note = document.getElementById('weights');
  disableForGpu([document.querySelector('button[data-key="Tab"]')],
    `the GPU path needs WebGPU (here: ${missing.short}); the CPU path draws instead.`);
  disableForGpu([document.getElementById('compare-start'), document.getElementById('compare-budget')],
    `the comparison with transformers.js runs both on WebGPU (here: ${missing.short}).`);
  try {
    const params = new URLSearchParams(location.search);
    if (params.has('text')) field.value = params.get('text');
    const synthetic = params.get('model') === 'synthetic';
    const dir = document.querySelector('script[data-model]')?.dataset.model;
    if (!synthetic && dir) {
      await fetchModel(dir);
    } else if (synthetic) {
      note.textContent = 'built-in synthetic weights (asked for in the URL)';
    }
    const module = await import(`./${demo}/${demo}.js`);
    // Starts the module; without WebGPU the demo's main opens no window and returns.
    await module.default();
    const view = new module.CpuAttention(synthetic);
    if (!synthetic && window.kilnModel) note.textContent = window.kilnModel.source;
    canvas.dataset.path = 'cpu';
    canvas.setAttribute('aria-label', 'attention heatmap drawn by the CPU path (no WebGPU here); arrow keys choose layer and head');
    const ctx = canvas.getContext('2d');
    let layer = 0;
    let head = 0;
    const put = (rgba, width, height) => {
      if (canvas.width !== width || canvas.height !== height) {
        canvas.width = width;
        canvas.height = height;
      }
      const pixels = new Uint8ClampedArray(rgba.buffer, rgba.byteOffset, rgba.length);
      ctx.putImageData(new ImageData(pixels, width, height), 0, 0);
      canvas.dataset.drawn = String(Number(canvas.dataset.drawn ?? 0) + 1);
    };
    const draw = () => {
      if (kiln.presenting) return;
      const start = performance.now();
      try {
        const rgba = view.draw(field.value, layer, head);
        const ms = performance.now() - start;
        put(rgba, view.width, view.height);
        canvas.dataset.labels = view.labels;
        hud.textContent = 'drawing: CPU path (no WebGPU)\n' +
          `weights: ${view.weights}\n` +
          `${view.tokens}\n` +
          `layer ${layer + 1}/${view.layers}, head ${head + 1}/${view.heads} (arrow keys)\n` +
          `${ms.toFixed(1)} ms for the forward pass and the picture (wall clock; this page's WebAssembly, one thread)`;
      } catch (e) {
        hud.textContent = `drawing: CPU path (no WebGPU)\nerror: ${e}`;
      }
    };
    field.addEventListener('input', () => {
      draw();
      if (kiln.presenting) kiln.setStages(JSON.parse(view.talk_stages(field.value)));
    });
    // The page's layer and head buttons press these keys on the canvas (loader.js).
    canvas.addEventListener('keydown', (e) => {
      const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
      const move = moves[e.key];
      if (!move) return;
      e.preventDefault();
      layer = (layer + move[0] + view.layers) % view.layers;
      head = (head + move[1] + view.heads) % view.heads;
      draw();
    });
    if (kiln.presenting) {
      // The walkthrough: each stage's visual from the CPU forward pass, its highlights moving.
      kiln.setStages(JSON.parse(view.talk_stages(field.value)));
      const began = performance.now();
      let drawn = -Infinity;
      const frame = (now) => {
        // Ten pictures a second: the highlights step about once a second.
        if (now - drawn < 100) {
          requestAnimationFrame(frame);
          return;
        }
        drawn = now;
        try {
          put(view.stage(kiln.stage, field.value, layer, head, (now - began) / 1000),
            view.stage_width, view.stage_height);
          canvas.dataset.texts = view.texts;
        } catch (e) {
          hud.textContent = `drawing: CPU path (no WebGPU)\nerror: ${e}`;
        }
        requestAnimationFrame(frame);
      };
      requestAnimationFrame(frame);
    } else {
      draw();
    }
  } catch (e) {
    hud.textContent = 'not running';
    const error = document.getElementById('error');
    error.append(Object.assign(document.createElement('p'), { textContent: `The CPU path could not start either: ${e}` }));
  }
};
