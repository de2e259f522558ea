//! Loading: the model (MiniLM from its folder, or the built-in synthetic weights), its tokenizer
//! and its weights on the GPU; a text's tokens; one forward pass on either path, on the GPU
//! recorded op by op or replayed from a plan captured for its token count.

use std::cell::RefCell;
use std::rc::Rc;

use kiln_app::kiln::cpu::Array;
use kiln_app::kiln::{self, DType, Gpu, Plan, Tensor};

use crate::encoder::{self, Forward};
use crate::model::{Model, ModelError, Weights};
use crate::tokenizer::{Tokenizer, Tokens};

/// Where `scripts/fetch-model.sh` unpacks all-MiniLM-L6-v2.
pub const DEFAULT_MODEL_DIR: &str = "models/all-minilm-l6-v2";
pub const DEFAULT_TEXT: &str = "The cat sat on the mat because it was tired.";

/// Plans kept, one per token count, the most recently used first: a visitor typing moves
/// through a few counts, each plan holding its forward's activations.
const PLANS_KEPT: usize = 4;

/// The model, its tokenizer and its weights on the GPU.
#[derive(Debug)]
pub struct Loaded {
    pub model: Model,
    pub tokenizer: Tokenizer,
    pub gpu_weights: Weights<Tensor>,
    /// The GPU path's number format: its weights, its inputs and every activation (the
    /// products, softmax and layer norms accumulate in f32 either way).
    pub dtype: DType,
    plans: RefCell<Vec<Rc<ForwardPlan>>>,
    embeds: RefCell<Vec<Rc<Embedding>>>,
}

/// A forward pass captured for one token count as an embedding call runs it: only the last
/// hidden state is read, so what lies between may be fused (`kiln::fusion::capture_reading`: each
/// layer's scores, softmax and weighted values one flash launch where the kernels take its head
/// size).
#[derive(Debug)]
pub struct Embedding {
    pub plan: Plan,
    tokens: usize,
    word: Tensor,
    /// The last hidden state of the newest replay (read after replaying).
    pub last: Tensor,
    /// What the capture fused.
    pub fused: kiln::fusion::Fused,
}

/// A forward pass captured for one token count: the word rows it reads, rewritten before each
/// replay (the position and type rows depend on the count alone), and its results.
#[derive(Debug)]
pub struct ForwardPlan {
    pub plan: Plan,
    tokens: usize,
    word: Tensor,
    /// The newest replay's results (read after replaying).
    pub forward: Forward<Tensor>,
}

impl Loaded {
    /// The model named by `--model` (a directory, or `synthetic`), else the fetched MiniLM
    /// when present, else the built-in synthetic weights; on the GPU as `dtype` (f16 needs the
    /// adapter's `shader-f16`: without it, an error that says so).
    pub fn new(gpu: &Gpu, choice: Option<&str>, dtype: DType) -> Result<Loaded, ModelError> {
        let model = pick_model(choice)?;
        Ok(Loaded {
            tokenizer: Tokenizer::new(&model.vocab)?,
            gpu_weights: model.upload(gpu, dtype)?,
            dtype,
            model,
            plans: RefCell::new(Vec::new()),
            embeds: RefCell::new(Vec::new()),
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

    /// The token's word, position and type rows on the GPU, in the path's dtype.
    fn gpu_rows(&self, gpu: &Gpu, ids: &[u32]) -> Result<[Tensor; 3], ModelError> {
        let rows = self.model.embedding_rows(ids)?;
        let up = |a: &Array| Tensor::from_slice(gpu, &a.shape, &a.data, self.dtype);
        Ok([up(&rows[0])?, up(&rows[1])?, up(&rows[2])?])
    }

    /// The forward pass on the GPU: the results stay there until read.
    pub fn gpu_forward(&self, gpu: &Gpu, ids: &[u32]) -> Result<Forward<Tensor>, ModelError> {
        let rows = self.gpu_rows(gpu, ids)?;
        let path = kiln::GpuBackend { gpu: gpu.clone() };
        Ok(encoder::forward(
            &path,
            &rows,
            &self.gpu_weights,
            self.heads(),
            self.eps(),
        )?)
    }

    /// The forward pass on the GPU replayed from the plan for this token count (captured on
    /// first use): the same kernels as [`gpu_forward`](Self::gpu_forward), without selecting,
    /// allocating or binding anything per call. The results are in the returned plan's
    /// `forward` once read; the next replay at this count overwrites them.
    pub fn gpu_forward_planned(
        &self,
        gpu: &Gpu,
        ids: &[u32],
    ) -> Result<Rc<ForwardPlan>, ModelError> {
        self.replay_cached(
            &self.plans,
            gpu,
            ids,
            |p| (&p.plan, p.tokens, &p.word),
            |rows| {
                let path = kiln::GpuBackend { gpu: gpu.clone() };
                let (plan, forward) = gpu.capture(|| {
                    encoder::forward(&path, &rows, &self.gpu_weights, self.heads(), self.eps())
                })?;
                let [word, ..] = rows;
                Ok(ForwardPlan {
                    plan,
                    tokens: word.shape()[0],
                    word,
                    forward,
                })
            },
        )
    }

    /// The forward pass as an embedding call runs it, replayed from the plan for this token
    /// count that reads only the last hidden state (captured on first use): fewer launches
    /// than [`gpu_forward_planned`](Self::gpu_forward_planned), whose plan keeps every
    /// activation for the walkthrough and the heatmap. The result is in the returned
    /// `last` once read; the next replay at this count overwrites it.
    pub fn gpu_embedding_planned(
        &self,
        gpu: &Gpu,
        ids: &[u32],
    ) -> Result<Rc<Embedding>, ModelError> {
        self.replay_cached(
            &self.embeds,
            gpu,
            ids,
            |p| (&p.plan, p.tokens, &p.word),
            |rows| {
                let path = kiln::GpuBackend { gpu: gpu.clone() };
                let (plan, forward, fused) = kiln::fusion::capture_reading(
                    gpu,
                    || encoder::forward(&path, &rows, &self.gpu_weights, self.heads(), self.eps()),
                    |f| f.hidden.last().cloned().into_iter().collect(),
                )?;
                let last = forward.hidden.last().cloned().ok_or_else(|| {
                    ModelError::Kiln(kiln::Error::InvalidArgument {
                        op: "embedding",
                        detail: "the forward pass has no hidden state".into(),
                    })
                })?;
                let [word, ..] = rows;
                Ok(Embedding {
                    plan,
                    tokens: word.shape()[0],
                    word,
                    last,
                    fused,
                })
            },
        )
    }

    /// The plan in `cache` for this token count (made by `capture` from the token rows on the
    /// GPU on first use; the most recently used first, [`PLANS_KEPT`] kept), its word rows
    /// rewritten and replayed. `parts` reads a kept plan's plan, token count and word rows
    /// (the position and type rows depend on the count alone).
    fn replay_cached<P>(
        &self,
        cache: &RefCell<Vec<Rc<P>>>,
        gpu: &Gpu,
        ids: &[u32],
        parts: impl Fn(&P) -> (&Plan, usize, &Tensor),
        capture: impl FnOnce([Tensor; 3]) -> Result<P, ModelError>,
    ) -> Result<Rc<P>, ModelError> {
        let word = self.model.word_rows(ids)?;
        let planned = {
            let mut plans = cache.borrow_mut();
            let at = plans.iter().position(|p| {
                let (plan, tokens, _) = parts(p);
                tokens == ids.len() && plan.gpu().same_device(gpu)
            });
            let planned = match at {
                Some(i) => plans.remove(i),
                None => Rc::new(capture(self.gpu_rows(gpu, ids)?)?),
            };
            plans.insert(0, planned.clone());
            plans.truncate(PLANS_KEPT);
            planned
        };
        let (plan, _, word_rows) = parts(&planned);
        word_rows.write(&word.data)?;
        plan.replay()?;
        Ok(planned)
    }

    /// One embedding call on the GPU path, as a sentence-embedding library runs it: the plan for
    /// this token count replayed, the last hidden state read back, its rows averaged
    /// ([`mean_pool`]).
    pub async fn gpu_embedding(&self, gpu: &Gpu, ids: &[u32]) -> Result<Vec<f32>, ModelError> {
        let planned = self.gpu_embedding_planned(gpu, ids)?;
        Ok(mean_pool(
            &planned.last.read().await?,
            self.model.config.hidden_size,
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

/// A sentence's embedding as sentence-transformers pools MiniLM (and transformers.js's
/// `pooling: 'mean'` for one unpadded sentence): the mean of the rows of `hidden`, a row-major
/// matrix `width` columns wide. No rows, or a partial one, is an error.
pub fn mean_pool(hidden: &[f32], width: usize) -> kiln::Result<Vec<f32>> {
    if width == 0 || hidden.is_empty() || !hidden.len().is_multiple_of(width) {
        return Err(kiln::Error::InvalidArgument {
            op: "mean_pool",
            detail: format!("{} values are not whole rows of {width}", hidden.len()),
        });
    }
    let rows = hidden.len() / width;
    let mut sum = vec![0.0f64; width];
    for row in hidden.chunks_exact(width) {
        for (s, &x) in sum.iter_mut().zip(row) {
            *s += f64::from(x);
        }
    }
    Ok(sum.into_iter().map(|s| (s / rows as f64) as f32).collect())
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

/// The number format `--dtype` (or the page's `dtype`) names for the GPU path: f32 when absent;
/// anything but f32 and f16 is an error that says what is taken.
pub fn model_dtype(name: Option<&str>) -> kiln::Result<DType> {
    match name.map(DType::parse).transpose()? {
        None => Ok(DType::F32),
        Some(DType::U32) => Err(kiln::Error::InvalidArgument {
            op: "dtype",
            detail: "u32: the model runs as f32 or f16".into(),
        }),
        Some(dtype) => Ok(dtype),
    }
}

/// A model error as kiln's, for the code that returns kiln's `Result`.
pub(crate) fn model_error(e: ModelError) -> kiln::Error {
    match e {
        ModelError::Kiln(k) => k,
        other => kiln::Error::Parse {
            what: "model".into(),
            detail: other.to_string(),
        },
    }
}
