// The index: this browser's adapter as Kiln sees it (the fleet page's wasm module describes it:
// profile, device class, the variants it is offered) and a thumbnail per demo: a poster frame
// at first (a still JPEG of the thumbnail, site/src/posters/, made by capture-posters.mjs), the
// live demo — its walkthrough at one stage, embedded without its panel (talk.js hides it with
// `embed`) and scaled into the card — once the pointer rests on the card or it takes the focus.
// So the first load fetches no demo's WebAssembly (four of them were 15 MB). Where the GPU paths
// cannot run (device.js says why): the explanation, a sentence in the device panel, and the
// cards keep their posters and text.
import { detectWebGPU, plainError, renderDevice } from './device.js';

const $ = (id) => document.getElementById(id);
const thumbs = [...document.querySelectorAll('.thumb[data-src]')];

// The 1280×720 walkthrough scaled to the thumbnail's width.
const fit = new ResizeObserver((entries) => {
  for (const e of entries) e.target.style.setProperty('--scale', String(e.contentRect.width / 1280));
});
for (const t of thumbs) fit.observe(t);

function placeholders(text) {
  for (const t of thumbs) t.querySelector('.placeholder').textContent = text;
}

// Poster frames: lazy (a card out of view costs nothing).
for (const t of thumbs) {
  const demo = t.closest('.card').dataset.demo;
  const poster = Object.assign(document.createElement('img'),
    { src: `posters/${demo}.jpg`, alt: '', loading: 'lazy', decoding: 'async', className: 'poster' });
  t.prepend(poster);
  t.querySelector('.placeholder').textContent = 'A still: point at it for the live demo.';
}

// A demo page, live, in place of its poster: out of the tab order and the pointer's way (the
// card is the link).
function startThumbnail(t) {
  if (t.querySelector('iframe')) return;
  const frame = document.createElement('iframe');
  Object.assign(frame, { src: t.dataset.src, title: t.dataset.title, tabIndex: -1 });
  frame.setAttribute('aria-hidden', 'true');
  t.replaceChildren(frame);
}

// Each card starts its live demo when the pointer enters it or it takes the focus.
function armThumbnails() {
  for (const t of thumbs) {
    const card = t.closest('.card');
    const start = () => startThumbnail(t);
    card.addEventListener('mouseenter', start, { once: true });
    card.addEventListener('focusin', start, { once: true });
  }
}

function noDevice(text) {
  $('device-panel').replaceChildren(Object.assign(document.createElement('p'),
    { className: 'muted no-device', textContent: text }));
}

async function main() {
  const webgpu = await detectWebGPU();
  if (!webgpu.ok) {
    window.kiln.noWebGPU(webgpu,
      'Each demo page still explains itself and runs its walkthrough; the waves, attention and ' +
      'flash pages draw on their CPU paths.');
    noDevice(`No device to describe (here: ${webgpu.short}; see above).`);
    placeholders(`No live preview: ${webgpu.short}.`);
    return;
  }
  // The cards are ready at once; the device panel's module (the kernel registry, a few MB)
  // loads when the visitor asks for it, so that the first load stays light.
  armThumbnails();
  document.body.dataset.ready = 'true';
  const button = Object.assign(document.createElement('button'), { id: 'describe', textContent: 'Describe this device' });
  $('device-panel').replaceChildren(Object.assign(document.createElement('p'), { className: 'muted',
    textContent: 'Kiln describes this browser’s adapter with its own kernel registry (the fleet ' +
      'page’s module, a few MB), loaded when you ask: ' }), button);
  await new Promise((ok) => button.addEventListener('click', ok, { once: true }));
  button.disabled = true;
  button.textContent = 'Loading the kernel registry…';
  const wasm = await import('./fleet/fleet_web.js');
  await wasm.default();
  let info;
  try {
    info = JSON.parse(await wasm.device());
  } catch (e) {
    const why = plainError(e);
    window.kiln.noWebGPU({ state: 'no-adapter',
      reason: `This browser offers a WebGPU adapter, but it could not be opened (${why}).`,
      fix: 'chrome://gpu shows the WebGPU status; an updated GPU driver may help.' },
    'The demo pages explain themselves without it.');
    noDevice(`The adapter could not be opened (${why}): there is no device to describe.`);
    placeholders('No live preview: the adapter could not be opened.');
    return;
  }
  renderDevice($('device-panel'), info);
}

main().catch((e) => {
  noDevice('The page could not start: nothing to describe.');
  $('error').textContent = `The index could not start: ${plainError(e)}`;
  $('error').style.display = 'block';
});
