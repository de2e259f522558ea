// The index: this browser's adapter as Kiln sees it (the fleet page's wasm module describes it:
// profile, device class, the variants it is offered) and, once it is known, a live thumbnail
// per demo — the demo's walkthrough at one stage, embedded without its panel (talk.js hides it
// with `embed`) and scaled into the card. Where the GPU paths cannot run (device.js says why):
// the explanation, a sentence in the device panel, and the cards keep their text.
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

// The demo pages, live: lazy (a card out of view costs nothing), out of the tab order and
// the pointer's way (the card is the link).
function showThumbnails() {
  for (const t of thumbs) {
    const frame = document.createElement('iframe');
    Object.assign(frame, { src: t.dataset.src, title: t.dataset.title, loading: 'lazy', tabIndex: -1 });
    frame.setAttribute('aria-hidden', 'true');
    t.replaceChildren(frame);
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
  showThumbnails();
  document.body.dataset.ready = 'true';
}

main().catch((e) => {
  noDevice('The page could not start: nothing to describe.');
  $('error').textContent = `The index could not start: ${plainError(e)}`;
  $('error').style.display = 'block';
});
