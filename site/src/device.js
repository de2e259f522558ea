// The device panel of the index and the fleet page: the adapter the kernels are rendered for —
// its name, backend and device class, its features, its key limits as bars on a log scale (a
// tick at WebGPU's guaranteed minimum) and how many of each kernel family's variants it is
// offered. `info` is the fleet-web wasm's `device()` or `walkthrough()` JSON:
// { profile: DeviceProfile, class, offered: [{ family, here, all }] }.

import { el } from './talk.js';

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

export function renderDevice(root, info) {
  const p = info.profile;
  const f = p.features;
  const features = [
    ['f16', f.shader_f16],
    [f.subgroup ? `subgroups ${p.subgroup_min_size}–${p.subgroup_max_size}` : 'subgroups', f.subgroup],
    ['timestamps', f.timestamp_query],
    ['cooperative matrices', f.cooperative_matrix],
  ];
  const chips = el('ul', { class: 'chips', 'aria-label': 'features' },
    ...features.map(([name, on]) => el('li', { class: on ? 'on' : 'off' },
      `${on ? '✓' : '✗'} ${name}`)));
  const limits = el('table', { class: 'limits' },
    el('caption', {}, 'Limits (bars on a log scale; the tick is WebGPU’s guaranteed minimum)'),
    ...LIMITS.map(([key, label, minimum, top, write]) => {
      const value = p.limits[key];
      const track = el('span', { class: 'track', role: 'img',
        'aria-label': `${label}: ${write(value)} (WebGPU guarantees ${write(minimum)})` },
      el('span', { class: 'fill', style: `width:${pct(log(value, top))}` }),
      el('span', { class: 'tick', style: `left:${pct(log(minimum, top))}` }));
      return el('tr', {}, el('th', { scope: 'row' }, label), el('td', { class: 'bar-cell' }, track),
        el('td', { class: 'value' }, write(value)));
    }));
  const offered = el('table', { class: 'limits offered' },
    el('caption', {}, 'Kernel variants this device is offered, of each family’s total'),
    ...(info.offered ?? []).slice(0, 6).map((o) => el('tr', {},
      el('th', { scope: 'row' }, el('code', {}, o.family)),
      el('td', { class: 'bar-cell' }, el('span', { class: 'track', role: 'img', 'aria-label': `${o.here} of ${o.all}` },
        el('span', { class: 'fill good', style: `width:${pct(o.here / Math.max(1, o.all))}` }))),
      el('td', { class: 'value' }, `${o.here} / ${o.all}`))));
  root.replaceChildren(
    el('p', { class: 'device-name' }, p.name),
    el('p', { class: 'muted' }, `${p.backend} · ${p.device_type} · vendor ${p.vendor.toString(16).padStart(4, '0')} · device class `,
      el('code', {}, info.class)),
    chips, limits, offered);
  root.dataset.ready = 'true';
}
