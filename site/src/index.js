// The index: this browser's adapter as Kiln sees it (the fleet page's wasm module describes it:
// profile, device class, the variants it is offered) and, once it is known, a live thumbnail
// per demo — the demo's walkthrough at one stage, embedded without its panel (talk.js hides it
// with `embed`) and scaled into the card. Without WebGPU: the standard explanation, and the
// cards keep their text.
import { renderDevice } from './device.js';

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

async function main() {
  if (!navigator.gpu) {
    window.kiln.noWebGPU('This browser has no WebGPU.',
      'Each demo page still explains itself, and the waves and attention pages draw on their CPU paths.');
    $('device-panel').replaceChildren(Object.assign(document.createElement('p'),
      { className: 'muted', textContent: 'No WebGPU adapter: nothing to describe.' }));
    placeholders('No WebGPU here: the live preview needs it.');
    document.body.dataset.webgpu = 'missing';
    return;
  }
  const wasm = await import('./fleet/fleet_web.js');
  await wasm.default();
  let info;
  try {
    info = JSON.parse(await wasm.device());
  } catch (e) {
    window.kiln.noWebGPU(`This browser offers WebGPU, but no adapter could be opened (${e}).`,
      'The demo pages explain themselves without it.');
    placeholders('No WebGPU adapter: the live preview needs one.');
    return;
  }
  renderDevice($('device-panel'), info);
  showThumbnails();
  document.body.dataset.ready = 'true';
}

main().catch((e) => {
  $('error').textContent = `The index could not start: ${e}`;
  $('error').style.display = 'block';
});
