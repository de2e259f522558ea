//! Flash-decoding's combine pass on the GPU: one workgroup per query row rescales the row's
//! chunks (from the split pass, `families/flash_decode`) to their common max and sums them into
//! O and the LSE.

pub(crate) mod cases;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::launch::{Rowwise, check_input_shape, check_same_device, record};
use crate::select::Choice;
use crate::tensor::Tensor;

const OP: &str = "flash_decode_combine";

/// What the launcher reads of a variant: dtype, threads per row, how the chunks are reduced.
pub type Design = crate::launch::RowDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    chunks: u32,
    columns: u32,
    inf_bits: u32,
}

/// The selector's call for rows of `chunks` partial states, written as `dtype`.
pub fn call(dtype: DType, chunks: usize) -> Rowwise {
    Rowwise {
        family: OP,
        dtype,
        cols: chunks,
        flag: None,
    }
}

/// Combines the partials `[rows, chunks, D]` and `[rows, chunks, 2]` into `o` (any shape of
/// rows × D elements whose last axis is D) and `lse` (rows elements, f32).
pub fn flash_decode_combine_into(
    part_out: &Tensor,
    part_max_sum: &Tensor,
    o: &Tensor,
    lse: &Tensor,
    named: Option<&str>,
) -> Result<Choice> {
    record(o.gpu(), launch(part_out, part_max_sum, o, lse, named)?)
}

/// Checks the call and prepares its launch.
pub fn launch(
    part_out: &Tensor,
    part_max_sum: &Tensor,
    o: &Tensor,
    lse: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_same_device(OP, &[part_out, part_max_sum, o, lse])?;
    let &[rows, chunks, d] = part_out.shape() else {
        return Err(Error::shape(
            OP,
            format!(
                "the partial output has shape {:?}: expected [rows, chunks, D]",
                part_out.shape()
            ),
        ));
    };
    for (name, t) in [
        ("the partial output", part_out),
        ("the partial (max, sum)", part_max_sum),
        ("the LSE", lse),
    ] {
        if t.dtype() != DType::F32 {
            return Err(Error::shape(OP, format!("{name} must be f32")));
        }
    }
    check_input_shape(
        OP,
        "the partial (max, sum)",
        part_max_sum,
        &[rows, chunks, 2],
    )?;
    if o.dtype() == DType::U32 || o.shape().last() != Some(&d) || o.numel() != rows * d {
        return Err(Error::shape(
            OP,
            format!(
                "O has shape {:?} ({}): expected f32 or f16, {rows} rows of {d}",
                o.shape(),
                o.dtype().wgsl()
            ),
        ));
    }
    if lse.numel() != rows {
        return Err(Error::shape(
            OP,
            format!("the LSE has {} elements, expected {rows}", lse.numel()),
        ));
    }
    if d % 4 != 0 || chunks == 0 {
        return Err(Error::shape(
            OP,
            format!("{chunks} chunks of D {d}: D must be a multiple of 4, chunks ≥ 1"),
        ));
    }
    let gpu = o.gpu();
    let choice = gpu.selector().choose(&call(o.dtype(), chunks), named)?;
    let params = Params {
        rows: rows as u32,
        chunks: chunks as u32,
        columns: (d / 4) as u32,
        inf_bits: f32::INFINITY.to_bits(),
    };
    let groups = gpu.groups(OP, rows as u64)?;
    let dispatch = Dispatch::new(
        gpu,
        &choice.variant,
        &[part_out, part_max_sum, o, lse],
        &params,
        groups,
    )?;
    Ok((dispatch, choice))
}
