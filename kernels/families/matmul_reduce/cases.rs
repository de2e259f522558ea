//! matmul_reduce's cases: the second pass of a split-K product, with each epilogue.
use crate::cases::prelude::*;
use crate::families::matmul::Epilogue;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-6;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("matmul_reduce");
    let [splits, rows, n] = z.reduce;
    let (partials, pa) = inputs.pair(gpu, &[splits, rows * n], DType::F32)?;
    let pa = Array::new(&[splits, rows, n], pa.data)?;
    let (bias, ba) = inputs.pair(gpu, &[n], DType::F32)?;
    let mut cases = Vec::new();
    for epilogue in [Epilogue::None, Epilogue::Bias, Epilogue::BiasGelu] {
        let with_bias = epilogue != Epilogue::None;
        let gelu = epilogue == Epilogue::BiasGelu;
        let want = cpu::matmul_reduce(&pa, with_bias.then_some(&ba), gelu)?.data;
        let (o, c) = out(gpu, &[rows, n], DType::F32, want)?;
        let (partials, bias) = (partials.clone(), bias.clone());
        cases.push(Case {
            family: "matmul_reduce",
            fixed: vec![
                dtype_is(DType::F32),
                ("epilogue", Param::Str(epilogue.name().into())),
            ],
            name: format!("matmul_reduce {splits}x{rows}x{n} {} f32", epilogue.name()),
            tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [8.8e-7, 3e-3]),
            flops: (splits * rows * n) as f64,
            bytes: ((splits + 1) * rows * n) as f64 * 4.0,
            outputs: vec![o],
            launch: Box::new(move |v| {
                let e = with_bias.then_some((&bias, epilogue));
                Ok(single(crate::families::matmul_reduce::launch(
                    &partials, &c, n, e, v,
                )?))
            }),
        });
    }
    Ok(cases)
}
