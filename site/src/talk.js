// Shared by every page: presenter mode (a demo's walkthrough, one stage at a time, driven from the
// keyboard, the stage kept in the URL), the kernel-source view (the variants chosen for this
// device, why, and the WGSL rendered for it, template values marked), and the one explanation
// for a browser whose GPU paths cannot run (no WebGPU, no adapter, not a secure context).
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

const params = new URLSearchParams(location.search);
const presenting = params.has('talk');
const embedded = params.has('embed');
// The speaker view: the same page, for the speaker's screen.
const speaker = presenting && !embedded && params.has('speaker');
const listeners = [];
let stages = [];
let current = Math.max(0, (parseInt(params.get('stage') ?? '1', 10) || 1) - 1);

// An element with attributes and children (text nodes, never markup: names are data).
export const el = (tag, attrs = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
};

// Code with the pieces that came from template values in <mark>.
function codeBlock(code) {
  const inner = el('code', { class: `language-${code.language}` });
  for (const p of code.pieces) {
    inner.append(p.marked ? el('mark', { title: 'a template value, rendered for this device' }, p.text) : p.text);
  }
  return el('pre', { class: 'code' }, inner);
}

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
  history.replaceState(null, '', url.toString().replace('talk=&', 'talk&').replace(/talk=$/, 'talk'));
  document.title = `${speaker ? 'Speaker · ' : ''}${s.title} · ${document.title.split(' · ').slice(-2).join(' · ')}`;
  if (speaker) {
    const next = stages[current + 1];
    panel.querySelector('#speaker-next').textContent = next ? `Next: ${next.title}` : 'Next: (the last stage)';
  } else showQr();
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

// ---- the speaker view, blanking and the QR code ----

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

function openSpeaker() {
  const url = new URL(location.href);
  url.searchParams.set('speaker', '');
  const href = url.toString().replace(/([?&](?:talk|speaker))=(?=&|$)/g, '$1');
  // One speaker window per page: the name brings an open one forward.
  window.open(href, `kiln-speaker:${location.pathname}`, 'popup,width=1280,height=800');
}

// The speaker's bar: the timer (from the window's opening, or the last reset), the next
// stage's title, whether the audience screen is blank, and whether the offline copy is ready.
function buildSpeaker() {
  const timer = el('span', { id: 'speaker-timer', role: 'timer', 'aria-label': 'time elapsed' }, '0:00');
  const reset = el('button', { id: 'speaker-reset', type: 'button' }, 'Reset timer');
  let start = Date.now();
  const tick = () => {
    const s = Math.floor((Date.now() - start) / 1000);
    const mm = String(Math.floor(s / 60) % 60);
    const ss = String(s % 60).padStart(2, '0');
    timer.textContent = s >= 3600 ? `${Math.floor(s / 3600)}:${mm.padStart(2, '0')}:${ss}` : `${mm}:${ss}`;
  };
  reset.addEventListener('click', () => { start = Date.now(); tick(); });
  setInterval(tick, 250);
  return el('div', { id: 'speaker' },
    el('div', { class: 'speaker-bar' }, el('strong', {}, 'Speaker view'), timer, reset,
      el('span', { id: 'speaker-blank', class: 'warn' }, '')),
    el('p', { id: 'speaker-next' }, ''),
    el('p', { id: 'speaker-offline', class: 'muted' }, ''));
}

// The first stage shows a QR code of this page (without the walkthrough's parameters), so the
// audience can open it; qrcode-generator is vendored into the site by scripts/build-site.sh.
let qrFor = null;
async function showQr() {
  const figure = document.getElementById('talk-qr');
  if (!figure) return;
  figure.hidden = current !== 0;
  const target = location.origin + location.pathname;
  if (current !== 0 || qrFor === target) return;
  qrFor = target;
  const local = /^(localhost|127\.|\[::1\])/.test(location.hostname);
  const caption = el('figcaption', {}, 'This page: ', el('span', { class: 'qr-url' }, target),
    local ? ' (this machine only: the audience needs the hosted address)' : '');
  try {
    const { qrcode } = await import('./vendor/qrcode.mjs');
    const qr = qrcode(0, 'M');
    qr.addData(target, 'Byte');
    qr.make();
    const n = qr.getModuleCount();
    let d = '';
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < n; c++) if (qr.isDark(r, c)) d += `M${c + 4} ${r + 4}h1v1h-1z`;
    }
    const ns = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('viewBox', `0 0 ${n + 8} ${n + 8}`);
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', `QR code of ${target}`);
    svg.setAttribute('shape-rendering', 'crispEdges');
    const back = document.createElementNS(ns, 'rect');
    for (const [k, v] of [['width', n + 8], ['height', n + 8], ['fill', '#fff']]) back.setAttribute(k, v);
    const dots = document.createElementNS(ns, 'path');
    dots.setAttribute('d', d);
    dots.setAttribute('fill', '#000');
    svg.append(back, dots);
    figure.replaceChildren(svg, caption);
  } catch {
    // Without the vendored encoder the address stays, as text.
    figure.replaceChildren(caption);
  }
  figure.dataset.url = target;
}

// ---- offline mode ----

// The service worker (sw.js) keeps every file of the build (offline.json lists them) in one
// cache, so a walkthrough opened once runs again with the network off. Only a secure context
// has service workers. A new build takes over at once (the pages it takes over reload, below).
async function offline() {
  const say = (state, text) => {
    document.body.dataset.offline = state;
    const line = document.getElementById('speaker-offline');
    if (line) line.textContent = text;
  };
  if (!window.isSecureContext || !('serviceWorker' in navigator)) {
    say('unavailable', 'Offline copy: none (service workers need HTTPS or localhost).');
    return;
  }
  try {
    say('caching', 'Offline copy: caching the site…');
    await navigator.serviceWorker.register(new URL('sw.js', import.meta.url));
    await navigator.serviceWorker.ready;
    const manifest = await (await fetch(new URL('offline.json', import.meta.url))).json();
    const cache = await caches.open(manifest.cache);
    const held = await Promise.all(manifest.files.map((f) => cache.match(new URL(f, import.meta.url))));
    const missing = held.filter((r) => !r).length;
    if (missing) say('partial', `Offline copy: ${missing} of ${manifest.files.length} files missing.`);
    else {
      say('ready', `Offline copy: ready — the whole site (${manifest.files.length} files, ` +
        `${(manifest.bytes / 1e6).toFixed(1)} MB) is kept in this browser.`);
    }
  } catch (e) {
    say('unavailable', `Offline copy: none (${e.message ?? e}).`);
  }
}

// ---- kernel-source view ----

function showKernels(list) {
  const section = document.getElementById('kernels');
  if (!section) return;
  // Without a device the view keeps noWebGPU's sentence.
  if (!list.length && document.body.dataset.webgpu === 'missing') return;
  let box = section.querySelector('div.kernel-list');
  if (!box) {
    section.querySelector('.kernel-list')?.remove();
    box = el('div', { class: 'kernel-list' });
    section.append(box);
  }
  if (!list.length) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No GPU kernels run here.'));
    return;
  }
  box.replaceChildren(...list.map((k) => {
    const values = el('table', { class: 'figures values' },
      el('caption', {}, 'Template variables'),
      ...k.values.map(([n, v]) => el('tr', {}, el('th', { scope: 'row' }, n), el('td', {}, v))));
    return el('details', { class: 'kernel', 'data-family': k.family },
      el('summary', {}, el('code', {}, k.family), ' ', el('code', {}, k.variant), ` — ${k.reason}`),
      values,
      el('p', { class: 'muted' }, `${k.code.caption}; highlighted: text that came from the template's variables.`),
      codeBlock(k.code));
  }));
  section.dataset.ready = 'true';
}

// ---- no WebGPU ----

const TITLES = {
  insecure: 'WebGPU needs a secure page',
  'no-webgpu': 'No WebGPU in this browser',
  'no-adapter': 'No WebGPU adapter',
};

// The explanation for a page whose GPU paths cannot run: `missing` is device.js's answer
// ({ state, reason, fix }; a bare sentence is taken as the reason), `fallback` what the page
// does instead. The kernel-source view, which needs a device, says so instead of staying empty.
function noWebGPU(missing, fallback) {
  const m = typeof missing === 'string' ? { state: 'no-webgpu', reason: missing, fix: '' } : missing;
  const error = document.getElementById('error');
  const text = [m.reason, m.fix, fallback].filter(Boolean).join(' ');
  if (error) {
    // What is wrong and its fix, then what the page does instead.
    error.replaceChildren(el('p', { class: 'why' }, [m.reason, m.fix].filter(Boolean).join(' ')),
      ...(fallback ? [' ', el('p', { class: 'instead' }, fallback)] : []));
    error.style.display = 'block';
  }
  document.body.dataset.webgpu = 'missing';
  document.body.dataset.webgpuState = m.state;
  const kernels = document.getElementById('kernels');
  if (kernels && !kernels.querySelector('.kernel-list')) {
    kernels.append(el('p', { class: 'kernel-list muted' },
      'No kernel source here: the kernels are rendered for the device in hand, and this browser ' +
      'offers none (see the explanation at the top of the page).' +
      (kernels.dataset.storedKernels !== undefined
        ? ' The walkthrough shows them rendered for the limits every WebGPU device guarantees.' : '')));
  }
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
