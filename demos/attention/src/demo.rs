//! The demo: text in, attention heatmaps out, on the GPU path or the CPU path.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use kiln_app::kiln::cpu::{self, Array};
use kiln_app::kiln::{self, DType, Gpu, Tensor, bench};
use kiln_app::{BenchReport, Demo, Image, Options, Rates};
use web_time::Instant;

use crate::encoder::{self, Forward};
use crate::heatmap;
use crate::model::{Model, ModelError, Weights};
use crate::tokenizer::{Tokenizer, Tokens};

/// Where `scripts/fetch-model.sh` unpacks all-MiniLM-L6-v2.
pub const DEFAULT_MODEL_DIR: &str = "models/all-minilm-l6-v2";
pub const DEFAULT_TEXT: &str = "The cat sat on the mat because it was tired.";
/// Tokens drawn at most (the model may take more; the heatmap would be unreadable).
const MAX_TOKENS: usize = 48;

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
        let model = match choice {
            Some("synthetic") => Model::synthetic()?,
            dir => match kiln_app::model_files(dir, DEFAULT_MODEL_DIR).map_err(ModelError::File)? {
                Some(f) => Model::load(&f.source, &f.config, &f.weights, &f.vocab)?,
                None => Model::synthetic()?,
            },
        };
        Ok(Loaded {
            tokenizer: Tokenizer::new(&model.vocab)?,
            gpu_weights: model.upload(gpu)?,
            model,
        })
    }

    pub fn encode(&self, text: &str) -> Result<Tokens, ModelError> {
        let max = self.model.config.max_position_embeddings.min(MAX_TOKENS);
        self.tokenizer.encode(text, max)
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
        Ok(encoder::forward(
            &rows,
            &self.gpu_weights,
            self.heads(),
            self.eps(),
        )?)
    }

    /// The same forward pass on the CPU path.
    pub fn cpu_forward(&self, ids: &[u32]) -> Result<Forward<Array>, ModelError> {
        let rows = self.model.embedding_rows(ids)?;
        Ok(encoder::forward(
            &rows,
            &self.model.weights,
            self.heads(),
            self.eps(),
        )?)
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
        if self.on_gpu {
            match self.loaded.gpu_forward(&self.gpu, &self.tokens.ids) {
                Ok(f) => kiln_app::spawn(async move {
                    let r = read_forward(&f).await.map_err(|e| e.to_string());
                    *slot.borrow_mut() = Some(r.map(|(_, probs)| Computed {
                        tokens,
                        probs,
                        path: "GPU",
                    }));
                }),
                Err(e) => *slot.borrow_mut() = Some(Err(e.to_string())),
            }
        } else {
            let r = self.loaded.cpu_forward(&self.tokens.ids).map(|f| Computed {
                tokens,
                probs: f.probs.into_iter().map(|p| p.data).collect(),
                path: "CPU",
            });
            *slot.borrow_mut() = Some(r.map_err(|e| e.to_string()));
        }
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
        let code = encoder::source_lines();
        let img = match &self.shown {
            Some(c) => {
                let n = c.tokens.len();
                let layer = c.probs.get(self.layer).map(Vec::as_slice).unwrap_or(&[]);
                let head = layer
                    .get(self.head * n * n..(self.head + 1) * n * n)
                    .unwrap_or(&[]);
                let title = format!(
                    "layer {} of {}, head {} of {} ({} path)",
                    self.layer + 1,
                    self.layers(),
                    self.head + 1,
                    self.heads(),
                    c.path
                );
                heatmap::view(&c.tokens, head, &title, self.selected, &code)
            }
            None => heatmap::view(&[], &[], "computing…", None, &code),
        };
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
        };
        demo.recompute();
        Ok(demo)
    }

    fn frame(&mut self, _dt: f32) -> kiln::Result<Tensor> {
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
        if self.dirty {
            self.draw()?;
            self.dirty = false;
        }
        Ok(self.pixels.clone())
    }

    fn key(&mut self, key: &str) -> bool {
        let (layers, heads) = (self.layers(), self.heads());
        match key {
            "left" => self.head = (self.head + heads - 1) % heads,
            "right" => self.head = (self.head + 1) % heads,
            "up" => self.layer = (self.layer + layers - 1) % layers,
            "down" => self.layer = (self.layer + 1) % layers,
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
        lines.push(format!("text: {}", self.text));
        let mut line = format!("{} tokens:", self.tokens.tokens.len());
        for t in &self.tokens.tokens {
            if line.chars().count() + t.chars().count() > 40 {
                lines.push(std::mem::take(&mut line));
            }
            line.push(' ');
            line.push_str(t);
        }
        lines.push(line);
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
            let (g, c) = time_paths(&gpu, &loaded, &ids, 5, 1.0).await?;
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

/// Times one forward pass on each path: the GPU with the wall clock (the ops are submitted one
/// by one as the 20 lines call them, until the GPU is idle), the CPU path likewise.
async fn time_paths(
    gpu: &Gpu,
    loaded: &Loaded,
    ids: &[u32],
    repeats: usize,
    cpu_budget_s: f64,
) -> kiln::Result<(bench::Timing, bench::Timing)> {
    let mut samples = Vec::with_capacity(repeats);
    for k in 0..=repeats {
        let start = Instant::now();
        // The results stay on the GPU; only the time until it is idle counts.
        loaded.gpu_forward(gpu, ids).map_err(model_error)?;
        gpu.idle().await?;
        if k > 0 {
            samples.push(start.elapsed().as_secs_f64() * 1e3);
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
async fn bench_report(gpu: &Gpu, options: &Options) -> kiln::Result<BenchReport> {
    let loaded = Loaded::new(gpu, options.model.as_deref()).map_err(model_error)?;
    let text = options.text.clone().unwrap_or_else(|| DEFAULT_TEXT.into());
    let max = loaded.model.config.max_position_embeddings;
    let tokens = loaded.tokenizer.encode(&text, max).map_err(model_error)?;
    let (g, c) = time_paths(gpu, &loaded, &tokens.ids, options.frames, 30.0).await?;

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
            "gpu_clock_note": "wall clock: the ops are submitted one by one, as the 20 lines call them, until the GPU is idle",
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
