//! One module per op family: shape checks, variant choice, and the launch. Each op has
//! - `<op>(…) -> Tensor`: allocate the output and run the chosen variant;
//! - `<op>_into(…, out, named)`: write into a given tensor, optionally with a named variant;
//! - `plan(…)`: the prepared `Dispatch` and the `Choice`, for benchmarks that launch it often.

pub mod add;
pub mod layernorm;
pub mod matmul;
pub mod softmax;

pub use add::{add, add_into};
pub use layernorm::{layernorm, layernorm_into};
pub use matmul::{matmul, matmul_into};
pub use softmax::{softmax, softmax_into};

use crate::contract::Param;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Tensors of one op must live on one device and share a dtype.
fn check_operands(op: &'static str, tensors: &[&Tensor]) -> Result<()> {
    let first = tensors[0];
    for t in &tensors[1..] {
        if !t.gpu().same_device(first.gpu()) {
            return Err(Error::shape(op, "operands live on different devices"));
        }
        if t.dtype() != first.dtype() {
            return Err(Error::shape(
                op,
                format!(
                    "operands have different dtypes: {} and {}",
                    first.dtype().wgsl(),
                    t.dtype().wgsl()
                ),
            ));
        }
    }
    Ok(())
}

fn check_out_shape(op: &'static str, out: &Tensor, want: &[usize]) -> Result<()> {
    if out.shape() != want {
        return Err(Error::shape(
            op,
            format!("output has shape {:?}, the op makes {want:?}", out.shape()),
        ));
    }
    Ok(())
}

fn dtype_param(t: &Tensor) -> (&'static str, Param) {
    ("dtype", Param::Str(t.dtype().wgsl().to_string()))
}

/// Prefers workgroups about as wide as a row (64 to 256 threads).
fn row_width_score(wg: i64, cols: usize) -> i64 {
    let target = (cols.next_power_of_two() as i64).clamp(64, 256);
    -(wg - target).abs()
}

impl Tensor {
    /// `self · other` (see [`matmul::matmul`]).
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        matmul(self, other)
    }

    /// `self + other` with broadcasting (see [`add::add`]).
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        add(self, other)
    }

    /// Softmax over the last axis (see [`softmax::softmax`]).
    pub fn softmax(&self, causal: bool, scale: f32) -> Result<Tensor> {
        softmax(self, causal, scale)
    }

    /// Layer normalisation over the last axis (see [`layernorm::layernorm`]).
    pub fn layernorm(&self, gamma: &Tensor, beta: &Tensor, eps: f32) -> Result<Tensor> {
        layernorm(self, gamma, beta, eps)
    }
}
