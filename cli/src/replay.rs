//! `kiln bench replay`: what a replayed plan costs the host, and what moves that cost. A chain of
//! layers (product, softmax, residual add, layer norm: the attention demo's four kernels) on
//! [n, n] rows is captured once and replayed, each call reading its result back as a model's
//! forward does: on its own, and behind a busy GPU (a larger replay of the same chain submitted
//! just before, still running while this one is encoded). wgpu's encoding and `queue.submit`
//! come from the device's counters. The chain is checked against the plain CPU path first: off
//! it, the command fails before timing anything.

use clap::Args;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::json;
use std::time::Instant;

use kiln::bench;
use kiln::cpu::{self, Array};
use kiln::gpu::Counters;
use kiln::{DType, Error, Gpu, GpuOptions, Plan, Result, Tensor};

#[derive(Args)]
pub struct ReplayArgs {
    /// Rows and columns of the chain's activations.
    #[arg(long, default_value_t = 64)]
    n: usize,
    /// Layers of four launches each (more where the GPU cuts a product).
    #[arg(long, default_value_t = 6)]
    layers: usize,
    /// The busy replay's rows and columns (a replay of the same chain kept running while the
    /// measured one is encoded).
    #[arg(long, default_value_t = 1024)]
    busy_n: usize,
    #[command(flatten)]
    run: crate::RunArgs,
}

/// The tolerance on the chain's relative L2 against the CPU path: six layers measured 1.3e-7 to
/// 1.7e-7 (lavapipe, n 16 to 256).
const TOLERANCE: f64 = 1.5e-6;

/// A chain's inputs on both paths.
struct Chain {
    x: Array,
    w: Array,
    gamma: Array,
    beta: Array,
}

impl Chain {
    fn new(n: usize, seed: u64) -> Chain {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut array = |shape: Vec<usize>, scale: f32, shift: f32| {
            let len = shape.iter().product();
            let data = (0..len)
                .map(|_| shift + scale * rng.random_range(-1.0f32..1.0))
                .collect();
            Array { shape, data }
        };
        Chain {
            x: array(vec![n, n], 1.0, 0.0),
            w: array(vec![n, n], 1.0 / (n as f32).sqrt(), 0.0),
            gamma: array(vec![n], 0.1, 1.0),
            beta: array(vec![n], 0.1, 0.0),
        }
    }

    fn scale(&self) -> f32 {
        1.0 / (self.w.shape[0] as f32).sqrt()
    }

    fn cpu(&self, layers: usize) -> Result<Array> {
        let mut h = self.x.clone();
        for _ in 0..layers {
            let s = cpu::softmax(&cpu::matmul(&h, &self.w)?, false, self.scale())?;
            h = cpu::layernorm(&cpu::add(&s, &h)?, &self.gamma, &self.beta, 1e-5)?;
        }
        Ok(h)
    }

    /// The chain captured into a plan on `gpu`, with the tensor it writes last.
    fn capture(&self, gpu: &Gpu, layers: usize) -> Result<(Plan, Tensor)> {
        let up = |a: &Array| Tensor::from_slice(gpu, &a.shape, &a.data, DType::F32);
        let (x, w, gamma, beta) = (
            up(&self.x)?,
            up(&self.w)?,
            up(&self.gamma)?,
            up(&self.beta)?,
        );
        gpu.capture(|| {
            let mut h = x.clone();
            for _ in 0..layers {
                let s = h.matmul(&w)?.softmax(false, self.scale())?;
                h = s.add(&h)?.layernorm(&gamma, &beta, 1e-5)?;
            }
            Ok(h)
        })
    }
}

/// One call's host figures: encoding and `queue.submit` in µs, submissions, wall in ms.
struct Call {
    encode_us: f64,
    submit_us: f64,
    submissions: u64,
    wall_ms: f64,
}

impl Call {
    fn of(spent: &Counters, wall_ms: f64) -> Call {
        Call {
            encode_us: spent.encode_ns as f64 / 1e3,
            submit_us: spent.queue_submit_ns as f64 / 1e3,
            submissions: spent.submissions,
            wall_ms,
        }
    }
}

/// One setting's medians.
#[derive(serde::Serialize)]
struct Row {
    setting: &'static str,
    encode_us_per_launch: f64,
    queue_submit_us_per_submission: f64,
    submissions: u64,
    /// From the replay to its result read back; behind a busy GPU, the busy replay's work is in
    /// it too.
    wall_ms: f64,
}

/// One replayed call of `plan`, its result read back; `behind` is replayed and submitted first
/// and not counted.
async fn call(gpu: &Gpu, plan: &Plan, y: &Tensor, behind: Option<&Plan>) -> Result<Call> {
    if let Some(busy) = behind {
        busy.replay()?;
        gpu.flush()?;
    }
    let began = Instant::now();
    let before = gpu.counters();
    plan.replay()?;
    gpu.flush()?;
    let spent = gpu.counters() - before;
    y.read().await?;
    Ok(Call::of(&spent, began.elapsed().as_secs_f64() * 1e3))
}

pub async fn bench_replay(options: &GpuOptions, args: ReplayArgs) -> Result<()> {
    let zero = [
        ("--n", args.n),
        ("--layers", args.layers),
        ("--busy-n", args.busy_n),
        ("--repeats", args.run.repeats),
    ]
    .into_iter()
    .find(|(_, v)| *v == 0);
    if let Some((name, _)) = zero {
        return Err(Error::InvalidArgument {
            op: "bench replay",
            detail: format!("{name} must be at least 1"),
        });
    }
    let gpu = Gpu::new(options).await?;
    let chain = Chain::new(args.n, args.run.seed);
    let (plan, y) = chain.capture(&gpu, args.layers)?;
    let busy_chain = Chain::new(args.busy_n, args.run.seed.wrapping_add(1));
    let (busy, _) = busy_chain.capture(&gpu, args.layers)?;

    // Checked before anything is timed (the CPU path once: its time is reported, not compared).
    plan.replay()?;
    let got = y.read().await?;
    let began = Instant::now();
    let want = chain.cpu(args.layers)?;
    let cpu_ms = began.elapsed().as_secs_f64() * 1e3;
    let rel_l2 = cpu::rel_l2(&got, &want.data);
    if rel_l2.is_nan() || rel_l2 > TOLERANCE {
        return Err(Error::InvalidArgument {
            op: "bench replay",
            detail: format!(
                "the GPU chain is off the CPU path: relative L2 {rel_l2:.2e} > {TOLERANCE:.1e}"
            ),
        });
    }

    bench::heat(&gpu, 500.0).await?;
    let mut rows = Vec::new();
    for (setting, behind) in [("on its own", None), ("behind a busy GPU", Some(&busy))] {
        for _ in 0..args.run.warmup {
            call(&gpu, &plan, &y, behind).await?;
        }
        let mut calls = Vec::with_capacity(args.run.repeats);
        for _ in 0..args.run.repeats {
            calls.push(call(&gpu, &plan, &y, behind).await?);
        }
        let med = |f: &dyn Fn(&Call) -> f64| {
            bench::median(&calls.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
        };
        let submissions = med(&|c| c.submissions as f64).round().max(1.0);
        rows.push(Row {
            setting,
            encode_us_per_launch: med(&|c| c.encode_us) / plan.launches().max(1) as f64,
            queue_submit_us_per_submission: med(&|c| c.submit_us) / submissions,
            submissions: submissions as u64,
            wall_ms: med(&|c| c.wall_ms),
        });
    }

    let adapter = &gpu.profile().name;
    if args.run.json {
        let report = json!({
            "adapter": adapter,
            "n": args.n,
            "busy_n": args.busy_n,
            "layers": args.layers,
            "launches": plan.launches(),
            "kernels": plan.kernels(),
            "repeats": args.run.repeats,
            "rel_l2_vs_cpu": rel_l2,
            "tolerance": TOLERANCE,
            "cpu_ms": cpu_ms,
            "settings": rows,
        });
        out!("{report}");
        return Ok(());
    }
    out!(
        "{adapter}: {} launches ({} layers on [{n}, {n}]), rel L2 against the CPU path \
         {rel_l2:.1e} (allowed {TOLERANCE:.1e}), CPU path {cpu_ms:.2} ms",
        plan.launches(),
        args.layers,
        n = args.n
    );
    for r in &rows {
        out!(
            "  {:20} encode {:.2} µs a launch, queue.submit {:.1} µs a submission ({}), wall {:.3} ms",
            r.setting,
            r.encode_us_per_launch,
            r.queue_submit_us_per_submission,
            r.submissions,
            r.wall_ms,
        );
    }
    Ok(())
}
