//! `kiln bench mlp`: a transformer's feed-forward block, gelu(x · W1 + b1) · W2 + b2, on the GPU
//! as the products run it (each product as the ops plan it, K cut where the rule cuts it) and as
//! `mlp`'s slices with their sum (the selector's variant, or every offered one), against the plain
//! CPU path. Each form runs once and is checked against the CPU reference, then timed; a form off
//! the reference fails the command after the report.

use clap::Args;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::json;

use kiln::bench::{self, Timing};
use kiln::cpu::{self, Array};
use kiln::ops::matmul::{Epilogue, Layout};
use kiln::{DType, Dispatch, Error, Gpu, GpuOptions, Result, Tensor, ops};

#[derive(Args)]
pub struct MlpArgs {
    /// Rows of x (tokens).
    #[arg(long)]
    m: usize,
    /// x's width, W1's rows, W2's columns when --n is not given.
    #[arg(long)]
    d: usize,
    /// Hidden units: W1's columns, W2's rows.
    #[arg(long)]
    hidden: usize,
    /// W2's columns (default: d).
    #[arg(long)]
    n: Option<usize>,
    /// Also time every offered mlp variant.
    #[arg(long)]
    sweep: bool,
    #[command(flatten)]
    run: crate::RunArgs,
}

/// One form's launches, timed after a checked run: (label, launches' families, timing, error).
struct Timed {
    label: String,
    kernels: Vec<String>,
    timing: Timing,
    rel_l2: f64,
}

async fn time(
    gpu: &Gpu,
    label: String,
    launches: &[Dispatch],
    y: &Tensor,
    want: &[f32],
    run: &crate::RunArgs,
) -> Result<Timed> {
    y.write(&vec![f32::NAN; y.numel()])?;
    let all: Vec<&Dispatch> = launches.iter().collect();
    gpu.submit(&all)?;
    let rel_l2 = cpu::rel_l2(&y.read().await?, want);
    let timing = bench::time_dispatches(gpu, &all, run.warmup, run.repeats).await?;
    let kernels = launches.iter().map(|d| d.label().to_string()).collect();
    Ok(Timed {
        label,
        kernels,
        timing,
        rel_l2,
    })
}

pub async fn bench_mlp(options: &GpuOptions, args: MlpArgs) -> Result<()> {
    let (m, d, h) = (args.m, args.d, args.hidden);
    let n = args.n.unwrap_or(d);
    let gpu = Gpu::new(options).await?;
    let mut rng = StdRng::seed_from_u64(args.run.seed);
    let mut pair = |shape: &[usize], scale: f32| -> Result<(Tensor, Array)> {
        let data: Vec<f32> = (0..shape.iter().product())
            .map(|_| rng.random_range(-scale..scale))
            .collect();
        let t = Tensor::from_slice(&gpu, shape, &data, DType::F32)?;
        Ok((t, Array::new(shape, data)?))
    };
    // Weights at 1/√fan-in: pre-activations of order one, as a trained block's are.
    let (x, xa) = pair(&[m, d], 1.0)?;
    let (w1, w1a) = pair(&[d, h], 1.0 / (d as f32).sqrt())?;
    let (b1, b1a) = pair(&[h], 0.1)?;
    let (w2, w2a) = pair(&[h, n], 1.0 / (h as f32).sqrt())?;
    let (b2, b2a) = pair(&[n], 0.1)?;

    let mut want = Vec::new();
    let cpu_t = bench::time_cpu(0, args.run.repeats, args.run.cpu_budget, || {
        want = cpu::mlp(&xa, &w1a, &b1a, &w2a, &b2a)
            .map(|a| a.data)
            .unwrap_or_default();
    })?;
    if want.is_empty() {
        return Err(Error::InvalidArgument {
            op: "bench",
            detail: "the CPU path failed".into(),
        });
    }

    let y = Tensor::uninit(&gpu, &[m, n], DType::F32)?;
    let mut runs = Vec::new();
    // The two products as the ops run them.
    let hidden = Tensor::uninit(&gpu, &[m, h], DType::F32)?;
    let expand = ops::matmul::launch_split(
        &x,
        &w1,
        &hidden,
        Layout::default(),
        Some((&b1, Epilogue::BiasGelu)),
        None,
    )?;
    let back = ops::matmul::launch_split(
        &hidden,
        &w2,
        &y,
        Layout::default(),
        Some((&b2, Epilogue::Bias)),
        None,
    )?;
    let products: Vec<Dispatch> = expand
        .dispatches
        .into_iter()
        .chain(back.dispatches)
        .collect();
    bench::warm_up_dispatches(&gpu, &products.iter().collect::<Vec<_>>(), 300.0).await?;
    runs.push(time(&gpu, "products".into(), &products, &y, &want, &args.run).await?);

    // The slices and their sum: the selector's variant, then every offered one.
    let mut names = vec![None];
    if args.sweep {
        for v in gpu.registry().supported("mlp", gpu.profile())? {
            names.push(Some(v.name.clone()));
        }
    }
    for name in names {
        let (partials, variant) = ops::mlp::workspace(&x, &w1, &b1, &w2, name.as_deref())?;
        let (slices, choice) = ops::mlp::launch(&x, &w1, &b1, &w2, &partials, Some(&variant))?;
        let (sum, _) =
            ops::matmul_reduce::launch(&partials, &y, n, Some((&b2, Epilogue::Bias)), None)?;
        let label = format!(
            "mlp/{}{} in {} slices",
            choice.variant.name,
            if name.is_none() { " (selector)" } else { "" },
            partials.shape()[0]
        );
        runs.push(time(&gpu, label, &[slices, sum], &y, &want, &args.run).await?);
    }

    let tol = 1e-5;
    let base = runs[0].timing.median_ms;
    let rows: Vec<_> = runs
        .iter()
        .map(|r| {
            json!({"form": r.label, "kernels": r.kernels, "median_ms": r.timing.median_ms,
                   "min_ms": r.timing.min_ms, "clock": r.timing.clock, "over_products": r.timing.median_ms / base,
                   "rel_l2_error": r.rel_l2, "wrong": r.rel_l2.is_nan() || r.rel_l2 > tol})
        })
        .collect();
    let line = json!({
        "what": "mlp", "adapter": gpu.profile().name, "m": m, "d": d, "hidden": h, "n": n,
        "flops": 2.0 * (m * h * (d + n)) as f64, "cpu_ms": cpu_t.median_ms, "tolerance": tol,
        "runs": rows,
    });
    if args.run.json {
        out!("{line}");
    } else {
        out!("mlp {m}x{d} -> {h} -> {n} (CPU {:.3} ms):", cpu_t.median_ms);
        for r in &runs {
            out!(
                "  {:<48} {:.4} ms ({:.2}x the products) error {:.1e}  {}",
                r.label,
                r.timing.median_ms,
                r.timing.median_ms / base,
                r.rel_l2,
                r.kernels.join(" ")
            );
        }
    }
    let wrong: Vec<String> = runs
        .iter()
        .filter(|r| r.rel_l2.is_nan() || r.rel_l2 > tol)
        .map(|r| format!("{} ({:.2e})", r.label, r.rel_l2))
        .collect();
    if !wrong.is_empty() {
        return Err(Error::InvalidArgument {
            op: "bench",
            detail: format!(
                "off the CPU path (tolerance {tol:.0e}): {}",
                wrong.join(", ")
            ),
        });
    }
    Ok(())
}
