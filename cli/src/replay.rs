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

/// One setting's medians.
#[derive(serde::Serialize)]
struct Row {
    setting: &'static str,
    encode_us_per_launch: f64,
    queue_submit_us_per_submission: f64,
    submissions: u64,
    /// From the replay to its result read back; behind a busy GPU, the busy replay's GPU work
    /// (and the submission of the next one) is in it too.
    wall_ms: f64,
}

/// Replays `busy` (when given) and submits it at once: the next replay is encoded while it runs.
fn submit_busy(gpu: &Gpu, busy: Option<&Plan>) -> Result<()> {
    if let Some(busy) = busy {
        busy.replay()?;
        gpu.flush()?;
    }
    Ok(())
}

/// `runs` replays of `plan`, each read back, timed by [`bench::host_runs`]; with `behind`, each
/// read is followed by a replay of `behind` ([`submit_busy`]), so that every replay of `plan`
/// after the first is encoded while one runs (the caller submits the first's).
async fn runs(
    gpu: &Gpu,
    plan: &Plan,
    y: &Tensor,
    behind: Option<&Plan>,
    runs: usize,
) -> Result<bench::HostRuns> {
    bench::host_runs(
        gpu,
        runs,
        || plan.replay(),
        async |()| {
            y.read().await?;
            submit_busy(gpu, behind)
        },
    )
    .await
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

    bench::warm_up_clocks(&gpu, 500.0).await?;
    let mut rows = Vec::new();
    for (setting, behind) in [("on its own", None), ("behind a busy GPU", Some(&busy))] {
        submit_busy(&gpu, behind)?;
        if args.run.warmup > 0 {
            runs(&gpu, &plan, &y, behind, args.run.warmup).await?;
        }
        let timed = runs(&gpu, &plan, &y, behind, args.run.repeats).await?;
        let cost = timed.cost().ok_or_else(|| Error::InvalidArgument {
            op: "bench replay",
            detail: "no run was timed".into(),
        })?;
        let walls: Vec<f64> = (timed.record.iter().zip(&timed.submit).zip(&timed.finish))
            .map(|((r, s), f)| r + s + f)
            .collect();
        rows.push(Row {
            setting,
            encode_us_per_launch: cost.encode_us_per_launch,
            queue_submit_us_per_submission: cost.us_per_submission,
            submissions: cost.submissions,
            wall_ms: bench::median(&walls).unwrap_or(f64::NAN),
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
