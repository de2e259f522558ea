//! A vec4 copy: the memory-bandwidth ceiling the fleet campaign measures a device with (and the
//! flash backward's reset of dQ). The FMA chain (`fma_chain`) measures the arithmetic rate and
//! launches the same way.

pub(crate) mod cases;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{
    CountParams, check_no_alias, check_operands, check_out_shape, launch_elementwise,
};

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

/// Prepares Y = X as a vec4 copy.
pub fn launch(x: &Tensor, y: &Tensor, named: Option<&str>) -> Result<(Dispatch, Choice)> {
    let params = CountParams::new(x.numel() / 4);
    launch_flat("copy", x, y, 4, &params, named)
}

/// Both ceiling kernels: one invocation per `per_invocation` elements of flat f32 tensors
/// whose length is a multiple of it.
pub(crate) fn launch_flat(
    op: &'static str,
    x: &Tensor,
    y: &Tensor,
    per_invocation: usize,
    params: &impl bytemuck::Pod,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(op, &[x, y])?;
    check_out_shape(op, y, x.shape())?;
    check_no_alias(op, y, &[x])?;
    if x.dtype() != DType::F32 || !x.numel().is_multiple_of(per_invocation) {
        return Err(Error::shape(
            op,
            format!(
                "X is {} with {} elements: expected f32 and a multiple of {per_invocation}",
                x.dtype().wgsl(),
                x.numel()
            ),
        ));
    }
    launch_elementwise(
        op,
        x,
        None,
        x.numel() / per_invocation,
        named,
        &[x, y],
        params,
    )
}
