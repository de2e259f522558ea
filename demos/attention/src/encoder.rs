//! The encoder, written once against `kiln::Backend` so that the GPU path (kiln's kernels) and
//! the CPU path (kiln::cpu's loops) run the same code.

use kiln_app::kiln::{Backend, Result};

use crate::model::{Layer, Weights};

// demo:begin — the ~20 lines the demo shows
/// One BERT encoder layer (post-layernorm, as BERT and MiniLM are): its activations, every
/// intermediate up to the layer's output [N, D]. Every intermediate stays on the path.
pub fn encoder_layer<B: Backend>(
    b: &B,
    x: &B::T,
    w: &Layer<B::T>,
    heads: usize,
    eps: f32,
) -> Result<Acts<B::T>> {
    // talk:begin qkv
    // Q, K, V in one projection (x · W + b), split into one [N, d] matrix per head.
    let [q, k, v] = b.split_heads_qkv(&b.linear(x, &w.wqkv, &w.bqkv)?, heads)?;
    // talk:end qkv
    // talk:begin scores
    // Scores Q·Kᵀ/√d per head; softmax over the keys gives the attention weights.
    let scale = 1.0 / (b.shape(&q)[2] as f32).sqrt();
    let scores = b.matmul_bt(&q, &k)?;
    let probs = b.softmax(&scores, false, scale)?;
    // talk:end scores
    // talk:begin values
    // Weighted values, heads side by side, output projection; residual and layernorm.
    let mixed = b.matmul(&probs, &v)?;
    let attn = b.linear(&b.merge_heads(&mixed)?, &w.wo, &w.bo)?;
    // talk:end values
    // talk:begin residual
    let (sum, normed) = b.add_layernorm(&attn, x, &w.ln1_g, &w.ln1_b, eps)?;
    // talk:end residual
    // Feed-forward: expand with gelu, project back; residual and layernorm.
    let h = b.linear_gelu(&normed, &w.w1, &w.b1)?;
    let ff = b.linear(&h, &w.w2, &w.b2)?;
    let (_, out) = b.add_layernorm(&ff, &normed, &w.ln2_g, &w.ln2_b, eps)?;
    let acts = [q, k, v, scores, probs, mixed, attn, sum, normed, out];
    Ok(Acts::from(acts))
}
// demo:end

/// A layer's activations: what it computes, in order (the walkthrough draws each of them).
#[derive(Clone, Debug)]
pub struct Acts<T> {
    /// Queries, keys, values, [heads, N, d].
    pub q: T,
    pub k: T,
    pub v: T,
    /// Q·Kᵀ per head, [heads, N, N], before the 1/√d scale (the softmax applies it).
    pub scores: T,
    /// The attention weights, [heads, N, N]; each row sums to 1.
    pub probs: T,
    /// The weights times V, [heads, N, d].
    pub mixed: T,
    /// The heads merged and projected by the output weights, [N, D].
    pub attn: T,
    /// The residual sum attn + x, [N, D].
    pub sum: T,
    /// Its layernorm, [N, D]: the feed-forward's input.
    pub normed: T,
    /// The layer's output, [N, D].
    pub out: T,
}

impl<T> From<[T; 10]> for Acts<T> {
    /// The activations in the order the fields are declared (the order the layer computes them).
    fn from([q, k, v, scores, probs, mixed, attn, sum, normed, out]: [T; 10]) -> Acts<T> {
        Acts {
            q,
            k,
            v,
            scores,
            probs,
            mixed,
            attn,
            sum,
            normed,
            out,
        }
    }
}

/// What a forward pass returns: the embedding sum, the hidden states (the embeddings after
/// their layernorm, then each layer's output), each layer's attention weights and activations.
#[derive(Debug)]
pub struct Forward<T> {
    /// Word + position + type rows, [N, D], before the embedding layernorm.
    pub embedded: T,
    pub hidden: Vec<T>,
    pub probs: Vec<T>,
    pub acts: Vec<Acts<T>>,
}

/// Embeddings (word + type + position, layernorm), then every layer.
pub fn forward<B: Backend>(
    b: &B,
    rows: &[B::T; 3],
    w: &Weights<B::T>,
    heads: usize,
    eps: f32,
) -> Result<Forward<B::T>> {
    let [word, position, token_type] = rows;
    // talk:begin embeddings
    // The type row [D] goes to every word row first (as transformers adds them), then the
    // position rows, in the layernorm's launch.
    let (g, beta) = (&w.emb_ln_g, &w.emb_ln_b);
    let (embedded, mut x) = b.add_layernorm(&b.add(word, token_type)?, position, g, beta, eps)?;
    // talk:end embeddings
    let mut out = Forward {
        embedded,
        hidden: vec![x.clone()],
        probs: Vec::new(),
        acts: Vec::new(),
    };
    for layer in &w.layers {
        let acts = encoder_layer(b, &x, layer, heads, eps)?;
        x = acts.out.clone();
        out.hidden.push(x.clone());
        out.probs.push(acts.probs.clone());
        out.acts.push(acts);
    }
    Ok(out)
}
