//! The demo: text in, attention heatmaps out, on the GPU path or the CPU path. Loading is in
//! `load.rs`, the benchmark in `measure.rs`, the walkthrough's stages in `stages.rs`.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use kiln_app::kiln::{self, Choice, DType, Gpu, Tensor, bench};
use kiln_app::talk::{Stage, Target};
use kiln_app::{BenchReport, Demo, Options, Rates};

use crate::heatmap;
use crate::model::Model;
use crate::tokenizer::Tokens;
use crate::walkthrough::{self, Scene, Trace};

use crate::load::{DEFAULT_TEXT, Loaded, model_error};
use crate::measure::{bench_report, time_paths};
use crate::stages::{kernel_choices, stages};

/// The tokens in a few words for the HUD: all of them when they are few, else the first and
/// the last few with the count (the page shows the text itself, and a long text's token list
/// would push the page down by thousands of pixels); and the cut, said plainly.
pub fn token_summary(tokens: &Tokens, limit: usize) -> Vec<String> {
    const FEW: usize = 24;
    let t = &tokens.tokens;
    let n = t.len();
    let mut words: Vec<&str> = t.iter().map(String::as_str).collect();
    if n > FEW {
        words = t[..16]
            .iter()
            .map(String::as_str)
            .chain(["…"])
            .chain(t[n - 4..].iter().map(String::as_str))
            .collect();
    }
    let mut lines = Vec::new();
    let mut line = format!("{n} tokens:");
    for w in words {
        if line.chars().count() + w.chars().count() > 40 {
            lines.push(std::mem::take(&mut line));
        }
        line.push(' ');
        line.push_str(w);
    }
    lines.push(line);
    if tokens.full > n {
        lines.push(format!(
            "cut: the text has {}{} tokens; the model takes {limit}",
            over(tokens),
            tokens.full
        ));
    }
    lines
}

/// "over " where the count is of the part of the text read before the cut, not all of it.
fn over(tokens: &Tokens) -> &'static str {
    if tokens.counted_all { "" } else { "over " }
}

/// The heatmap's lines under its title: the path and token count, the cut, the weights.
pub fn view_notes(path: &str, tokens: &Tokens, model: &Model) -> Vec<String> {
    let mut notes = vec![format!("{path} path · {} tokens", tokens.tokens.len())];
    if tokens.full > tokens.tokens.len() {
        notes.push(format!(
            "cut: {} of {}{} tokens (the model's limit)",
            tokens.tokens.len(),
            over(tokens),
            tokens.full
        ));
    }
    if model.synthetic {
        notes.push("SYNTHETIC weights: random, no meaning".into());
    }
    notes
}

/// The attention weights of one text, from one path.
#[derive(Clone, Debug)]
struct Computed {
    tokens: Vec<String>,
    /// Per layer, [heads, N, N].
    probs: Vec<Vec<f32>>,
    path: &'static str,
    /// The walkthrough's tensors for the current layer (read only in presenter mode).
    trace: Option<Trace>,
}

type Slot = Rc<RefCell<Option<Result<Computed, String>>>>;

#[derive(Debug)]
pub struct Attention {
    gpu: Gpu,
    loaded: Rc<Loaded>,
    text: String,
    tokens: Tokens,
    on_gpu: bool,
    layer: usize,
    head: usize,
    selected: Option<(usize, usize)>,
    /// Filled when the path's results are on the CPU (the GPU readback is asynchronous in the
    /// browser); `shown` is what the heatmap draws.
    slot: Slot,
    shown: Option<Computed>,
    error: Option<String>,
    pixels: Tensor,
    dirty: bool,
    /// Presenter mode: the walkthrough stage shown (0-based), its frame, the clock its
    /// highlights move with, and the highlight step last drawn.
    stage: Option<usize>,
    talk_pixels: Tensor,
    clock: f32,
    drawn_step: Option<u64>,
}

impl Attention {
    /// Tokenises the text and runs the forward pass on the current path.
    fn recompute(&mut self) {
        self.tokens = match self.loaded.encode(&self.text) {
            Ok(t) => t,
            Err(e) => {
                self.error = Some(e.to_string());
                return;
            }
        };
        let slot = self.slot.clone();
        let tokens = self.tokens.tokens.clone();
        // Only presenter mode draws the intermediate tensors: read them back only there.
        let traced = self.stage.map(|_| self.layer);
        if self.on_gpu {
            match self.loaded.gpu_forward(&self.gpu, &self.tokens.ids) {
                Ok(f) => kiln_app::spawn(async move {
                    let r = async {
                        let mut probs = Vec::with_capacity(f.probs.len());
                        for p in &f.probs {
                            probs.push(p.read().await?);
                        }
                        let trace = match traced {
                            Some(layer) => Some(Trace::read(&f, layer).await?),
                            None => None,
                        };
                        Ok::<_, kiln::Error>(Computed {
                            tokens,
                            probs,
                            path: "GPU",
                            trace,
                        })
                    };
                    *slot.borrow_mut() = Some(r.await.map_err(|e| e.to_string()));
                }),
                Err(e) => *slot.borrow_mut() = Some(Err(e.to_string())),
            }
        } else {
            let r = self.loaded.cpu_forward(&self.tokens.ids).map(|f| Computed {
                tokens,
                trace: traced.and_then(|layer| Trace::from_cpu(&f, layer)),
                probs: f.probs.into_iter().map(|p| p.data).collect(),
                path: "CPU",
            });
            *slot.borrow_mut() = Some(r.map_err(|e| e.to_string()));
        }
    }

    /// The kernels one forward pass runs for the current text, on this device.
    fn choices(&self) -> kiln::Result<Vec<(&'static str, Choice)>> {
        kernel_choices(
            Target::Device(&self.gpu),
            &self.loaded.model,
            self.tokens.ids.len(),
        )
    }

    /// Draws presenter mode's frame: the stage's visual at the current highlight step.
    fn draw_stage(&mut self, stage: usize) -> kiln::Result<()> {
        let c = &self.loaded.model.config;
        // A result for an earlier text (a recompute is on its way) would put these labels on
        // another sentence's tensors: draw it only when it is for this text.
        let shown = self
            .shown
            .as_ref()
            .filter(|c| c.tokens == self.tokens.tokens);
        let scene = Scene {
            text: &self.text,
            tokens: &self.tokens.tokens,
            ids: &self.tokens.ids,
            trace: shown.and_then(|c| c.trace.as_ref()),
            layers: c.num_hidden_layers,
            head: self.head,
            vocab: c.vocab_size,
            hidden: c.hidden_size,
            path: shown.map_or(if self.on_gpu { "GPU" } else { "CPU" }, |c| c.path),
            synthetic: self.loaded.model.synthetic,
            time: self.clock,
        };
        let img = walkthrough::draw(stage, &scene);
        // The page's test reads every text's box and size on the stage.
        kiln_app::publish("texts", &img.texts_json(Some(stage)));
        self.talk_pixels.write_u32(&img.pixels)
    }

    fn layers(&self) -> usize {
        self.loaded.model.config.num_hidden_layers
    }

    fn heads(&self) -> usize {
        self.loaded.model.config.num_attention_heads
    }

    /// The weight under the pointer, in words.
    fn selected_weight(&self) -> Option<String> {
        let c = self.shown.as_ref()?;
        let (i, j) = self.selected?;
        let n = c.tokens.len();
        let w = c.probs.get(self.layer)?.get((self.head * n + i) * n + j)?;
        Some(format!(
            "weight '{}' -> '{}': {w:.4}",
            c.tokens[i], c.tokens[j]
        ))
    }

    fn draw(&mut self) -> kiln::Result<()> {
        let model = &self.loaded.model;
        let empty = Vec::new();
        let (tokens, head, title, notes) = match &self.shown {
            Some(c) => {
                let n = c.tokens.len();
                let layer = c.probs.get(self.layer).map(Vec::as_slice).unwrap_or(&[]);
                let head = layer
                    .get(self.head * n * n..(self.head + 1) * n * n)
                    .unwrap_or(&[]);
                let title = format!(
                    "layer {} of {}, head {} of {}",
                    self.layer + 1,
                    self.layers(),
                    self.head + 1,
                    self.heads(),
                );
                // The cut is the current text's; the shown tokens may be an earlier text's.
                let current = c.tokens == self.tokens.tokens;
                let shown = Tokens {
                    tokens: c.tokens.clone(),
                    ids: Vec::new(),
                    full: if current { self.tokens.full } else { n },
                    counted_all: !current || self.tokens.counted_all,
                };
                (&c.tokens, head, title, view_notes(c.path, &shown, model))
            }
            None => (&empty, &[][..], "computing…".to_string(), Vec::new()),
        };
        let (img, labels) = heatmap::view(&heatmap::View {
            tokens,
            weights: head,
            title: &title,
            notes: &notes,
            selected: self.selected,
        });
        // The page's test reads how the labels were drawn (their size, which tokens, where).
        kiln_app::publish(
            "labels",
            &serde_json::to_string(&labels).unwrap_or_default(),
        );
        self.pixels.write_u32(&img.pixels)
    }
}

impl Demo for Attention {
    const NAME: &'static str = "attention";
    const TITLE: &'static str = "Kiln · attention";
    const WINDOW: (u32, u32) = (1600, 900);

    fn new(gpu: &Gpu, options: &Options) -> kiln::Result<Self> {
        let loaded = Loaded::new(gpu, options.model.as_deref()).map_err(model_error)?;
        let mut demo = Attention {
            gpu: gpu.clone(),
            loaded: Rc::new(loaded),
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
        };
        demo.recompute();
        Ok(demo)
    }

    fn frame(&mut self, dt: f32) -> kiln::Result<Tensor> {
        self.clock += dt;
        if let Some(result) = self.slot.borrow_mut().take() {
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
                self.on_gpu = !self.on_gpu;
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
            "{} layers, {} heads, hidden {}",
            c.num_hidden_layers, c.num_attention_heads, c.hidden_size
        ));
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
        async move {
            let warm = bench::warm_up_budget_ms(&gpu, 200.0);
            let (g, c) = time_paths(&gpu, &loaded, &ids, 5, warm, 1.0).await?;
            Ok(Rates {
                gpu_fps: 1e3 / g.median_ms,
                cpu_fps: 1e3 / c.median_ms,
                gpu_clock: g.clock,
            })
        }
    }

    fn bench(gpu: &Gpu, options: &Options) -> impl Future<Output = kiln::Result<BenchReport>> {
        let (gpu, options) = (gpu.clone(), options.clone());
        async move { bench_report(&gpu, &options).await }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::load::{cpu_forward, encode};
    use crate::tokenizer::Tokenizer;
    use kiln_app::talk::{self, Stored};

    /// A page without a WebGPU adapter shows the whole walkthrough: every stage's words and
    /// code (the kernels rendered for a stored profile) and every stage's visual drawn from a
    /// CPU forward pass.
    #[test]
    fn the_walkthrough_needs_no_device() {
        let model = Model::synthetic().unwrap();
        let tokenizer = Tokenizer::new(&model.vocab).unwrap();
        let tokens = encode(&model, &tokenizer, DEFAULT_TEXT).unwrap();
        let stored = Stored::webgpu_defaults().unwrap();
        let target = Target::Stored(&stored);
        let kernels = kernel_choices(target, &model, tokens.ids.len()).unwrap();
        let list = stages(target, &kernels, model.synthetic);
        talk::check(&list).unwrap();
        assert_eq!(list.len(), walkthrough::TITLES.len());
        // Synthetic weights are named where the narration reads meaning into them.
        assert!(list[6].text.contains("synthetic"), "{}", list[6].text);
        let real = stages(target, &kernels, false);
        assert!(real.iter().all(|s| !s.text.contains("synthetic")));
        for s in &list {
            let code = s.code.as_ref().expect("every stage shows code");
            if code.language == "wgsl" {
                assert!(code.caption.contains("stored profile"), "{}", code.caption);
            }
        }
        let wgsl = list
            .iter()
            .filter(|s| s.code.as_ref().is_some_and(|c| c.language == "wgsl"))
            .count();
        assert_eq!(
            wgsl, 4,
            "layer norm, scores, softmax and the residual show kernels"
        );
        let f = cpu_forward(&model, &tokens.ids).unwrap();
        let trace = Trace::from_cpu(&f, 0).expect("layer 0 is traced");
        for stage in 0..list.len() {
            let scene = Scene {
                text: DEFAULT_TEXT,
                tokens: &tokens.tokens,
                ids: &tokens.ids,
                trace: Some(&trace),
                layers: model.config.num_hidden_layers,
                head: 0,
                vocab: model.config.vocab_size,
                hidden: model.config.hidden_size,
                path: "CPU",
                synthetic: model.synthetic,
                time: 1.0,
            };
            let img = walkthrough::draw(stage, &scene);
            let distinct: std::collections::HashSet<u32> = img.pixels.iter().copied().collect();
            assert!(
                distinct.len() > 8,
                "stage {}: a near-blank picture",
                stage + 1
            );
        }
    }

    /// Where the projection writes Q, K and V into heads itself (the browser's SwiftShader
    /// profile: the tiled route, which has the two-output forms), the split's stage shows the
    /// projection's launch, and every role still has a kernel.
    #[test]
    fn a_split_folded_into_the_projection_shows_the_projections_kernel() {
        let model = Model::synthetic().unwrap();
        let tokenizer = Tokenizer::new(&model.vocab).unwrap();
        let tokens = encode(&model, &tokenizer, DEFAULT_TEXT).unwrap();
        let stored = Stored::profile("chromium-swiftshader").unwrap();
        let kernels = kernel_choices(Target::Stored(&stored), &model, tokens.ids.len()).unwrap();
        let name = |role: &str| {
            let (_, c) = kernels.iter().find(|(r, _)| *r == role).unwrap();
            format!("{}/{}", c.variant.family, c.variant.name)
        };
        assert!(
            name("split heads").ends_with("_bias_and_heads"),
            "{kernels:?}"
        );
        assert_eq!(name("split heads"), name("projection"));
    }
}
