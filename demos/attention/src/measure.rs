//! `attention --bench`: the forward pass timed on each path, where its wall time goes, and the
//! paths compared layer by layer.

use kiln_app::kiln::cpu::{self, Array};
use kiln_app::kiln::{self, Gpu, bench};
use kiln_app::{BenchReport, Image, Options};
use web_time::Instant;

use crate::heatmap;

use crate::load::{DEFAULT_TEXT, Loaded, model_dtype, model_error, read_forward};

/// One forward pass on the GPU path as an embedding call runs it: the word rows written into
/// the plan captured for this token count (reading the last hidden state only), the plan
/// replayed, one submission, the last hidden state read back.
async fn gpu_forward_read(gpu: &Gpu, loaded: &Loaded, ids: &[u32]) -> kiln::Result<()> {
    let p = loaded
        .gpu_embedding_planned(gpu, ids)
        .map_err(model_error)?;
    p.last.read().await?;
    Ok(())
}

/// The same forward recorded op by op, as code that branches runs it: the token rows uploaded,
/// every op selected, allocated and bound, one submission, the last hidden state read back.
async fn gpu_forward_read_lazy(gpu: &Gpu, loaded: &Loaded, ids: &[u32]) -> kiln::Result<()> {
    let f = loaded.gpu_forward(gpu, ids).map_err(model_error)?;
    if let Some(h) = f.hidden.last() {
        h.read().await?;
    }
    Ok(())
}

/// Where one forward's wall time goes (medians of `runs`, ms), replayed from its plan
/// (`planned`) or recorded op by op: `record`, the CPU recording every op, or writing the
/// word rows and appending the plan (the token rows gathered included); `submit`, encoding
/// the recording into a command buffer and submitting it; `gpu`, the GPU's time for that
/// submission (timestamps around the whole pass); `wait_read`, from the submission to the last
/// hidden state on the CPU (the GPU's time, the readback's copy and map, and the round trip);
/// `host_us_per_launch`, record and submit over the launches (`host`: the submit's encoding
/// and `queue.submit` calls apart). Reading back after an explicit
/// flush costs a second, one-copy submission that a plain forward does not have.
async fn wall_breakdown(
    gpu: &Gpu,
    loaded: &Loaded,
    ids: &[u32],
    runs: usize,
    planned: bool,
) -> kiln::Result<serde_json::Value> {
    let timed = gpu.profile().features.timestamp_query;
    if timed {
        gpu.set_pass_timing(kiln::gpu::PassTiming::PerSubmission)?;
    }
    let mut pass = Vec::new();
    let runs = bench::host_runs(
        gpu,
        runs,
        || -> kiln::Result<Option<kiln::Tensor>> {
            Ok(if planned {
                let p = loaded
                    .gpu_embedding_planned(gpu, ids)
                    .map_err(model_error)?;
                Some(p.last.clone())
            } else {
                let f = loaded.gpu_forward(gpu, ids).map_err(model_error)?;
                f.hidden.last().cloned()
            })
        },
        async |last| {
            if let Some(h) = last {
                h.read().await?;
            }
            if timed {
                pass.push(bench::busy_ms(&gpu.take_pass_times().await?));
            }
            Ok(())
        },
    )
    .await?;
    // A run's GPU time above its wall clock (record, submit, wait and read) is a broken reading.
    for (i, &busy) in pass.iter().enumerate() {
        let wall = runs.record[i] + runs.submit[i] + runs.finish[i];
        bench::check_within_wall(busy, wall)?;
    }
    let host = runs.cost();
    Ok(serde_json::json!({
        "record": bench::median(&runs.record), "submit": bench::median(&runs.submit),
        "gpu": bench::timestamp_centre(&pass), "wait_read": bench::median(&runs.finish),
        "launches": runs.launches,
        "host_us_per_launch": host.as_ref().map(|h| h.us_per_launch),
        "host": host,
        "runs": runs.record.len(),
    }))
}

/// Times one forward pass on each path with the wall clock: the GPU (replayed from its plan)
/// from upload to the last hidden state read back (after `warm_ms` of warm-up, so the clocks
/// are up), then the CPU path.
pub(crate) async fn time_paths(
    gpu: &Gpu,
    loaded: &Loaded,
    ids: &[u32],
    repeats: usize,
    warm_ms: f64,
    cpu_budget_s: f64,
    gpu_budget_s: f64,
) -> kiln::Result<(bench::Timing, bench::Timing)> {
    bench::warm_up(async || gpu_forward_read(gpu, loaded, ids).await, warm_ms).await?;
    let mut samples = Vec::with_capacity(repeats);
    let began = Instant::now();
    for _ in 0..repeats {
        let start = Instant::now();
        gpu_forward_read(gpu, loaded, ids).await?;
        samples.push(start.elapsed().as_secs_f64() * 1e3);
        // At least one pass; no more once the budget is spent.
        if began.elapsed().as_secs_f64() > gpu_budget_s {
            break;
        }
    }
    let g = bench::Timing::from_samples(bench::Clock::WallClock, 1, samples)?;
    let c = bench::time_cpu(0, repeats, cpu_budget_s, || {
        let _ = loaded.cpu_forward(ids);
    })?;
    Ok((g, c))
}

/// `attention --bench`: tokens, kernels, GPU and CPU time per forward pass, the paths
/// compared layer by layer, `--dump` for the parity script, the heatmaps as PNG.
pub(crate) async fn bench_report(gpu: &Gpu, options: &Options) -> kiln::Result<BenchReport> {
    let loaded = Loaded::new(
        gpu,
        options.model.as_deref(),
        model_dtype(options.dtype.as_deref())?,
    )
    .map_err(model_error)?;
    let text = options.text.clone().unwrap_or_else(|| DEFAULT_TEXT.into());
    let max = loaded.model.config.max_position_embeddings;
    let tokens = loaded.tokenizer.encode(&text, max).map_err(model_error)?;
    // The GPU first, its clocks brought up (a forward leaves it idle between submissions, so
    // it can time steadily at low clocks), before the long CPU phase; then where its time goes.
    bench::warm_up_clocks(gpu, 500.0).await?;
    let warm = bench::warm_up_budget_ms(gpu, 3000.0);
    let (g, c) = time_paths(
        gpu,
        &loaded,
        &tokens.ids,
        options.frames,
        warm,
        30.0,
        f64::INFINITY,
    )
    .await?;
    bench::warm_up_clocks(gpu, 300.0).await?;
    bench::warm_up(
        async || gpu_forward_read(gpu, &loaded, &tokens.ids).await,
        bench::warm_up_budget_ms(gpu, 1000.0),
    )
    .await?;
    let profile = bench::profile_unit(
        gpu,
        async || gpu_forward_read(gpu, &loaded, &tokens.ids).await,
        options.frames.clamp(1, 50),
    )
    .await?;

    let runs = options.frames.clamp(1, 50);
    let breakdown = wall_breakdown(gpu, &loaded, &tokens.ids, runs, true).await?;
    // The same forward recorded op by op: its wall time and where it goes.
    bench::warm_up(
        async || gpu_forward_read_lazy(gpu, &loaded, &tokens.ids).await,
        bench::warm_up_budget_ms(gpu, 500.0),
    )
    .await?;
    let mut lazy = Vec::with_capacity(options.frames);
    for _ in 0..options.frames.max(1) {
        let start = Instant::now();
        gpu_forward_read_lazy(gpu, &loaded, &tokens.ids).await?;
        lazy.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let lazy_breakdown = wall_breakdown(gpu, &loaded, &tokens.ids, runs, false).await?;

    let f = loaded.gpu_forward(gpu, &tokens.ids).map_err(model_error)?;
    let (hidden, probs) = read_forward(&f).await?;
    let reference = loaded.cpu_forward(&tokens.ids).map_err(model_error)?;
    let errors = |got: &[Vec<f32>], want: &[Array]| -> Vec<f64> {
        got.iter()
            .zip(want)
            .map(|(g, w)| cpu::rel_l2(g, &w.data))
            .collect()
    };
    let hidden_err = errors(&hidden, &reference.hidden);
    let probs_err = errors(&probs, &reference.probs);
    // The plan replayed on the same tokens: the same kernels, checked the same way.
    let planned = loaded
        .gpu_forward_planned(gpu, &tokens.ids)
        .map_err(model_error)?;
    let (planned_hidden, planned_probs) = read_forward(&planned.forward).await?;
    let planned_err = errors(&planned_hidden, &reference.hidden);
    let planned_probs_err = errors(&planned_probs, &reference.probs);
    // The embedding call's plan (attention fused where only the last hidden state is read).
    let embedding = loaded
        .gpu_embedding_planned(gpu, &tokens.ids)
        .map_err(model_error)?;
    let embedding_err = match reference.hidden.last() {
        Some(want) => cpu::rel_l2(&embedding.last.read().await?, &want.data),
        None => f64::NAN,
    };
    let worst = hidden_err
        .iter()
        .chain(&probs_err)
        .chain(&planned_err)
        .chain(&planned_probs_err)
        .chain(std::iter::once(&embedding_err))
        .copied()
        .fold(0.0, f64::max);
    // About 10× the largest measured: f32 6e-7 to 1.3e-6 (lavapipe, the H100); f16 against the
    // CPU path's f32, 2.5e-3 (the synthetic weights' attention, lavapipe), the rounding of
    // weights and activations to f16 and not a kernel's error.
    let tolerance = match loaded.dtype {
        kiln::DType::F16 => 1e-2,
        _ => 1e-5,
    };

    if let Some(path) = &options.dump {
        let c = &loaded.model.config;
        let dump = serde_json::json!({
            "text": text, "tokens": tokens.tokens, "ids": tokens.ids,
            "weights": loaded.model.source, "synthetic": loaded.model.synthetic,
            "config": c, "path": "GPU", "adapter": gpu.profile().name,
            "hidden_states": hidden, "attentions": probs,
        });
        kiln_app::write_file(path, dump.to_string().as_bytes())?;
    }
    let n = tokens.ids.len();
    let img = heatmap::grid(n, &probs, loaded.model.config.num_attention_heads);
    let kernels: Vec<String> = gpu
        .compiled()
        .into_iter()
        .map(|(family, variant)| format!("{family} {variant}"))
        .collect();
    let report = BenchReport {
        demo: "attention".into(),
        adapter: gpu.profile().name.clone(),
        backend: gpu.profile().backend.clone(),
        settings: format!("{n} tokens, {}; {}", loaded.dtype.wgsl(), loaded.describe()),
        gpu: g,
        cpu: c,
        checks: serde_json::json!({
            "unit": "one forward pass (embeddings and every layer) per frame",
            "gpu_clock_note": "wall clock from the token rows uploaded to the last hidden state read back: the 20 lines captured once per token count into a plan that reads the last hidden state only (each layer's attention one flash launch where the kernels take its head size), replayed as one recording submitted in pieces",
            "per_forward": profile.counts,
            "gpu_timestamp_ms_per_forward": profile.gpu_ms,
            "gpu_ms_by_family": profile.by_family,
            "wall_breakdown_ms_per_forward": breakdown,
            "recorded_each_call": {
                "note": "the same forward recorded op by op (selection, allocation, parameters and bind groups per call), as code that branches runs it",
                "wall_ms_median": bench::median(&lazy),
                "wall_breakdown_ms_per_forward": lazy_breakdown,
            },
            "tokens": tokens.tokens, "ids": tokens.ids, "dtype": loaded.dtype.wgsl(),
            "synthetic_weights": loaded.model.synthetic, "weights": loaded.model.source,
            "kernels": kernels,
            "rel_l2_gpu_vs_cpu_hidden_per_layer": hidden_err,
            "rel_l2_gpu_vs_cpu_attention_per_layer": probs_err,
            "rel_l2_planned_vs_cpu_hidden_per_layer": planned_err,
            "rel_l2_planned_vs_cpu_attention_per_layer": planned_probs_err,
            "rel_l2_embedding_call_vs_cpu_last_hidden": embedding_err,
            "launches_per_forward": embedding.plan.launches(),
            "attention_chains_fused": embedding.fused.attention,
            "feed_forward_blocks_fused": embedding.fused.feed_forward,
            "launches_saved_by_fusing": embedding.fused.launches_saved,
            "launches_per_heatmap_forward": planned.plan.launches(),
            "tolerance": tolerance, "agree": worst <= tolerance,
            "cpu_path": "the same encoder function on kiln::cpu (plain single-threaded loops)",
        }),
        image: Some(Image {
            width: img.width as u32,
            height: img.height as u32,
            rgba: img.rgba(),
        }),
    };
    if worst > tolerance || worst.is_nan() {
        return Err(kiln::Error::InvalidArgument {
            op: "attention",
            detail: format!(
                "the GPU and CPU paths disagree: relative L2 error {worst:.3e} over {tolerance:.0e}"
            ),
        });
    }
    Ok(report)
}
