//! `kiln bench attention`: the flash kernels, the naive GPU path and the CPU path on one
//! shape, each checked against the CPU reference before its time counts. This file runs the
//! measurement and writes its report; the flags are in `args`, the paths in `paths`, the named
//! and swept variants in `variants`, the table in `table`.

mod args;
mod paths;
mod table;
mod variants;

use serde_json::json;

use kiln::bench::{self, Timing};
use kiln::ops::attention::{BackwardVariants, traffic};
use kiln::shape::AttentionDims;
use kiln::{DType, Error, Gpu, GpuOptions, Result};

pub use args::AttentionArgs;
use paths::{FlashRun, NaiveRun, Outputs, cpu_path, error, inputs};
use table::print_table;
use variants::{Tolerance, named_variants, sweep_variants};

pub async fn bench_attention(options: &GpuOptions, args: AttentionArgs) -> Result<()> {
    let dtype = DType::parse(&args.dtype)?;
    let shape = [args.b, args.h, args.n, args.d];
    let hkv = if args.kv_heads == 0 {
        args.h
    } else {
        args.kv_heads
    };
    let kv_shape = [args.b, hkv, args.n, args.d];
    let dims = AttentionDims::grouped("bench", &shape, &kv_shape, &kv_shape)?;
    // Whole groups of query heads, so that the CPU path's K/V slices serve them all.
    let slices = match args.cpu_slices {
        0 => dims.batch_heads,
        s => s.min(dims.batch_heads).next_multiple_of(dims.group),
    };
    let gpu = Gpu::new(options).await?;
    // Names checked before the CPU path's seconds are spent.
    let named = named_variants(&gpu, &args, &dims, dtype)?;
    let scale = 1.0 / (args.d as f32).sqrt();
    let inputs = inputs(
        &gpu,
        [&shape, &kv_shape],
        slices,
        dims.group,
        dtype,
        args.run.seed,
    )?;
    let (tol_f, tol_b) = match dtype {
        DType::F16 => (1e-2, 5e-2),
        _ => (1e-4, 1e-3),
    };
    let tol = if args.backward { tol_b } else { tol_f };

    // The CPU path first: its result is the reference every GPU path is checked against.
    let mut want: Outputs = Vec::new();
    let [q, k, v, d_o] = &inputs.cpu;
    let cpu_t = bench::time_cpu(0, args.run.repeats, args.run.cpu_budget, || {
        want = cpu_path(q, k, v, d_o, args.causal, scale, args.backward).unwrap_or_default();
    })?;
    if want.is_empty() {
        return Err(Error::InvalidArgument {
            op: "bench",
            detail: "the CPU path failed".into(),
        });
    }
    let cpu_scaled = dims.batch_heads as f64 / slices as f64;

    let flash = FlashRun::prepare(
        &inputs,
        args.causal,
        scale,
        args.backward,
        None,
        BackwardVariants::default(),
    )?;
    bench::warm_up_dispatches(&gpu, &flash.refs(), 300.0).await?;
    let flash_t =
        bench::time_dispatches(&gpu, &flash.refs(), args.run.warmup, args.run.repeats).await?;
    let flash_err = error(&flash.outputs(slices, &dims).await?, &want);

    // The whole pass with the named variants forced, timed as the selector's.
    let named_run = if named.is_empty() {
        None
    } else {
        let first = |family: &str| {
            named
                .iter()
                .find(|(f, _)| *f == family)
                .map(|(_, n)| n.as_str())
        };
        let bwd = BackwardVariants {
            dkdv: first("flash_bwd_dkdv"),
            dq: first("flash_bwd_dq"),
            fused: first("flash_bwd_fused"),
            ..Default::default()
        };
        let run = FlashRun::prepare(
            &inputs,
            args.causal,
            scale,
            args.backward,
            first("flash_fwd"),
            bwd,
        )?;
        let t =
            bench::time_dispatches(&gpu, &run.refs(), args.run.warmup, args.run.repeats).await?;
        let err = error(&run.outputs(slices, &dims).await?, &want);
        Some((t, err, run.choices))
    };

    let naive = if args.no_naive || dims.group > 1 {
        None
    } else {
        let run = NaiveRun::prepare(&inputs, args.causal, scale, args.backward)?;
        let t =
            bench::time_dispatches(&gpu, &run.refs(), args.run.warmup, args.run.repeats).await?;
        Some((t, error(&run.outputs(slices, &dims).await?, &want)))
    };

    let mut sweep = Vec::new();
    if args.sweep || !args.variant.is_empty() {
        sweep = sweep_variants(
            &gpu,
            &inputs,
            &dims,
            &args,
            &named,
            &flash.choices,
            Tolerance {
                dtype,
                scale,
                slices,
                want: &want,
                tol,
            },
        )
        .await?;
    }

    let flops = dims.flops(args.causal, args.backward);
    let fused = flash
        .choices
        .iter()
        .any(|c| c["family"] == "flash_bwd_fused");
    let flash_path = if fused {
        traffic::Path::FlashFused
    } else {
        traffic::Path::Flash
    };
    let flash_bytes = traffic::traffic(&dims, dtype, flash_path, args.backward);
    let naive_bytes = traffic::traffic(&dims, dtype, traffic::Path::Naive, args.backward);
    let mb = |k: &[traffic::KernelBytes]| traffic::total(k) as f64 / 1e6;
    let timing = |t: &Timing, scaled: f64| {
        let median = t.median_ms * scaled;
        json!({"clock": t.clock, "median_ms": median, "min_ms": t.min_ms * scaled,
               "max_ms": t.max_ms * scaled, "runs": t.samples_ms.len(), "warmup": t.warmup,
               "tflops": flops / median / 1e9})
    };
    let mut paths = vec![json!({
        "path": "flash", "timing": timing(&flash_t, 1.0), "rel_l2_error": flash_err,
        "variants": flash.choices, "mb_moved": mb(&flash_bytes), "kernels": flash_bytes,
    })];
    if let Some((t, err, choices)) = &named_run {
        paths.push(json!({
            "path": "named", "timing": timing(t, 1.0), "rel_l2_error": err, "variants": choices,
        }));
    }
    if let Some((t, err)) = &naive {
        paths.push(json!({
            "path": "naive", "timing": timing(t, 1.0), "rel_l2_error": err,
            "mb_moved": mb(&naive_bytes), "kernels": naive_bytes,
        }));
    }
    paths.push(json!({
        "path": "cpu", "timing": timing(&cpu_t, cpu_scaled),
        "note": format!("plain single-threaded loops (kiln::cpu), {slices} of {} batch × head slices measured, time scaled by {cpu_scaled}", dims.batch_heads),
    }));
    let out = json!({
        "op": "attention", "pass": if args.backward { "forward+backward" } else { "forward" },
        "shape": {"b": args.b, "h": args.h, "hkv": hkv, "n": args.n, "d": args.d}, "causal": args.causal,
        "dtype": args.dtype, "adapter": gpu.profile().name, "backend": gpu.profile().backend,
        "runtime_checks": gpu.runtime_checks(),
        "gflop": flops / 1e9, "score_matrix_mb": traffic::score_matrix_bytes(&dims, dtype) as f64 / 1e6,
        "tolerance": tol, "paths": paths, "sweep": sweep,
    });
    if args.run.json {
        out!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        print_table(&out);
    }
    // A fast wrong kernel does not count: the run fails (after its report) above tolerance.
    let worst = [
        Some(flash_err),
        naive.as_ref().map(|(_, e)| *e),
        named_run.as_ref().map(|(_, e, _)| *e),
    ]
    .into_iter()
    .flatten()
    .fold(0.0, |a: f64, e| {
        if a.is_nan() || e.is_nan() {
            f64::NAN
        } else {
            a.max(e)
        }
    });
    if worst > tol || worst.is_nan() {
        return Err(Error::InvalidArgument {
            op: "bench",
            detail: format!("a GPU path is wrong: relative L2 error {worst:.3e} over {tol:.0e}"),
        });
    }
    Ok(())
}
