//! `kiln bench matmul`: one product on the GPU — the selector's choice, named variants, or every
//! variant — against the plain CPU path. Each GPU result is checked against the CPU reference
//! before its time counts; a wrong variant fails the run after the report.

use clap::Args;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use kiln::bench::{self, Timing};
use kiln::contract::Param;
use kiln::cpu::{self, Array};
use kiln::shape::MatmulDims;
use kiln::tensor::round_to_f16;
use kiln::{DType, Error, Gpu, GpuOptions, Result, Tensor, ops};

use super::RunArgs;

#[derive(Args)]
pub struct MatmulArgs {
    #[arg(long)]
    m: usize,
    #[arg(long)]
    n: usize,
    #[arg(long)]
    k: usize,
    #[arg(long, default_value_t = 1)]
    batch: usize,
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// Also run these variants (comma-separated) after the selector's choice.
    #[arg(long, value_delimiter = ',')]
    variant: Vec<String>,
    /// Also run every variant the adapter offers for the dtype.
    #[arg(long)]
    sweep: bool,
    /// B is given transposed, [batch, N, K]: C = A · Bᵀ.
    #[arg(long)]
    bt: bool,
    /// A is given transposed, [batch, K, M]: C = Aᵀ · B (a weight gradient's form).
    #[arg(long)]
    at: bool,
    /// Also run each named or swept variant with K cut into these many slices (comma-separated;
    /// a second launch adds them), as the ops cut a product of few output tiles.
    #[arg(long, value_delimiter = ',')]
    splits: Vec<usize>,
    /// Rows of C the CPU reference computes, evenly spaced and the last one included (0: all).
    /// Its time is scaled to the whole product.
    #[arg(long, default_value_t = 0)]
    cpu_rows: usize,
    #[command(flatten)]
    run: RunArgs,
}

/// One variant's run: its time and its error against the CPU reference.
struct Run {
    variant: String,
    reason: String,
    timing: Timing,
    rel_l2: f64,
}

impl Run {
    /// Over tolerance, or NaN (an output never written).
    fn wrong(&self, tolerance: f64) -> bool {
        self.rel_l2.is_nan() || self.rel_l2 > tolerance
    }
}

pub async fn bench_matmul(options: &GpuOptions, args: MatmulArgs) -> Result<()> {
    let dtype = DType::parse(&args.dtype)?;
    let layout = ops::matmul::Layout {
        a_trans: args.at,
        b_trans: args.bt,
    };
    let a_shape = if args.at {
        [args.batch, args.k, args.m]
    } else {
        [args.batch, args.m, args.k]
    };
    let b_shape = if args.bt {
        [args.batch, args.n, args.k]
    } else {
        [args.batch, args.k, args.n]
    };
    // Shape errors before touching the GPU.
    let dims = MatmulDims::transposed(&a_shape, &b_shape, args.at, args.bt)?;
    if args.splits.contains(&0) {
        return Err(Error::InvalidArgument {
            op: "bench",
            detail: "--splits takes counts of at least 1".into(),
        });
    }
    let gpu = Gpu::new(options).await?;

    // Device tensors first: their limit checks refuse absurd sizes before host memory is taken.
    let a = Tensor::uninit(&gpu, &a_shape, dtype)?;
    let b = Tensor::uninit(&gpu, &b_shape, dtype)?;
    let mut rng = StdRng::seed_from_u64(args.run.seed);
    let mut random =
        |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-1.0..1.0)).collect() };
    let (mut a_data, mut b_data) = (random(a.numel()), random(b.numel()));
    if dtype == DType::F16 {
        // The CPU reference sees the values the GPU sees.
        a_data = round_to_f16(&a_data);
        b_data = round_to_f16(&b_data);
    }
    a.write(&a_data)?;
    b.write(&b_data)?;

    // The CPU reference on the sampled rows of every batch, from A and B as [M, K] and [K, N].
    let mut a_full = Array::new(&a_shape, a_data)?;
    if args.at {
        a_full = cpu::transpose(&a_full)?;
    }
    let rows = sample_rows(args.m, args.cpu_rows);
    let a_rows = pick_rows(&a_full.data, args.batch, args.m, args.k, &rows);
    let a_cpu = Array::new(&[args.batch, rows.len(), args.k], a_rows)?;
    let mut b_cpu = Array::new(&b_shape, b_data)?;
    if args.bt {
        b_cpu = cpu::transpose(&b_cpu)?;
    }
    let mut want = None;
    let cpu_t = bench::time_cpu(0, args.run.repeats, args.run.cpu_budget, || {
        want = Some(cpu::matmul(&a_cpu, &b_cpu));
    })?;
    let want = want.ok_or_else(|| Error::InvalidArgument {
        op: "bench",
        detail: "the CPU path did not run".into(),
    })??;
    let cpu_scale = args.m as f64 / rows.len() as f64;

    // The ops' own plan first (the selector's variant, K cut as the rule says), then each named
    // or swept variant whole and at each forced cut.
    let mut names: Vec<String> = args.variant.clone();
    if args.sweep {
        // Plain products only: an epilogue variant does not take a call without one.
        let dtype_is = [
            ("dtype", Param::Str(dtype.wgsl().into())),
            ("epilogue", Param::Str("none".into())),
        ];
        for v in gpu.registry().supported("matmul", gpu.profile())? {
            if v.takes(&dtype_is) && ops::matmul::fits(v, &dims)? {
                names.push(v.name.clone());
            }
        }
    }
    let forced: Vec<usize> = std::iter::once(1)
        .chain(args.splits.iter().copied())
        .collect();
    let mut plans: Vec<(Option<String>, Option<usize>)> = vec![(None, None)];
    for name in names {
        plans.extend(forced.iter().map(|&s| (Some(name.clone()), Some(s))));
    }
    let mut runs: Vec<Run> = Vec::new();
    for (name, force) in plans {
        let c = Tensor::full(&gpu, &[args.batch, args.m, args.n], f32::NAN, dtype)?;
        let plan =
            ops::matmul::launch_split_named(&a, &b, &c, layout, None, force, name.as_deref())?;
        let label = match plan.split.splits {
            1 => plan.choice.variant.name.clone(),
            s => format!("{}/split{s}", plan.choice.variant.name),
        };
        if runs.iter().any(|r| r.variant == label) {
            continue;
        }
        let launches: Vec<&kiln::Dispatch> = plan.dispatches.iter().collect();
        if runs.is_empty() {
            bench::warm_up_dispatches(&gpu, &launches, 300.0).await?;
        }
        let timing =
            bench::time_dispatches(&gpu, &launches, args.run.warmup, args.run.repeats).await?;
        let got = c.read().await?;
        let got_rows = pick_rows(&got, args.batch, args.m, args.n, &rows);
        runs.push(Run {
            variant: label,
            reason: plan.choice.reason.to_string(),
            timing,
            rel_l2: cpu::rel_l2(&got_rows, &want.data),
        });
    }

    // About 10× the worst measured on the rows checked: 1.2e-7 in f32, 2e-4 in f16 (the H100).
    let tolerance = if dtype == DType::F16 { 2e-3 } else { 1e-6 };
    report(
        &gpu,
        &args,
        &dims,
        &runs,
        &cpu_t,
        cpu_scale,
        rows.len(),
        tolerance,
    );
    // A fast wrong kernel does not count: the run fails (after its report) above tolerance.
    let wrong: Vec<String> = runs
        .iter()
        .filter(|r| r.wrong(tolerance))
        .map(|r| format!("{} (relative L2 error {:.3e})", r.variant, r.rel_l2))
        .collect();
    if !wrong.is_empty() {
        return Err(Error::InvalidArgument {
            op: "bench",
            detail: format!(
                "wrong against the CPU reference, over {tolerance:.0e}: {}",
                wrong.join(", ")
            ),
        });
    }
    Ok(())
}

/// `count` rows of `m`, evenly spaced and ending with the last (all of them when `count` is 0
/// or at least `m`).
fn sample_rows(m: usize, count: usize) -> Vec<usize> {
    if count == 0 || count >= m {
        return (0..m).collect();
    }
    let mut rows: Vec<usize> = (0..count).map(|i| i * m / count).collect();
    rows[count - 1] = m - 1;
    rows
}

/// The rows `rows` of every matrix in `data` ([batch, m, cols] row-major), in order.
fn pick_rows(data: &[f32], batch: usize, m: usize, cols: usize, rows: &[usize]) -> Vec<f32> {
    let mut out = Vec::with_capacity(batch * rows.len() * cols);
    for b in 0..batch {
        for &r in rows {
            out.extend_from_slice(&data[(b * m + r) * cols..][..cols]);
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn report(
    gpu: &Gpu,
    args: &MatmulArgs,
    dims: &MatmulDims,
    runs: &[Run],
    cpu_t: &Timing,
    cpu_scale: f64,
    cpu_rows: usize,
    tolerance: f64,
) {
    let flops = dims.flops();
    let bytes = dims.min_bytes(DType::parse(&args.dtype).map_or(4, |d| d.size()));
    let cpu_ms = cpu_t.median_ms * cpu_scale;
    let fastest = runs
        .iter()
        .filter(|r| !r.wrong(tolerance))
        .min_by(|x, y| x.timing.median_ms.total_cmp(&y.timing.median_ms));
    if args.run.json {
        let run_json = |r: &Run| -> Value {
            let t = &r.timing;
            json!({"variant": r.variant, "clock": t.clock, "median_ms": t.median_ms,
                   "min_ms": t.min_ms, "max_ms": t.max_ms, "repeats": t.samples_ms.len(),
                   "warmup": t.warmup, "gflops": t.rate(flops) / 1e9,
                   "gbytes_per_s": t.rate(bytes) / 1e9, "rel_l2_error": r.rel_l2,
                   "wrong": r.wrong(tolerance)})
        };
        let Some(chosen) = runs.first() else { return };
        let out = json!({
            "op": "matmul",
            "shape": {"batch": args.batch, "m": args.m, "n": args.n, "k": args.k},
            "b_transposed": args.bt,
            "a_transposed": args.at,
            "dtype": args.dtype,
            "adapter": gpu.profile().name,
            "backend": gpu.profile().backend,
            "runtime_checks": gpu.runtime_checks(),
            "variant": chosen.variant,
            "reason": chosen.reason,
            "gpu": run_json(chosen),
            "cpu": {"path": "plain single-threaded loops (kiln::cpu)", "clock": cpu_t.clock,
                    "median_ms": cpu_ms, "repeats": cpu_t.samples_ms.len(),
                    "rows_measured": cpu_rows, "scaled_by": cpu_scale,
                    "gflops": flops / cpu_ms / 1e6},
            "speedup_gpu_over_cpu": cpu_ms / chosen.timing.median_ms,
            "rel_l2_error": chosen.rel_l2,
            "runs": runs.iter().map(run_json).collect::<Vec<_>>(),
            "fastest": fastest.map(run_json),
        });
        out!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return;
    }
    out!(
        "matmul {}x{}x{} (batch {}{}{}) {} on {} ({})",
        args.m,
        args.n,
        args.k,
        args.batch,
        if args.at { ", A transposed" } else { "" },
        if args.bt { ", B transposed" } else { "" },
        args.dtype,
        gpu.profile().name,
        gpu.profile().backend
    );
    for (i, r) in runs.iter().enumerate() {
        let t = &r.timing;
        out!(
            "{:<24} median {:>10.4} ms  min {:>10.4}  max {:>10.4}  ({} runs, {})  {:>9.2} GFLOP/s  {:>8.2} GB/s  rel L2 {:.2e}{}",
            r.variant,
            t.median_ms,
            t.min_ms,
            t.max_ms,
            t.samples_ms.len(),
            t.clock,
            t.rate(flops) / 1e9,
            t.rate(bytes) / 1e9,
            r.rel_l2,
            if i == 0 {
                format!("  (selector: {})", r.reason)
            } else {
                String::new()
            }
        );
    }
    out!(
        "CPU  median {cpu_ms:>10.4} ms ({} runs, {}, {cpu_rows} of {} rows measured, scaled)  {:>9.2} GFLOP/s",
        cpu_t.samples_ms.len(),
        cpu_t.clock,
        args.m,
        flops / cpu_ms / 1e6
    );
    if let Some(f) = fastest {
        out!(
            "fastest correct: {} — GPU/CPU speed-up {:.1}x (CPU path: plain single-threaded loops)",
            f.variant,
            cpu_ms / f.timing.median_ms
        );
    }
    out!("(GB/s counts the fewest bytes the product must move: A and B read once, C written once)");
}
