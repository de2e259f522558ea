//! Four planes to packed RGBA8 pixels on the GPU.

pub mod cpu;
pub(crate) mod cases;

use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::{DType, Tensor};

use crate::ops::{check_no_alias, check_out_shape, check_same_device, choose_widest};

const OP: &str = "rgba8";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::ops::ElementDesign;

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
    let (dispatch, choice) = plan(planes, pixels, scale, bias, named)?;
    planes.gpu().record_owned(dispatch)?;
    Ok(choice)
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
pub fn plan(
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
    let choice = choose_widest(OP, planes, Some(count), named)?;
    let gpu = planes.gpu();
    let wg = u64::from(Design::parse(&choice.variant)?.wg.max(1));
    let groups = gpu.groups(OP, (count as u64).div_ceil(wg))?;
    let params = Params {
        count: count as u32,
        scale,
        bias,
        _pad: 0,
    };
    let dispatch = Dispatch::new(gpu, &choice.variant, &[planes, pixels], &params, groups)?;
    Ok((dispatch, choice))
}
