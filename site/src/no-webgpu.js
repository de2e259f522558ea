// The one explanation for a browser whose GPU paths cannot run (no WebGPU, no adapter, not a
// secure context), in the page's error box and its kernel-source view.
import { el } from './dom.js';

export const TITLES = {
  insecure: 'WebGPU needs a secure page',
  'no-webgpu': 'No WebGPU in this browser',
  'no-adapter': 'No WebGPU adapter',
};

// The explanation for a page whose GPU paths cannot run: `missing` is device.js's answer
// ({ state, reason, fix }; a bare sentence is taken as the reason), `fallback` what the page
// does instead. The kernel-source view, which needs a device, says so instead of staying empty.
// Returns the answer read, the whole sentence and the error box, for the walkthrough's panel.
export function explainNoWebGPU(missing, fallback) {
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
  return { m, text, error };
}
