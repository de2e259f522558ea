// The speaker view's pieces: opening it (S), and its bar (the timer, the next stage, whether the
// audience screen is blank, whether the offline copy is ready). talk.js keeps the two windows in
// step.
import { bareFlags, el } from './dom.js';

export function openSpeaker() {
  const url = new URL(location.href);
  url.searchParams.set('speaker', '');
  // One speaker window per page: the name brings an open one forward.
  window.open(bareFlags(url), `kiln-speaker:${location.pathname}`, 'popup,width=1280,height=800');
}

// The speaker's bar: the timer (from the window's opening, or the last reset), the next
// stage's title, whether the audience screen is blank, and whether the offline copy is ready.
export function buildSpeaker() {
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
