//! `kiln bench decode`: flash-decoding — new query rows against a key/value cache with grouped
//! query heads — on the GPU (split and combine, timed together) and on the CPU path, checked
//! against the CPU reference before its time counts, with the bytes of K and V read per second.

use clap::Args;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use kiln::bench::{self, Timing};
use kiln::contract::Param;
use kiln::cpu::{self, Array};
use kiln::ops::flash_decode::{self, DecodeDims};
use kiln::tensor::round_to_f16;
use kiln::{DType, Error, Gpu, GpuOptions, Result, Tensor};

#[derive(Args)]
pub struct DecodeArgs {
    /// Batch.
    #[arg(long, default_value_t = 1)]
    b: usize,
    /// Query heads.
    #[arg(long, default_value_t = 32)]
    hq: usize,
    /// Key/value heads (Hq a multiple of it).
    #[arg(long, default_value_t = 8)]
    hkv: usize,
    /// Keys in the cache.
    #[arg(long, default_value_t = 8192)]
    n: usize,
    /// New query rows per head.
    #[arg(long, default_value_t = 1)]
    nq: usize,
    /// Head dimension.
    #[arg(long, default_value_t = 128)]
    d: usize,
    #[arg(long)]
    causal: bool,
    #[arg(long, default_value = "f16")]
    dtype: String,
    /// Also time every offered split variant for this shape (each checked first).
    #[arg(long)]
    sweep: bool,
    /// Time this split variant instead of the selector's pick.
    #[arg(long)]
    variant: Option<String>,
    #[command(flatten)]
    run: crate::RunArgs,
}

/// Batch 0's data repeated across the batch: every batch's answer is the CPU's for batch 0, so
/// the whole output is checked while the CPU path runs one batch (its time scaled by B).
fn repeated(
    gpu: &Gpu,
    rng: &mut StdRng,
    batch: usize,
    per: [usize; 3],
    dtype: DType,
) -> Result<(Tensor, Array)> {
    let n: usize = per.iter().product();
    let mut one: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    if dtype == DType::F16 {
        one = round_to_f16(&one);
    }
    let all: Vec<f32> = (0..batch).flat_map(|_| one.iter().copied()).collect();
    let t = Tensor::from_slice(gpu, &[batch, per[0], per[1], per[2]], &all, dtype)?;
    Ok((t, Array::new(&[1, per[0], per[1], per[2]], one)?))
}

struct Run {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    len: usize,
    causal: bool,
    scale: f32,
}

impl Run {
    /// The split and combine launches with `named` split variant (or the selector's), timed
    /// together after a checked run: (timing, relative L2 error, the variants chosen).
    async fn time(
        &self,
        gpu: &Gpu,
        named: Option<&str>,
        want: &[f32],
        run: &crate::RunArgs,
    ) -> Result<(Timing, f64, Value)> {
        let o = Tensor::full(gpu, self.q.shape(), f32::NAN, self.q.dtype())?;
        let lse = Tensor::uninit(gpu, &self.q.shape()[..3], DType::F32)?;
        let length = Tensor::from_u32(gpu, &[1], &[self.len as u32])?;
        let plan = flash_decode::launch(
            &self.q,
            &self.k,
            &self.v,
            &length,
            self.len,
            &o,
            &lse,
            self.causal,
            self.scale,
            named,
        )?;
        let all = [&plan.split, &plan.combine];
        gpu.submit(&all)?;
        let got = o.read().await?;
        let err = cpu::rel_l2(&got, want);
        let t = bench::time_dispatches(gpu, &all, run.warmup, run.repeats).await?;
        let variants = json!({"split": plan.choice.variant.name, "split_reason": plan.choice.reason.to_string(),
                              "combine": plan.combine_choice.variant.name});
        Ok((t, err, variants))
    }
}

pub async fn bench_decode(options: &GpuOptions, args: DecodeArgs) -> Result<()> {
    let dtype = DType::parse(&args.dtype)?;
    let dims = DecodeDims::new(
        &[args.b, args.hq, args.nq, args.d],
        &[args.b, args.hkv, args.n, args.d],
        &[args.b, args.hkv, args.n, args.d],
        args.n,
    )?;
    let gpu = Gpu::new(options).await?;
    let mut rng = StdRng::seed_from_u64(args.run.seed);
    let (q, q1) = repeated(&gpu, &mut rng, args.b, [args.hq, args.nq, args.d], dtype)?;
    let (k, k1) = repeated(&gpu, &mut rng, args.b, [args.hkv, args.n, args.d], dtype)?;
    let (v, v1) = repeated(&gpu, &mut rng, args.b, [args.hkv, args.n, args.d], dtype)?;
    let scale = 1.0 / (args.d as f32).sqrt();

    // The CPU path first, on batch 0: its result is the reference.
    let mut one = Vec::new();
    let cpu_t = bench::time_cpu(0, args.run.repeats, args.run.cpu_budget, || {
        one = cpu::decode_attention(&q1, &k1, &v1, args.n, args.causal, scale)
            .map(|f| f.out.data)
            .unwrap_or_default();
    })?;
    if one.is_empty() {
        return Err(Error::InvalidArgument {
            op: "bench",
            detail: "the CPU path failed".into(),
        });
    }
    let want: Vec<f32> = (0..args.b).flat_map(|_| one.iter().copied()).collect();
    // About 10× the worst measured: 2e-4 in f16 (the H100), f32 as the products' 1.2e-7.
    let tol = if dtype == DType::F16 { 2e-3 } else { 1e-6 };

    let run = Run {
        q,
        k,
        v,
        len: args.n,
        causal: args.causal,
        scale,
    };
    let (t, err, variants) = run
        .time(&gpu, args.variant.as_deref(), &want, &args.run)
        .await?;
    let kv_bytes = (2 * args.b * args.hkv * args.n * args.d) as f64 * dtype.size() as f64;
    let cpu_ms = cpu_t.median_ms * args.b as f64;
    let mut sweep = Vec::new();
    if args.sweep {
        let offered: Vec<String> = gpu
            .registry()
            .supported("flash_decode", gpu.profile())?
            .filter(|v| {
                v.takes(&[
                    ("dtype", Param::Str(dtype.wgsl().into())),
                    ("head_dim", Param::Int(args.d as i64)),
                ])
            })
            .map(|v| v.name.clone())
            .collect();
        for name in offered {
            let (t, err, _) = run.time(&gpu, Some(&name), &want, &args.run).await?;
            sweep.push(json!({"variant": name, "median_ms": t.median_ms, "gbps": kv_bytes / t.median_ms / 1e6,
                              "rel_l2_error": err, "wrong": err.is_nan() || err > tol}));
        }
    }
    let line = json!({
        "what": "decode attention", "adapter": gpu.profile().name, "dtype": dtype.wgsl(),
        "b": args.b, "hq": args.hq, "hkv": args.hkv, "d": args.d, "n": args.n, "nq": args.nq,
        "causal": args.causal, "rows_per_kv_head": dims.group() * dims.q_len,
        "clock": t.clock, "median_ms": t.median_ms, "min_ms": t.min_ms, "max_ms": t.max_ms,
        "runs": t.samples_ms.len(), "kv_bytes": kv_bytes, "gbps": kv_bytes / t.median_ms / 1e6,
        "rel_l2_error": err, "tolerance": tol, "variants": variants,
        "cpu_ms": cpu_ms, "cpu_runs": cpu_t.samples_ms.len(), "gpu_over_cpu": cpu_ms / t.median_ms,
        "sweep": sweep,
    });
    if args.run.json {
        out!("{line}");
    } else {
        out!(
            "decode {} B{} Hq{}/{} Nq{} N{} D{}{}: GPU {:.4} ms ({:.0} GB/s of K+V, {}), CPU {:.3} ms ({:.1}x), error {:.1e} (tolerance {:.0e})",
            dtype.wgsl(),
            args.b,
            args.hq,
            args.hkv,
            args.nq,
            args.n,
            args.d,
            if args.causal { " causal" } else { "" },
            t.median_ms,
            kv_bytes / t.median_ms / 1e6,
            variants["split"],
            cpu_ms,
            cpu_ms / t.median_ms,
            err,
            tol
        );
        for row in &sweep {
            out!(
                "  {} {:.4} ms {:.0} GB/s error {:.1e}",
                row["variant"],
                row["median_ms"].as_f64().unwrap_or(0.0),
                row["gbps"].as_f64().unwrap_or(0.0),
                row["rel_l2_error"].as_f64().unwrap_or(0.0)
            );
        }
    }
    if err.is_nan() || err > tol {
        return Err(Error::InvalidArgument {
            op: "bench",
            detail: format!("flash-decoding is off the CPU by {err:.2e} (tolerance {tol:.0e})"),
        });
    }
    Ok(())
}
