//! attention_delta's cases: D = rowsum(dO ∘ O), the first dispatch of the flash backward plan.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-4;
/// The backward passes' campaign tolerance for f32 (flash_bwd_dkdv, flash_bwd_dq and
/// flash_bwd_fused take it as theirs): their sums run over a whole sequence.
pub(crate) const BACKWARD_CAMPAIGN_TOLERANCE: f64 = 3e-4;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    backward_cases(gpu, z, Pass::Delta)
}

/// Which dispatch of the flash backward plan a family's case checks and times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// D = rowsum(dO ∘ O).
    Delta,
    /// dK and dV.
    DkDv,
    /// dQ.
    Dq,
    /// The one-pass backward: dK, dV and dQ.
    Fused,
}

/// The backward families' cases: each runs after a GPU forward by the selector's choice and
/// checks its own outputs. The one-pass kernel takes f32 only.
pub(crate) fn backward_cases(gpu: &Gpu, z: &Sizes, pass: Pass) -> Result<Vec<Case>> {
    use crate::ops::attention::{BackwardVariants, Grads, launch_backward};
    let family = match pass {
        Pass::Delta => "attention_delta",
        Pass::DkDv => "flash_bwd_dkdv",
        Pass::Dq => "flash_bwd_dq",
        Pass::Fused => "flash_bwd_fused",
    };
    let mut cases = Vec::new();
    for p in Attention::problems(gpu, z, "attention", pass != Pass::Delta)? {
        if pass == Pass::Fused && p.dtype != DType::F32 {
            continue;
        }
        if pass == Pass::Delta && p.shape[3] != z.head_dims[0] {
            // D does not depend on the head dim's variants: one head dim is enough.
            continue;
        }
        let (o, lse) = p.gpu_forward()?;
        let g = Grads::like(&p.q.0, &p.k.0, &p.v.0)?;
        // The pre-pass writes a scratch tensor made by each plan: its check reads D + 0, which
        // the plan's dispatch list ends with (any length; the copy kernel moves whole vec4s).
        let delta_out = Tensor::uninit(gpu, &p.rows(), DType::F32)?;
        let zeros = Tensor::full(gpu, &p.rows(), 0.0, DType::F32)?;
        let (outputs, fixed, flops, bytes, tolerance, index) = match pass {
            Pass::Delta => {
                let d = p.shape[3];
                let delta: Vec<f32> = p
                    .fwd
                    .out
                    .data
                    .chunks(d)
                    .zip(p.d_o.1.data.chunks(d))
                    .map(|(o, g)| o.iter().zip(g).map(|(a, b)| a * b).sum())
                    .collect();
                let flops = 2.0 * p.tensor_bytes / p.dtype.size() as f64;
                let t = tolerance(z, p.dtype, CAMPAIGN_TOLERANCE, [3.3e-6, 2.6e-3]);
                (
                    vec![values(&delta_out, &delta)],
                    vec![dtype_is(p.dtype)],
                    flops,
                    2.0 * p.tensor_bytes,
                    t,
                    0,
                )
            }
            Pass::DkDv => {
                let grads = p.grads()?;
                let outputs = vec![
                    values(&g.dk, &grads.dk.data).named("dk"),
                    // dv's own f16 bound: 10× its worst on lavapipe (2.2e-4), under dk's.
                    values(&g.dv, &grads.dv.data)
                        .named("dv")
                        .within(proof_bound(z, p.dtype, [3.3e-6, 2.3e-3])),
                ];
                (
                    outputs,
                    p.fixed(),
                    p.flops * 2.0,
                    6.0 * p.tensor_bytes,
                    tolerance(z, p.dtype, BACKWARD_CAMPAIGN_TOLERANCE, [3.3e-6, 2.6e-3]),
                    1,
                )
            }
            Pass::Dq => {
                let grads = p.grads()?;
                let outputs = vec![values(&g.dq, &grads.dq.data)];
                (
                    outputs,
                    p.fixed(),
                    p.flops * 1.5,
                    5.0 * p.tensor_bytes,
                    tolerance(z, p.dtype, BACKWARD_CAMPAIGN_TOLERANCE, [4.7e-6, 2.6e-3]),
                    2,
                )
            }
            Pass::Fused => {
                let grads = p.grads()?;
                let outputs = vec![
                    values(&g.dq, &grads.dq.data).named("dq"),
                    values(&g.dk, &grads.dk.data).named("dk"),
                    values(&g.dv, &grads.dv.data).named("dv"),
                ];
                (
                    outputs,
                    p.fixed(),
                    p.flops * 2.5,
                    8.0 * p.tensor_bytes,
                    tolerance(z, p.dtype, BACKWARD_CAMPAIGN_TOLERANCE, [3.3e-6, 2.6e-3]),
                    2,
                )
            }
        };
        let (q, k, v, d_o) = (p.q.0.clone(), p.k.0.clone(), p.v.0.clone(), p.d_o.0.clone());
        let (causal, scale) = (p.causal, p.scale);
        cases.push(Case {
            family,
            name: format!("{family} {}", p.suffix),
            fixed,
            tolerance,
            flops,
            bytes,
            outputs,
            launch: Box::new(move |name| {
                let mut named = BackwardVariants::default();
                match pass {
                    Pass::Delta => named.delta = name,
                    Pass::DkDv => named.dkdv = name,
                    Pass::Dq => named.dq = name,
                    Pass::Fused => named.fused = name,
                }
                let plan = launch_backward(&q, &k, &v, &o, &lse, &d_o, &g, causal, scale, named)?;
                let choice = plan.choices[index].clone();
                let mut all = plan.dispatches;
                if pass == Pass::Delta {
                    let (add, _) =
                        crate::families::add::launch(&plan.delta, &zeros, &delta_out, None)?;
                    all.push(add);
                }
                Ok(Launches {
                    all,
                    timed: vec![index],
                    choice,
                })
            }),
        });
    }
    Ok(cases)
}
