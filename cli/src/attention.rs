//! `kiln bench attention`: the flash kernels, the naive GPU path and the CPU path on one
//! shape, each checked against the CPU reference before its time counts.

use clap::Args;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use kiln::bench::{self, Timing};
use kiln::contract::Param;
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
    /// Heads (query heads).
    #[arg(long, default_value_t = 8)]
    h: usize,
    /// Key/value heads, dividing the query heads (grouped-query attention; 0: as many as the
    /// query heads). Grouped runs skip the naive path, which has no grouping.
    #[arg(long, default_value_t = 0)]
    kv_heads: usize,
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
    /// Also time these flash variants (comma-separated names, as `kiln kernels --family
    /// flash_fwd`, `flash_bwd_dkdv`, `flash_bwd_dq` or `flash_bwd_fused` lists them; the backward ones with
    /// `--backward`), each checked first: each kernel alone beside the selector's choice for
    /// its family (reported with the sweep's rows), and the whole pass with the first named
    /// variant of each family forced and the selector's for the others (the path `named`).
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
        let run = FlashRun::plan(
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
        let run = NaiveRun::plan(&inputs, args.causal, scale, args.backward)?;
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

/// Q and dO shaped `q`, K and V shaped `kv`; the CPU path's copies hold the first `slices`
/// query matrices and the `slices / group` K/V matrices they read.
fn inputs(
    gpu: &Gpu,
    [q_shape, kv_shape]: [&[usize; 4]; 2],
    slices: usize,
    group: usize,
    dtype: DType,
    seed: u64,
) -> Result<Inputs> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut make = |shape: &[usize; 4], slices: usize| -> Result<(Tensor, Array)> {
        let n: usize = shape.iter().product();
        let per_slice = shape[2] * shape[3];
        // Device tensor first: its limit check refuses absurd sizes before host memory is taken.
        let t = Tensor::uninit(gpu, shape, dtype)?;
        let mut data: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        if dtype == DType::F16 {
            data = round_to_f16(&data);
        }
        t.write(&data)?;
        data.truncate(slices * per_slice);
        Ok((t, Array::new(&[slices, shape[2], shape[3]], data)?))
    };
    let (q, qc) = make(q_shape, slices)?;
    let (k, kc) = make(kv_shape, slices / group)?;
    let (v, vc) = make(kv_shape, slices / group)?;
    let (d_o, dc) = make(q_shape, slices)?;
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
        // The K/V matrices the checked query matrices read.
        let kv_slices = slices / dims.group.max(1);
        out.push(head(&g.dk, kv_slices, dims, dims.kv_len).await?);
        out.push(head(&g.dv, kv_slices, dims, dims.kv_len).await?);
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
fn named_variants(
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
struct Tolerance<'a> {
    dtype: DType,
    scale: f32,
    slices: usize,
    want: &'a Outputs,
    tol: f64,
}

/// Every offered variant of each flash family for this call (with `--sweep`; else the
/// variants named by `--variant` and, beside them, the selector's choice for their families),
/// checked, then timed: the forward kernel alone, or one backward kernel with the selector's
/// choice for the others.
async fn sweep_variants(
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
            let run = FlashRun::plan(x, args.causal, check.scale, args.backward, fwd, bwd)?;
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

fn print_table(out: &Value) {
    let s = &out["shape"];
    out!(
        "attention B{} H{}/{} N{} D{} {} causal={} {} on {} ({})",
        s["b"],
        s["h"],
        s["hkv"],
        s["n"],
        s["d"],
        out["dtype"].as_str().unwrap_or(""),
        out["causal"],
        out["pass"].as_str().unwrap_or(""),
        out["adapter"].as_str().unwrap_or(""),
        out["backend"].as_str().unwrap_or("")
    );
    out!(
        "{:.2} GFLOP per call; one score matrix is {:.1} MB",
        out["gflop"].as_f64().unwrap_or(0.0),
        out["score_matrix_mb"].as_f64().unwrap_or(0.0)
    );
    let paths = out["paths"].as_array().cloned().unwrap_or_default();
    let flash_ms = paths[0]["timing"]["median_ms"].as_f64().unwrap_or(f64::NAN);
    out!(
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
        out!(
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
        out!("cpu: {note}");
    }
    for p in &paths {
        for c in p["variants"].as_array().into_iter().flatten() {
            out!(
                "  {} {} {} — {}",
                p["path"].as_str().unwrap_or(""),
                c["family"].as_str().unwrap_or(""),
                c["variant"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or("")
            );
        }
    }
    out!(
        "MB moved: the byte model (each tensor a kernel touches read or written once; see kiln::ops::attention::traffic)"
    );
    for r in out["sweep"].as_array().into_iter().flatten() {
        match r["median_ms"].as_f64() {
            Some(ms) => out!(
                "  sweep {:<15} {:<34} {:>10.4} ms  rel L2 {:.2e}{}",
                r["family"].as_str().unwrap_or(""),
                r["variant"].as_str().unwrap_or(""),
                ms,
                r["rel_l2_error"].as_f64().unwrap_or(f64::NAN),
                if r["selected"] == true {
                    "  (the selector's)"
                } else {
                    ""
                }
            ),
            None => out!(
                "  sweep {:<15} {:<34} WRONG: rel L2 {}",
                r["family"].as_str().unwrap_or(""),
                r["variant"].as_str().unwrap_or(""),
                r["rel_l2_error"]
            ),
        }
    }
}
