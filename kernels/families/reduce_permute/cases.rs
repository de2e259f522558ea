//! reduce_permute's cases: a split product's slices summed (with and without the bias) and
//! split into heads as the GPU path splits Q, K and V, both results checked.
use crate::cases::prelude::*;
use crate::families::matmul::Epilogue;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-6;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("reduce_permute");
    let [a, _, c] = z.swap;
    let splits = z.reduce[0];
    // [B, T, 3, H, d] → [3, B, H, T, d]: Q, K and V of a product cut along K, into heads.
    let (shape, order) = ([2, a, 3, 3, c], [2, 0, 3, 1]);
    let count: usize = shape.iter().product();
    let n = 3 * 3 * c;
    let f = DType::F32;
    let (partials, pa) = inputs.pair(gpu, &[splits, count], f)?;
    let pa = Array::new(&[splits, 2, a, 3, 3, c], pa.data)?;
    let (bias, ba) = inputs.pair(gpu, &[n], f)?;
    let mut cases = Vec::new();
    for epilogue in [Epilogue::None, Epilogue::Bias] {
        let with_bias = epilogue == Epilogue::Bias;
        let (c_want, y_want) = cpu::reduce_permute(&pa, with_bias.then_some(&ba), order)?;
        let (o_c, c_out) = out(gpu, &shape, f, c_want.data)?;
        let (o_y, y_out) = out(gpu, &y_want.shape, f, y_want.data)?;
        let (partials, bias) = (partials.clone(), bias.clone());
        cases.push(Case {
            family: "reduce_permute",
            fixed: vec![
                dtype_is(f),
                ("epilogue", Param::Str(epilogue.name().into())),
            ],
            name: format!(
                "reduce_permute {splits}x{shape:?} to {order:?} {} f32",
                epilogue.name()
            ),
            tolerance: tolerance(z, f, CAMPAIGN_TOLERANCE, [0.0, 0.0]),
            flops: (splits * count) as f64,
            bytes: ((splits + 2) * count) as f64 * 4.0,
            outputs: vec![o_c.named("c"), o_y.named("y")],
            launch: Box::new(move |v| {
                let e = with_bias.then_some(&bias);
                Ok(single(crate::families::reduce_permute::launch(
                    &partials, e, &c_out, order, &y_out, v,
                )?))
            }),
        });
    }
    Ok(cases)
}
