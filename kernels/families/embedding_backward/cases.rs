//! embedding_backward's cases: each token's gradient row added into the table's gradient.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-6;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("embedding_backward");
    let ((vocab, width), rows) = (z.vocab, z.rows.0);
    // In a proof also a list long enough to be cut into runs (not a multiple of them).
    let lists: &[usize] = if z.full { &[rows, 300] } else { &[rows] };
    let mut cases = Vec::new();
    for &rows in lists {
        let (dy, dya) = inputs.pair(gpu, &[rows, width], DType::F32)?;
        let tokens = inputs.ids(rows, vocab);
        let t = Tensor::from_u32(gpu, &[rows], &tokens)?;
        let want = cpu::embedding_backward(&dya, &tokens, vocab)?.data;
        let (o, d) = out(gpu, &[vocab, width], DType::F32, want)?;
        cases.push(Case {
            family: "embedding_backward",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("embedding_backward {rows} into {vocab}x{width} f32"),
            tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [6e-7, 3e-3]),
            flops: (rows * width) as f64,
            bytes: ((rows + vocab) * width) as f64 * 4.0,
            outputs: vec![o],
            launch: Box::new(move |v| {
                Ok(single(crate::families::embedding_backward::launch(
                    &dy, &t, &d, v,
                )?))
            }),
        });
    }
    Ok(cases)
}
