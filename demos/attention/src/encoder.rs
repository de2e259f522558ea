//! The encoder, written once against `kiln::TensorOps` so that the GPU path (kiln's kernels)
//! and the CPU path (kiln::cpu's loops) run the same code.

use kiln_app::kiln::{Result, TensorOps};

use crate::model::{Layer, Weights};

// demo:begin — the ~20 lines the demo shows
/// One BERT encoder layer (post-layernorm, as BERT and MiniLM are): returns the layer's
/// output [N, D] and its attention weights [heads, N, N]. Every intermediate stays on the path.
pub fn encoder_layer<T: TensorOps>(x: &T, w: &Layer<T>, heads: usize, eps: f32) -> Result<(T, T)> {
    // Q, K, V projections, split into one [N, d] matrix per head.
    let q = x.matmul(&w.wq)?.add(&w.bq)?.split_heads(heads)?;
    let k = x.matmul(&w.wk)?.add(&w.bk)?.split_heads(heads)?;
    let v = x.matmul(&w.wv)?.add(&w.bv)?.split_heads(heads)?;
    // Scores Q·Kᵀ/√d per head; softmax over the keys gives the attention weights.
    let scale = 1.0 / (q.shape()[2] as f32).sqrt();
    let probs = q.matmul(&k.t()?)?.softmax(false, scale)?;
    // Weighted values, heads side by side, output projection; residual and layernorm.
    let attn = probs.matmul(&v)?.merge_heads()?.matmul(&w.wo)?.add(&w.bo)?;
    let x = attn.add(x)?.layernorm(&w.ln1_g, &w.ln1_b, eps)?;
    // Feed-forward: expand, gelu, project back; residual and layernorm.
    let h = x.matmul(&w.w1)?.add(&w.b1)?.gelu()?;
    let ff = h.matmul(&w.w2)?.add(&w.b2)?;
    let out = ff.add(&x)?.layernorm(&w.ln2_g, &w.ln2_b, eps)?;
    Ok((out, probs))
}
// demo:end

/// What a forward pass returns: the hidden states (the embeddings, then each layer's output)
/// and each layer's attention weights.
#[derive(Debug)]
pub struct Forward<T> {
    pub hidden: Vec<T>,
    pub probs: Vec<T>,
}

/// Embeddings (word + position + type, layernorm), then every layer.
pub fn forward<T: TensorOps + Clone>(
    rows: &[T; 3],
    w: &Weights<T>,
    heads: usize,
    eps: f32,
) -> Result<Forward<T>> {
    let [word, position, token_type] = rows;
    let mut x = word
        .add(position)?
        .add(token_type)?
        .layernorm(&w.emb_ln_g, &w.emb_ln_b, eps)?;
    let mut out = Forward {
        hidden: vec![x.clone()],
        probs: Vec::new(),
    };
    for layer in &w.layers {
        let (y, p) = encoder_layer(&x, layer, heads, eps)?;
        out.hidden.push(y.clone());
        out.probs.push(p);
        x = y;
    }
    Ok(out)
}

/// The lines between the `demo:begin` and `demo:end` markers above: the code the demo shows.
pub fn source_lines() -> Vec<&'static str> {
    include_str!("encoder.rs")
        .lines()
        .skip_while(|l| !l.starts_with("// demo:begin"))
        .skip(1)
        .take_while(|l| !l.starts_with("// demo:end"))
        .collect()
}
