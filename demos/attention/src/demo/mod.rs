//! The demo: text in, attention heatmaps out, on the GPU path or the CPU path. This file wires
//! it into the app (`Demo`): the frame loop, keys, the pointer, the HUD, the walkthrough and the
//! benchmark. What the demo holds is in `state.rs`, running the forward pass in `compute.rs`,
//! drawing in `draw.rs`; loading is in `load.rs`, the benchmark in `measure.rs`, the
//! walkthrough's stages in `stages.rs`, the token and heatmap lines in `captions.rs`.

mod compute;
mod draw;
mod state;

pub use state::Attention;

use std::future::Future;
use std::rc::Rc;

use kiln_app::kiln::{self, Choice, DType, Gpu, Tensor, bench};
use kiln_app::talk::{Stage, Target};
use kiln_app::{BenchReport, Demo, Options, Rates, RatesSource};

use crate::captions::token_summary;
use crate::heatmap;
use crate::load::{DEFAULT_TEXT, Loaded, model_dtype, model_error};
use crate::measure::{bench_report, time_paths};
use crate::stages::stages;
use crate::tokenizer::Tokens;
use crate::walkthrough;

impl Demo for Attention {
    const NAME: &'static str = "attention";
    const TITLE: &'static str = "Kiln · attention";
    const WINDOW: (u32, u32) = (1600, 900);

    fn new(gpu: &Gpu, options: &Options) -> kiln::Result<Self> {
        // f16 asked of an adapter without shader-f16: natively an error (the flag asked for
        // it); on the page, where a visitor's browser decides, f32 and the HUD says why.
        let asked = model_dtype(options.dtype.as_deref())?;
        let fall_back = cfg!(target_arch = "wasm32")
            && asked == DType::F16
            && !gpu.profile().features.shader_f16;
        let dtype = if fall_back { DType::F32 } else { asked };
        let loaded = Loaded::new(gpu, options.model.as_deref(), dtype).map_err(model_error)?;
        let mut demo = Attention {
            gpu: gpu.clone(),
            loaded: Rc::new(loaded),
            f16_refused: fall_back,
            text: options.text.clone().unwrap_or_else(|| DEFAULT_TEXT.into()),
            tokens: Tokens {
                tokens: Vec::new(),
                ids: Vec::new(),
                full: 0,
                counted_all: true,
            },
            on_gpu: true,
            layer: 0,
            head: 0,
            selected: None,
            slot: Rc::default(),
            shown: None,
            error: None,
            pixels: Tensor::uninit(gpu, &[heatmap::HEIGHT, heatmap::WIDTH], DType::U32)?,
            dirty: true,
            // Presenter mode from the start (natively --talk, in the browser ?talk): the first
            // forward pass already keeps the walkthrough's tensors.
            stage: options
                .talk
                .then_some(options.stage.unwrap_or(1).saturating_sub(1)),
            talk_pixels: Tensor::uninit(
                gpu,
                &[walkthrough::HEIGHT, walkthrough::WIDTH],
                DType::U32,
            )?,
            clock: 0.0,
            drawn_step: None,
            pass: 0,
            pending: None,
            last_pass: None,
            cpu_faster: None,
            chose_gpu: false,
            auto_cpu: false,
        };
        demo.recompute();
        Ok(demo)
    }

    fn frame(&mut self, dt: f32) -> kiln::Result<Tensor> {
        self.clock += dt;
        let arrived = self.slot.borrow_mut().take();
        // A pass that was overtaken (a new text, the other path) is dropped.
        if let Some((_, result)) = arrived.filter(|(pass, _)| *pass == self.pass) {
            self.finished(result.is_ok());
            match result {
                Ok(c) => {
                    self.shown = Some(c);
                    self.error = None;
                }
                Err(e) => self.error = Some(e),
            }
            self.dirty = true;
        }
        if let Some(stage) = self.stage {
            // The highlights move in steps: redraw when the step changes, not every frame.
            let step = (self.clock * 12.0) as u64;
            if self.dirty || self.drawn_step != Some(step) {
                self.draw_stage(stage)?;
                self.drawn_step = Some(step);
                self.dirty = false;
            }
            return Ok(self.talk_pixels.clone());
        }
        if self.dirty {
            self.draw()?;
            self.dirty = false;
        }
        Ok(self.pixels.clone())
    }

    fn stages(&self) -> Vec<Stage> {
        let kernels = self.choices().unwrap_or_else(|e| {
            log::warn!("the walkthrough shows no kernel code: {e}");
            Vec::new()
        });
        stages(
            Target::Device(&self.gpu),
            &kernels,
            self.loaded.model.synthetic,
        )
    }

    fn show_stage(&mut self, stage: usize) {
        let before = self.stage.replace(stage);
        self.dirty = true;
        let traced = self.shown.as_ref().is_some_and(|c| c.trace.is_some());
        // Entering presenter mode after a pass without the walkthrough's tensors: run it again.
        if before.is_none() && !traced {
            self.recompute();
        }
    }

    fn kernels(&self) -> Vec<Choice> {
        match self.choices() {
            Ok(list) => list.into_iter().map(|(_, c)| c).collect(),
            Err(e) => {
                log::warn!("the kernel-source view is empty: {e}");
                Vec::new()
            }
        }
    }

    fn key(&mut self, key: &str) -> bool {
        let (layers, heads) = (self.layers(), self.heads());
        match key {
            "left" => self.head = (self.head + heads - 1) % heads,
            "right" => self.head = (self.head + 1) % heads,
            "up" | "down" => {
                let step = if key == "up" { layers - 1 } else { 1 };
                self.layer = (self.layer + step) % layers;
                // The walkthrough draws the layer's intermediate tensors: compute them.
                if self.stage.is_some() {
                    self.recompute();
                }
            }
            "tab" => {
                // The visitor's choice: a long text stays on the GPU path if chosen here.
                self.on_gpu = !self.on_gpu;
                self.chose_gpu = self.on_gpu;
                self.auto_cpu = false;
                self.recompute();
                return true;
            }
            "backspace" => {
                self.text.pop();
                self.recompute();
                return true;
            }
            "space" => {
                self.text.push(' ');
                self.recompute();
                return true;
            }
            k if k.chars().count() == 1 => {
                self.text.push_str(k);
                self.recompute();
                return true;
            }
            _ => return false,
        }
        self.dirty = true;
        false
    }

    fn set_text(&mut self, text: &str) -> bool {
        if text == self.text {
            return false;
        }
        self.text = text.to_string();
        self.recompute();
        true
    }

    fn pointer(&mut self, at: Option<(f32, f32)>) {
        // Presenter mode's visuals have no cells to point at.
        if self.stage.is_some() {
            return;
        }
        let n = self.shown.as_ref().map_or(0, |c| c.tokens.len());
        let cell = at.and_then(|(x, y)| heatmap::cell_at(n, x, y));
        if cell != self.selected {
            self.selected = cell;
            self.dirty = true;
        }
    }

    fn hud(&self) -> Vec<String> {
        // Short lines: natively the HUD shares the left half of the view with the code.
        let mut lines = Vec::new();
        if self.loaded.model.synthetic {
            lines.push("weights: SYNTHETIC, built in".into());
            lines.push("  (fetch-model.sh gets MiniLM)".into());
        } else {
            lines.push(format!("weights: {}", self.loaded.model.source));
        }
        let c = &self.loaded.model.config;
        lines.push(format!(
            "{} layers, {} heads, hidden {}, GPU in {}",
            c.num_hidden_layers,
            c.num_attention_heads,
            c.hidden_size,
            self.loaded.dtype.wgsl()
        ));
        if self.f16_refused {
            lines.push("  (f16 asked for: no shader-f16 here)".into());
        }
        // The text itself is in the page's field (and typed into the window): not repeated.
        lines.extend(token_summary(
            &self.tokens,
            self.loaded.model.config.max_position_embeddings,
        ));
        lines.push(format!(
            "path: {}; layer {}/{}, head {}/{}",
            if self.on_gpu { "GPU" } else { "CPU" },
            self.layer + 1,
            self.layers(),
            self.head + 1,
            self.heads()
        ));
        if self.auto_cpu && !self.on_gpu {
            lines.push("  (the CPU path for this long text: it was".into());
            lines.push("  measured faster here; Tab: the GPU path)".into());
        }
        if let Some(p) = self
            .pending
            .filter(|p| p.since.elapsed().as_secs_f64() >= 1.0)
        {
            lines.push(format!(
                "forward: {} tokens on the {} path, {:.0} s so far",
                p.tokens,
                p.path,
                p.since.elapsed().as_secs_f64()
            ));
            if let (Some(ms), Some(last)) = (self.estimate_ms(&p), self.last_pass) {
                lines.push(format!(
                    "  about {:.0} s in all, from the last pass ({} tokens in {:.1} s)",
                    ms / 1e3,
                    last.tokens,
                    last.ms / 1e3
                ));
            }
        }
        if let Some(w) = self.selected_weight() {
            lines.push(w);
        }
        if let Some(e) = &self.error {
            lines.push(format!("error: {e}"));
        }
        lines.push("type to edit; arrows: head, layer;".into());
        lines.push("Tab: GPU/CPU; hover: read a weight".into());
        lines
    }

    fn measure(&self) -> impl Future<Output = kiln::Result<Rates>> + 'static {
        let (gpu, loaded, ids) = (
            self.gpu.clone(),
            self.loaded.clone(),
            self.tokens.ids.clone(),
        );
        // A long text moved to the CPU path (measured faster): the GPU path is not timed at
        // it (a software adapter would take minutes a pass).
        let gpu_off = self.auto_cpu && !self.on_gpu;
        async move {
            if gpu_off {
                let c = bench::time_cpu(0, 5, 1.0, || {
                    let _ = loaded.cpu_forward(&ids);
                })?;
                return Ok(Rates {
                    gpu_fps: f64::NAN,
                    cpu_fps: 1e3 / c.median_ms,
                    gpu_clock: bench::Clock::WallClock,
                });
            }
            // Up to five passes each, fewer where a pass is slow (two seconds' worth after the
            // first): a software adapter takes seconds a pass.
            let warm = bench::warm_up_budget_ms(&gpu, 200.0);
            let (g, c) = time_paths(&gpu, &loaded, &ids, 5, warm, 1.0, 2.0).await?;
            Ok(Rates {
                gpu_fps: 1e3 / g.median_ms,
                cpu_fps: 1e3 / c.median_ms,
                gpu_clock: g.clock,
            })
        }
    }

    /// Where the CPU path measured faster (a software adapter), the page says so once and
    /// offers it (`kiln:advice`), and a long text runs on it.
    fn rates(&mut self, r: &Rates, _source: &RatesSource) {
        if !r.gpu_fps.is_finite() {
            return;
        }
        let faster = r.cpu_fps > r.gpu_fps;
        self.cpu_faster = faster.then_some((r.gpu_fps, r.cpu_fps));
        let advice = serde_json::json!({
            "cpu_faster": faster, "gpu_fps": r.gpu_fps, "cpu_fps": r.cpu_fps,
            "gpu_clock": r.gpu_clock.as_str(), "software": self.gpu.profile().is_software(),
            "on_gpu": self.on_gpu, "tokens": self.tokens.ids.len(), "long_text": state::LONG_TEXT,
        });
        kiln_app::publish("advice", &advice.to_string());
    }

    fn bench(gpu: &Gpu, options: &Options) -> impl Future<Output = kiln::Result<BenchReport>> {
        let (gpu, options) = (gpu.clone(), options.clone());
        async move { bench_report(&gpu, &options).await }
    }
}
