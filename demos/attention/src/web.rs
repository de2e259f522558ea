//! The browser's CPU fallback: without a WebGPU adapter there is no window to open (kiln-app's
//! `run` returns), and the page (site/src/attention.js) draws this export's heatmaps into a 2D
//! canvas: the same encoder on kiln's CPU loops, in this WebAssembly module, on one thread. The
//! walkthrough runs on it too: every stage's visual from a CPU forward pass, the kernels
//! rendered for a stored profile. Also the Kiln side of the page's comparison with
//! transformers.js: one sentence embedded on the GPU path, timed.

use attention::captions::{token_summary, view_notes};
use attention::heatmap::{self, Labels};
use std::cell::RefCell;
use std::rc::Rc;

use attention::load::{Loaded, cpu_forward, encode, pick_model};
use attention::model::Model;
use attention::stages::{kernel_choices, stages};
use attention::tokenizer::{Tokenizer, Tokens};
use attention::walkthrough::{self, Scene, Trace};
use kiln_app::kiln::DType;
use kiln_app::talk::{Stored, Target};
use kiln_app::web::{js_error, js_value, page_gpu};
use wasm_bindgen::prelude::*;
use web_time::Instant;

thread_local! {
    /// The comparison's model on the page's GPU device, uploaded on first use.
    static EMBEDDER: RefCell<Option<Rc<Loaded>>> = const { RefCell::new(None) };
}

/// The Kiln side of the attention page's comparison with transformers.js
/// (site/src/compare.js): `text` embedded on the GPU path as an embedding call runs it
/// ([`Loaded::gpu_embedding`]: tokens, the forward replayed, the last hidden state read back and
/// mean-pooled) `runs` times on the wall clock, each from the text to the embedding on the CPU —
/// what transformers.js's `extractor(text, {pooling: 'mean'})` does. Resolves to JSON:
/// `{adapter, weights, tokens, ids, ms, embedding}`.
#[wasm_bindgen]
pub async fn embed_timed(text: String, runs: usize) -> Result<String, JsValue> {
    if !(1..=1000).contains(&runs) {
        return Err(js_value("runs must be 1..=1000"));
    }
    let gpu = page_gpu().await?;
    let loaded = match EMBEDDER.with(|e| e.borrow().clone()) {
        Some(l) => l,
        None => {
            let l = Rc::new(Loaded::new(&gpu, None, DType::F32).map_err(js_value)?);
            EMBEDDER.with(|e| *e.borrow_mut() = Some(l.clone()));
            l
        }
    };
    let mut last = None;
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let tokens = loaded.encode(&text).map_err(js_value)?;
        let embedding = loaded
            .gpu_embedding(&gpu, &tokens.ids)
            .await
            .map_err(js_value)?;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        last = Some((tokens, embedding));
    }
    let (tokens, embedding) = last.ok_or_else(|| js_value("no run"))?;
    Ok(serde_json::json!({
        "adapter": gpu.profile().name, "weights": loaded.model.source,
        "tokens": tokens.tokens, "ids": tokens.ids, "ms": ms, "embedding": embedding,
    })
    .to_string())
}

/// Keeps the page's GPU busy for `ms` (kiln's `bench::warm_up_clocks`; nothing on a software
/// adapter), so that a measurement script times it at its clocks (site/tests/measure-dawn.mjs).
#[wasm_bindgen]
pub async fn warm_up_clocks(ms: f64) -> Result<(), JsValue> {
    let gpu = page_gpu().await?;
    kiln_app::kiln::bench::warm_up_clocks(&gpu, ms)
        .await
        .map_err(js_value)
}

/// The encoder on the CPU path and the demo's heatmap view, for a page without WebGPU.
#[wasm_bindgen]
#[derive(Debug)]
pub struct CpuAttention {
    model: Model,
    tokenizer: Tokenizer,
    /// The tokens of the text drawn last, in a few lines (captions::token_summary).
    tokens: String,
    /// How the last heatmap's labels were drawn.
    labels: Option<Labels>,
    /// The last walkthrough stage's texts, as JSON.
    texts: String,
    /// The walkthrough's last forward pass: its text, tokens and layer, and the layer's trace.
    traced: Option<(String, Tokens, usize, Option<Trace>)>,
}

#[wasm_bindgen]
impl CpuAttention {
    /// The built-in weights when `synthetic`, else the model the page fetched before starting
    /// the module (`window.kilnModel`), else the built-in weights.
    #[wasm_bindgen(constructor)]
    pub fn new(synthetic: bool) -> Result<CpuAttention, JsError> {
        let model = pick_model(synthetic.then_some("synthetic")).map_err(js_error)?;
        Ok(CpuAttention {
            tokenizer: Tokenizer::new(&model.vocab).map_err(js_error)?,
            model,
            tokens: String::new(),
            labels: None,
            texts: String::new(),
            traced: None,
        })
    }

    /// Runs the encoder on the CPU path for `text` and draws head `head` of layer `layer` (both
    /// wrap around) with the tokens on both axes: RGBA8 bytes, `width` × `height`.
    pub fn draw(&mut self, text: &str, layer: usize, head: usize) -> Result<Vec<u8>, JsError> {
        let tokens = encode(&self.model, &self.tokenizer, text).map_err(js_error)?;
        let f = cpu_forward(&self.model, &tokens.ids).map_err(js_error)?;
        let c = &self.model.config;
        let (layer, head) = (
            layer % c.num_hidden_layers.max(1),
            head % c.num_attention_heads.max(1),
        );
        let n = tokens.ids.len();
        let probs = f.probs.get(layer).map_or(&[][..], |p| &p.data[..]);
        let one = probs.get(head * n * n..(head + 1) * n * n).unwrap_or(&[]);
        let title = format!(
            "layer {} of {}, head {} of {}",
            layer + 1,
            c.num_hidden_layers,
            head + 1,
            c.num_attention_heads
        );
        let notes = view_notes("CPU", &tokens, &self.model);
        let (img, labels) = heatmap::view(&heatmap::View {
            tokens: &tokens.tokens,
            weights: one,
            title: &title,
            notes: &notes,
            selected: None,
        });
        self.tokens = token_summary(&tokens, c.max_position_embeddings).join("\n");
        self.labels = Some(labels);
        Ok(img.rgba())
    }

    /// Walkthrough stage `stage` (0-based) for `text`, layer `layer`, head `head`, `time`
    /// seconds in (the highlights move with it): RGBA8 bytes, `stage_width` × `stage_height`.
    /// The forward pass runs on the CPU path once per text and layer.
    pub fn stage(
        &mut self,
        stage: usize,
        text: &str,
        layer: usize,
        head: usize,
        time: f32,
    ) -> Result<Vec<u8>, JsError> {
        let c = &self.model.config;
        let layer = layer % c.num_hidden_layers.max(1);
        let fresh = self
            .traced
            .as_ref()
            .is_some_and(|(t, _, l, _)| t == text && *l == layer);
        if !fresh {
            let tokens = encode(&self.model, &self.tokenizer, text).map_err(js_error)?;
            let f = cpu_forward(&self.model, &tokens.ids).map_err(js_error)?;
            let trace = Trace::from_cpu(&f, layer);
            self.tokens = token_summary(&tokens, c.max_position_embeddings).join("\n");
            self.traced = Some((text.to_string(), tokens, layer, trace));
        }
        let Some((_, tokens, _, trace)) = &self.traced else {
            return Err(JsError::new("the walkthrough's forward pass is missing"));
        };
        let scene = Scene {
            text,
            tokens: &tokens.tokens,
            ids: &tokens.ids,
            trace: trace.as_ref(),
            layers: c.num_hidden_layers,
            head: head % c.num_attention_heads.max(1),
            vocab: c.vocab_size,
            hidden: c.hidden_size,
            path: "CPU",
            synthetic: self.model.synthetic,
            time,
        };
        let img = walkthrough::draw(stage, &scene);
        self.texts = img.texts_json(Some(stage));
        Ok(img.rgba())
    }

    /// The last stage's texts as JSON: the picture's size, and each text's box and letter height
    /// (heatmap::Image::texts_json), for the page's tests.
    #[wasm_bindgen(getter)]
    pub fn texts(&self) -> String {
        self.texts.clone()
    }

    /// The walkthrough's stages as JSON (kiln-app's `Stage`s) for `text`, the kernels chosen
    /// and rendered for WebGPU's guaranteed limits: this browser has no adapter to render them
    /// for.
    pub fn talk_stages(&self, text: &str) -> Result<String, JsError> {
        let stored = Stored::webgpu_defaults().map_err(js_error)?;
        let target = Target::Stored(&stored);
        let tokens = encode(&self.model, &self.tokenizer, text).map_err(js_error)?;
        let kernels = kernel_choices(target, &self.model, tokens.ids.len()).map_err(js_error)?;
        serde_json::to_string(&stages(target, &kernels, self.model.synthetic)).map_err(js_error)
    }

    #[wasm_bindgen(getter)]
    pub fn stage_width(&self) -> usize {
        walkthrough::WIDTH
    }

    #[wasm_bindgen(getter)]
    pub fn stage_height(&self) -> usize {
        walkthrough::HEIGHT
    }

    #[wasm_bindgen(getter)]
    pub fn width(&self) -> usize {
        heatmap::WIDTH
    }

    #[wasm_bindgen(getter)]
    pub fn height(&self) -> usize {
        heatmap::HEIGHT
    }

    #[wasm_bindgen(getter)]
    pub fn layers(&self) -> usize {
        self.model.config.num_hidden_layers
    }

    #[wasm_bindgen(getter)]
    pub fn heads(&self) -> usize {
        self.model.config.num_attention_heads
    }

    /// The tokens of the text drawn last, in a few lines (all of them when few), and the cut.
    #[wasm_bindgen(getter)]
    pub fn tokens(&self) -> String {
        self.tokens.clone()
    }

    /// How the last heatmap's labels were drawn, as JSON (heatmap::Labels), or an empty string.
    #[wasm_bindgen(getter)]
    pub fn labels(&self) -> String {
        self.labels
            .and_then(|l| serde_json::to_string(&l).ok())
            .unwrap_or_default()
    }

    /// The weights, in words.
    #[wasm_bindgen(getter)]
    pub fn weights(&self) -> String {
        let c = &self.model.config;
        format!(
            "{}{}: {} layers, {} heads, hidden {}",
            if self.model.synthetic {
                "SYNTHETIC, "
            } else {
                ""
            },
            self.model.source,
            c.num_hidden_layers,
            c.num_attention_heads,
            c.hidden_size
        )
    }
}
