//! cross_entropy's cases: the loss of each row's target and dlogits.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("cross_entropy");
    let (rows, cols) = z.rows;
    let rc = (rows * cols) as f64;
    let (logits, la) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
    let targets = inputs.ids(rows, cols);
    let t = Tensor::from_u32(gpu, &[rows], &targets)?;
    let scale = 1.0 / rows as f32;
    let (want_loss, want_d) = cpu::cross_entropy(&la, &targets, scale)?;
    let (o_loss, loss) = out(gpu, &[rows], DType::F32, want_loss.data)?;
    let (o_d, d) = out(gpu, &[rows, cols], DType::F32, want_d.data)?;
    Ok(vec![Case {
        family: "cross_entropy",
        fixed: vec![dtype_is(DType::F32)],
        name: format!("cross_entropy {rows}x{cols} f32"),
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [1.1e-6, 3e-3]),
        flops: 5.0 * rc,
        bytes: 2.0 * rc * 4.0,
        outputs: vec![
            o_loss.named("loss"),
            o_d.named("dlogits")
                .within(proof_bound(z, DType::F32, [3.7e-7, 3e-3])),
        ],
        launch: Box::new(move |v| {
            Ok(single(crate::families::cross_entropy::launch(
                &logits, &t, &loss, &d, scale, v,
            )?))
        }),
    }])
}
