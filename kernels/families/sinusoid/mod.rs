//! A table of sines and cosines on the GPU.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::{Dispatch, wrap_groups};
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{
    check_no_alias, check_out_shape, check_same_device, choose_elementwise, record,
};

const OP: &str = "sinusoid";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    n: u32,
    start: f32,
    step: f32,
}

/// Rows 2r and 2r+1 of the [2R, n] result hold sin and cos of freq[r]·(start + x·step) + phase[r]
/// for x = 0..n; `freq` and `phase` are f32 [R].
pub fn sinusoid(
    freq: &Tensor,
    phase: &Tensor,
    n: usize,
    start: f32,
    step: f32,
    dtype: DType,
) -> Result<Tensor> {
    let out = Tensor::uninit(freq.gpu(), &[2 * freq.numel(), n], dtype)?;
    sinusoid_into(freq, phase, &out, start, step, None)?;
    Ok(out)
}

/// Writes the table into `out` [2R, n], with the named variant or the selector's choice.
pub fn sinusoid_into(
    freq: &Tensor,
    phase: &Tensor,
    out: &Tensor,
    start: f32,
    step: f32,
    named: Option<&str>,
) -> Result<Choice> {
    record(freq.gpu(), launch(freq, phase, out, start, step, named)?)
}

/// Checks the call and prepares its launch.
pub fn launch(
    freq: &Tensor,
    phase: &Tensor,
    out: &Tensor,
    start: f32,
    step: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    for (name, t) in [("freq", freq), ("phase", phase)] {
        if t.dtype() != DType::F32 || t.shape().len() != 1 {
            return Err(Error::shape(
                OP,
                format!(
                    "{name} must be f32 [R], got {} {:?}",
                    t.dtype().wgsl(),
                    t.shape()
                ),
            ));
        }
    }
    check_same_device(OP, &[freq, phase, out])?;
    if freq.shape() != phase.shape() {
        return Err(Error::shape(
            OP,
            format!(
                "freq {:?} and phase {:?} differ",
                freq.shape(),
                phase.shape()
            ),
        ));
    }
    if !(start.is_finite() && step.is_finite()) {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("start and step must be finite, got {start} and {step}"),
        });
    }
    let rows = freq.numel();
    let n = out.shape().last().copied().unwrap_or(0);
    check_out_shape(OP, out, &[2 * rows, n])?;
    check_no_alias(OP, out, &[freq, phase])?;
    let choice = choose_elementwise(OP, out, Some(n), named)?;
    let gpu = freq.gpu();
    let max = gpu.profile().limits.max_compute_workgroups_per_dimension;
    let wg = u64::from(Design::parse(&choice.variant)?.wg.max(1));
    let [y, z, _] = wrap_groups(OP, rows as u64, max)?;
    let [x, _, _] = wrap_groups(OP, (n as u64).div_ceil(wg), max)?;
    if u64::from(x) * wg < n as u64 {
        return Err(Error::OverLimit {
            op: OP,
            what: format!("a row of {n} columns"),
            limit: "max_compute_workgroups_per_dimension",
            needed: (n as u64).div_ceil(wg),
            allowed: u64::from(max),
        });
    }
    let params = Params {
        rows: rows as u32,
        n: n as u32,
        start,
        step,
    };
    let dispatch = Dispatch::new(
        gpu,
        &choice.variant,
        &[freq, phase, out],
        &params,
        [x, y, z],
    )?;
    Ok((dispatch, choice))
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{sinusoid, sinusoid_into};
}
