//! The plain CPU path: one obviously correct loop nest per op, written before the WGSL.
//! The GPU is tested against these, and the speed comparisons name them as the CPU path
//! (single-threaded, no SIMD intrinsics).

mod adamw;
mod add;
mod attention;
mod ceiling;
mod cross_entropy;
mod embedding;
mod gelu;
mod layernorm;
mod matmul;
mod rgba8;
mod sinusoid;
mod softmax;
mod swap_axes;
mod transpose;

pub use adamw::adamw;
pub use add::add;
pub use attention::{
    Forward, Grads, attention, attention_backward, attention_forward_backward, flash_backward,
    flash_forward,
};
pub use ceiling::fma_chain;
pub use cross_entropy::cross_entropy;
pub use embedding::{embedding, embedding_backward};
pub use gelu::{gelu, gelu_backward};
pub use layernorm::{add_layernorm, layernorm, layernorm_backward};
pub use matmul::{linear, linear_gelu, matmul, matmul_reduce};
pub use rgba8::rgba8;
pub use sinusoid::sinusoid;
pub use softmax::{softmax, softmax_backward};
pub use swap_axes::{swap_axes01, swap_axes12};
pub use transpose::transpose;

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
fn check_array(op: &'static str, a: &Array) -> Result<()> {
    shape::check_len(op, &a.shape, a.data.len())
}

impl Array {
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
