use crate::cpu::Array;
use crate::error::{Error, Result};

/// Packs planes [4, H, W] into RGBA8 pixels (R in the low byte):
/// each channel is floor(0.5 + 255 · clamp(v · scale + bias, 0, 1)), as WGSL's pack4x8unorm.
pub fn rgba8(planes: &Array, scale: f32, bias: f32) -> Result<Vec<u32>> {
    let [4, h, w] = planes.shape[..] else {
        return Err(Error::shape(
            "rgba8",
            format!("planes have shape {:?}, expected [4, H, W]", planes.shape),
        ));
    };
    let count = h * w;
    let byte = |v: f32| (0.5 + 255.0 * (v * scale + bias).clamp(0.0, 1.0)).floor() as u32;
    Ok((0..count)
        .map(|i| {
            (0..4).fold(0u32, |px, c| {
                px | byte(planes.data[c * count + i]) << (8 * c)
            })
        })
        .collect())
}
