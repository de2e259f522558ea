// Whether Kiln's GPU paths can run in this browser — one answer per page, shared by every page
// (detectWebGPU) — and, when they cannot, why, in a sentence, with the fix: not a secure context
// (WebGPU exists only on HTTPS or localhost pages), no WebGPU in the browser, or WebGPU without
// an adapter. talk.js's kiln.noWebGPU shows it. Also: the device panel of the index and the
// fleet page — the adapter the kernels are rendered for: its name, backend and device class,
// its features, its key limits as bars on a log scale (a tick at WebGPU's guaranteed minimum)
// and how many of each kernel family's variants it is offered. `info` is the fleet-web wasm's
// `device()` or `walkthrough()` JSON: { profile: DeviceProfile, class, offered: [{ family, here, all }] }.

import { el } from './dom.js';

// ---- can the GPU paths run here? ----

// { ok: true, state: 'ready' } or { ok: false, state, reason, fix, short }: state is
// 'insecure' | 'no-webgpu' | 'no-adapter'; reason and fix are sentences, short a few words.
function missing(state, reason, fix, short) {
  return { ok: false, state, reason, fix, short };
}

async function ask() {
  // Browsers hide navigator.gpu from pages that are not a secure context: plain HTTP from any
  // host but localhost. Asked first, since "no WebGPU" would then send a visitor the wrong way.
  if (!window.isSecureContext) {
    return missing('insecure',
      `This page came over plain HTTP from ${location.host}, which is not a secure context, and ` +
      'browsers offer WebGPU only to secure contexts.',
      'To fix it, open the site over HTTPS, or as http://localhost or http://127.0.0.1 on the ' +
      'machine that serves it (from another machine, forward the port first: ' +
      'ssh -L 8080:127.0.0.1:8080 that-machine, then open http://localhost:8080/).',
      'not a secure context');
  }
  if (!navigator.gpu) {
    return missing('no-webgpu', 'This browser has no WebGPU.',
      'To fix it, use a current Chrome or Edge (113 or later), Safari 26, or Firefox 141 or ' +
      'later on Windows (Firefox elsewhere needs dom.webgpu.enabled in about:config).',
      'no WebGPU in this browser');
  }
  let adapter = null;
  let failed = '';
  try {
    adapter = await navigator.gpu.requestAdapter();
  } catch (e) {
    failed = ` (the request failed: ${e?.message ?? e})`;
  }
  if (!adapter) {
    return missing('no-adapter',
      `This browser has WebGPU but offers no adapter${failed}: it found no GPU it will use, or ` +
      'WebGPU is blocked for this one.',
      'To fix it on Linux, start Chrome or Chromium with --enable-unsafe-webgpu ' +
      '--enable-features=Vulkan; elsewhere update the GPU driver. chrome://gpu shows the WebGPU ' +
      'status.',
      'no WebGPU adapter');
  }
  return { ok: true, state: 'ready' };
}

let asked = null;

// The answer for this page (asked once; every caller shares it).
export function detectWebGPU() {
  asked ??= ask();
  return asked;
}

// An error from opening a device, in words for a visitor: wgpu's list of backends it tried
// ("noop not requested, vulkan support not compiled in, …") means no adapter could be opened.
// The raw text goes to the console as a warning.
export function plainError(e) {
  const text = String(e?.message ?? e);
  if (/not compiled in|not requested|no adapter|adapter.*not found|requestAdapter/i.test(text)) {
    console.warn(`Kiln: opening a WebGPU device failed: ${text}`);
    return 'no WebGPU adapter could be opened here';
  }
  return text;
}

// Turns off `controls` (buttons, selects) that need the GPU: disabled, each giving `why` (a
// sentence) as its title and in a note after the first one, which screen readers read with each.
let notes = 0;
export function disableForGpu(controls, why) {
  const list = controls.filter(Boolean);
  if (!list.length) return;
  const id = `needs-gpu-${++notes}`;
  const note = el('p', { id, class: 'needs-gpu muted' }, `Off here: ${why}`);
  const anchor = list[0].closest('.controls') ?? list[0].parentElement;
  anchor.after(note);
  for (const c of list) {
    c.disabled = true;
    c.title = why;
    c.setAttribute('aria-describedby', id);
  }
}

// ---- the device panel ----

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const size = (bytes) => (bytes >= GiB ? `${Math.round(bytes / GiB)} GiB`
  : bytes >= MiB ? `${Math.round(bytes / MiB)} MiB` : `${Math.round(bytes / KiB)} KiB`);

// [field, label, WebGPU's guaranteed minimum, the top of the scale, how to write it]
const LIMITS = [
  ['max_compute_workgroup_storage_size', 'workgroup memory', 16 * KiB, 64 * KiB, size],
  ['max_compute_invocations_per_workgroup', 'threads per workgroup', 256, 1024, String],
  ['max_storage_buffer_binding_size', 'storage binding', 128 * MiB, 4 * GiB, size],
  ['max_buffer_size', 'buffer size', 256 * MiB, 1024 * GiB, size],
  ['max_storage_buffers_per_shader_stage', 'storage buffers per shader', 8, 64, String],
];

const log = (x, top) => Math.min(1, Math.max(0.02, Math.log2(Math.max(1, x)) / Math.log2(top)));
const pct = (f) => `${(100 * f).toFixed(1)}%`;

// The features as chips: [[name, on]].
const chipList = (features) => el('ul', { class: 'chips', 'aria-label': 'features' },
  ...features.map(([name, on]) => el('li', { class: on ? 'on' : 'off' }, `${on ? '✓' : '✗'} ${name}`)));

// The limits table, from limits keyed as Kiln's profile keys them.
function limitsTable(limitsOf) {
  return el('table', { class: 'limits' },
    el('caption', {}, 'Limits (bars on a log scale; the tick is WebGPU’s guaranteed minimum)'),
    ...LIMITS.map(([key, label, minimum, top, write]) => {
      const value = limitsOf[key];
      const track = el('span', { class: 'track', role: 'img',
        'aria-label': `${label}: ${write(value)} (WebGPU guarantees ${write(minimum)})` },
      el('span', { class: 'fill', style: `width:${pct(log(value, top))}` }),
      el('span', { class: 'tick', style: `left:${pct(log(minimum, top))}` }));
      return el('tr', {}, el('th', { scope: 'row' }, label), el('td', { class: 'bar-cell' }, track),
        el('td', { class: 'value' }, write(value)));
    }));
}

export function renderDevice(root, info) {
  const p = info.profile;
  const f = p.features;
  const chips = chipList([
    ['f16', f.shader_f16],
    [f.subgroup ? `subgroups ${p.subgroup_min_size}–${p.subgroup_max_size}` : 'subgroups', f.subgroup],
    ['timestamps', f.timestamp_query],
    ['cooperative matrices', f.cooperative_matrix],
  ]);
  const limits = limitsTable(p.limits);
  // Every family the kernel crate's registry has (the wasm module lists them), with the count.
  const families = info.offered ?? [];
  const offered = el('table', { class: 'limits offered' },
    el('caption', {}, `Kernel variants this device is offered, of each family’s total: all ${families.length} families`),
    ...families.map((o) => el('tr', {},
      el('th', { scope: 'row' }, el('code', {}, o.family)),
      el('td', { class: 'bar-cell' }, el('span', { class: 'track', role: 'img', 'aria-label': `${o.here} of ${o.all}` },
        el('span', { class: 'fill good', style: `width:${pct(o.here / Math.max(1, o.all))}` }))),
      el('td', { class: 'value' }, `${o.here} / ${o.all}`))),
    // In presenter mode only the largest families fit projector type (style.css): this says so.
    el('tr', { class: 'more' }, el('td', { colspan: '3' },
      `… and ${Math.max(0, families.length - 8)} smaller families`)));
  root.replaceChildren(
    el('p', { class: 'device-name' }, p.name),
    el('p', { class: 'muted' }, `${p.backend} · ${p.device_type} · vendor ${p.vendor.toString(16).padStart(4, '0')} · device class `,
      el('code', {}, info.class)),
    chips, limits, offered);
  root.dataset.ready = 'true';
}

// The adapter as the browser describes it, at once: what a page shows while Kiln opens the
// device and reads its kernel registry (seconds on a software adapter), replaced by
// renderDevice's fuller view (the device class, the variants offered) when that is done.
// `adapter`: a GPUAdapter.
export function renderAdapter(root, adapter) {
  const i = adapter.info ?? {};
  const name = [i.description, i.vendor, i.architecture].filter(Boolean).join(' · ') || 'an unnamed WebGPU adapter';
  const has = (f) => adapter.features.has(f);
  const l = adapter.limits;
  root.replaceChildren(
    el('p', { class: 'device-name' }, name),
    el('p', { class: 'muted' }, 'As the browser describes it. Kiln is opening it and reading its kernel ' +
      'registry (a few seconds on a software adapter): its device class and the kernel variants it is ' +
      'offered follow.'),
    chipList([['f16', has('shader-f16')], ['subgroups', has('subgroups')], ['timestamps', has('timestamp-query')]]),
    limitsTable({
      max_compute_workgroup_storage_size: l.maxComputeWorkgroupStorageSize,
      max_compute_invocations_per_workgroup: l.maxComputeInvocationsPerWorkgroup,
      max_storage_buffer_binding_size: l.maxStorageBufferBindingSize,
      max_buffer_size: l.maxBufferSize,
      max_storage_buffers_per_shader_stage: l.maxStorageBuffersPerShaderStage,
    }));
}
