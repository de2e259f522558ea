//! mlp's cases: the slices of a feed-forward block whose sizes are not multiples of any tile or
//! chunk (more output columns than the narrowest tile), the hidden units in one slice, in a
//! slice a chunk, and in between.
use crate::cases::prelude::*;
use crate::families::mlp::{Design, launch, per_slice};

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("mlp");
    let f = DType::F32;
    let shapes = if z.full { z.matmul } else { &z.matmul[..1] };
    let mut cases = Vec::new();
    for &(m, d, n) in shapes {
        // H past a whole number of either chunk; N past the 128-column tile.
        let (h, n) = (3 * d + 13, n + 101);
        let (x, xa) = inputs.pair(gpu, &[m, d], f)?;
        let (w1, w1a) = inputs.pair(gpu, &[d, h], f)?;
        let (b1, b1a) = inputs.pair(gpu, &[h], f)?;
        let (w2, w2a) = inputs.pair(gpu, &[h, n], f)?;
        // Each chunk's cuts: a slice a chunk, two, one; a variant whose chunk cuts otherwise
        // refuses the case.
        let mut cuts = Vec::new();
        for hidden in [64, 128] {
            let design = Design {
                rows: 16,
                cols: 128,
                hidden,
            };
            for parts in [h.div_ceil(hidden as usize), 2, 1] {
                if let Some(per) = per_slice(design, h, parts)
                    && !cuts.contains(&(parts, per))
                {
                    cuts.push((parts, per));
                }
            }
        }
        for (parts, per) in cuts {
            let want = cpu::mlp_slices(&xa, &w1a, &b1a, &w2a, per)?.data;
            let (o, partials) = out(gpu, &[parts, m * n], f, want)?;
            let (x, w1, b1, w2) = (x.clone(), w1.clone(), b1.clone(), w2.clone());
            cases.push(Case {
                family: "mlp",
                fixed: vec![dtype_is(f)],
                name: format!("mlp {m}x{d}x{h}x{n} in {parts} slices of {per} f32"),
                tolerance: tolerance(z, f, CAMPAIGN_TOLERANCE, [1.7e-6, 3e-3]),
                flops: 2.0 * (m * h * (d + n)) as f64,
                bytes: ((m * d + d * h + h * n) + parts * m * n) as f64 * 4.0,
                outputs: vec![o],
                launch: Box::new(move |v| {
                    let planned = launch(&x, &w1, &b1, &w2, &partials, v)?;
                    if per_slice(Design::parse(&planned.1.variant)?, h, parts) != Some(per) {
                        return Err(crate::Error::shape(
                            "mlp",
                            format!("this variant's chunks cut {h} units otherwise"),
                        ));
                    }
                    Ok(single(planned))
                }),
            });
        }
    }
    Ok(cases)
}
