//! softmax_backward's cases: dX from the saved probabilities and dP.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("softmax_backward");
    let (rows, cols) = z.rows;
    let rc = (rows * cols) as f64;
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        let xa = Array::new(&[rows, cols], inputs.data(rows * cols, DType::F32))?;
        let mut pa = cpu::softmax(&xa, false, 1.0)?;
        if dtype == DType::F16 {
            pa.data = round_to_f16(&pa.data);
        }
        let p = Tensor::from_slice(gpu, &[rows, cols], &pa.data, dtype)?;
        let (dp, dpa) = inputs.pair(gpu, &[rows, cols], dtype)?;
        let want = cpu::softmax_backward(&pa, &dpa, 0.5)?.data;
        let (o, dx) = out(gpu, &[rows, cols], dtype, want)?;
        cases.push(Case {
            family: "softmax_backward",
            fixed: vec![dtype_is(dtype)],
            name: format!("softmax_backward {rows}x{cols} {}", dtype.wgsl()),
            tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [4.3e-7, 2.1e-3]),
            flops: 4.0 * rc,
            bytes: 3.0 * rc * dtype.size() as f64,
            outputs: vec![o],
            launch: Box::new(move |v| {
                Ok(single(crate::families::softmax_backward::launch(
                    &p, &dp, &dx, 0.5, v,
                )?))
            }),
        });
    }
    Ok(cases)
}
