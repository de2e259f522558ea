//! The demo: text in, attention heatmaps out, on the GPU path or the CPU path.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use kiln_app::kiln::cpu::{self, Array};
use kiln_app::kiln::ops::matmul::{self, Epilogue};
use kiln_app::kiln::{self, Choice, DType, Gpu, Tensor, bench, ops};
use kiln_app::talk::{Code, Stage, Target};
use kiln_app::{BenchReport, Demo, Image, Options, Rates};
use web_time::Instant;

use crate::encoder::{self, Forward};
use crate::heatmap;
use crate::model::{Model, ModelError, Weights};
use crate::tokenizer::{Tokenizer, Tokens};
use crate::walkthrough::{self, Scene, Trace};

/// Where `scripts/fetch-model.sh` unpacks all-MiniLM-L6-v2.
pub const DEFAULT_MODEL_DIR: &str = "models/all-minilm-l6-v2";
pub const DEFAULT_TEXT: &str = "The cat sat on the mat because it was tired.";

/// The model, its tokenizer and its weights on the GPU.
#[derive(Debug)]
pub struct Loaded {
    pub model: Model,
    pub tokenizer: Tokenizer,
    pub gpu_weights: Weights<Tensor>,
}

impl Loaded {
    /// The model named by `--model` (a directory, or `synthetic`), else the fetched MiniLM
    /// when present, else the built-in synthetic weights.
    pub fn new(gpu: &Gpu, choice: Option<&str>) -> Result<Loaded, ModelError> {
        let model = pick_model(choice)?;
        Ok(Loaded {
            tokenizer: Tokenizer::new(&model.vocab)?,
            gpu_weights: model.upload(gpu)?,
            model,
        })
    }

    pub fn encode(&self, text: &str) -> Result<Tokens, ModelError> {
        encode(&self.model, &self.tokenizer, text)
    }

    fn heads(&self) -> usize {
        self.model.config.num_attention_heads
    }

    fn eps(&self) -> f32 {
        self.model.config.layer_norm_eps
    }

    /// The forward pass on the GPU: the results stay there until read.
    pub fn gpu_forward(&self, gpu: &Gpu, ids: &[u32]) -> Result<Forward<Tensor>, ModelError> {
        let rows = self.model.embedding_rows(ids)?;
        let up = |a: &Array| Tensor::from_slice(gpu, &a.shape, &a.data, DType::F32);
        let rows = [up(&rows[0])?, up(&rows[1])?, up(&rows[2])?];
        let path = kiln::GpuBackend { gpu: gpu.clone() };
        Ok(encoder::forward(
            &path,
            &rows,
            &self.gpu_weights,
            self.heads(),
            self.eps(),
        )?)
    }

    /// The same forward pass on the CPU path.
    pub fn cpu_forward(&self, ids: &[u32]) -> Result<Forward<Array>, ModelError> {
        cpu_forward(&self.model, ids)
    }

    pub fn describe(&self) -> String {
        let c = &self.model.config;
        format!(
            "{} layers, {} heads, hidden {}, vocabulary {} — {}",
            c.num_hidden_layers,
            c.num_attention_heads,
            c.hidden_size,
            c.vocab_size,
            self.model.source
        )
    }
}

/// The model named by `--model` (a directory, or `synthetic`), else the fetched MiniLM when
/// present (in the browser: the model the page fetched), else the built-in synthetic weights.
pub fn pick_model(choice: Option<&str>) -> Result<Model, ModelError> {
    match choice {
        Some("synthetic") => Model::synthetic(),
        dir => match kiln_app::model_files(dir, DEFAULT_MODEL_DIR).map_err(ModelError::File)? {
            Some(f) => Model::load(&f.source, &f.config, &f.weights, &f.vocab),
            None => Model::synthetic(),
        },
    }
}

/// The tokens the demo draws for a text: as many as the model takes (its position table's
/// length); a longer text is cut there, and `Tokens::full` says how long it was.
pub fn encode(model: &Model, tokenizer: &Tokenizer, text: &str) -> Result<Tokens, ModelError> {
    tokenizer.encode(text, model.config.max_position_embeddings)
}

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
            "cut: the text has {} tokens; the model takes {limit}",
            tokens.full
        ));
    }
    lines
}

/// The heatmap's lines under its title: the path and token count, the cut, the weights.
pub fn view_notes(path: &str, tokens: &Tokens, model: &Model) -> Vec<String> {
    let mut notes = vec![format!("{path} path · {} tokens", tokens.tokens.len())];
    if tokens.full > tokens.tokens.len() {
        notes.push(format!(
            "cut: {} of {} tokens (the model's limit)",
            tokens.tokens.len(),
            tokens.full
        ));
    }
    if model.synthetic {
        notes.push("SYNTHETIC weights: random, no meaning".into());
    }
    notes
}

/// A forward pass on the CPU path (the GPU is not needed: also the page's fallback without WebGPU).
pub fn cpu_forward(model: &Model, ids: &[u32]) -> Result<Forward<Array>, ModelError> {
    let rows = model.embedding_rows(ids)?;
    let c = &model.config;
    Ok(encoder::forward(
        &kiln::CpuBackend::plain(),
        &rows,
        &model.weights,
        c.num_attention_heads,
        c.layer_norm_eps,
    )?)
}

/// Reads a GPU forward pass back: every hidden state and attention matrix.
pub async fn read_forward(f: &Forward<Tensor>) -> kiln::Result<(Vec<Vec<f32>>, Vec<Vec<f32>>)> {
    let mut hidden = Vec::new();
    for h in &f.hidden {
        hidden.push(h.read().await?);
    }
    let mut probs = Vec::new();
    for p in &f.probs {
        probs.push(p.read().await?);
    }
    Ok((hidden, probs))
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
                let shown = Tokens {
                    tokens: c.tokens.clone(),
                    ids: Vec::new(),
                    full: if c.tokens == self.tokens.tokens {
                        self.tokens.full
                    } else {
                        n
                    },
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

fn model_error(e: ModelError) -> kiln::Error {
    match e {
        ModelError::Kiln(k) => k,
        other => kiln::Error::Parse {
            what: "model".into(),
            detail: other.to_string(),
        },
    }
}

/// One forward pass on the GPU path as a user runs it: the token rows uploaded, every layer
/// recorded, one submission, the last hidden state read back.
async fn gpu_forward_read(gpu: &Gpu, loaded: &Loaded, ids: &[u32]) -> kiln::Result<()> {
    let f = loaded.gpu_forward(gpu, ids).map_err(model_error)?;
    if let Some(h) = f.hidden.last() {
        h.read().await?;
    }
    Ok(())
}

/// Where one forward's wall time goes (medians of `runs`, ms): `record`, the CPU recording
/// every op (the token rows gathered and uploaded included); `submit`, encoding the recording
/// into a command buffer and submitting it; `gpu`, the GPU's time for that submission (timestamps
/// around the whole pass); `wait_read`, from the submission to the last hidden state on the CPU
/// (the GPU's time, the readback's copy and map, and the round trip). Reading back after an
/// explicit flush costs a second, one-copy submission that a plain forward does not have.
async fn wall_breakdown(
    gpu: &Gpu,
    loaded: &Loaded,
    ids: &[u32],
    runs: usize,
) -> kiln::Result<serde_json::Value> {
    let timed = gpu.profile().features.timestamp_query;
    if timed {
        gpu.set_pass_timing(kiln::gpu::PassTiming::PerSubmission)?;
    }
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let (mut record, mut submit, mut wait_read, mut pass) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let f = loaded.gpu_forward(gpu, ids).map_err(model_error)?;
        record.push(ms(start));
        let start = Instant::now();
        gpu.flush()?;
        submit.push(ms(start));
        let start = Instant::now();
        if let Some(h) = f.hidden.last() {
            h.read().await?;
        }
        wait_read.push(ms(start));
        if timed {
            let times = gpu.take_pass_times().await?;
            pass.push(times.first().map_or(0.0, |t| t.ms));
        }
    }
    if timed {
        gpu.set_pass_timing(kiln::gpu::PassTiming::Off)?;
    }
    Ok(serde_json::json!({
        "record": bench::median(&record), "submit": bench::median(&submit),
        "gpu": bench::median(&pass), "wait_read": bench::median(&wait_read),
        "runs": runs.max(1),
    }))
}

/// Times one forward pass on each path with the wall clock: the GPU from upload to the last
/// hidden state read back (after `warm_ms` of warm-up, so the clocks are up), then the CPU path.
async fn time_paths(
    gpu: &Gpu,
    loaded: &Loaded,
    ids: &[u32],
    repeats: usize,
    warm_ms: f64,
    cpu_budget_s: f64,
) -> kiln::Result<(bench::Timing, bench::Timing)> {
    bench::warm_up(async || gpu_forward_read(gpu, loaded, ids).await, warm_ms).await?;
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = Instant::now();
        gpu_forward_read(gpu, loaded, ids).await?;
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let g = bench::Timing::from_samples(bench::Clock::WallClock, 1, samples)?;
    let c = bench::time_cpu(0, repeats, cpu_budget_s, || {
        let _ = loaded.cpu_forward(ids);
    })?;
    Ok((g, c))
}

/// `attention --bench`: tokens, kernels, GPU and CPU time per forward pass, the paths
/// compared layer by layer, `--dump` for the parity script, the heatmaps as PNG.
async fn bench_report(gpu: &Gpu, options: &Options) -> kiln::Result<BenchReport> {
    let loaded = Loaded::new(gpu, options.model.as_deref()).map_err(model_error)?;
    let text = options.text.clone().unwrap_or_else(|| DEFAULT_TEXT.into());
    let max = loaded.model.config.max_position_embeddings;
    let tokens = loaded.tokenizer.encode(&text, max).map_err(model_error)?;
    // The GPU first, its clocks brought up (a forward leaves it idle between submissions, so
    // it can time steadily at low clocks), before the long CPU phase; then where its time goes.
    bench::heat(gpu, 500.0).await?;
    let warm = bench::warm_up_budget_ms(gpu, 3000.0);
    let (g, c) = time_paths(gpu, &loaded, &tokens.ids, options.frames, warm, 30.0).await?;
    bench::heat(gpu, 300.0).await?;
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

    let breakdown = wall_breakdown(gpu, &loaded, &tokens.ids, options.frames.clamp(1, 50)).await?;

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
    let worst = hidden_err
        .iter()
        .chain(&probs_err)
        .copied()
        .fold(0.0, f64::max);
    const TOLERANCE: f64 = 1e-4;

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
        settings: format!("{n} tokens; {}", loaded.describe()),
        gpu: g,
        cpu: c,
        checks: serde_json::json!({
            "unit": "one forward pass (embeddings and every layer) per frame",
            "gpu_clock_note": "wall clock from the token rows uploaded to the last hidden state read back: the 20 lines record every op into one submission",
            "per_forward": profile.counts,
            "gpu_timestamp_ms_per_forward": profile.gpu_ms,
            "gpu_ms_by_family": profile.by_family,
            "wall_breakdown_ms_per_forward": breakdown,
            "tokens": tokens.tokens, "ids": tokens.ids,
            "synthetic_weights": loaded.model.synthetic, "weights": loaded.model.source,
            "kernels": kernels,
            "rel_l2_gpu_vs_cpu_hidden_per_layer": hidden_err,
            "rel_l2_gpu_vs_cpu_attention_per_layer": probs_err,
            "tolerance": TOLERANCE, "agree": worst <= TOLERANCE,
            "cpu_path": "the same encoder function on kiln::cpu (plain single-threaded loops)",
        }),
        image: Some(Image {
            width: img.width as u32,
            height: img.height as u32,
            rgba: img.rgba(),
        }),
    };
    if worst > TOLERANCE || worst.is_nan() {
        return Err(kiln::Error::InvalidArgument {
            op: "attention",
            detail: format!(
                "the GPU and CPU paths disagree: relative L2 error {worst:.3e} over {TOLERANCE:.0e}"
            ),
        });
    }
    Ok(report)
}

/// The kernels one forward pass over `tokens` tokens runs, each with its role in the layer,
/// chosen for `target` exactly as the ops choose them (from the shapes alone): for the device in
/// hand, or for a stored profile where the page has no WebGPU adapter.
pub fn kernel_choices(
    target: Target<'_>,
    model: &Model,
    tokens: usize,
) -> kiln::Result<Vec<(&'static str, Choice)>> {
    let c = &model.config;
    let (n, d, heads, inner) = (
        tokens.max(1),
        c.hidden_size,
        c.num_attention_heads,
        c.intermediate_size,
    );
    let hd = d / heads.max(1);
    let sel = target.selector();
    let f32 = DType::F32;
    let product = |batch, m, n, k, b_trans, epilogue| {
        let mut call = matmul::Call::new(f32, batch, m, n, k);
        call.layout.b_trans = b_trans;
        call.epilogue = epilogue;
        matmul::choose(&sel, &call, None)
    };
    let swap = ops::Widest {
        family: "swap_axes",
        dtype: f32,
        count: None,
    };
    Ok(vec![
        (
            "embeddings",
            sel.choose(&ops::add::call(f32, &[n, d], &[n, d])?, None)?,
        ),
        (
            "layernorm",
            sel.choose(&ops::layernorm::call(f32, d, false), None)?,
        ),
        (
            "projection",
            product(1, n, 3 * d, d, false, Epilogue::Bias)?,
        ),
        ("split heads", sel.choose(&swap, None)?),
        ("scores", product(heads, n, n, hd, true, Epilogue::None)?),
        (
            "softmax",
            sel.choose(&ops::softmax::call(f32, n, false), None)?,
        ),
        ("values", product(heads, n, hd, n, false, Epilogue::None)?),
        (
            "residual",
            sel.choose(&ops::layernorm::call(f32, d, true), None)?,
        ),
        (
            "expand",
            product(1, n, inner, d, false, Epilogue::BiasGelu)?,
        ),
        (
            "project back",
            product(1, n, d, inner, false, Epilogue::Bias)?,
        ),
    ])
}

/// The walkthrough's ten stages, their kernels (`kernels`, from [`kernel_choices`]) rendered
/// for `target`; `synthetic` when the weights are the built-in ones, which the narration then
/// names where it first uses the weights and where it reads what a token attends to.
pub fn stages(
    target: Target<'_>,
    kernels: &[(&'static str, Choice)],
    synthetic: bool,
) -> Vec<Stage> {
    let kernel = |role: &str| -> Option<Code> {
        let (_, choice) = kernels.iter().find(|(r, _)| *r == role)?;
        Code::kernel_for(target, choice)
            .map_err(|e| log::warn!("rendering the {role} kernel failed: {e}"))
            .ok()
    };
    let encoder_rs = include_str!("encoder.rs");
    let tokenizer_rs = include_str!("tokenizer.rs");
    let excerpt = |file: &str, source: &str, name: &str| {
        Some(Code::rust_excerpt(
            &format!("demos/attention/src/{file}"),
            source,
            name,
        ))
    };
    let texts: [(&str, Option<Code>); 10] = [
        (
            "A person types a sentence. The model never sees letters: the text is first \
                 cleaned up (lower case, spaces, accents) and cut into pieces its vocabulary \
                 knows. Left: the characters, and the bytes a computer actually holds.",
            excerpt("tokenizer.rs", tokenizer_rs, "normalise"),
        ),
        (
            "WordPiece splits the text into tokens: whole words when the vocabulary has \
                 them, pieces marked ## when it does not. [CLS] and [SEP] mark the start and \
                 the end. Each token becomes a number, its row in the vocabulary.",
            excerpt("tokenizer.rs", tokenizer_rs, "wordpiece"),
        ),
        (
            "Each token id picks one row of a learned table: a vector of numbers. Two more \
                 tables add where the token sits in the sentence and which segment it is in. \
                 One row per token: a matrix with a row for every token.",
            excerpt("encoder.rs", encoder_rs, "embeddings"),
        ),
        (
            "Layer norm rescales every row to mean 0 and spread 1, then applies learned \
                 weights. The bars on the right show each row's spread: after this step they \
                 are all equal. One GPU workgroup normalises one row.",
            kernel("layernorm"),
        ),
        (
            "One matrix product turns each token's vector into a query (what it looks \
                 for), a key (what it offers) and a value (what it passes on), the bias added \
                 as it is stored. The columns are split into heads: each head attends on its own.",
            excerpt("encoder.rs", encoder_rs, "qkv"),
        ),
        (
            "Every query meets every key: one matrix product per head gives a table of \
                 scores, one row per token, one column per token, scaled by one over the \
                 square root of the head size. High means relevant.",
            kernel("scores"),
        ),
        (
            "Softmax turns each row of scores into weights between 0 and 1 that sum to 1: \
                 how much each token listens to every other. These are the attention weights \
                 the demo draws as its heatmap.",
            kernel("softmax"),
        ),
        (
            "Each token's new vector is the weighted average of all value vectors, with \
                 its row of weights. The heads go side by side again and one more matrix \
                 mixes them.",
            excerpt("encoder.rs", encoder_rs, "values"),
        ),
        (
            "The attention's output is added to the layer's input: the residual \
                 connection. The layer only has to learn a change; the original signal passes \
                 straight through. One kernel adds and normalises each row.",
            kernel("residual"),
        ),
        (
            "The sum is normalised and goes on to the feed-forward block; then the next \
                 layer repeats it all. The same 20 lines ran on the GPU and on the CPU; on the \
                 GPU the whole pass is recorded and submitted once.",
            excerpt("encoder.rs", encoder_rs, "residual"),
        ),
    ];
    const SYNTHETIC: &str = " These weights are synthetic (random, built in: the model was \
        not fetched), so the patterns in the picture mean nothing; a trained model's would.";
    walkthrough::TITLES
        .iter()
        .zip(texts)
        .enumerate()
        .map(|(i, (title, (text, code)))| {
            // Stage 3 first uses the weights; stage 7 reads what a token attends to.
            if synthetic && (i == 2 || i == 6) {
                Stage::new(title, &format!("{text}{SYNTHETIC}"), code)
            } else {
                Stage::new(title, text, code)
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
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
}
