//! The model: a BERT-family encoder in the Hugging Face layout (config.json, model.safetensors,
//! vocab.txt), or small deterministic built-in weights when no model is present. Loading checks
//! every tensor's presence, dtype and shape, and names the tensor when one is wrong.

use kiln_app::kiln::cpu::Array;
use kiln_app::kiln::{self, DType, Gpu, Tensor};
use rand::{Rng, SeedableRng, rngs::StdRng};
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("config.json: {0}")]
    Config(String),
    #[error("model.safetensors: {0}")]
    File(String),
    #[error("model.safetensors: tensor `{0}` is missing")]
    Missing(String),
    #[error("model.safetensors: tensor `{name}` has shape {got:?}, the config needs {want:?}")]
    Shape {
        name: String,
        got: Vec<usize>,
        want: Vec<usize>,
    },
    #[error("model.safetensors: tensor `{name}` is {dtype}; Kiln reads F32, F16 and BF16")]
    Dtype { name: String, dtype: String },
    #[error("vocab.txt: {0}")]
    Vocab(String),
    #[error(transparent)]
    Kiln(#[from] kiln::Error),
}

/// The fields of config.json the encoder needs.
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
pub struct Config {
    pub hidden_size: usize,
    pub num_attention_heads: usize,
    pub num_hidden_layers: usize,
    pub intermediate_size: usize,
    pub vocab_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "two")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f32,
    #[serde(default = "default_act")]
    pub hidden_act: String,
}

fn two() -> usize {
    2
}
fn default_eps() -> f32 {
    1e-12
}
fn default_act() -> String {
    "gelu".into()
}

/// One encoder layer's weights. Linear weights are stored [in, out] (the file's [out, in]
/// transposed at load), so a layer is `x · W + b`. The query, key and value projections are
/// one [D, 3·D] matrix (their columns side by side) and one [3·D] bias: one product makes all
/// three.
#[derive(Clone, Debug)]
pub struct Layer<T> {
    pub wqkv: T,
    pub bqkv: T,
    pub wo: T,
    pub bo: T,
    pub ln1_g: T,
    pub ln1_b: T,
    pub w1: T,
    pub b1: T,
    pub w2: T,
    pub b2: T,
    pub ln2_g: T,
    pub ln2_b: T,
}

impl<T> Layer<T> {
    /// The same layer with every tensor converted by `f` (CPU arrays → GPU tensors).
    pub fn try_map<U, E>(&self, mut f: impl FnMut(&T) -> Result<U, E>) -> Result<Layer<U>, E> {
        Ok(Layer {
            wqkv: f(&self.wqkv)?,
            bqkv: f(&self.bqkv)?,
            wo: f(&self.wo)?,
            bo: f(&self.bo)?,
            ln1_g: f(&self.ln1_g)?,
            ln1_b: f(&self.ln1_b)?,
            w1: f(&self.w1)?,
            b1: f(&self.b1)?,
            w2: f(&self.w2)?,
            b2: f(&self.b2)?,
            ln2_g: f(&self.ln2_g)?,
            ln2_b: f(&self.ln2_b)?,
        })
    }
}

/// The embedding layernorm and the layers, on one backend.
#[derive(Clone, Debug)]
pub struct Weights<T> {
    pub emb_ln_g: T,
    pub emb_ln_b: T,
    pub layers: Vec<Layer<T>>,
}

/// A whole model on the CPU: the embedding tables (looked up on the CPU), the layers, the
/// vocabulary.
#[derive(Clone, Debug)]
pub struct Model {
    pub config: Config,
    /// Where the weights came from, in words.
    pub source: String,
    pub synthetic: bool,
    pub word: Array,
    pub position: Array,
    pub token_type: Array,
    pub weights: Weights<Array>,
    pub vocab: Vec<String>,
}

impl Model {
    /// Loads a model from the bytes of its three files.
    pub fn load(
        source: &str,
        config: &[u8],
        weights: &[u8],
        vocab: &[u8],
    ) -> Result<Model, ModelError> {
        let config: Config =
            serde_json::from_slice(config).map_err(|e| ModelError::Config(e.to_string()))?;
        let c = &config;
        if c.hidden_act != "gelu" {
            return Err(ModelError::Config(format!(
                "hidden_act `{}`: this encoder implements gelu",
                c.hidden_act
            )));
        }
        if c.num_attention_heads == 0 || !c.hidden_size.is_multiple_of(c.num_attention_heads) {
            return Err(ModelError::Config(format!(
                "hidden_size {} does not split into {} heads",
                c.hidden_size, c.num_attention_heads
            )));
        }
        let vocab = parse_vocab(vocab)?;
        if vocab.len() != c.vocab_size {
            return Err(ModelError::Vocab(format!(
                "{} entries, config.json says vocab_size {}",
                vocab.len(),
                c.vocab_size
            )));
        }
        let file =
            SafeTensors::deserialize(weights).map_err(|e| ModelError::File(e.to_string()))?;
        let (d, i) = (c.hidden_size, c.intermediate_size);
        let get = |name: &str, want: &[usize]| read(&file, name, want);
        let linear = |name: &str, inp: usize, out: usize| -> Result<Array, ModelError> {
            // nn.Linear stores [out, in]; the encoder multiplies x · W, so W is [in, out].
            let w = get(&format!("{name}.weight"), &[out, inp])?;
            Ok(kiln::cpu::transpose(&w)?)
        };
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for l in 0..c.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let qkv = ["query", "key", "value"];
            let w: Vec<Array> = qkv
                .iter()
                .map(|n| linear(&format!("{p}.attention.self.{n}"), d, d))
                .collect::<Result<_, _>>()?;
            let b: Vec<Array> = qkv
                .iter()
                .map(|n| get(&format!("{p}.attention.self.{n}.bias"), &[d]))
                .collect::<Result<_, _>>()?;
            layers.push(Layer {
                wqkv: side_by_side(&[&w[0], &w[1], &w[2]])?,
                bqkv: side_by_side(&[&b[0], &b[1], &b[2]])?,
                wo: linear(&format!("{p}.attention.output.dense"), d, d)?,
                bo: get(&format!("{p}.attention.output.dense.bias"), &[d])?,
                ln1_g: get(&format!("{p}.attention.output.LayerNorm.weight"), &[d])?,
                ln1_b: get(&format!("{p}.attention.output.LayerNorm.bias"), &[d])?,
                w1: linear(&format!("{p}.intermediate.dense"), d, i)?,
                b1: get(&format!("{p}.intermediate.dense.bias"), &[i])?,
                w2: linear(&format!("{p}.output.dense"), i, d)?,
                b2: get(&format!("{p}.output.dense.bias"), &[d])?,
                ln2_g: get(&format!("{p}.output.LayerNorm.weight"), &[d])?,
                ln2_b: get(&format!("{p}.output.LayerNorm.bias"), &[d])?,
            });
        }
        Ok(Model {
            word: get("embeddings.word_embeddings.weight", &[c.vocab_size, d])?,
            position: get(
                "embeddings.position_embeddings.weight",
                &[c.max_position_embeddings, d],
            )?,
            token_type: get(
                "embeddings.token_type_embeddings.weight",
                &[c.type_vocab_size, d],
            )?,
            weights: Weights {
                emb_ln_g: get("embeddings.LayerNorm.weight", &[d])?,
                emb_ln_b: get("embeddings.LayerNorm.bias", &[d])?,
                layers,
            },
            source: source.to_string(),
            synthetic: false,
            config,
            vocab,
        })
    }

    /// Small deterministic weights and a built-in vocabulary of a few hundred words: the
    /// demo runs with no download. The attention they produce means nothing.
    pub fn synthetic() -> Result<Model, ModelError> {
        let vocab = parse_vocab(include_bytes!("synthetic_vocab.txt"))?;
        let config = Config {
            hidden_size: 64,
            num_attention_heads: 4,
            num_hidden_layers: 2,
            intermediate_size: 128,
            vocab_size: vocab.len(),
            max_position_embeddings: 128,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            hidden_act: "gelu".into(),
        };
        let mut rng = StdRng::seed_from_u64(7);
        let mut rand = |shape: &[usize], gain: f32| {
            let n = shape.iter().product();
            let data = (0..n).map(|_| rng.random_range(-gain..gain)).collect();
            Array::new(shape, data)
        };
        let (d, i) = (config.hidden_size, config.intermediate_size);
        let ones = |n: usize| Array::new(&[n], vec![1.0; n]);
        let mut layers = Vec::new();
        for _ in 0..config.num_hidden_layers {
            // Drawn in the order the separate projections always were: the same weights.
            let (wq, bq) = (rand(&[d, d], 0.4)?, rand(&[d], 0.1)?);
            let (wk, bk) = (rand(&[d, d], 0.4)?, rand(&[d], 0.1)?);
            let (wv, bv) = (rand(&[d, d], 0.2)?, rand(&[d], 0.1)?);
            layers.push(Layer {
                wqkv: side_by_side(&[&wq, &wk, &wv])?,
                bqkv: side_by_side(&[&bq, &bk, &bv])?,
                wo: rand(&[d, d], 0.2)?,
                bo: rand(&[d], 0.1)?,
                ln1_g: ones(d)?,
                ln1_b: rand(&[d], 0.1)?,
                w1: rand(&[d, i], 0.2)?,
                b1: rand(&[i], 0.1)?,
                w2: rand(&[i, d], 0.2)?,
                b2: rand(&[d], 0.1)?,
                ln2_g: ones(d)?,
                ln2_b: rand(&[d], 0.1)?,
            });
        }
        Ok(Model {
            word: rand(&[config.vocab_size, d], 1.0)?,
            position: rand(&[config.max_position_embeddings, d], 0.5)?,
            token_type: rand(&[config.type_vocab_size, d], 0.1)?,
            weights: Weights {
                emb_ln_g: ones(d)?,
                emb_ln_b: rand(&[d], 0.1)?,
                layers,
            },
            source: "built-in synthetic weights (no model found)".into(),
            synthetic: true,
            config,
            vocab,
        })
    }

    /// The embedding rows of a token sequence (type 0): word, position and type tables
    /// looked up on the CPU, each [N, D] (type [D]); the sum and layernorm run on the path.
    pub fn embedding_rows(&self, ids: &[u32]) -> Result<[Array; 3], ModelError> {
        let d = self.config.hidden_size;
        let word = self.word_rows(ids)?;
        let n = ids.len();
        Ok([
            word,
            Array::new(&[n, d], self.position.data[..n * d].to_vec())?,
            Array::new(&[d], self.token_type.data[..d].to_vec())?,
        ])
    }

    /// The word rows alone, [N, D]: all a replayed forward pass rewrites (the position and type
    /// rows depend on the token count, which the plan fixes).
    pub fn word_rows(&self, ids: &[u32]) -> Result<Array, ModelError> {
        let d = self.config.hidden_size;
        if ids.len() > self.config.max_position_embeddings {
            return Err(ModelError::Config(format!(
                "{} tokens: the model takes at most {}",
                ids.len(),
                self.config.max_position_embeddings
            )));
        }
        let mut word = Vec::with_capacity(ids.len() * d);
        for &id in ids {
            let id = id as usize;
            if id >= self.config.vocab_size {
                return Err(ModelError::Vocab(format!(
                    "token id {id} is past the vocabulary"
                )));
            }
            word.extend_from_slice(&self.word.data[id * d..][..d]);
        }
        Ok(Array::new(&[ids.len(), d], word)?)
    }

    /// The layers' weights uploaded to the GPU as `dtype` (f32, or f16 where the adapter has
    /// `shader-f16`).
    pub fn upload(&self, gpu: &Gpu, dtype: DType) -> Result<Weights<Tensor>, ModelError> {
        let up = |a: &Array| Tensor::from_slice(gpu, &a.shape, &a.data, dtype);
        Ok(Weights {
            emb_ln_g: up(&self.weights.emb_ln_g)?,
            emb_ln_b: up(&self.weights.emb_ln_b)?,
            layers: self
                .weights
                .layers
                .iter()
                .map(|l| l.try_map(up))
                .collect::<kiln::Result<_>>()?,
        })
    }
}

/// Arrays of one row count (or vectors) with their columns side by side: [r, a], [r, b] →
/// [r, a + b].
fn side_by_side(parts: &[&Array]) -> kiln::Result<Array> {
    let rows = |a: &Array| if a.shape.len() == 2 { a.shape[0] } else { 1 };
    let r = rows(parts[0]);
    let cols: Vec<usize> = parts.iter().map(|a| a.data.len() / r.max(1)).collect();
    let mut data = Vec::with_capacity(parts.iter().map(|a| a.data.len()).sum());
    for i in 0..r {
        for (a, &c) in parts.iter().zip(&cols) {
            data.extend_from_slice(&a.data[i * c..(i + 1) * c]);
        }
    }
    let width: usize = cols.iter().sum();
    if parts[0].shape.len() == 2 {
        Array::new(&[r, width], data)
    } else {
        Array::new(&[width], data)
    }
}

/// The inverse of the side-by-side layout: an array's columns cut into `parts` equal arrays
/// (wqkv → wq, wk, wv; a [3·D] bias → three [D]).
pub fn columns(a: &Array, parts: usize) -> kiln::Result<Vec<Array>> {
    let (rows, width) = match *a.shape.as_slice() {
        [r, w] => (r, w),
        [w] => (1, w),
        _ => (0, 0),
    };
    if parts == 0 || rows == 0 || !width.is_multiple_of(parts) {
        return Err(kiln::Error::Shape {
            op: "columns",
            detail: format!(
                "{:?} does not cut into {parts} equal column blocks",
                a.shape
            ),
        });
    }
    let w = width / parts;
    (0..parts)
        .map(|p| {
            let data: Vec<f32> = (0..rows)
                .flat_map(|r| a.data[r * width + p * w..][..w].iter().copied())
                .collect();
            if a.shape.len() == 2 {
                Array::new(&[rows, w], data)
            } else {
                Array::new(&[w], data)
            }
        })
        .collect()
}

fn parse_vocab(bytes: &[u8]) -> Result<Vec<String>, ModelError> {
    let text = std::str::from_utf8(bytes).map_err(|e| ModelError::Vocab(e.to_string()))?;
    let vocab: Vec<String> = text.lines().map(str::to_string).collect();
    for needed in ["[UNK]", "[CLS]", "[SEP]"] {
        if !vocab.iter().any(|w| w == needed) {
            return Err(ModelError::Vocab(format!("no {needed} token")));
        }
    }
    Ok(vocab)
}

/// One tensor as f32, checked against the shape the config implies. The Hugging Face BERT
/// checkpoints sometimes prefix every name with `bert.`; both spellings are accepted.
fn read(file: &SafeTensors<'_>, name: &str, want: &[usize]) -> Result<Array, ModelError> {
    let view = file
        .tensor(name)
        .or_else(|_| file.tensor(&format!("bert.{name}")))
        .map_err(|_| ModelError::Missing(name.to_string()))?;
    if view.shape() != want {
        return Err(ModelError::Shape {
            name: name.to_string(),
            got: view.shape().to_vec(),
            want: want.to_vec(),
        });
    }
    let bytes = view.data();
    let data: Vec<f32> = match view.dtype() {
        Dtype::F32 => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::F16 => bytes
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::BF16 => bytes
            .chunks_exact(2)
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        other => {
            return Err(ModelError::Dtype {
                name: name.to_string(),
                dtype: format!("{other:?}"),
            });
        }
    };
    Ok(Array::new(want, data)?)
}
