//! The flash page's wasm exports: the kernel sweep and the training comparison on the browser's
//! WebGPU adapter (GPU path) and this wasm build (CPU path, one thread: what a visitor would get
//! without the GPU). Progress goes to a callback; the page draws the charts.

use std::cell::RefCell;

use js_sys::{Function, Promise};
use kiln_app::kiln::{Gpu, GpuOptions};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::backend::{CpuBackend, GpuBackend};
use crate::page::sweep_lengths;
use crate::preset::Preset;
use crate::run::Setup;
use crate::sweep::{self, Shape};
use crate::train::{Comparison, Trainer};

thread_local! {
    static GPU: RefCell<Option<Gpu>> = const { RefCell::new(None) };
}

fn js(e: impl std::fmt::Display) -> JsValue {
    JsValue::from_str(&e.to_string())
}

/// The page's one device, opened on first use (pipelines stay built between runs).
async fn gpu() -> Result<Gpu, JsValue> {
    if let Some(g) = GPU.with(|g| g.borrow().clone()) {
        return Ok(g);
    }
    console_error_panic_hook::set_once();
    let g = Gpu::new(&GpuOptions::default()).await.map_err(js)?;
    GPU.with(|slot| *slot.borrow_mut() = Some(g.clone()));
    Ok(g)
}

/// Lets the browser draw (a macrotask turn) before the next step.
async fn yield_to_page() -> Result<(), JsValue> {
    let set_timeout: Function =
        js_sys::Reflect::get(&js_sys::global(), &"setTimeout".into())?.dyn_into()?;
    let promise = Promise::new(&mut |resolve, _| {
        let _ = set_timeout.call2(&JsValue::NULL, &resolve, &JsValue::from(0));
    });
    JsFuture::from(promise).await.map(|_| ())
}

fn report(progress: &Function, value: serde_json::Value) {
    let _ = progress.call1(&JsValue::NULL, &JsValue::from_str(&value.to_string()));
}

/// The adapter and the presets, as JSON: `{adapter, backend, device_type, presets: [...]}`.
#[wasm_bindgen]
pub async fn describe() -> Result<String, JsValue> {
    let gpu = gpu().await?;
    let p = gpu.profile();
    let vocab = crate::data::Corpus::synthetic(1, 10).vocab();
    let presets: Vec<serde_json::Value> = Preset::ALL
        .iter()
        .map(|&pr| {
            let c = pr.config(vocab);
            serde_json::json!({"name": pr.name(), "config": c, "parameters": c.parameters(),
                "score_traffic_mb": c.score_traffic_bytes() as f64 / 1e6})
        })
        .collect();
    Ok(serde_json::json!({
        "adapter": p.name, "backend": p.backend, "device_type": p.device_type,
        "lengths": sweep_lengths(&gpu), "presets": presets,
    })
    .to_string())
}

/// The kernel sweep as JSON (see [`sweep::Sweep`]); `progress(json)` hears `{done, total}`.
#[wasm_bindgen]
pub async fn run_sweep(progress: Function) -> Result<String, JsValue> {
    let gpu = gpu().await?;
    let shape = Shape {
        batch: 1,
        heads: 8,
        head_dim: 64,
    };
    let lengths = sweep_lengths(&gpu);
    let mut all: Option<sweep::Sweep> = None;
    for (i, &n) in lengths.iter().enumerate() {
        report(
            &progress,
            serde_json::json!({"done": i, "total": lengths.len(), "seq": n}),
        );
        yield_to_page().await?;
        let s = sweep::run(&gpu, shape, &[n], 3, 5_000.0)
            .await
            .map_err(js)?;
        match &mut all {
            Some(a) => {
                a.points.extend(s.points);
                a.flash_variants = s.flash_variants;
            }
            None => all = Some(s),
        }
    }
    report(
        &progress,
        serde_json::json!({"done": lengths.len(), "total": lengths.len()}),
    );
    serde_json::to_string(&all).map_err(js)
}

/// Trains `preset` for `steps` steps on WebGPU, then on this wasm build; resolves to the
/// comparison as JSON. `progress(json)` hears `{path, step, steps, loss}` after every step.
#[wasm_bindgen]
pub async fn run_training(
    preset: String,
    steps: usize,
    progress: Function,
) -> Result<String, JsValue> {
    if steps == 0 || steps > 1000 {
        return Err(js("steps must be 1..=1000"));
    }
    let gpu = gpu().await?;
    let preset = Preset::parse(&preset).map_err(js)?;
    let setup = Setup::new(preset, None, None).map_err(js)?;
    let mut g = Trainer::new(
        GpuBackend { gpu: gpu.clone() },
        setup.config,
        setup.hyper,
        &setup.start,
    )
    .map_err(js)?;
    for s in 0..steps {
        let loss = g.step(&setup.corpus).await.map_err(js)?;
        report(
            &progress,
            serde_json::json!({"path": "gpu", "step": s + 1, "steps": steps, "loss": loss}),
        );
        yield_to_page().await?;
    }
    let mut c =
        Trainer::new(CpuBackend::plain(), setup.config, setup.hyper, &setup.start).map_err(js)?;
    for s in 0..steps {
        let loss = c.step(&setup.corpus).await.map_err(js)?;
        report(
            &progress,
            serde_json::json!({"path": "cpu", "step": s + 1, "steps": steps, "loss": loss}),
        );
        yield_to_page().await?;
    }
    let mut r = Comparison::new(
        preset.name(),
        setup.config,
        &setup.corpus.source,
        0,
        g.run,
        c.run,
    );
    r.cpu.path = "CPU (this page's wasm build, one thread)".into();
    r.gpu.path = format!("GPU (WebGPU: {})", gpu.profile().name);
    serde_json::to_string(&r).map_err(js)
}
