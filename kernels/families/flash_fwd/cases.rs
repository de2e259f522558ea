//! flash_fwd's cases: O and the LSE of attention, per dtype, mask and head dim.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-4;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for p in Attention::problems(gpu, z, "attention", false)? {
        let (o, o_t) = out(gpu, &p.shape, p.dtype, p.fwd.out.data.clone())?;
        let (lse, lse_t) = out(gpu, &p.rows(), DType::F32, p.fwd.lse.clone())?;
        let (q, k, v) = (p.q.0.clone(), p.k.0.clone(), p.v.0.clone());
        let (causal, scale) = (p.causal, p.scale);
        cases.push(Case {
            family: "flash_fwd",
            fixed: p.fixed(),
            name: format!("flash_fwd {}", p.suffix),
            tolerance: tolerance(z, p.dtype, CAMPAIGN_TOLERANCE, 2e-6),
            flops: p.flops,
            bytes: 4.0 * p.tensor_bytes,
            outputs: vec![o, lse],
            plan: Box::new(move |name| {
                Ok(single(super::plan_forward(
                    &q, &k, &v, &o_t, &lse_t, causal, scale, name,
                )?))
            }),
        });
        // O with its heads merged into rows ([B, N, H, D]), on half the problems (f32 causal,
        // f16 not): every variant of a dtype and head size writes both layouts here.
        if p.causal == (p.dtype == DType::F32) {
            cases.push(merged(gpu, z, &p)?);
        }
    }
    Ok(cases)
}

fn merged(gpu: &Gpu, z: &Sizes, p: &Attention) -> Result<Case> {
    let [b, heads, n, d] = p.shape;
    let rows: Vec<f32> = (0..b * n * heads)
        .flat_map(|r| {
            let (bt, h) = (r / heads, r % heads);
            let (bi, t) = (bt / n, bt % n);
            let at = ((bi * heads + h) * n + t) * d;
            p.fwd.out.data[at..at + d].to_vec()
        })
        .collect();
    let (y, y_t) = out(gpu, &[b, n, heads, d], p.dtype, rows)?;
    let (lse, lse_t) = out(gpu, &p.rows(), DType::F32, p.fwd.lse.clone())?;
    let (q, k, v) = (p.q.0.clone(), p.k.0.clone(), p.v.0.clone());
    let (causal, scale) = (p.causal, p.scale);
    Ok(Case {
        family: "flash_fwd",
        fixed: p.fixed(),
        // The dtype last, as every case name ends (the fleet reads it there).
        name: format!("flash_fwd heads merged {}", p.suffix),
        tolerance: tolerance(z, p.dtype, CAMPAIGN_TOLERANCE, 2e-6),
        flops: p.flops,
        bytes: 4.0 * p.tensor_bytes,
        outputs: vec![y, lse],
        plan: Box::new(move |name| {
            Ok(single(super::plan_forward_merged(
                &q, &k, &v, &y_t, &lse_t, heads, causal, scale, name,
            )?))
        }),
    })
}
