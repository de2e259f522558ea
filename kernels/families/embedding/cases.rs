//! embedding's cases: rows of a table gathered by token id (a byte-sized vocabulary in a
//! campaign, as the training demo's).
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-7;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("embedding");
    let ((vocab, width), rows) = (z.vocab, z.rows.0);
    let (table, ta) = inputs.pair(gpu, &[vocab, width], DType::F32)?;
    let tokens = inputs.ids(rows, vocab);
    let t = Tensor::from_u32(gpu, &[rows], &tokens)?;
    let want = cpu::embedding(&ta, &tokens)?.data;
    let (o, y) = out(gpu, &[rows, width], DType::F32, want)?;
    Ok(vec![Case {
        family: "embedding",
        fixed: vec![dtype_is(DType::F32)],
        name: format!("embedding {rows} of {vocab}x{width} f32"),
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [0.0, 0.0]),
        flops: 0.0,
        bytes: 2.0 * (rows * width) as f64 * 4.0,
        outputs: vec![o],
        launch: Box::new(move |v| {
            Ok(single(crate::families::embedding::launch(
                &table, &t, &y, v,
            )?))
        }),
    }])
}
