//! Batched matrix product on the GPU, with either operand read transposed in place and an
//! optional epilogue (bias, bias + gelu) applied as C is stored; the two-output epilogues also
//! write the gelu, the gelu backward or the split into heads that a pass runs on C (the op
//! after the product, folded into it by `kiln::fusion`).

pub(crate) mod cases;
pub mod cpu;
mod design;
mod launch;
mod rule;
mod split;

pub use design::*;
pub use launch::*;
pub use rule::*;
pub use split::*;

// What this file and the parts above share (they read it with `use super::*`).
use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::registry::Variant;
use crate::select::{self, Bucket, Choice, Key, Request, filter, prefer};
use crate::shape::MatmulDims;
use crate::tensor::Tensor;

use crate::launch::{
    check_no_alias, check_operands, check_out_shape, dtype_value, record, software,
};

const OP: &str = "matmul";

/// C = A · B for A [.., M, K] and B [.., K, N] (rank 2 or 3; a batch of 1 broadcasts).
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    product(a, b, Layout::default(), None)
}

/// C = A · Bᵀ for A [.., M, K] and B [.., N, K]: the transpose is read in place, never made.
pub fn matmul_bt(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let layout = Layout {
        a_trans: false,
        b_trans: true,
    };
    product(a, b, layout, None)
}

/// C = Aᵀ · B for A [.., K, M] and B [.., K, N] (a weight gradient Xᵀ · dY), A read in place.
pub fn matmul_at(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let layout = Layout {
        a_trans: true,
        b_trans: false,
    };
    product(a, b, layout, None)
}

/// Writes Aᵀ · B into `c` (A [.., K, M], B [.., K, N]; `c` [.., M, N], which may be a view of
/// a packed buffer: a weight gradient where the optimiser reads it), K cut as the ops cut it.
pub fn matmul_at_into(a: &Tensor, b: &Tensor, c: &Tensor) -> Result<()> {
    let layout = Layout {
        a_trans: true,
        b_trans: false,
    };
    let plan = launch_split(a, b, c, layout, None, None)?;
    a.gpu().record_all(plan.dispatches)
}

/// x · W + bias for x [.., K] (any leading extents) and W [K, N], bias [N]: a linear layer
/// in one launch.
pub fn linear(x: &Tensor, w: &Tensor, bias: &Tensor) -> Result<Tensor> {
    linear_with(x, w, bias, Epilogue::Bias)
}

/// gelu(x · W + bias), in one launch.
pub fn linear_gelu(x: &Tensor, w: &Tensor, bias: &Tensor) -> Result<Tensor> {
    linear_with(x, w, bias, Epilogue::BiasGelu)
}

/// gelu(x · W) in one launch, for x [.., K] and W [K, N]: the `bias_gelu` epilogue over a zero
/// bias the device keeps (`gelu(acc + 0)` is `gelu(acc)`), so the product's variants and
/// proofs serve it and a call uploads nothing.
pub fn matmul_gelu(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let n = w.shape().last().copied().unwrap_or(0);
    let zeros = Tensor::kept_zeros(x.gpu(), &[n], x.dtype())?;
    linear_with(x, w, &zeros, Epilogue::BiasGelu)
}

fn linear_with(x: &Tensor, w: &Tensor, bias: &Tensor, epilogue: Epilogue) -> Result<Tensor> {
    let (rows, k) = crate::shape::rows_cols(OP, x.shape())?;
    let y = product(
        &x.reshape(&[rows, k])?,
        w,
        Layout::default(),
        Some((bias, epilogue)),
    )?;
    y.reshape(&crate::shape::with_last(x.shape(), y.shape()))
}

fn product(
    a: &Tensor,
    b: &Tensor,
    layout: Layout,
    epilogue: Option<(&Tensor, Epilogue)>,
) -> Result<Tensor> {
    let d = MatmulDims::transposed(a.shape(), b.shape(), layout.a_trans, layout.b_trans)?;
    let c = Tensor::uninit(a.gpu(), &d.out_shape(a.shape(), b.shape()), a.dtype())?;
    let plan = launch_split(a, b, &c, layout, epilogue, None)?;
    a.gpu().record_all(plan.dispatches)?;
    Ok(c)
}

/// Writes A · B into `c`, with the named variant or the selector's choice.
pub fn matmul_into(a: &Tensor, b: &Tensor, c: &Tensor, named: Option<&str>) -> Result<Choice> {
    record(a.gpu(), launch(a, b, c, named)?)
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{
        linear, linear_gelu, matmul, matmul_at, matmul_at_into, matmul_bt, matmul_gelu, matmul_into,
    };
}
