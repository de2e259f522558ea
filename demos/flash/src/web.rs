//! The flash page's wasm exports: the kernel sweep and the training comparison on the browser's
//! WebGPU adapter (GPU path) and this wasm build (CPU path, one thread: what a visitor would get
//! without the GPU). Progress goes to a callback; the page draws the charts. Also the
//! walkthrough (its stages, the kernel-source view, each stage's visual as pixels) and, for a
//! browser without WebGPU, the sweep's CPU column alone.

use std::cell::RefCell;

use js_sys::Function;
use kiln_app::kiln::Gpu;
use kiln_app::talk::KernelSource;
use kiln_app::web::{js_value, page_gpu, report, yield_to_page};
use wasm_bindgen::prelude::*;

use crate::backend::{CpuBackend, GpuBackend};
use crate::data::Corpus;
use crate::generate::{self, Sampling, generate_watched};
use crate::page::{SHAPE, page_shape, sweep_lengths};
use crate::preset::Preset;
use crate::run::Setup;
use crate::sweep::{self, FlashChoices};
use crate::train::{Comparison, Trainer};
use crate::visual::{self, Measured, Scene, Timed};
use web_time::Instant;

/// What the walkthrough's chart stage shows: the lengths swept, the times so far, their source.
#[derive(Default)]
struct Sweeping {
    /// The shape and number format swept (the byte model's too); `None`: [`SHAPE`].
    shape: Option<sweep::Shape>,
    lengths: Vec<usize>,
    points: Vec<Timed>,
    note: String,
    /// The length being measured: its place in the sweep, N, and when it started.
    measuring: Option<(usize, usize, Instant)>,
}

/// The last training run's model on both paths, for generation.
struct Trained {
    gpu: Trainer<GpuBackend>,
    cpu: Trainer<CpuBackend>,
    /// The corpus's alphabet (no text): prompts are encoded with it.
    corpus: Corpus,
}

thread_local! {
    static TRAINED: RefCell<Option<Trained>> = const { RefCell::new(None) };
    static CHOICES: RefCell<Option<FlashChoices>> = const { RefCell::new(None) };
    static SCENE: RefCell<Option<Scene>> = const { RefCell::new(None) };
    static SWEEPING: RefCell<Sweeping> = RefCell::default();
    /// The last visual's texts, as JSON (chart::Canvas::texts_json).
    static TEXTS: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The lengths the page sweeps without WebGPU (the CPU path alone): a software adapter's.
const CPU_LENGTHS: [usize; 3] = [64, 128, 256];

/// The presets as JSON values: `{name, config, parameters, score_traffic_mb}`.
fn preset_list() -> Vec<serde_json::Value> {
    let vocab = crate::data::Corpus::synthetic(1, 10).vocab();
    Preset::ALL
        .iter()
        .map(|&pr| {
            let c = pr.config(vocab);
            serde_json::json!({"name": pr.name(), "config": c, "parameters": c.parameters(),
                "score_traffic_mb": c.score_traffic_bytes() as f64 / 1e6})
        })
        .collect()
}

/// The presets alone, as a JSON list: arithmetic, no device, so the page shows its training
/// controls at once while the device opens (kiln reads its kernel registry first: seconds).
#[wasm_bindgen]
pub fn presets() -> String {
    serde_json::Value::from(preset_list()).to_string()
}

/// The adapter and the presets, as JSON: `{adapter, backend, device_type, presets: [...]}`.
#[wasm_bindgen]
pub async fn describe() -> Result<String, JsValue> {
    let gpu = page_gpu().await?;
    let p = gpu.profile();
    Ok(serde_json::json!({
        "adapter": p.name, "backend": p.backend, "device_type": p.device_type,
        "lengths": sweep_lengths(&gpu), "presets": preset_list(),
        "sweep_dtype": page_shape(&gpu).dtype.wgsl(), "shader_f16": p.features.shader_f16,
    })
    .to_string())
}

/// The sweep's number format as its note says it: f16, or f32 and why (the page sweeps f16
/// wherever the adapter has shader-f16, `page_shape`).
fn in_dtype(shape: sweep::Shape) -> &'static str {
    match shape.dtype {
        kiln_app::kiln::DType::F16 => " in f16",
        _ => " in f32 (no shader-f16 here)",
    }
}

/// Whether the page asked to stop (its `cancelled()` callback answers true).
fn asked_to_stop(cancelled: &Option<Function>) -> bool {
    cancelled
        .as_ref()
        .and_then(|f| f.call0(&JsValue::NULL).ok())
        .is_some_and(|v| v.is_truthy())
}

/// A panic shows in the console with its message.
#[wasm_bindgen(start)]
pub fn start() {
    kiln_app::web::start();
}

/// The kernel sweep as JSON (see [`sweep::Sweep`], with `stopped`); `progress(json)` hears
/// `{done, total, seq, ms}` (`ms`: how long the last length took, for the page's estimate);
/// `cancelled()`, asked before each length, stops it with the lengths measured so far.
#[wasm_bindgen]
pub async fn run_sweep(progress: Function, cancelled: Option<Function>) -> Result<String, JsValue> {
    let gpu = page_gpu().await?;
    let shape = page_shape(&gpu);
    let lengths = sweep_lengths(&gpu);
    // Where the CPU path beats the "GPU", stage 4's chart says why.
    let software = visual::software_caveat(gpu.profile());
    SWEEPING.with(|s| {
        *s.borrow_mut() = Sweeping {
            shape: Some(shape),
            lengths: lengths.clone(),
            points: Vec::new(),
            note: format!(
                "{software}measuring on {}{}; CPU path: this page's wasm build, one thread",
                gpu.profile().name,
                in_dtype(shape)
            ),
            measuring: None,
        }
    });
    let mut all: Option<sweep::Sweep> = None;
    let mut last_ms = None;
    let mut stopped = false;
    for (i, &n) in lengths.iter().enumerate() {
        report(
            &progress,
            &serde_json::json!({"done": i, "total": lengths.len(), "seq": n, "ms": last_ms}),
        );
        yield_to_page().await?;
        if asked_to_stop(&cancelled) {
            stopped = true;
            break;
        }
        let started = Instant::now();
        SWEEPING.with(|w| w.borrow_mut().measuring = Some((i, n, started)));
        let s = sweep::run(&gpu, shape, &[n], 3, 5_000.0)
            .await
            .map_err(js_value)?;
        SWEEPING.with(|w| {
            let mut w = w.borrow_mut();
            w.points.extend(s.points.iter().map(Timed::from));
            if let Some(p) = s.points.first() {
                w.note = format!(
                    "{software}measured on {}{}, GPU times from {}; CPU path: this page's wasm \
                     build, one thread",
                    gpu.profile().name,
                    in_dtype(shape),
                    p.gpu_clock
                );
            }
        });
        match &mut all {
            Some(a) => {
                a.points.extend(s.points);
                a.flash_variants = s.flash_variants;
            }
            None => all = Some(s),
        }
        last_ms = Some(started.elapsed().as_secs_f64() * 1e3);
    }
    let done = all.as_ref().map_or(0, |a| a.points.len());
    report(
        &progress,
        &serde_json::json!({"done": done, "total": lengths.len(), "ms": last_ms, "stopped": stopped}),
    );
    let mut json = match &all {
        Some(a) => serde_json::to_value(a).map_err(js_value)?,
        // Stopped before the first length: nothing measured.
        None => serde_json::json!({"adapter": gpu.profile().name, "shape": shape,
            "points": [], "flash_variants": []}),
    };
    if let Some(o) = json.as_object_mut() {
        o.insert("stopped".into(), stopped.into());
        o.insert("lengths".into(), lengths.clone().into());
    }
    Ok(json.to_string())
}

/// Trains `preset` for `steps` steps on WebGPU, then on this wasm build; resolves to the
/// comparison as JSON. `progress(json)` hears `{phase, path}` as each path starts (`open`: the
/// device, `build`: the model, `first`: the first step, which compiles every kernel on the GPU
/// path) and `{path, step, steps, loss}` after every step. `cancelled()`, asked before each
/// step, stops it: it then resolves to `{stopped: true, path, done, steps, gpu_losses,
/// cpu_losses}` and no model is kept for generation.
#[wasm_bindgen]
pub async fn run_training(
    preset: String,
    steps: usize,
    progress: Function,
    cancelled: Option<Function>,
) -> Result<String, JsValue> {
    if steps == 0 || steps > 1000 {
        return Err(js_value("steps must be 1..=1000"));
    }
    let phase = |path: &str, phase: &str| {
        report(
            &progress,
            &serde_json::json!({"phase": phase, "path": path}),
        );
    };
    let stopped = |path: &str, done: usize, g: &[f64], c: &[f64]| {
        serde_json::json!({"stopped": true, "path": path, "done": done, "steps": steps,
            "gpu_losses": g, "cpu_losses": c})
        .to_string()
    };
    phase("gpu", "open");
    yield_to_page().await?;
    let gpu = page_gpu().await?;
    let preset = Preset::parse(&preset).map_err(js_value)?;
    let setup = Setup::new(preset, None, None).map_err(js_value)?;
    phase("gpu", "build");
    yield_to_page().await?;
    let mut g = Trainer::new(
        GpuBackend { gpu: gpu.clone() },
        setup.config,
        setup.hyper,
        &setup.start,
    )
    .map_err(js_value)?;
    // Each step's loss is read a step late (`Trainer::step_ahead`): the GPU runs the next
    // step while the last one's loss comes back and the page draws.
    let mut gpu_losses = Vec::new();
    let said = |losses: &[f64]| {
        if let Some(loss) = losses.last() {
            report(
                &progress,
                &serde_json::json!({"path": "gpu", "step": losses.len(), "steps": steps, "loss": loss}),
            );
        }
    };
    for s in 0..steps {
        if s == 0 {
            phase("gpu", "first");
            yield_to_page().await?;
        }
        if asked_to_stop(&cancelled) {
            gpu_losses.extend(g.finish().await.map_err(js_value)?);
            return Ok(stopped("gpu", gpu_losses.len(), &gpu_losses, &[]));
        }
        if let Some(loss) = g.step_ahead(&setup.corpus).await.map_err(js_value)? {
            gpu_losses.push(loss);
            said(&gpu_losses);
        }
        yield_to_page().await?;
    }
    gpu_losses.extend(g.finish().await.map_err(js_value)?);
    said(&gpu_losses);
    phase("cpu", "build");
    yield_to_page().await?;
    let mut c = Trainer::new(CpuBackend::plain(), setup.config, setup.hyper, &setup.start)
        .map_err(js_value)?;
    let mut cpu_losses = Vec::new();
    for s in 0..steps {
        if asked_to_stop(&cancelled) {
            return Ok(stopped("cpu", s, &gpu_losses, &cpu_losses));
        }
        let loss = c.step(&setup.corpus).await.map_err(js_value)?;
        cpu_losses.push(loss);
        report(
            &progress,
            &serde_json::json!({"path": "cpu", "step": s + 1, "steps": steps, "loss": loss}),
        );
        yield_to_page().await?;
    }
    let mut r = Comparison::new(
        preset.name(),
        setup.config,
        &setup.corpus.source,
        0,
        g.run.clone(),
        c.run.clone(),
    );
    r.cpu.path = "CPU (this page's wasm build, one thread)".into();
    r.gpu.path = format!("GPU (WebGPU: {})", gpu.profile().name);
    let corpus = Corpus {
        tokens: Vec::new(),
        ..setup.corpus
    };
    TRAINED.with(|t| {
        *t.borrow_mut() = Some(Trained {
            gpu: g,
            cpu: c,
            corpus,
        })
    });
    serde_json::to_string(&r).map_err(js_value)
}

/// Continues `prompt` by `tokens` tokens with the model the last training run left: on WebGPU
/// (the prompt through flash attention, then flash-decoding against a key/value cache), then on
/// this wasm build with its own cache, the likeliest token each step. `progress(json)` hears
/// `{path, text}` after every token. Resolves to JSON: each path's text, tokens per second and
/// prompt pass, and how the two texts compare.
#[wasm_bindgen]
pub async fn run_generation(
    prompt: String,
    tokens: usize,
    progress: Function,
) -> Result<String, JsValue> {
    if tokens == 0 || tokens > 500 {
        return Err(js_value("tokens must be 1..=500"));
    }
    // Taken out while it runs (no borrow held across an await), put back after.
    let trained = TRAINED
        .with(|t| t.borrow_mut().take())
        .ok_or_else(|| js_value("train a model first: generation continues the trained one"))?;
    let result = generate_both(&trained, &prompt, tokens, &progress).await;
    TRAINED.with(|t| *t.borrow_mut() = Some(trained));
    result
}

async fn generate_both(
    t: &Trained,
    prompt: &str,
    count: usize,
    progress: &Function,
) -> Result<String, JsValue> {
    let ids = t.corpus.encode(prompt).map_err(js_value)?;
    let sampling = Sampling {
        temperature: 0.0,
        seed: 1,
    };
    let mut runs = Vec::new();
    for path in ["gpu", "cpu"] {
        let mut watch = |so_far: &[u32]| {
            let text = format!("{prompt}{}", t.corpus.decode(so_far));
            report(progress, &serde_json::json!({"path": path, "text": text}));
        };
        let run = if path == "gpu" {
            let (b, p) = (&t.gpu.backend, &t.gpu.state.params);
            generate_watched(b, &t.gpu.config, p, &ids, count, sampling, &mut watch).await
        } else {
            let (b, p) = (&t.cpu.backend, &t.cpu.state.params);
            generate_watched(b, &t.cpu.config, p, &ids, count, sampling, &mut watch).await
        }
        .map_err(js_value)?;
        runs.push(run);
        yield_to_page().await?;
    }
    let divergence = generate::first_divergence(&runs[0], &runs[1]);
    let same = divergence.is_none();
    let agreement = match divergence {
        None => format!(
            "The two paths wrote the same {} tokens (their logits differ by at most {:.1e}).",
            runs[0].tokens.len(),
            generate::logit_difference(&runs[0], &runs[1])
        ),
        Some(d) => format!(
            "The texts part at token {}, where the GPU's pick led by {:.1e} and the paths' logits differ by {:.1e}{}.",
            d.step + 1,
            d.margin,
            d.logit_difference,
            if d.explained() {
                " (a near-tie)"
            } else {
                ": more than rounding explains"
            }
        ),
    };
    let path = |r: &generate::Generation| {
        serde_json::json!({
            "text": format!("{prompt}{}", t.corpus.decode(&r.tokens)),
            "tokens_per_s": r.tokens_per_s(),
            "prefill_ms": 1e3 * r.prefill_s,
            "refills": r.refills,
        })
    };
    Ok(serde_json::json!({
        "tokens": count, "prompt_tokens": ids.len().max(1),
        "gpu": path(&runs[0]), "cpu": path(&runs[1]), "agreement": agreement,
        "same": same, "logit_rel_l2": generate::logit_rel_l2(&runs[0], &runs[1]),
    })
    .to_string())
}

/// The flash path's variants at the sweep's longest length, planned once.
async fn choices() -> Result<(Gpu, FlashChoices), JsValue> {
    let gpu = page_gpu().await?;
    if let Some(c) = CHOICES.with(|c| c.borrow().clone()) {
        return Ok((gpu, c));
    }
    let longest = sweep_lengths(&gpu).last().copied().unwrap_or(256);
    let c = FlashChoices::for_shape(&gpu, page_shape(&gpu), longest).map_err(js_value)?;
    CHOICES.with(|slot| *slot.borrow_mut() = Some(c.clone()));
    Ok((gpu, c))
}

/// The walkthrough's stages as JSON (kiln_app's `Stage`s). With `webgpu`, the kernel stages
/// show the flash kernels rendered for this browser's adapter; without, the CPU arithmetic the
/// visuals run.
#[wasm_bindgen]
pub async fn talk_stages(webgpu: bool) -> Result<String, JsValue> {
    let stages = if webgpu {
        let (gpu, c) = choices().await?;
        crate::walkthrough::stages(Some((&gpu, &c)))
    } else {
        crate::walkthrough::stages(None)
    };
    serde_json::to_string(&stages).map_err(js_value)
}

/// The kernel-source view as JSON (kiln_app's `KernelSource`s): forward, dQ, dK/dV and the
/// backward's pre-pass, rendered for this browser's adapter.
#[wasm_bindgen]
pub async fn kernels() -> Result<String, JsValue> {
    let (gpu, c) = choices().await?;
    let list = KernelSource::list(&gpu, &c.all()).map_err(js_value)?;
    serde_json::to_string(&list).map_err(js_value)
}

/// Stage `stage`'s visual (0-based) at `time` seconds into it, as `width` × `height` RGBA8
/// pixels. Drawn on the CPU: it needs no WebGPU. The chart stage shows what the sweep (or the
/// CPU column) has measured so far.
#[wasm_bindgen]
pub fn talk_frame(
    stage: usize,
    time: f64,
    width: usize,
    height: usize,
) -> Result<Vec<u8>, JsValue> {
    if !(1..=4096).contains(&width) || !(1..=4096).contains(&height) {
        return Err(js_value(format!(
            "a visual of {width}×{height} pixels: each side must be 1 to 4096"
        )));
    }
    let canvas = SCENE.with(|slot| -> Result<_, JsValue> {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(Scene::new(SHAPE).map_err(js_value)?);
        }
        let scene = slot.as_ref().ok_or_else(|| js_value("no scene"))?;
        Ok(SWEEPING.with(|s| {
            let s = s.borrow();
            let lengths = if s.lengths.is_empty() {
                CPU_LENGTHS.to_vec()
            } else {
                s.lengths.clone()
            };
            let note = if s.note.is_empty() {
                "waiting for the sweep"
            } else {
                s.note.as_str()
            };
            // Until the first length is in, how far the sweep is and for how long it has run.
            let pending = match s.measuring {
                _ if !s.points.is_empty() => None,
                Some((i, n, since)) => Some(format!(
                    "measuring N = {n} ({} of {}): {:.0} s",
                    i + 1,
                    lengths.len(),
                    since.elapsed().as_secs_f64()
                )),
                None => Some("waiting for the sweep to start".into()),
            };
            scene.draw(
                stage,
                time,
                (width, height),
                &Measured {
                    shape: s.shape.unwrap_or(SHAPE),
                    lengths: &lengths,
                    points: &s.points,
                    note,
                    pending: pending.as_deref(),
                },
            )
        }))
    })?;
    TEXTS.with(|t| *t.borrow_mut() = canvas.texts_json(Some(stage)));
    Ok(canvas.rgba_bytes())
}

/// The texts of the visual `talk_frame` drew last, as JSON: the picture's size, the stage, and
/// each text's box and letter height in the picture's pixels, for the page's tests.
#[wasm_bindgen]
pub fn talk_texts() -> String {
    TEXTS.with(|t| t.borrow().clone())
}

/// Without WebGPU: the sweep's CPU column alone (kiln's standard attention forward + backward in
/// this wasm build, one thread) at short lengths, with the byte model beside it, as JSON
/// `{shape, cpu_path, points: [{seq, cpu_ms, flash_mb, naive_mb, score_matrix_mb}]}`.
/// `progress(json)` hears `{done, total, seq}`.
#[wasm_bindgen]
pub async fn run_cpu_sweep(progress: Function) -> Result<String, JsValue> {
    let cpu_path =
        "kiln's standard attention forward + backward, this page's wasm build, one thread";
    SWEEPING.with(|s| {
        *s.borrow_mut() = Sweeping {
            shape: None,
            lengths: CPU_LENGTHS.to_vec(),
            points: Vec::new(),
            note: "no WebGPU here: the CPU path alone (this page's wasm build, one thread); \
                   the traffic is the byte model's, which needs no GPU"
                .into(),
            measuring: None,
        }
    });
    let mut points = Vec::new();
    for (i, &n) in CPU_LENGTHS.iter().enumerate() {
        report(
            &progress,
            &serde_json::json!({"done": i, "total": CPU_LENGTHS.len(), "seq": n}),
        );
        SWEEPING.with(|w| w.borrow_mut().measuring = Some((i, n, Instant::now())));
        yield_to_page().await?;
        let p = sweep::run_cpu(SHAPE, n).map_err(js_value)?;
        SWEEPING.with(|s| {
            s.borrow_mut().points.push(Timed {
                seq: n,
                cpu_ms: Some(p.cpu_ms),
                ..Timed::default()
            })
        });
        points.push(p);
    }
    report(
        &progress,
        &serde_json::json!({"done": CPU_LENGTHS.len(), "total": CPU_LENGTHS.len()}),
    );
    Ok(serde_json::json!({"shape": SHAPE, "cpu_path": cpu_path, "points": points}).to_string())
}
