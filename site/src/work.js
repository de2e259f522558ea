// Long work on a page (the comparison with transformers.js, the flash sweep and training, the
// fleet campaign, a long forward pass): how far it is — a count, and the time left estimated from
// the units measured so far (the first one, until there are more) — and the words for it. Each
// page keeps its own Stop button; this file only counts and says.

// A duration in words: "0.4 s", "12 s", "3.5 min".
export function duration(ms) {
  const s = ms / 1000;
  if (!Number.isFinite(s)) return '—';
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  return `${(s / 60).toFixed(1)} min`;
}

// Counts the units of one piece of work as they finish. `total`: how many; `cost(i)`: the
// relative cost of unit i (0-based; 1 each by default: a sweep's lengths cost N² each), so that
// the estimate scales what was measured to what is left.
export class Tally {
  constructor(total, { cost = () => 1, unit = 'unit', units = `${unit}s` } = {}) {
    Object.assign(this, { total, cost, unit, units });
    this.times = []; // ms of each finished unit
    this.since = performance.now();
  }

  // Unit `this.times.length` has finished (its time, from the last call or the start).
  finished(ms = performance.now() - this.since) {
    this.times.push(ms);
    this.since = performance.now();
  }

  // Restarts the clock of the unit now running (after a pause that is not its work).
  restart() { this.since = performance.now(); }

  get done() { return this.times.length; }

  // The ms left, from the units so far (undefined before the first has finished).
  left() {
    const n = this.times.length;
    if (!n) return undefined;
    let measured = 0;
    for (let i = 0; i < n; i++) measured += this.cost(i);
    const per = this.times.reduce((a, b) => a + b, 0) / measured;
    let rest = 0;
    for (let i = n; i < this.total; i++) rest += this.cost(i);
    // The unit running now has been at it a while: count only what it has still to go.
    return Math.max(0, per * rest - (performance.now() - this.since));
  }

  // "about 40 s left, from the first unit's 4.1 s" / "from the 3 units so far"; '' before the first.
  estimate() {
    const left = this.left();
    if (left === undefined) return '';
    const n = this.times.length;
    const from = n === 1 ? `from the first ${this.unit}'s ${duration(this.times[0])}`
      : `from the ${n} ${this.units} so far`;
    return `about ${duration(left)} left, ${from}`;
  }

  // "3 of 10 units done; about 40 s left, from …" (the count always; the estimate once known).
  line() {
    const est = this.estimate();
    return `${this.done} of ${this.total} ${this.units} done${est ? `; ${est}` : ''}`;
  }
}

// A clock that calls `fn(ms so far)` every `every` ms until stopped: for a unit that takes long
// (a first step that compiles every kernel) and would otherwise show a frozen line.
export function ticking(fn, every = 1000) {
  const start = performance.now();
  fn(0);
  const id = setInterval(() => fn(performance.now() - start), every);
  return () => clearInterval(id);
}

// Resolves once the browser has drawn a frame with the page as it is now: before a long
// synchronous step (Kiln reading its kernel registry holds the thread for seconds on a slow
// machine), so that what the page says first is on the screen meanwhile.
export const painted = () => new Promise((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));
