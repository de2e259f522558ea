// The QR code the walkthrough's first stage shows.
import { el } from './dom.js';

// The first stage shows a QR code of this page (without the walkthrough's parameters), so the
// audience can open it; qrcode-generator is vendored into the site by scripts/build-site.sh.
let qrFor = null;
export async function showQr(first) {
  const figure = document.getElementById('talk-qr');
  if (!figure) return;
  figure.hidden = !first;
  const target = location.origin + location.pathname;
  if (!first || qrFor === target) return;
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
