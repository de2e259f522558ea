//! How a case's outputs are scored: each output against what the CPU reference says it holds,
//! with its own bound, so that a large output cannot hide an error in a small one.

use serde::Serialize;

use crate::Tensor;

/// An output tensor and what the CPU reference says it holds, scored on its own: a case with
/// several outputs (O and the LSE, dX and dgamma) holds each to a bound, so a large one cannot
/// hide an error in a small one.
#[derive(Debug)]
pub struct Output {
    /// What it is (`o`, `lse`, `dx`), for the messages; empty for a case's one output.
    pub name: &'static str,
    pub expected: Expected,
    /// Its own bound (relative L2) where it differs from the case's; `Some(0.0)`: exactly the
    /// reference's values (a data move).
    pub tolerance: Option<f64>,
}

/// What an output must hold.
#[derive(Debug)]
pub enum Expected {
    Values {
        t: Tensor,
        want: Vec<f32>,
    },
    /// u32 words (packed RGBA8 pixels, ids, counters), poisoned with [`POISON_WORD`](super::POISON_WORD); their
    /// bytes enter the relative L2 as values (exact where the bound is 0).
    Words {
        t: Tensor,
        want: Vec<u32>,
    },
}

impl Output {
    /// The output named `name`, for the messages.
    pub(crate) fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// The output held to `tolerance` where given (a proof set's measured bound), else to the
    /// case's.
    pub(crate) fn within(mut self, tolerance: Option<f64>) -> Self {
        self.tolerance = tolerance.or(self.tolerance);
        self
    }

    pub(super) fn unnamed(expected: Expected) -> Self {
        Output {
            name: "",
            expected,
            tolerance: None,
        }
    }

    /// u32 words the reference says `t` holds.
    pub(crate) fn words(t: &Tensor, want: Vec<u32>) -> Self {
        Output::unnamed(Expected::Words { t: t.clone(), want })
    }
}

/// One output's error against the CPU reference and the bound it is held to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scored {
    /// The output's name (empty for a case's one output).
    pub output: &'static str,
    /// Relative L2 error (infinite where an element is not finite or one is missing).
    pub err: f64,
    pub tolerance: f64,
}

impl Scored {
    pub fn ok(&self) -> bool {
        !self.err.is_nan() && self.err <= self.tolerance
    }

    /// `o: 3.1e-7 (allowed 1e-6)`, the name left out for a case's one output.
    pub fn describe(&self) -> String {
        let name = if self.output.is_empty() {
            String::new()
        } else {
            format!("{}: ", self.output)
        };
        format!("{name}{:.3e} (allowed {:.1e})", self.err, self.tolerance)
    }

    /// The output furthest past (or nearest to) its bound: what a report of the case gives.
    pub fn worst(scores: &[Scored]) -> Option<&Scored> {
        let ratio = |s: &Scored| match (s.err, s.tolerance) {
            (e, _) if e.is_nan() => f64::INFINITY,
            (e, t) if t > 0.0 => e / t,
            (e, _) if e > 0.0 => f64::INFINITY,
            _ => 0.0,
        };
        scores.iter().max_by(|a, b| ratio(a).total_cmp(&ratio(b)))
    }
}
