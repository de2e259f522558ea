//! The plain CPU path: one obviously correct loop nest per op, written before the WGSL.
//! The GPU is tested against these, and the speed comparisons name them as the CPU path
//! (single-threaded, no SIMD intrinsics). Each family's reference lives in its folder
//! (`families/<family>/cpu.rs`) and is re-exported here; the attention backward, which checks
//! several families at once, lives here.

mod attention;

pub use crate::families::adamw::cpu::adamw;
pub use crate::families::add::cpu::add;
pub use crate::families::cross_entropy::cpu::cross_entropy;
pub use crate::families::embedding::cpu::embedding;
pub use crate::families::embedding_backward::cpu::embedding_backward;
pub use crate::families::flash_fwd::cpu::{Forward, attention, flash_forward};
pub use crate::families::fma_chain::cpu::fma_chain;
pub use crate::families::gelu::cpu::gelu;
pub use crate::families::gelu_backward::cpu::gelu_backward;
pub use crate::families::layernorm::cpu::{add_layernorm, layernorm};
pub use crate::families::layernorm_backward::cpu::layernorm_backward;
pub use crate::families::layernorm_params_backward::cpu::layernorm_params_backward;
pub use crate::families::matmul::cpu::{linear, linear_gelu, matmul};
pub use crate::families::matmul_reduce::cpu::matmul_reduce;
pub use crate::families::mma_chain::cpu::mma_chain;
pub use crate::families::rgba8::cpu::rgba8;
pub use crate::families::sinusoid::cpu::sinusoid;
pub use crate::families::softmax::cpu::softmax;
pub use crate::families::softmax_backward::cpu::softmax_backward;
pub use crate::families::swap_axes::cpu::{swap_axes01, swap_axes12};
pub use crate::families::transpose::cpu::transpose;
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
