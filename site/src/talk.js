// Shared by every page: presenter mode (a demo's walkthrough, one stage at a time, driven from the
// keyboard, the stage kept in the URL, the audience and speaker windows kept in step) and
// window.kiln, the page's side of what the wasm demos publish. Its parts live beside it: the
// kernel-source view (kernel-view.js), the explanation for a browser whose GPU paths cannot run
// (no-webgpu.js), the speaker view (speaker.js), the QR code (qr.js), the offline copy
// (offline.js), and the DOM helpers (dom.js).
//
// window.kiln:
//   publish(what, json)  from wasm (kiln-app): 'stages' or 'kernels', as JSON text; any other
//                        (a demo's 'settings') is dispatched as a `kiln:<what>` event
//   setStages(list)      the walkthrough: [{ title, text, code: null | { caption, language, pieces: [{ text, marked }], focus } }]
//   setKernels(list)     [{ family, variant, reason, values: [[name, value]], code }]
//   onStage(fn)          fn(index, 0-based) whenever presenter mode shows a stage
//   noWebGPU(missing, fallback)  missing: device.js's detectWebGPU() answer
// URL: ?talk&stage=N (1-based) starts presenter mode at stage N; &embed hides the panel (the
// index page's thumbnails); &speaker is the speaker view (opened with S: the stage's words, the
// next stage's title, a timer), kept in step with the audience window over a BroadcastChannel
// named after the page. The page marks its live visuals with data-talk-visual, and limits one
// to some stages with data-talk-stages="1 2" (1-based). body[data-talk-stage] holds the current
// stage (0-based): the wasm demos read it every frame. In presenter mode the first stage shows
// a QR code of the page, B (or .) blanks the screen, and a service worker (sw.js) keeps the
// whole site for offline use (secure contexts only); body[data-offline] says how far it got.

import { bareFlags, codeBlock, el } from './dom.js';
import { showKernels } from './kernel-view.js';
import { TITLES, explainNoWebGPU } from './no-webgpu.js';
import { offline } from './offline.js';
import { showQr } from './qr.js';
import { buildSpeaker, openSpeaker } from './speaker.js';

// `el` stays importable from here for the pages' own scripts.
export { el };

const params = new URLSearchParams(location.search);
const presenting = params.has('talk');
const embedded = params.has('embed');
// The speaker view: the same page, for the speaker's screen.
const speaker = presenting && !embedded && params.has('speaker');
const listeners = [];
let stages = [];
let current = Math.max(0, (parseInt(params.get('stage') ?? '1', 10) || 1) - 1);

// ---- presenter mode ----

let panel;

function buildPanel() {
  document.body.classList.add('talk');
  if (embedded) document.body.classList.add('embed');
  if (speaker) document.body.classList.add('speaker');
  panel = el('section', { id: 'talk', 'aria-live': 'polite', 'aria-label': 'walkthrough' });
  const nav = el('nav', { class: 'talk-nav', 'aria-label': 'walkthrough stages' },
    el('button', { id: 'talk-prev', type: 'button' }, '← Back'),
    el('span', { id: 'talk-counter' }, ''),
    el('button', { id: 'talk-next', type: 'button' }, 'Next →'),
    el('a', { href: location.pathname, id: 'talk-exit' }, 'Leave the walkthrough'));
  panel.append(
    nav,
    el('h2', { id: 'talk-title' }, 'Loading the walkthrough…'),
    el('p', { id: 'talk-text' }, 'The demo publishes its stages once it has started.'),
    el('p', { id: 'talk-caption', class: 'muted' }, ''),
    el('div', { id: 'talk-code' }),
    el('p', { class: 'talk-keys muted' }, speaker
      ? '→ or space: next · ←: back · Home: first · B: blank the audience screen · 1–9, 0: jump (both windows follow)'
      : '→ or space: next · ←: back · Home: first · F: full screen · B: blank · S: speaker view · 1–9, 0: jump'));
  if (speaker) panel.prepend(buildSpeaker());
  else panel.querySelector('#talk-text').after(el('figure', { id: 'talk-qr', hidden: '' }));
  const visuals = el('div', { id: 'talk-visuals' });
  for (const v of document.querySelectorAll('[data-talk-visual]')) visuals.append(v);
  const layout = el('div', { id: 'talk-layout' }, visuals, panel);
  document.body.prepend(layout);
  // The error box stays visible in presenter mode: a visual that cannot run says why.
  const error = document.getElementById('error');
  if (error) layout.before(error);
  // A black screen over everything (B), for the audience window.
  if (!speaker) document.body.append(el('div', { id: 'talk-blank', hidden: '', 'aria-label': 'the screen is blank (B shows it again)' }));
  panel.querySelector('#talk-prev').addEventListener('click', () => go(current - 1));
  panel.querySelector('#talk-next').addEventListener('click', () => go(current + 1));
}

function show() {
  if (!stages.length) return;
  current = Math.min(Math.max(current, 0), stages.length - 1);
  const s = stages[current];
  panel.querySelector('#talk-counter').textContent = `${current + 1} / ${stages.length}`;
  panel.querySelector('#talk-title').textContent = s.title;
  panel.querySelector('#talk-text').textContent = s.text;
  panel.querySelector('#talk-caption').textContent = s.code ? s.code.caption : '';
  const codeBox = panel.querySelector('#talk-code');
  codeBox.replaceChildren(...(s.code ? [codeBlock(s.code)] : []));
  // A long kernel opens where its work is (code.focus, a line: kiln-app's talk::focus_line),
  // not at the parameters its first screenful holds.
  const lines = s.code ? s.code.pieces.map((p) => p.text).join('').split('\n').length : 1;
  codeBox.scrollTop = s.code?.focus ? (codeBox.scrollHeight / lines) * s.code.focus : 0;
  panel.querySelector('#talk-prev').disabled = current === 0;
  panel.querySelector('#talk-next').disabled = current === stages.length - 1;
  // Visuals limited to some stages show only there.
  for (const v of document.querySelectorAll('[data-talk-stages]')) {
    const on = v.dataset.talkStages.split(/[\s,]+/).map(Number).includes(current + 1);
    v.hidden = !on;
  }
  document.body.dataset.talkStage = String(current);
  const url = new URL(location.href);
  url.searchParams.set('stage', String(current + 1));
  history.replaceState(null, '', bareFlags(url));
  document.title = `${speaker ? 'Speaker · ' : ''}${s.title} · ${document.title.split(' · ').slice(-2).join(' · ')}`;
  if (speaker) {
    const next = stages[current + 1];
    panel.querySelector('#speaker-next').textContent = next ? `Next: ${next.title}` : 'Next: (the last stage)';
  } else showQr(current === 0);
  panel.dataset.ready = 'true';
  for (const fn of listeners) fn(current);
}

// Moves to stage `index`; `remote`: the move came from the other window, so it is not sent back.
function go(index, remote = false) {
  if (!stages.length) {
    // The stages have not arrived yet: they open at this one.
    if (remote) current = Math.max(0, index);
    return;
  }
  const next = Math.min(Math.max(index, 0), stages.length - 1);
  if (next === current && panel.dataset.ready) return;
  current = next;
  show();
  if (!remote) send({ type: 'stage', stage: current });
}

function onKey(e) {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  const t = e.target;
  if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)) return;
  // Blanking and the speaker view work from the start; the rest once the stages are there.
  if (e.key === 'b' || e.key === 'B' || e.key === '.') {
    blank(!blanked);
    send({ type: 'blank', on: blanked });
  } else if ((e.key === 's' || e.key === 'S') && !speaker) {
    openSpeaker();
  } else if (!stages.length) {
    // Until the stages arrive (or without WebGPU, when they never do) the page keeps its keys.
    return;
  } else if (!navigate(e.key)) return;
  // The demo's own canvas must not see the presenter's keys too.
  e.preventDefault();
  e.stopImmediatePropagation();
}

// A walkthrough key: whether it was one.
function navigate(key) {
  let handled = true;
  switch (key) {
    case 'ArrowRight': case ' ': case 'PageDown': go(current + 1); break;
    case 'ArrowLeft': case 'PageUp': go(current - 1); break;
    case 'Home': go(0); break;
    case 'End': go(stages.length - 1); break;
    case 'f': case 'F':
      if (document.fullscreenElement) document.exitFullscreen?.();
      else document.documentElement.requestFullscreen?.().catch(() => {});
      break;
    default:
      // 1–9 jump to that stage, 0 to the tenth; a digit past the end stays.
      if (/^[0-9]$/.test(key)) {
        const n = key === '0' ? 10 : Number(key);
        if (n <= stages.length) go(n - 1);
      } else handled = false;
  }
  return handled;
}

// ---- the two windows in step, and blanking ----

// Every presenter window of this page (the audience's and the speaker's) shares one channel:
// { type: 'stage', stage } and { type: 'blank', on } follow a move in either; a window that
// opens says { type: 'hello' }, and a window of the other kind answers with where the talk is
// ({ type: 'state', stage, on, stages }). The index page's thumbnails (embed) stay out of it.
const channel = presenting && !embedded && 'BroadcastChannel' in window
  ? new BroadcastChannel(`kiln-talk:${location.pathname}`) : null;
let blanked = false;

function send(message) {
  channel?.postMessage({ ...message, speaker });
}

function receive({ data }) {
  if (!data || typeof data !== 'object') return;
  if (data.type === 'stage' && Number.isInteger(data.stage)) go(data.stage, true);
  else if (data.type === 'blank') blank(Boolean(data.on));
  else if (data.type === 'hello' && data.speaker !== speaker && stages.length) {
    send({ type: 'state', stage: current, on: blanked, stages });
  } else if (data.type === 'state' && data.speaker !== speaker) {
    // A window that opens joins the talk where it stands, with the stages the other window has
    // until its own demo publishes them.
    if (!stages.length && Array.isArray(data.stages)) {
      current = data.stage;
      window.kiln.setStages(data.stages);
    } else go(data.stage, true);
    blank(Boolean(data.on));
  }
}

// B: the audience window goes black; the speaker view says so instead of going black itself.
function blank(on) {
  blanked = on;
  document.body.dataset.blank = String(on);
  if (speaker) {
    panel.querySelector('#speaker-blank').textContent = on ? 'The audience screen is blank (B shows it).' : '';
  } else {
    document.getElementById('talk-blank').hidden = !on;
  }
}

// The no-WebGPU explanation (no-webgpu.js), and in presenter mode the panel's words too.
function noWebGPU(missing, fallback) {
  const { m, text, error } = explainNoWebGPU(missing, fallback);
  if (panel && !stages.length) {
    panel.querySelector('#talk-title').textContent = TITLES[m.state] ?? TITLES['no-webgpu'];
    panel.querySelector('#talk-text').textContent = text;
  }
  if (panel) {
    // The explanation sits above the walkthrough: the visuals fit in what is left.
    const fit = () => document.body.style.setProperty('--above-talk',
      `${error && !embedded ? error.getBoundingClientRect().bottom : 0}px`);
    fit();
    window.addEventListener('resize', fit);
  }
}

window.kiln = {
  setStages(list) {
    stages = list;
    if (presenting) show();
    const link = document.getElementById('walkthrough');
    if (link) link.textContent = `Walkthrough (${list.length} stages)`;
  },
  setKernels: showKernels,
  publish(what, json) {
    const value = JSON.parse(json);
    if (what === 'stages') this.setStages(value);
    else if (what === 'kernels') this.setKernels(value);
    // Anything else (a demo's `settings`) goes to the page as a `kiln:<what>` event.
    else document.dispatchEvent(new CustomEvent(`kiln:${what}`, { detail: value }));
  },
  onStage(fn) {
    listeners.push(fn);
    if (presenting && stages.length) fn(current);
  },
  noWebGPU,
  get presenting() { return presenting; },
  get stage() { return current; },
};

// A page that a newer build's service worker takes over from an older one reloads, so that it
// never mixes the two builds' files (a walkthrough keeps its stage: it is in the URL). The
// first worker taking over a page it did not load is the same build: no reload then.
let controlled = Boolean(navigator.serviceWorker?.controller);
navigator.serviceWorker?.addEventListener('controllerchange', () => {
  if (controlled) location.reload();
  controlled = true;
});

if (presenting) {
  buildPanel();
  document.body.dataset.talkStage = String(current);
  window.addEventListener('keydown', onKey, { capture: true });
  if (channel) {
    channel.addEventListener('message', receive);
    send({ type: 'hello' });
  }
  if (!embedded) offline();
}
