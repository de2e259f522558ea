//! Softmax cross-entropy with integer targets on the GPU: the loss and its gradient in one pass.

pub(crate) mod cases;
pub mod cpu;

use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::shape::cross_entropy_rows;
use crate::tensor::Tensor;

use crate::launch::{
    check_ids, check_no_alias, check_operands, check_out_shape, choose_rowwise, record,
};

const OP: &str = "cross_entropy";

/// What the launcher reads of a variant: dtype, threads per row, how a row is reduced.
pub type Design = crate::launch::RowDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    vocab: u32,
    grad_scale: f32,
    nan_bits: u32,
}

/// Cross-entropy of `logits` [.., vocab] (rank ≥ 2) against `targets` (u32, `[rows]`):
/// `(loss [rows], dlogits)` with loss = logsumexp(row) − `row[target]` and
/// dlogits = (softmax(row) − onehot(target)) · grad_scale.
///
/// A target ≥ vocab cannot raise an error from inside the kernel: that row's loss and
/// gradients come out NaN, so a bad batch shows in the loss instead of training silently.
pub fn cross_entropy(
    logits: &Tensor,
    targets: &Tensor,
    grad_scale: f32,
) -> Result<(Tensor, Tensor)> {
    let gpu = logits.gpu();
    let (rows, _) = cross_entropy_rows(OP, logits.shape(), targets.numel())?;
    let loss = Tensor::uninit(gpu, &[rows], logits.dtype())?;
    let dlogits = Tensor::uninit(gpu, logits.shape(), logits.dtype())?;
    cross_entropy_into(logits, targets, &loss, &dlogits, grad_scale, None)?;
    Ok((loss, dlogits))
}

/// Writes the loss and the logits' gradient, with the named variant or the selector's choice.
pub fn cross_entropy_into(
    logits: &Tensor,
    targets: &Tensor,
    loss: &Tensor,
    dlogits: &Tensor,
    grad_scale: f32,
    named: Option<&str>,
) -> Result<Choice> {
    record(
        logits.gpu(),
        launch(logits, targets, loss, dlogits, grad_scale, named)?,
    )
}

/// Checks the call and prepares its launch.
pub fn launch(
    logits: &Tensor,
    targets: &Tensor,
    loss: &Tensor,
    dlogits: &Tensor,
    grad_scale: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[logits, loss, dlogits])?;
    check_ids(OP, "targets", targets, logits)?;
    let (rows, vocab) = cross_entropy_rows(OP, logits.shape(), targets.numel())?;
    check_out_shape(OP, loss, &[rows])?;
    check_out_shape(OP, dlogits, logits.shape())?;
    for out in [loss, dlogits] {
        check_no_alias(OP, out, &[logits, targets])?;
    }
    if loss.overlaps(dlogits) {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "loss and dlogits must be separate tensors".into(),
        });
    }
    if !grad_scale.is_finite() {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("grad_scale must be finite, got {grad_scale}"),
        });
    }
    let choice = choose_rowwise(OP, logits, None, named)?;
    let gpu = logits.gpu();
    let groups = gpu.groups(OP, rows as u64)?;
    let params = Params {
        rows: rows as u32,
        vocab: vocab as u32,
        grad_scale,
        nan_bits: f32::NAN.to_bits(),
    };
    let dispatch = Dispatch::new(
        gpu,
        &choice.variant,
        &[logits, targets, loss, dlogits],
        &params,
        groups,
    )?;
    Ok((dispatch, choice))
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{cross_entropy, cross_entropy_into};
}
