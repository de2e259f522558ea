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
// index page's thumbnails). The page marks its live visuals with data-talk-visual, and limits one
// to some stages with data-talk-stages="1 2" (1-based). body[data-talk-stage] holds the current
// stage (0-based): the wasm demos read it every frame.

const params = new URLSearchParams(location.search);
const presenting = params.has('talk');
const embedded = params.has('embed');
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
    el('p', { class: 'talk-keys muted' }, '→ or space: next · ←: back · Home: first · F: full screen · 1–9, 0: jump'));
  const visuals = el('div', { id: 'talk-visuals' });
  for (const v of document.querySelectorAll('[data-talk-visual]')) visuals.append(v);
  const layout = el('div', { id: 'talk-layout' }, visuals, panel);
  document.body.prepend(layout);
  // The error box stays visible in presenter mode: a visual that cannot run says why.
  const error = document.getElementById('error');
  if (error) layout.before(error);
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
  document.title = `${s.title} · ${document.title.split(' · ').slice(-2).join(' · ')}`;
  panel.dataset.ready = 'true';
  for (const fn of listeners) fn(current);
}

function go(index) {
  if (!stages.length) return;
  const next = Math.min(Math.max(index, 0), stages.length - 1);
  if (next === current && panel.dataset.ready) return;
  current = next;
  show();
}

function onKey(e) {
  // Until the stages arrive (or without WebGPU, when they never do) the page keeps its keys.
  if (e.altKey || e.ctrlKey || e.metaKey || !stages.length) return;
  const t = e.target;
  if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT')) return;
  let handled = true;
  switch (e.key) {
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
      if (/^[0-9]$/.test(e.key)) {
        const n = e.key === '0' ? 10 : Number(e.key);
        if (n <= stages.length) go(n - 1);
      } else handled = false;
  }
  // The demo's own canvas must not see the presenter's keys too.
  if (handled) { e.preventDefault(); e.stopImmediatePropagation(); }
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

if (presenting) {
  buildPanel();
  document.body.dataset.talkStage = String(current);
  window.addEventListener('keydown', onKey, { capture: true });
}
