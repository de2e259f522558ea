//! Four planes to packed RGBA8 pixels on the GPU.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{
    check_no_alias, check_out_shape, check_same_device, launch_elementwise, record,
};

const OP: &str = "rgba8";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    count: u32,
    scale: f32,
    bias: f32,
    _pad: u32,
}

/// Packs planes [4, H, W] into u32 pixels [H, W] (R in the low byte): each channel is
/// round(255 · clamp(v · scale + bias, 0, 1)).
pub fn rgba8(planes: &Tensor, scale: f32, bias: f32) -> Result<Tensor> {
    let [_, h, w] = plane_dims(planes)?;
    let pixels = Tensor::uninit(planes.gpu(), &[h, w], DType::U32)?;
    rgba8_into(planes, &pixels, scale, bias, None)?;
    Ok(pixels)
}

/// Writes the pixels into `pixels` [H, W] u32, with the named variant or the selector's choice.
pub fn rgba8_into(
    planes: &Tensor,
    pixels: &Tensor,
    scale: f32,
    bias: f32,
    named: Option<&str>,
) -> Result<Choice> {
    record(planes.gpu(), launch(planes, pixels, scale, bias, named)?)
}

fn plane_dims(planes: &Tensor) -> Result<[usize; 3]> {
    match *planes.shape() {
        [4, h, w] => Ok([4, h, w]),
        ref s => Err(Error::shape(
            OP,
            format!("planes have shape {s:?}, expected [4, H, W]"),
        )),
    }
}

/// Checks the call and prepares its launch.
pub fn launch(
    planes: &Tensor,
    pixels: &Tensor,
    scale: f32,
    bias: f32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let [_, h, w] = plane_dims(planes)?;
    check_out_shape(OP, pixels, &[h, w])?;
    check_no_alias(OP, pixels, &[planes])?;
    check_same_device(OP, &[planes, pixels])?;
    if pixels.dtype() != DType::U32 {
        return Err(Error::shape(OP, "pixels must be a u32 tensor"));
    }
    if !(scale.is_finite() && bias.is_finite()) {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("scale and bias must be finite, got {scale} and {bias}"),
        });
    }
    let count = h * w;
    let params = Params {
        count: count as u32,
        scale,
        bias,
        _pad: 0,
    };
    launch_elementwise(
        OP,
        planes,
        Some(count),
        count,
        named,
        &[planes, pixels],
        &params,
    )
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{rgba8, rgba8_into};
}
