//! The model: a decoder-only transformer (token and position embeddings, pre-norm blocks of
//! causal multi-head attention and a gelu MLP, a final layer norm, a linear head), its forward
//! and backward passes and the AdamW update, written once against [`Backend`].

use kiln_app::kiln::cpu::Array;
use kiln_app::kiln::optim::AdamW;
use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::backend::Backend;
use crate::error::Result;
use crate::preset::{Config, Hyper};

const EPS: f32 = 1e-5;

/// Parameters per block, in storage order. `wqkv` is the query, key and value projections
/// side by side, [d, (H + 2·Hkv)·d_head]: one product makes all three.
pub const BLOCK: [&str; 8] = [
    "ln1.gamma",
    "ln1.beta",
    "wqkv",
    "wo",
    "ln2.gamma",
    "ln2.beta",
    "w1",
    "w2",
];

/// Every trainable tensor of the model (or its gradient, or an AdamW moment), in one fixed
/// order: token embedding, position embedding, the blocks, the final norm, the head.
#[derive(Clone, Debug)]
pub struct Params<T> {
    pub tensors: Vec<T>,
}

/// Names and shapes of the parameters, in storage order.
pub fn layout(c: &Config) -> Vec<(String, Vec<usize>)> {
    let (d, m) = (c.d_model, c.mlp());
    let mut out = vec![
        ("tok_emb".to_string(), vec![c.vocab, d]),
        ("pos_emb".to_string(), vec![c.seq, d]),
    ];
    for l in 0..c.layers {
        let shapes = [
            vec![d],
            vec![d],
            vec![d, c.qkv_width()],
            vec![d, d],
            vec![d],
            vec![d],
            vec![d, m],
            vec![m, d],
        ];
        for (name, shape) in BLOCK.iter().zip(shapes) {
            out.push((format!("block{l}.{name}"), shape));
        }
    }
    out.push(("lnf.gamma".into(), vec![d]));
    out.push(("lnf.beta".into(), vec![d]));
    out.push(("head".into(), vec![d, c.vocab]));
    out
}

const TOK: usize = 0;
const POS: usize = 1;

/// Index of parameter `i` of block `l`.
fn at(l: usize, i: usize) -> usize {
    2 + l * BLOCK.len() + i
}

impl<T> Params<T> {
    fn lnf(&self, c: &Config) -> (&T, &T, &T) {
        let base = 2 + c.layers * BLOCK.len();
        (
            &self.tensors[base],
            &self.tensors[base + 1],
            &self.tensors[base + 2],
        )
    }
}

impl Params<Array> {
    /// The initial weights from `seed`: normal(0, 0.02), the residual outputs (wo, w2) scaled
    /// by 1/√(2·layers) as in GPT-2, layer norms at gamma 1, beta 0.
    pub fn init(c: &Config, seed: u64) -> Result<Params<Array>> {
        let mut rng = StdRng::seed_from_u64(seed);
        let residual = 0.02 / (2.0 * c.layers as f32).sqrt();
        let mut tensors = Vec::new();
        for (name, shape) in layout(c) {
            let n = shape.iter().product();
            let data = if name.ends_with("gamma") {
                vec![1.0; n]
            } else if name.ends_with("beta") {
                vec![0.0; n]
            } else if name.ends_with("wqkv") {
                // Three draws, as the separate projections were drawn ([d, H·d_head], then K's
                // and V's [d, Hkv·d_head]), side by side.
                let d = shape[0];
                let widths = [c.heads, c.kv_heads, c.kv_heads].map(|h| h * c.head_dim());
                let parts: Vec<(usize, Vec<f32>)> = widths
                    .iter()
                    .map(|&w| (w, (0..d * w).map(|_| 0.02 * normal(&mut rng)).collect()))
                    .collect();
                (0..d)
                    .flat_map(|r| {
                        parts
                            .iter()
                            .flat_map(move |(w, p)| p[r * w..(r + 1) * w].to_vec())
                    })
                    .collect()
            } else {
                let std = if name.ends_with("wo") || name.ends_with("w2") {
                    residual
                } else {
                    0.02
                };
                (0..n).map(|_| std * normal(&mut rng)).collect()
            };
            tensors.push(Array::new(&shape, data)?);
        }
        Ok(Params { tensors })
    }

    /// Zeros shaped like the parameters (the AdamW moments at step 0).
    pub fn zeros(c: &Config) -> Result<Params<Array>> {
        let tensors = layout(c)
            .into_iter()
            .map(|(_, s)| Array::new(&s, vec![0.0; s.iter().product()]))
            .collect::<kiln_app::kiln::Result<_>>()?;
        Ok(Params { tensors })
    }
}

/// A standard normal sample (Box–Muller), so the weights need no distribution crate.
fn normal(rng: &mut StdRng) -> f32 {
    let u1: f32 = rng.random_range(f32::EPSILON..1.0);
    let u2: f32 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

/// The optimiser state: parameters and both moments, and the steps taken.
#[derive(Clone, Debug)]
pub struct State<T> {
    pub params: Params<T>,
    pub m: Params<T>,
    pub v: Params<T>,
    pub step: u32,
}

impl State<Array> {
    pub fn new(c: &Config, seed: u64) -> Result<Self> {
        Ok(State {
            params: Params::init(c, seed)?,
            m: Params::zeros(c)?,
            v: Params::zeros(c)?,
            step: 0,
        })
    }
}

/// Copies parameters onto a path, together (on the GPU one buffer, which one AdamW launch
/// updates whole).
pub fn upload_params<B: Backend>(b: &B, p: &Params<Array>) -> Result<Params<B::T>> {
    Ok(Params {
        tensors: b.upload_together(&p.tensors)?,
    })
}

/// Copies the state onto a path.
pub fn upload<B: Backend>(b: &B, s: &State<Array>) -> Result<State<B::T>> {
    let up = |p: &Params<Array>| upload_params(b, p);
    Ok(State {
        params: up(&s.params)?,
        m: up(&s.m)?,
        v: up(&s.v)?,
        step: s.step,
    })
}

/// Reads a path's state back.
pub async fn download<B: Backend>(b: &B, c: &Config, s: &State<B::T>) -> Result<State<Array>> {
    Ok(State {
        params: read_params(b, c, &s.params).await?,
        m: read_params(b, c, &s.m).await?,
        v: read_params(b, c, &s.v).await?,
        step: s.step,
    })
}

async fn read_params<B: Backend>(b: &B, c: &Config, p: &Params<B::T>) -> Result<Params<Array>> {
    let mut tensors = Vec::new();
    for (t, (_, shape)) in p.tensors.iter().zip(layout(c)) {
        tensors.push(Array::new(&shape, b.read(t).await?)?);
    }
    Ok(Params { tensors })
}

/// What one block's forward pass keeps for its backward pass.
struct Saved<T> {
    x_in: T,
    h1: T,
    q: T,
    k: T,
    v: T,
    o: T,
    lse: T,
    o_rows: T,
    x_mid: T,
    h2: T,
    u: T,
    g: T,
}

/// Token and position ids of a batch on a path.
#[derive(Debug)]
pub struct Inputs<I> {
    pub tokens: I,
    pub positions: I,
    pub targets: I,
}

impl<I> Inputs<I> {
    pub fn new<B: Backend<Ids = I>>(
        b: &B,
        c: &Config,
        tokens: &[u32],
        targets: &[u32],
    ) -> Result<Self> {
        let positions: Vec<u32> = (0..tokens.len()).map(|r| (r % c.seq) as u32).collect();
        Ok(Inputs {
            tokens: b.ids(tokens)?,
            positions: b.ids(&positions)?,
            targets: b.ids(targets)?,
        })
    }
}

/// The forward pass's results and what the backward pass needs.
struct Forward<T> {
    saved: Vec<Saved<T>>,
    /// The residual stream after the last block, and its final layer norm.
    x_last: T,
    hf: T,
    logits: T,
}

/// The token and position embeddings summed and normalised by the first block's first norm
/// (or the final one): the residual stream x and its norm.
fn embed<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    tokens: &B::Ids,
    positions: &B::Ids,
) -> Result<(B::T, B::T)> {
    let (g, beta) = norm_after(c, p, None);
    Ok(b.add_layernorm(
        &b.embedding(&p.tensors[TOK], tokens)?,
        &b.embedding(&p.tensors[POS], positions)?,
        g,
        beta,
        EPS,
    )?)
}

/// The norm that follows block `l`'s output (`None`: the embeddings): the next block's first
/// norm, or the final one.
fn norm_after<'a, T>(c: &Config, p: &'a Params<T>, l: Option<usize>) -> (&'a T, &'a T) {
    let next = l.map_or(0, |l| l + 1);
    if next < c.layers {
        (&p.tensors[at(next, 0)], &p.tensors[at(next, 1)])
    } else {
        let (g, beta, _) = p.lnf(c);
        (g, beta)
    }
}

/// Block `l` after attention: the heads' output O [B, H, n, d] projected back and added to the
/// residual, then the MLP and its residual. Each residual sum and the layer norm after it are
/// one op (`add_layernorm`): the block's output is normalised by the next block's first norm
/// (or the final one) as it is added. `u`, the MLP's pre-activation, is kept for the backward
/// pass where `keep` is set; without it (generation) the product and its gelu are one op.
struct Tail<T> {
    o_rows: T,
    x_mid: T,
    h2: T,
    u: Option<T>,
    g: T,
    x_out: T,
    h_next: T,
}

#[allow(clippy::too_many_arguments)]
fn tail<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    l: usize,
    x: &B::T,
    o: &B::T,
    rows: usize,
    keep: bool,
) -> Result<Tail<B::T>> {
    let w = |i| &p.tensors[at(l, i)];
    let o_rows = b.reshape(&b.swap12(o)?, &[rows, c.d_model])?;
    let (x_mid, h2) = b.add_layernorm(x, &b.matmul(&o_rows, w(3))?, w(4), w(5), EPS)?;
    let (u, g) = if keep {
        let u = b.matmul(&h2, w(6))?;
        let g = b.gelu(&u)?;
        (Some(u), g)
    } else {
        (None, b.matmul_gelu(&h2, w(6))?)
    };
    let (ng, nb) = norm_after(c, p, Some(l));
    let (x_out, h_next) = b.add_layernorm(&x_mid, &b.matmul(&g, w(7))?, ng, nb, EPS)?;
    Ok(Tail {
        o_rows,
        x_mid,
        h2,
        u,
        g,
        x_out,
        h_next,
    })
}

/// The forward pass up to the logits [rows, vocab], keeping what the backward pass needs.
fn forward<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    inp: &Inputs<B::Ids>,
    batch: usize,
) -> Result<Forward<B::T>> {
    let (t, h, d) = (c.seq, c.heads, c.head_dim());
    let rows = batch * t;
    let scale = 1.0 / (d as f32).sqrt();
    let (mut x, mut h1) = embed(b, c, p, &inp.tokens, &inp.positions)?;
    let mut saved = Vec::with_capacity(c.layers);
    for l in 0..c.layers {
        let qkv = b.matmul(&h1, &p.tensors[at(l, 2)])?;
        let [q, k, v] = b.split_qkv(&qkv, [batch, t, h, c.kv_heads, d])?;
        let (o, lse) = b.attention(&q, &k, &v, scale)?;
        let next = tail(b, c, p, l, &x, &o, rows, true)?;
        saved.push(Saved {
            x_in: x,
            h1,
            q,
            k,
            v,
            o,
            lse,
            o_rows: next.o_rows,
            x_mid: next.x_mid,
            h2: next.h2,
            u: next.u.ok_or_else(|| {
                crate::error::Error::Config(
                    "the training pass keeps the MLP's pre-activation".into(),
                )
            })?,
            g: next.g,
        });
        x = next.x_out;
        h1 = next.h_next;
    }
    let logits = b.matmul(&h1, p.lnf(c).2)?;
    Ok(Forward {
        saved,
        x_last: x,
        hf: h1,
        logits,
    })
}

/// The logits [n, vocab] of `n` new tokens of one sequence at `positions`, their keys and
/// values appended to each layer's cache (one per layer, [1, Hkv, capacity, d]). Into empty
/// caches (a prompt) the rows attend to each other with flash attention; after that (one token
/// at a time) they attend to the cache: flash-decoding on the GPU path.
pub fn feed<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    caches: &mut [B::Cache],
    tokens: &B::Ids,
    positions: &B::Ids,
    n: usize,
) -> Result<B::T> {
    if caches.len() != c.layers {
        return Err(crate::error::Error::Config(format!(
            "{} caches for {} layers",
            caches.len(),
            c.layers
        )));
    }
    let (h, d) = (c.heads, c.head_dim());
    let scale = 1.0 / (d as f32).sqrt();
    let (mut x, mut h1) = embed(b, c, p, tokens, positions)?;
    for (l, cache) in caches.iter_mut().enumerate() {
        let qkv = b.matmul(&h1, &p.tensors[at(l, 2)])?;
        let [q, k, v] = b.split_qkv(&qkv, [1, n, h, c.kv_heads, d])?;
        let prompt = b.cache_len(cache) == 0;
        b.cache_append(cache, &k, &v)?;
        let o = if prompt {
            b.attention(&q, &k, &v, scale)?.0
        } else {
            b.cache_attend(cache, &q, scale)?
        };
        let next = tail(b, c, p, l, &x, &o, n, false)?;
        x = next.x_out;
        h1 = next.h_next;
    }
    Ok(b.matmul(&h1, p.lnf(c).2)?)
}

/// The logits of a batch of `batch` sequences of length T (sampling uses B = 1).
pub fn logits<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    inp: &Inputs<B::Ids>,
    batch: usize,
) -> Result<B::T> {
    Ok(forward(b, c, p, inp, batch)?.logits)
}

/// The mean loss and every parameter's gradient for one batch, the gradients allocated
/// together ([`gradients`]).
pub fn loss_and_grads<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    inp: &Inputs<B::Ids>,
) -> Result<(B::T, Params<B::T>)> {
    let mut grads = gradients(b, c)?;
    let losses = loss_and_grads_into(b, c, p, inp, &mut grads)?;
    Ok((losses, grads))
}

/// Room for every parameter's gradient, allocated together: on the GPU one buffer, so that
/// AdamW updates every parameter in one launch ([`Backend::adamw_together`]).
pub fn gradients<B: Backend>(b: &B, c: &Config) -> Result<Params<B::T>> {
    let shapes: Vec<Vec<usize>> = layout(c).into_iter().map(|(_, s)| s).collect();
    Ok(Params {
        tensors: b.alloc_together(&shapes)?,
    })
}

/// The per-row losses of one batch, every parameter's gradient written into `grads` (shaped
/// as [`gradients`] makes them).
pub fn loss_and_grads_into<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    inp: &Inputs<B::Ids>,
    grads: &mut Params<B::T>,
) -> Result<B::T> {
    let (t, h, d, rows) = (c.seq, c.heads, c.head_dim(), c.rows());
    let scale = 1.0 / (d as f32).sqrt();
    if grads.tensors.len() != p.tensors.len() {
        return Err(crate::error::Error::Config(format!(
            "{} gradients for {} parameters",
            grads.tensors.len(),
            p.tensors.len()
        )));
    }
    let Forward {
        saved,
        x_last,
        hf,
        logits,
    } = forward(b, c, p, inp, c.batch)?;
    let (losses, dlogits) = b.cross_entropy(&logits, &inp.targets, 1.0 / rows as f32)?;

    let g = &mut grads.tensors;
    let (gf, _, head) = p.lnf(c);
    let lnf = 2 + c.layers * BLOCK.len();
    b.matmul_at_into(&hf, &dlogits, &mut g[lnf + 2])?;
    let dhf = b.matmul_bt(&dlogits, head)?;
    let (dgf, dbf) = pair(g, lnf);
    let mut dx = b.layernorm_backward_into(&x_last, gf, &dhf, EPS, None, dgf, dbf)?;

    for (l, s) in saved.iter().enumerate().rev() {
        let w = |i| &p.tensors[at(l, i)];
        // MLP: x_out = x_mid + gelu(h2·w1)·w2.
        b.matmul_at_into(&s.g, &dx, &mut g[at(l, 7)])?;
        let dg = b.matmul_bt(&dx, w(7))?;
        let du = b.gelu_backward(&s.u, &dg)?;
        b.matmul_at_into(&s.h2, &du, &mut g[at(l, 6)])?;
        let dh2 = b.matmul_bt(&du, w(6))?;
        // The residual's gradient added as the norm's is written.
        let (dg2, db2) = pair(g, at(l, 4));
        dx = b.layernorm_backward_into(&s.x_mid, w(4), &dh2, EPS, Some(&dx), dg2, db2)?;
        // Attention: x_mid = x_in + attn(h1)·wo, with Q, K and V one product h1·wqkv.
        b.matmul_at_into(&s.o_rows, &dx, &mut g[at(l, 3)])?;
        let d_o = b.swap12(&b.reshape(&b.matmul_bt(&dx, w(3))?, &[c.batch, t, h, d])?)?;
        let dqkv = b.attention_backward(&s.q, &s.k, &s.v, &s.o, &s.lse, &d_o, scale)?;
        b.matmul_at_into(&s.h1, &dqkv, &mut g[at(l, 2)])?;
        let dh1 = b.matmul_bt(&dqkv, w(2))?;
        let (dg1, db1) = pair(g, at(l, 0));
        dx = b.layernorm_backward_into(&s.x_in, w(0), &dh1, EPS, Some(&dx), dg1, db1)?;
    }
    b.embedding_backward_into(&dx, &inp.tokens, &mut g[TOK])?;
    b.embedding_backward_into(&dx, &inp.positions, &mut g[POS])?;
    Ok(losses)
}

/// Tensors `i` and `i + 1`, both mutable (a layer norm's gamma and beta gradients).
fn pair<T>(tensors: &mut [T], i: usize) -> (&mut T, &mut T) {
    let (first, rest) = tensors[i..].split_at_mut(1);
    (&mut first[0], &mut rest[0])
}

/// The AdamW hyper-parameters of step `step` (weight decay as given; `step` sets it per tensor).
pub fn adamw(hyper: &Hyper, step: u32) -> AdamW {
    AdamW {
        lr: hyper.lr,
        beta1: hyper.beta1,
        beta2: hyper.beta2,
        eps: hyper.eps,
        weight_decay: hyper.weight_decay,
        step,
    }
}

/// One training step: gradients, then AdamW on every parameter (one launch on the GPU, over
/// the packed tensors). `corrections` holds the bias
/// corrections of step `s.step + 1` on the path ([`Backend::bias_corrections`]). Returns the
/// per-row losses (still on the path; the caller reads them).
pub fn step<B: Backend>(
    b: &B,
    c: &Config,
    hyper: &Hyper,
    s: &mut State<B::T>,
    inp: &Inputs<B::Ids>,
    corrections: &B::T,
) -> Result<B::T> {
    let (losses, grads) = loss_and_grads(b, c, &s.params, inp)?;
    s.step += 1;
    // No weight decay on the 1-D parameters, the layer norms' gains and biases (as is usual).
    let hypers: Vec<AdamW> = grads
        .tensors
        .iter()
        .map(|g| AdamW {
            weight_decay: if b.shape(g).len() > 1 {
                hyper.weight_decay
            } else {
                0.0
            },
            ..adamw(hyper, s.step)
        })
        .collect();
    b.adamw_together(
        &mut s.params.tensors,
        &grads.tensors,
        &mut s.m.tensors,
        &mut s.v.tensors,
        &hypers,
        corrections,
    )?;
    Ok(losses)
}

/// The mean of per-row losses.
pub fn mean(losses: &[f32]) -> f64 {
    losses.iter().map(|&l| f64::from(l)).sum::<f64>() / losses.len().max(1) as f64
}
