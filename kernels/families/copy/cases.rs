//! copy's cases: a buffer copied, the memory-bandwidth ceiling.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-7;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("copy");
    let n = z.copy;
    let (x, xa) = inputs.pair(gpu, &[n], DType::F32)?;
    let (o, y) = out(gpu, &[n], DType::F32, xa.data.clone())?;
    Ok(vec![Case {
        family: "copy",
        fixed: vec![dtype_is(DType::F32)],
        name: format!("copy {n} f32"),
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [0.0, 0.0]),
        flops: 0.0,
        bytes: 2.0 * n as f64 * 4.0,
        outputs: vec![o],
        launch: Box::new(move |v| Ok(single(crate::families::copy::launch(&x, &y, v)?))),
    }])
}
