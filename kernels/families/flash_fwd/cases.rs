//! flash_fwd's cases: O and the LSE of attention, per dtype, mask and head dim.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-4;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for p in Attention::problems(gpu, z, "attention", false)? {
        cases.push(case(gpu, z, &p, false)?);
        // O with its heads merged into rows ([B, N, H, D]), on half the problems (f32 causal,
        // f16 not): every variant of a dtype and head size writes both layouts here.
        if p.causal == (p.dtype == DType::F32) {
            cases.push(case(gpu, z, &p, true)?);
        }
    }
    Ok(cases)
}

/// Problem `p`'s case: O per head, or (`merged`) with its heads merged into rows, [B, N, H, D]
/// as swapping the middle axes of the CPU path's O makes it.
fn case(gpu: &Gpu, z: &Sizes, p: &Attention, merged: bool) -> Result<Case> {
    let heads = p.shape[1];
    let (o, o_t) = match merged {
        false => out(gpu, &p.shape, p.dtype, p.fwd.out.data.clone())?,
        true => {
            let rows = cpu::swap_axes12(&p.fwd.out)?;
            out(gpu, &rows.shape, p.dtype, rows.data)?
        }
    };
    let (lse, lse_t) = out(gpu, &p.rows(), DType::F32, p.fwd.lse.clone())?;
    let (q, k, v) = (p.q.0.clone(), p.k.0.clone(), p.v.0.clone());
    let (causal, scale) = (p.causal, p.scale);
    Ok(Case {
        family: "flash_fwd",
        fixed: p.fixed(),
        // The dtype last, as every case name ends (the fleet reads it there).
        name: match merged {
            false => format!("flash_fwd {}", p.suffix),
            true => format!("flash_fwd heads merged {}", p.suffix),
        },
        tolerance: tolerance(z, p.dtype, CAMPAIGN_TOLERANCE, [3.2e-6, 2.1e-3]),
        flops: p.flops,
        bytes: 4.0 * p.tensor_bytes,
        outputs: vec![
            o.named("o"),
            lse.named("lse")
                .within(proof_bound(z, p.dtype, [8.3e-7, 7.8e-7])),
        ],
        launch: Box::new(move |name| {
            let planned = match merged {
                false => super::launch_forward(&q, &k, &v, &o_t, &lse_t, causal, scale, name),
                true => super::launch_forward_merged(
                    &q, &k, &v, &o_t, &lse_t, heads, causal, scale, name,
                ),
            };
            Ok(single(planned?))
        }),
    })
}
