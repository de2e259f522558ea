//! The plain CPU path: one obviously correct loop nest per op, written before the WGSL.
//! The GPU is tested against these, and the speed comparisons name them as the CPU path
//! (single-threaded, no SIMD intrinsics). Each family's reference lives in its folder
//! (`families/<family>/cpu.rs`) and is re-exported here whole; the attention backward, which checks
//! several families at once, lives here.

mod attention;

// Every family's reference (`families/<family>/cpu.rs`), written by the build script.
include!(concat!(env!("OUT_DIR"), "/cpu_exports.rs"));

pub use attention::{Grads, attention_backward, attention_forward_backward, flash_backward};

use crate::error::Result;
use crate::shape;

/// A row-major f32 array on the CPU: the CPU path's counterpart of a GPU `Tensor`.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Refuses an array whose data does not hold its shape's elements (the fields are public, so
/// one can be built by hand): the loops below index by shape and must not run past the data.
pub(crate) fn check_array(op: &'static str, a: &Array) -> Result<()> {
    shape::check_len(op, &a.shape, a.data.len())
}

impl Array {
    /// Σ self ∘ w in f64: the scalar loss whose gradient with respect to `self` is `w`, as the
    /// finite-difference checks of the backward references use it.
    pub fn dot(&self, w: &Array) -> f64 {
        self.data
            .iter()
            .zip(&w.data)
            .map(|(a, b)| f64::from(*a) * f64::from(*b))
            .sum()
    }

    /// An array from data and a shape whose element count matches.
    pub fn new(shape: &[usize], data: Vec<f32>) -> Result<Self> {
        shape::check_len("array", shape, data.len())?;
        Ok(Array {
            shape: shape.to_vec(),
            data,
        })
    }
}

/// Relative L2 error ‖got − want‖ / ‖want‖ (the absolute error when `want` is all zeros).
/// Any NaN or length mismatch gives infinity, so a poisoned or short result always fails.
pub fn rel_l2(got: &[f32], want: &[f32]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        if !g.is_finite() {
            return f64::INFINITY;
        }
        let d = f64::from(g) - f64::from(w);
        diff += d * d;
        norm += f64::from(w) * f64::from(w);
    }
    if norm == 0.0 {
        diff.sqrt()
    } else {
        (diff / norm).sqrt()
    }
}
