//! flash_decode's cases: new query rows against a cache longer than they are, with grouped
//! query heads, per dtype, mask and head dim: the problems of the combine pass's table
//! (`families/flash_decode_combine/cases.rs`), whole.
use crate::cases::prelude::*;

use crate::families::flash_decode_combine::cases::problems;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-4;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for p in problems(gpu, z, "flash_decode")? {
        let (o, o_t) = out(gpu, &p.q.1.shape, p.dtype, p.want.out.data.clone())?;
        let (lse, lse_t) = out(gpu, &p.q.1.shape[..3], DType::F32, p.want.lse.clone())?;
        let (q, k, v) = (p.q.0.clone(), p.k.0.clone(), p.v.0.clone());
        let (len, causal, scale) = (p.dims.len, p.causal, p.scale);
        let length = Tensor::from_u32(gpu, &[1], &[len as u32])?;
        cases.push(Case {
            family: "flash_decode",
            fixed: p.fixed(),
            name: format!("flash_decode {}", p.suffix),
            tolerance: tolerance(z, p.dtype, CAMPAIGN_TOLERANCE, [6.8e-6, 2.2e-3]),
            flops: p.flops,
            bytes: p.kv_bytes,
            outputs: vec![
                o.named("o"),
                lse.named("lse")
                    .within(proof_bound(z, p.dtype, [1.1e-6, 1.1e-6])),
            ],
            launch: Box::new(move |name| {
                let plan =
                    super::launch(&q, &k, &v, &length, len, &o_t, &lse_t, causal, scale, name)?;
                Ok(Launches {
                    all: vec![plan.split, plan.combine],
                    timed: vec![0, 1],
                    choice: plan.choice,
                })
            }),
        });
    }
    Ok(cases)
}
