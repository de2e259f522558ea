//! The flash variants a call can run: the names `--variant` gives, checked against what the
//! adapter offers, and the sweep that checks and times each of them.

use serde_json::{Value, json};

use kiln::bench;
use kiln::contract::Param;
use kiln::ops::attention::BackwardVariants;
use kiln::shape::AttentionDims;
use kiln::{DType, Dispatch, Error, Gpu, Result};

use super::args::AttentionArgs;
use super::paths::{FlashRun, Inputs, Outputs, error};

/// The flash families a call runs: the forward, and with `--backward` the two backward passes
/// or the one-pass backward.
fn families(backward: bool) -> Vec<&'static str> {
    let mut families = vec!["flash_fwd"];
    if backward {
        families.extend(["flash_bwd_dkdv", "flash_bwd_dq", "flash_bwd_fused"]);
    }
    families
}

/// The variants of `family` this adapter offers for the call's dtype, head dim and mask.
fn offered(
    gpu: &Gpu,
    family: &str,
    args: &AttentionArgs,
    dims: &AttentionDims,
    dtype: DType,
) -> Result<Vec<kiln::Variant>> {
    Ok(gpu
        .registry()
        .supported(family, gpu.profile())?
        .filter(|v| {
            v.takes(&[
                ("dtype", Param::Str(dtype.wgsl().into())),
                ("head_dim", Param::Int(dims.head_dim as i64)),
                ("causal", Param::Bool(args.causal)),
            ])
        })
        .cloned()
        .collect())
}

/// The `--variant` names with their families, in the order given; a name no family of the
/// call offers is an error.
pub(super) fn named_variants(
    gpu: &Gpu,
    args: &AttentionArgs,
    dims: &AttentionDims,
    dtype: DType,
) -> Result<Vec<(&'static str, String)>> {
    let mut offers = Vec::new();
    for family in families(args.backward) {
        offers.push((family, offered(gpu, family, args, dims, dtype)?));
    }
    args.variant
        .iter()
        .map(|name| {
            offers
                .iter()
                .find(|(_, vs)| vs.iter().any(|v| &v.name == name))
                .map(|(family, _)| (*family, name.clone()))
                .ok_or_else(|| Error::InvalidArgument {
                    op: "bench",
                    detail: format!(
                        "--variant {name}: not a variant of {} this adapter offers for {} d{} causal={}{}",
                        families(args.backward).join(", "),
                        dtype.wgsl(),
                        dims.head_dim,
                        args.causal,
                        if args.backward { "" } else { " (backward kernels need --backward)" }
                    ),
                })
        })
        .collect()
}

/// What a sweep row is checked against.
pub(super) struct Tolerance<'a> {
    pub(super) dtype: DType,
    pub(super) scale: f32,
    pub(super) slices: usize,
    pub(super) want: &'a Outputs,
    pub(super) tol: f64,
}

/// Every offered variant of each flash family for this call (with `--sweep`; else the
/// variants named by `--variant` and, beside them, the selector's choice for their families),
/// checked, then timed: the forward kernel alone, or one backward kernel with the selector's
/// choice for the others.
pub(super) async fn sweep_variants(
    gpu: &Gpu,
    x: &Inputs,
    dims: &AttentionDims,
    args: &AttentionArgs,
    named: &[(&'static str, String)],
    selected: &[Value],
    check: Tolerance<'_>,
) -> Result<Vec<Value>> {
    let mut rows = Vec::new();
    for family in families(args.backward) {
        let is_named = |name: &str| named.iter().any(|(f, n)| *f == family && n == name);
        let is_selected = |name: &str| {
            selected
                .iter()
                .any(|c| c["family"] == family && c["variant"] == name)
        };
        if !args.sweep && !named.iter().any(|(f, _)| *f == family) {
            continue;
        }
        let variants: Vec<kiln::Variant> = offered(gpu, family, args, dims, check.dtype)?
            .into_iter()
            .filter(|v| args.sweep || is_named(&v.name) || is_selected(&v.name))
            .collect();
        for v in variants {
            let (fwd, bwd) = match family {
                "flash_fwd" => (Some(v.name.as_str()), BackwardVariants::default()),
                "flash_bwd_dkdv" => (
                    None,
                    BackwardVariants {
                        dkdv: Some(&v.name),
                        dq: None,
                        ..Default::default()
                    },
                ),
                "flash_bwd_fused" => (
                    None,
                    BackwardVariants {
                        fused: Some(&v.name),
                        ..Default::default()
                    },
                ),
                _ => (
                    None,
                    BackwardVariants {
                        dkdv: None,
                        dq: Some(&v.name),
                        ..Default::default()
                    },
                ),
            };
            let chosen = is_selected(&v.name);
            let run = FlashRun::prepare(x, args.causal, check.scale, args.backward, fwd, bwd)?;
            gpu.submit(&run.refs())?;
            let err = error(&run.outputs(check.slices, dims).await?, check.want);
            if err.is_nan() || err > check.tol {
                rows.push(
                    json!({"family": family, "variant": v.name, "rel_l2_error": err,
                                 "selected": chosen, "wrong": true}),
                );
                continue;
            }
            // Time just this family's kernels: the forward alone, one backward pass, or the
            // one-pass backward with the zeroing of dQ it needs (after the forward and D).
            let timed: Vec<&Dispatch> = match family {
                "flash_fwd" => vec![&run.dispatches[0]],
                "flash_bwd_dkdv" => vec![&run.dispatches[2]],
                "flash_bwd_fused" => run.dispatches[2..].iter().collect(),
                _ => vec![&run.dispatches[3]],
            };
            let t = bench::time_dispatches(gpu, &timed, args.run.warmup, args.run.repeats).await?;
            rows.push(
                json!({"family": family, "variant": v.name, "rel_l2_error": err,
                       "selected": chosen, "median_ms": t.median_ms, "clock": t.clock}),
            );
        }
    }
    Ok(rows)
}
