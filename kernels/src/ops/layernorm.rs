//! Layer normalisation over the last axis on the GPU.

use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::shape::rows_cols;
use crate::tensor::Tensor;

use super::{check_no_alias, check_operands, check_out_shape, choose_rowwise};

const OP: &str = "layernorm";

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cols: u32,
    eps: f32,
    _pad: u32,
}

/// (x − mean) / sqrt(var + eps) · gamma + beta over the last axis; gamma and beta are [cols].
pub fn layernorm(x: &Tensor, gamma: &Tensor, beta: &Tensor, eps: f32) -> Result<Tensor> {
    let y = Tensor::uninit(x.gpu(), x.shape(), x.dtype())?;
    layernorm_into(x, gamma, beta, &y, eps, None)?;
    Ok(y)
}

/// Writes the layer norm of `x` into `y`, with the named variant or the selector's choice.
pub fn layernorm_into(
    x: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    y: &Tensor,
    eps: f32,
    named: Option<&str>,
) -> Result<Choice> {
    let (dispatch, choice) = plan(x, gamma, beta, y, eps, named)?;
    x.gpu().submit(&[&dispatch]);
    Ok(choice)
}

/// The variant the selector picks for this shape on this device.
pub fn choose(x: &Tensor, named: Option<&str>) -> Result<Choice> {
    choose_rowwise(OP, x, Vec::new(), named)
}

/// Checks the call and prepares its launch.
pub fn plan(
    x: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    y: &Tensor,
    eps: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[x, gamma, beta, y])?;
    check_out_shape(OP, y, x.shape())?;
    check_no_alias(OP, y, &[x, gamma, beta])?;
    let (rows, cols) = rows_cols(OP, x.shape())?;
    for (name, t) in [("gamma", gamma), ("beta", beta)] {
        if t.shape() != [cols] {
            return Err(Error::shape(
                OP,
                format!("{name} has shape {:?}, expected [{cols}]", t.shape()),
            ));
        }
    }
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("eps must be finite and ≥ 0, got {eps}"),
        });
    }
    let choice = choose(x, named)?;
    let gpu = x.gpu();
    let groups = gpu.groups(OP, rows as u64)?;
    let params = gpu.uniform(&Params {
        rows: rows as u32,
        cols: cols as u32,
        eps,
        _pad: 0,
    });
    let pipeline = gpu.pipeline(&choice.variant)?;
    let dispatch = Dispatch::new(
        gpu,
        pipeline,
        &[
            x.buffer(),
            gamma.buffer(),
            beta.buffer(),
            y.buffer(),
            &params,
        ],
        groups,
    );
    Ok((dispatch, choice))
}
