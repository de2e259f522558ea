//! A recorded op list: the steps (launches) op calls made, in order, and what the calls said of
//! the steps they made (notes). The GPU path's capture records launches into one
//! (`gpu::plan`), the plan-only path records choices (`ChoiceBackend`), and `kiln::fusion` reads
//! and rewrites either the same way: a fold takes the newest step into the next call's launch,
//! a chain rewrite replaces the steps of noted calls whose results nobody reads.

use std::ops::Range;
use std::sync::Arc;

/// What a trace keeps of an op call (`fusion::Noted`), which this module and the GPU layer only
/// keep: shareable between threads natively, as the device that holds it is; in the browser,
/// where the device is not, any value. Read back through [`as_any`](Self::as_any).
pub(crate) trait Noting: std::any::Any + wgpu::WasmNotSendSync {
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: std::any::Any + wgpu::WasmNotSendSync> Noting for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// What an op call said of the steps it recorded.
pub(crate) struct Note {
    pub steps: Range<usize>,
    pub what: Arc<dyn Noting>,
    /// Whether the call is a link of a chain a rewrite takes as a whole (attention's scores,
    /// softmax and weighted values): a fold must not take a link's launch when the link before
    /// it ends right where it starts.
    pub links: bool,
}

/// Steps and the notes op calls made of them.
pub(crate) struct Trace<S> {
    pub steps: Vec<S>,
    pub notes: Vec<Note>,
    /// The step the newest fold ([`fold_last`](Self::fold_last)) put its launch in, unless an
    /// op call has begun since ([`begin_call`](Self::begin_call) clears it): the call that
    /// folded it is noted on that step.
    replaced: Option<usize>,
}

impl<S> Default for Trace<S> {
    fn default() -> Self {
        Trace {
            steps: Vec::new(),
            notes: Vec::new(),
            replaced: None,
        }
    }
}

impl<S> Trace<S> {
    /// Begins an op call: the number of steps so far, to [`annotate`](Self::annotate) what it
    /// made. A fold made before it is not the call's.
    pub fn begin_call(&mut self) -> usize {
        self.replaced = None;
        self.steps.len()
    }

    /// Notes `what` of the steps recorded since step `from` — or, when the call's one launch
    /// took the place of the step before `from` ([`fold_last`](Self::fold_last)), of that
    /// step; `links`: whether the call is a link of a chain a rewrite takes whole. (A call that
    /// folded a launch and then recorded more would be noted on what it appended only: none
    /// does.)
    pub fn annotate(&mut self, from: usize, what: Arc<dyn Noting>, links: bool) {
        if from > self.steps.len() {
            return;
        }
        let start = match self.replaced.take() {
            Some(i) if from == self.steps.len() && i + 1 == from => i,
            _ => from,
        };
        let steps = start..self.steps.len();
        self.notes.push(Note { steps, what, links });
    }

    /// Whether the newest step ends a chain: it belongs to a link noted right after another
    /// link, which a capture's rewrite may take as a whole, so no fold may take it. (Only links
    /// count: a swap or an optimiser step noted before a product does not make the product's
    /// sum the end of a chain.)
    pub fn newest_ends_a_chain(&self) -> bool {
        let Some(last) = self.steps.len().checked_sub(1) else {
            return false;
        };
        self.notes.windows(2).any(|pair| {
            pair[0].links
                && pair[1].links
                && !pair[0].steps.is_empty()
                && pair[1].steps.contains(&last)
                && pair[0].steps.end == pair[1].steps.start
        })
    }

    /// Replaces the newest step with `step` for a fold. A note on the step taken keeps the
    /// steps before it: the call that made them still made its result, now written by the
    /// launch that takes the step's place (the call folding it is noted on that step, and a
    /// rewrite may take the two calls together).
    pub fn fold_last(&mut self, step: S) {
        if self.steps.pop().is_none() {
            return;
        }
        let len = self.steps.len();
        for n in &mut self.notes {
            n.steps = n.steps.start.min(len)..n.steps.end.min(len);
        }
        self.steps.push(step);
        self.replaced = Some(len);
    }

    /// Removes step `i`; the notes on it go, later notes move up.
    pub fn remove(&mut self, i: usize) {
        if i >= self.steps.len() {
            return;
        }
        self.steps.remove(i);
        self.notes.retain(|n| !n.steps.contains(&i));
        for n in &mut self.notes {
            if n.steps.start > i {
                n.steps = n.steps.start - 1..n.steps.end - 1;
            }
        }
    }

    /// Replaces the steps `range` (at least one) with `with`, in order; the notes on them go,
    /// later notes move by the difference.
    pub fn replace_with(&mut self, range: Range<usize>, with: Vec<S>) {
        let (start, end) = (range.start, range.end);
        let added = with.len();
        self.steps.splice(range, with);
        self.notes
            .retain(|n| n.steps.end <= start || n.steps.start >= end);
        let moved = |i: usize| i + added - (end - start);
        for n in &mut self.notes {
            if n.steps.start >= end {
                n.steps = moved(n.steps.start)..moved(n.steps.end);
            }
        }
    }
}
