//! rgba8's cases: four planes scaled, biased and packed into RGBA8 pixels.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 5e-3;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("rgba8");
    let (h, w) = z.pixels;
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        let (planes, pa) = inputs.pair(gpu, &[4, h, w], dtype)?;
        let want = cpu::rgba8(&pa, 100.0, 128.0)?;
        let pixels = Tensor::uninit(gpu, &[h, w], DType::U32)?;
        let px = pixels.clone();
        cases.push(Case {
            family: "rgba8",
            fixed: vec![dtype_is(dtype)],
            name: format!("rgba8 4x{h}x{w} {}", dtype.wgsl()),
            tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [0.0, 0.0]),
            flops: 0.0,
            bytes: (4 * h * w) as f64 * dtype.size() as f64 + (h * w) as f64 * 4.0,
            outputs: vec![Output::words(&pixels, want)],
            launch: Box::new(move |v| {
                Ok(single(crate::families::rgba8::launch(
                    &planes, &px, 100.0, 128.0, v,
                )?))
            }),
        });
    }
    Ok(cases)
}
