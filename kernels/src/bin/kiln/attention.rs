//! `kiln bench attention`: the flash kernels, the naive GPU path and the CPU path on one
//! shape, each checked against the CPU reference before its time counts.

use clap::Args;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use kiln::bench::{self, Timing};
use kiln::cpu::{self, Array};
use kiln::ops::attention::{self, BackwardVariants, Grads, traffic};
use kiln::shape::AttentionDims;
use kiln::tensor::round_to_f16;
use kiln::{DType, Dispatch, Error, Gpu, GpuOptions, Result, Tensor};

#[derive(Args)]
pub struct AttentionArgs {
    /// Batch.
    #[arg(long, default_value_t = 1)]
    b: usize,
    /// Heads.
    #[arg(long, default_value_t = 8)]
    h: usize,
    /// Sequence length (queries and keys).
    #[arg(long, default_value_t = 512)]
    n: usize,
    /// Head dimension.
    #[arg(long, default_value_t = 64)]
    d: usize,
    #[arg(long)]
    causal: bool,
    /// Time forward + backward instead of the forward pass alone.
    #[arg(long)]
    backward: bool,
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// Also time every offered flash variant for this shape (each checked first).
    #[arg(long)]
    sweep: bool,
    /// Also time these flash forward variants (comma-separated names, as `kiln kernels
    /// --family flash_fwd` lists them) after the selector's choice, each checked first; they
    /// are reported with the sweep's rows.
    #[arg(long, value_delimiter = ',')]
    variant: Vec<String>,
    /// Skip the naive GPU path (its N×N tensors may not fit the device).
    #[arg(long)]
    no_naive: bool,
    /// Batch × head slices the CPU path runs (0 = all); its time is scaled to all of them.
    #[arg(long, default_value_t = 0)]
    cpu_slices: usize,
    #[command(flatten)]
    run: crate::RunArgs,
}

/// Inputs on the GPU and, for the CPU path, their first `slices` batch × head slices.
struct Inputs {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    d_o: Tensor,
    cpu: [Array; 4],
}

/// Results of one path on the checked slices: O, then dQ, dK, dV with `--backward`.
type Outputs = Vec<Vec<f32>>;

pub async fn bench_attention(options: &GpuOptions, args: AttentionArgs) -> Result<()> {
    let dtype = DType::parse(&args.dtype)?;
    let shape = [args.b, args.h, args.n, args.d];
    let dims = AttentionDims::new("bench", &shape, &shape, &shape)?;
    let slices = match args.cpu_slices {
        0 => dims.batch_heads,
        s => s.min(dims.batch_heads),
    };
    let gpu = Gpu::new(options).await?;
    let scale = 1.0 / (args.d as f32).sqrt();
    let inputs = inputs(&gpu, &shape, slices, dtype, args.run.seed)?;
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

    let flash = FlashRun::plan(
        &inputs,
        args.causal,
        scale,
        args.backward,
        None,
        BackwardVariants::default(),
    )?;
    bench::spin_up(&gpu, &flash.refs(), 300.0).await?;
    let flash_t =
        bench::time_dispatches(&gpu, &flash.refs(), args.run.warmup, args.run.repeats).await?;
    let flash_err = error(&flash.outputs(slices, &dims).await?, &want);

    let naive = if args.no_naive {
        None
    } else {
        let run = NaiveRun::plan(&inputs, args.causal, scale, args.backward)?;
        let t =
            bench::time_dispatches(&gpu, &run.refs(), args.run.warmup, args.run.repeats).await?;
        Some((t, error(&run.outputs(slices, &dims).await?, &want)))
    };

    let mut sweep = Vec::new();
    if args.sweep || !args.variant.is_empty() {
        sweep = sweep_variants(
            &gpu, &inputs, &dims, &args, dtype, scale, slices, &want, tol,
        )
        .await?;
    }

    let flops = dims.flops(args.causal, args.backward);
    let flash_bytes = traffic::traffic(&dims, dtype, traffic::Path::Flash, args.backward);
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
        "shape": {"b": args.b, "h": args.h, "n": args.n, "d": args.d}, "causal": args.causal,
        "dtype": args.dtype, "adapter": gpu.profile().name, "backend": gpu.profile().backend,
        "gflop": flops / 1e9, "score_matrix_mb": traffic::score_matrix_bytes(&dims, dtype) as f64 / 1e6,
        "tolerance": tol, "paths": paths, "sweep": sweep,
    });
    if args.run.json {
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        print_table(&out);
    }
    // A fast wrong kernel does not count: the run fails (after its report) above tolerance.
    let worst = naive.as_ref().map_or(flash_err, |(_, e)| e.max(flash_err));
    if worst > tol || worst.is_nan() {
        return Err(Error::InvalidArgument {
            op: "bench",
            detail: format!("a GPU path is wrong: relative L2 error {worst:.3e} over {tol:.0e}"),
        });
    }
    Ok(())
}

fn inputs(gpu: &Gpu, shape: &[usize; 4], slices: usize, dtype: DType, seed: u64) -> Result<Inputs> {
    let n: usize = shape.iter().product();
    let per_slice = shape[2] * shape[3];
    let slice_shape = [slices, shape[2], shape[3]];
    let mut rng = StdRng::seed_from_u64(seed);
    let mut make = || -> Result<(Tensor, Array)> {
        // Device tensor first: its limit check refuses absurd sizes before host memory is taken.
        let t = Tensor::uninit(gpu, shape, dtype)?;
        let mut data: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        if dtype == DType::F16 {
            data = round_to_f16(&data);
        }
        t.write(&data)?;
        data.truncate(slices * per_slice);
        Ok((t, Array::new(&slice_shape, data)?))
    };
    let (q, qc) = make()?;
    let (k, kc) = make()?;
    let (v, vc) = make()?;
    let (d_o, dc) = make()?;
    Ok(Inputs {
        q,
        k,
        v,
        d_o,
        cpu: [qc, kc, vc, dc],
    })
}

fn cpu_path(
    q: &Array,
    k: &Array,
    v: &Array,
    d_o: &Array,
    causal: bool,
    scale: f32,
    backward: bool,
) -> Result<Outputs> {
    if backward {
        // The standard backward runs the forward pass itself: this is forward + backward.
        let (o, g) = cpu::attention_forward_backward(q, k, v, d_o, causal, scale)?;
        Ok(vec![o.out.data, g.dq.data, g.dk.data, g.dv.data])
    } else {
        Ok(vec![cpu::attention(q, k, v, causal, scale)?.out.data])
    }
}

/// The worst relative L2 error over the outputs.
fn error(got: &Outputs, want: &Outputs) -> f64 {
    got.iter()
        .zip(want)
        .map(|(g, w)| cpu::rel_l2(g, w))
        .fold(0.0, f64::max)
}

/// The first `slices` batch × head slices of a tensor.
async fn head(t: &Tensor, slices: usize, dims: &AttentionDims, rows: usize) -> Result<Vec<f32>> {
    let mut all = t.read().await?;
    all.truncate(slices * rows * dims.head_dim);
    Ok(all)
}

/// O and (with the backward pass) dQ, dK, dV on the checked slices.
async fn outputs(
    o: &Tensor,
    grads: Option<&Grads>,
    slices: usize,
    dims: &AttentionDims,
) -> Result<Outputs> {
    let mut out = vec![head(o, slices, dims, dims.q_len).await?];
    if let Some(g) = grads {
        out.push(head(&g.dq, slices, dims, dims.q_len).await?);
        out.push(head(&g.dk, slices, dims, dims.kv_len).await?);
        out.push(head(&g.dv, slices, dims, dims.kv_len).await?);
    }
    Ok(out)
}

struct FlashRun {
    dispatches: Vec<Dispatch>,
    choices: Vec<Value>,
    o: Tensor,
    grads: Option<Grads>,
}

impl FlashRun {
    fn plan(
        x: &Inputs,
        causal: bool,
        scale: f32,
        backward: bool,
        fwd: Option<&str>,
        bwd: BackwardVariants<'_>,
    ) -> Result<FlashRun> {
        let gpu = x.q.gpu();
        let o = Tensor::full(gpu, x.q.shape(), f32::NAN, x.q.dtype())?;
        let lse = Tensor::full(gpu, &x.q.shape()[..3], f32::NAN, DType::F32)?;
        let (dispatch, choice) =
            attention::plan_forward(&x.q, &x.k, &x.v, &o, &lse, causal, scale, fwd)?;
        let mut choices = vec![describe(&choice)];
        let mut dispatches = vec![dispatch];
        let grads = if backward {
            let g = Grads {
                dq: Tensor::full(gpu, x.q.shape(), f32::NAN, x.q.dtype())?,
                dk: Tensor::full(gpu, x.k.shape(), f32::NAN, x.k.dtype())?,
                dv: Tensor::full(gpu, x.v.shape(), f32::NAN, x.v.dtype())?,
            };
            let plan = attention::plan_backward(
                &x.q, &x.k, &x.v, &o, &lse, &x.d_o, &g, causal, scale, bwd,
            )?;
            choices.extend(plan.choices.iter().map(describe));
            dispatches.extend(plan.dispatches);
            Some(g)
        } else {
            None
        };
        Ok(FlashRun {
            dispatches,
            choices,
            o,
            grads,
        })
    }

    fn refs(&self) -> Vec<&Dispatch> {
        self.dispatches.iter().collect()
    }

    async fn outputs(&self, slices: usize, dims: &AttentionDims) -> Result<Outputs> {
        outputs(&self.o, self.grads.as_ref(), slices, dims).await
    }
}

fn describe(c: &kiln::Choice) -> Value {
    json!({"family": c.variant.family, "variant": c.variant.name, "reason": c.reason.to_string()})
}

struct NaiveRun {
    dispatches: Vec<Dispatch>,
    o: Tensor,
    grads: Option<Grads>,
}

impl NaiveRun {
    fn plan(x: &Inputs, causal: bool, scale: f32, backward: bool) -> Result<NaiveRun> {
        let fwd = attention::plan_naive_forward(&x.q, &x.k, &x.v, causal, scale)?;
        let mut dispatches = fwd.dispatches;
        let grads = if backward {
            let g = Grads::like(&x.q, &x.k, &x.v)?;
            dispatches.extend(attention::plan_naive_backward(
                &x.q, &x.k, &x.v, &fwd.probs, &x.d_o, &g, scale,
            )?);
            Some(g)
        } else {
            None
        };
        Ok(NaiveRun {
            dispatches,
            o: fwd.out,
            grads,
        })
    }

    fn refs(&self) -> Vec<&Dispatch> {
        self.dispatches.iter().collect()
    }

    async fn outputs(&self, slices: usize, dims: &AttentionDims) -> Result<Outputs> {
        outputs(&self.o, self.grads.as_ref(), slices, dims).await
    }
}

/// Every offered variant of each flash family for this call (with `--sweep`; else the forward
/// variants named by `--variant`), checked, then timed (the forward kernel alone; each
/// backward kernel with the selector's choice for the others).
#[allow(clippy::too_many_arguments)]
async fn sweep_variants(
    gpu: &Gpu,
    x: &Inputs,
    dims: &AttentionDims,
    args: &AttentionArgs,
    dtype: DType,
    scale: f32,
    slices: usize,
    want: &Outputs,
    tol: f64,
) -> Result<Vec<Value>> {
    let mut families = vec!["flash_fwd"];
    if args.backward && args.sweep {
        families.extend(["flash_bwd_dkdv", "flash_bwd_dq"]);
    }
    let mut rows = Vec::new();
    for family in families {
        let variants: Vec<kiln::Variant> = gpu
            .registry()
            .supported(family, gpu.profile())?
            .filter(|v| {
                v.text("dtype") == dtype.wgsl()
                    && v.int("head_dim") == dims.head_dim as i64
                    && v.flag("causal") == args.causal
                    && (args.sweep || args.variant.contains(&v.name))
            })
            .cloned()
            .collect();
        if let Some(name) = args
            .variant
            .iter()
            .find(|n| family == "flash_fwd" && !variants.iter().any(|v| &v.name == *n))
        {
            return Err(Error::InvalidArgument {
                op: "bench",
                detail: format!(
                    "--variant {name}: not a flash_fwd variant this adapter offers for {} d{} causal={}",
                    dtype.wgsl(),
                    dims.head_dim,
                    args.causal
                ),
            });
        }
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
                _ => (
                    None,
                    BackwardVariants {
                        dkdv: None,
                        dq: Some(&v.name),
                        ..Default::default()
                    },
                ),
            };
            let run = FlashRun::plan(x, args.causal, scale, args.backward, fwd, bwd)?;
            gpu.submit(&run.refs());
            let err = error(&run.outputs(slices, dims).await?, want);
            if err.is_nan() || err > tol {
                rows.push(json!({"family": family, "variant": v.name, "rel_l2_error": err, "wrong": true}));
                continue;
            }
            // Time just this family's kernel: the forward alone, or the one backward kernel.
            let index = match family {
                "flash_fwd" => 0,
                "flash_bwd_dkdv" => 2,
                _ => 3,
            };
            let t = bench::time_dispatches(
                gpu,
                &[&run.dispatches[index]],
                args.run.warmup,
                args.run.repeats,
            )
            .await?;
            rows.push(
                json!({"family": family, "variant": v.name, "rel_l2_error": err,
                             "median_ms": t.median_ms, "clock": t.clock}),
            );
        }
    }
    Ok(rows)
}

fn print_table(out: &Value) {
    let s = &out["shape"];
    println!(
        "attention B{} H{} N{} D{} {} causal={} {} on {} ({})",
        s["b"],
        s["h"],
        s["n"],
        s["d"],
        out["dtype"].as_str().unwrap_or(""),
        out["causal"],
        out["pass"].as_str().unwrap_or(""),
        out["adapter"].as_str().unwrap_or(""),
        out["backend"].as_str().unwrap_or("")
    );
    println!(
        "{:.2} GFLOP per call; one score matrix is {:.1} MB",
        out["gflop"].as_f64().unwrap_or(0.0),
        out["score_matrix_mb"].as_f64().unwrap_or(0.0)
    );
    let paths = out["paths"].as_array().cloned().unwrap_or_default();
    let flash_ms = paths[0]["timing"]["median_ms"].as_f64().unwrap_or(f64::NAN);
    println!(
        "{:<6} {:>11} {:>10} {:>10} {:>5} {:>15} {:>9} {:>10} {:>10} {:>9}",
        "path",
        "median ms",
        "min",
        "max",
        "runs",
        "clock",
        "TFLOP/s",
        "MB moved",
        "rel L2",
        "÷ flash"
    );
    for p in &paths {
        let t = &p["timing"];
        let ms = t["median_ms"].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:<6} {:>11.4} {:>10.4} {:>10.4} {:>5} {:>15} {:>9.3} {:>10} {:>10} {:>8.2}x",
            p["path"].as_str().unwrap_or(""),
            ms,
            t["min_ms"].as_f64().unwrap_or(f64::NAN),
            t["max_ms"].as_f64().unwrap_or(f64::NAN),
            t["runs"],
            t["clock"].as_str().unwrap_or(""),
            t["tflops"].as_f64().unwrap_or(f64::NAN),
            p["mb_moved"]
                .as_f64()
                .map_or("—".into(), |m| format!("{m:.1}")),
            p["rel_l2_error"]
                .as_f64()
                .map_or("reference".into(), |e| format!("{e:.2e}")),
            ms / flash_ms
        );
    }
    if let Some(note) = paths.last().and_then(|p| p["note"].as_str()) {
        println!("cpu: {note}");
    }
    for c in paths[0]["variants"].as_array().into_iter().flatten() {
        println!(
            "  {} {} — {}",
            c["family"].as_str().unwrap_or(""),
            c["variant"].as_str().unwrap_or(""),
            c["reason"].as_str().unwrap_or("")
        );
    }
    println!(
        "MB moved: the byte model (each tensor a kernel touches read or written once; see kiln::ops::attention::traffic)"
    );
    for r in out["sweep"].as_array().into_iter().flatten() {
        match r["median_ms"].as_f64() {
            Some(ms) => println!(
                "  sweep {:<15} {:<34} {:>10.4} ms  rel L2 {:.2e}",
                r["family"].as_str().unwrap_or(""),
                r["variant"].as_str().unwrap_or(""),
                ms,
                r["rel_l2_error"].as_f64().unwrap_or(f64::NAN)
            ),
            None => println!(
                "  sweep {:<15} {:<34} WRONG: rel L2 {}",
                r["family"].as_str().unwrap_or(""),
                r["variant"].as_str().unwrap_or(""),
                r["rel_l2_error"]
            ),
        }
    }
}
