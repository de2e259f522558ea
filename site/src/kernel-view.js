// The kernel-source view: the variants chosen for this device, why, and the WGSL rendered for
// it, template values marked.
import { codeBlock, el } from './dom.js';

export function showKernels(list) {
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
