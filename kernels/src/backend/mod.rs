//! `Backend`: the ops a model is written against, one trait for the GPU path (kiln's kernels,
//! [`GpuBackend`]) and the CPU path (kiln's references, [`CpuBackend`]), so that one model
//! function runs on either and the two paths do the same arithmetic in the same order. The
//! attention demo's encoder and the flash demo's training step are both written against it.
//!
//! The CPU path comes plain (one thread: the reference, and what the browser's wasm build
//! runs) and threaded (matrix products split by rows and attention by (batch, head) across the
//! cores, natively): the same sums in the same order per element, so the two agree exactly, and
//! a speed-up claimed against the CPU says which it was measured against.

mod cpu;
mod gpu;

use std::future::Future;

use crate::cpu::Array;
use crate::elementwise::ElementOp;
use crate::error::{Error, Result};
use crate::optim::AdamW;

pub use cpu::{CpuBackend, CpuCache};
pub use gpu::GpuBackend;

/// The ops of a model's forward and backward passes and its optimiser step, on one path.
pub trait Backend {
    /// A tensor on this path.
    type T: Clone;
    /// Token ids on this path.
    type Ids;
    /// A key/value cache on this path: keys and values [B, Hkv, capacity, d] and how many rows
    /// of each head hold some.
    type Cache;
    /// A fixed-shape pass captured once and replayed (a GPU [`Plan`](crate::gpu::Plan)); `()` on
    /// a path that runs each call as it comes.
    type Replay;

    /// The path in words (`GPU (NVIDIA H200)`, `CPU (16 threads)`).
    fn name(&self) -> String;
    fn upload(&self, a: &Array) -> Result<Self::T>;
    fn ids(&self, ids: &[u32]) -> Result<Self::Ids>;
    /// The values of `t`. The read starts when this is called (on the GPU: the copy submitted
    /// behind the work recorded so far, the map asked for) and the future gives them: work
    /// recorded before it is awaited runs meanwhile and is not part of what is read.
    fn read(&self, t: &Self::T) -> impl Future<Output = Result<Vec<f32>>> + 'static;
    fn shape<'a>(&self, t: &'a Self::T) -> &'a [usize];
    fn reshape(&self, t: &Self::T, shape: &[usize]) -> Result<Self::T>;

    /// A · B, batched (ranks 2 or 3; a batch of 1 broadcasts).
    fn matmul(&self, a: &Self::T, b: &Self::T) -> Result<Self::T>;
    /// A · Bᵀ, B read transposed in place on the GPU.
    fn matmul_bt(&self, a: &Self::T, b: &Self::T) -> Result<Self::T>;
    /// Aᵀ · B: a weight gradient Xᵀ · dY.
    fn matmul_at(&self, a: &Self::T, b: &Self::T) -> Result<Self::T>;
    /// x · W + b over the last axis of x, in one launch on the GPU.
    fn linear(&self, x: &Self::T, w: &Self::T, b: &Self::T) -> Result<Self::T>;
    /// gelu(x · W + b), in one launch on the GPU.
    fn linear_gelu(&self, x: &Self::T, w: &Self::T, b: &Self::T) -> Result<Self::T>;
    /// Elementwise sum with numpy broadcasting.
    fn add(&self, a: &Self::T, b: &Self::T) -> Result<Self::T>;
    /// Softmax of `scale · x` over the last axis.
    fn softmax(&self, x: &Self::T, causal: bool, scale: f32) -> Result<Self::T>;
    /// Layer normalisation over the last axis.
    fn layernorm(&self, x: &Self::T, g: &Self::T, b: &Self::T, eps: f32) -> Result<Self::T>;
    /// (x + r, layernorm(x + r)), in one launch on the GPU.
    fn add_layernorm(
        &self,
        x: &Self::T,
        r: &Self::T,
        g: &Self::T,
        b: &Self::T,
        eps: f32,
    ) -> Result<(Self::T, Self::T)>;
    /// (dx, dgamma, dbeta) of a layer norm given dy.
    fn layernorm_backward(
        &self,
        x: &Self::T,
        g: &Self::T,
        dy: &Self::T,
        eps: f32,
    ) -> Result<(Self::T, Self::T, Self::T)>;
    /// An elementwise op (gelu, silu, …) over operands of one shape: every elementwise family,
    /// on every path, through this one method.
    fn elementwise(&self, op: ElementOp, operands: &[&Self::T]) -> Result<Self::T>;
    fn gelu(&self, x: &Self::T) -> Result<Self::T> {
        self.elementwise(ElementOp::Gelu, &[x])
    }
    fn gelu_backward(&self, x: &Self::T, dy: &Self::T) -> Result<Self::T> {
        self.elementwise(ElementOp::GeluBackward, &[x, dy])
    }
    /// The last two axes swapped: [.., r, c] → [.., c, r].
    fn transpose(&self, x: &Self::T) -> Result<Self::T>;
    /// [a, b, c, d] → [a, c, b, d].
    fn swap12(&self, x: &Self::T) -> Result<Self::T>;
    /// [B·T, (H + 2·Hkv)·d] (Q, K and V side by side, as one projection makes them) → Q
    /// [B, H, T, d], K and V [B, Hkv, T, d]; `dims` is [B, T, H, Hkv, d], Hkv dividing H
    /// (grouped-query attention; Hkv = H is plain multi-head).
    fn split_qkv(&self, qkv: &Self::T, dims: [usize; 5]) -> Result<[Self::T; 3]>;
    /// Causal flash attention of Q [B, H, T, d] over K and V [B, Hkv, T, d]: (O, LSE).
    fn attention(
        &self,
        q: &Self::T,
        k: &Self::T,
        v: &Self::T,
        scale: f32,
    ) -> Result<(Self::T, Self::T)>;
    /// dQ, dK and dV side by side as [B·T, (H + 2·Hkv)·d]: the gradient of the product that
    /// made Q, K and V (the layout `split_qkv` takes apart).
    #[allow(clippy::too_many_arguments)]
    fn attention_backward(
        &self,
        q: &Self::T,
        k: &Self::T,
        v: &Self::T,
        o: &Self::T,
        lse: &Self::T,
        d_o: &Self::T,
        scale: f32,
    ) -> Result<Self::T>;
    fn embedding(&self, table: &Self::T, ids: &Self::Ids) -> Result<Self::T>;
    fn embedding_backward(&self, dy: &Self::T, ids: &Self::Ids, vocab: usize) -> Result<Self::T>;
    /// (loss per row, dlogits · grad_scale).
    fn cross_entropy(
        &self,
        logits: &Self::T,
        targets: &Self::Ids,
        grad_scale: f32,
    ) -> Result<(Self::T, Self::T)>;
    /// One AdamW update of `p` (and its moments) in place, with `h`'s bias corrections as
    /// `corrections` holds them (made by [`bias_corrections`](Self::bias_corrections); the GPU
    /// reads them when the launch runs, so a captured step replays with them rewritten).
    fn adamw(
        &self,
        p: &mut Self::T,
        g: &Self::T,
        m: &mut Self::T,
        v: &mut Self::T,
        h: &AdamW,
        corrections: &Self::T,
    ) -> Result<()>;
    /// [`adamw`](Self::adamw) on every tensor `p[i]` with `g[i]`, `m[i]`, `v[i]` and `h[i]` (one
    /// step: alike but for lr and weight decay). On the GPU, groups made by
    /// [`upload_together`](Self::upload_together) and [`alloc_together`](Self::alloc_together)
    /// take one launch over a table of the tensors; others, one launch per tensor.
    #[allow(clippy::too_many_arguments)]
    fn adamw_together(
        &self,
        p: &mut [Self::T],
        g: &[Self::T],
        m: &mut [Self::T],
        v: &mut [Self::T],
        h: &[AdamW],
        corrections: &Self::T,
    ) -> Result<()> {
        check_together(self, p, g, m, v, h)?;
        for i in 0..p.len() {
            self.adamw(&mut p[i], &g[i], &mut m[i], &mut v[i], &h[i], corrections)?;
        }
        Ok(())
    }
    /// Uploads `arrays` together: on the GPU packed in one buffer, as one step of
    /// [`adamw_together`](Self::adamw_together) takes them.
    fn upload_together(&self, arrays: &[Array]) -> Result<Vec<Self::T>> {
        arrays.iter().map(|a| self.upload(a)).collect()
    }
    /// Tensors of these shapes, allocated together as [`upload_together`](Self::upload_together)
    /// packs them (gradients an optimiser step reads), their contents unspecified until written.
    fn alloc_together(&self, shapes: &[Vec<usize>]) -> Result<Vec<Self::T>> {
        shapes
            .iter()
            .map(|s| self.upload(&Array::new(s, vec![0.0; s.iter().product()])?))
            .collect()
    }
    /// gelu(x · W) for x [.., K] and W [K, N] (no bias): one launch on the GPU, where the
    /// pre-activation is not kept.
    fn matmul_gelu(&self, x: &Self::T, w: &Self::T) -> Result<Self::T> {
        self.gelu(&self.matmul(x, w)?)
    }
    /// Aᵀ · B written into `out` (a tensor of the product's shape, such as one of
    /// [`alloc_together`](Self::alloc_together)'s).
    fn matmul_at_into(&self, a: &Self::T, b: &Self::T, out: &mut Self::T) -> Result<()> {
        let c = self.matmul_at(a, b)?;
        replace("matmul_at_into", self, out, c)
    }
    /// [`layernorm_backward`](Self::layernorm_backward) with dgamma and dbeta written into
    /// `dg` and `db`; returns dx, with `acc` added where given (the gradient a residual path
    /// brings: `acc + dx`, one launch on the GPU).
    #[allow(clippy::too_many_arguments)]
    fn layernorm_backward_into(
        &self,
        x: &Self::T,
        g: &Self::T,
        dy: &Self::T,
        eps: f32,
        acc: Option<&Self::T>,
        dg: &mut Self::T,
        db: &mut Self::T,
    ) -> Result<Self::T> {
        let (dx, dgamma, dbeta) = self.layernorm_backward(x, g, dy, eps)?;
        replace("layernorm_backward_into", self, dg, dgamma)?;
        replace("layernorm_backward_into", self, db, dbeta)?;
        match acc {
            Some(a) => self.add(a, &dx),
            None => Ok(dx),
        }
    }
    /// [`embedding_backward`](Self::embedding_backward) written into `out` [vocab, cols].
    fn embedding_backward_into(
        &self,
        dy: &Self::T,
        ids: &Self::Ids,
        out: &mut Self::T,
    ) -> Result<()> {
        let vocab = self.shape(out).first().copied().unwrap_or(0);
        let table = self.embedding_backward(dy, ids, vocab)?;
        replace("embedding_backward_into", self, out, table)
    }
    /// `h`'s bias corrections (1 − β₁ᵗ, 1 − β₂ᵗ) on the path, as `adamw` reads them.
    fn bias_corrections(&self, h: &AdamW) -> Result<Self::T>;
    /// Rewrites `corrections` in place for `h`'s step.
    fn set_bias_corrections(&self, corrections: &mut Self::T, h: &AdamW) -> Result<()>;
    /// An empty key/value cache with room for `capacity` rows per head, the same dtype as the
    /// path's tensors.
    fn cache(
        &self,
        batch: usize,
        kv_heads: usize,
        capacity: usize,
        head_dim: usize,
    ) -> Result<Self::Cache>;
    /// `count` empty caches (a model's layers) that are appended to together: on the GPU they
    /// share one length word, which [`feed_greedy`](Self::feed_greedy) moves on in one launch.
    fn caches(
        &self,
        count: usize,
        batch: usize,
        kv_heads: usize,
        capacity: usize,
        head_dim: usize,
    ) -> Result<Vec<Self::Cache>> {
        (0..count)
            .map(|_| self.cache(batch, kv_heads, capacity, head_dim))
            .collect()
    }
    /// Rows per head the cache holds.
    fn cache_len(&self, cache: &Self::Cache) -> usize;
    /// Forgets every row (a new context); the next appends overwrite them.
    fn cache_clear(&self, cache: &mut Self::Cache) -> Result<()>;
    /// Counts `n` more rows as held without writing them: what the append of a replayed pass
    /// writes when it runs. Refused when they do not fit.
    fn cache_grow(&self, cache: &mut Self::Cache, n: usize) -> Result<()>;
    /// Appends K and V [B, Hkv, n, d] after the cache's rows; refused, with nothing written,
    /// when they do not fit.
    fn cache_append(&self, cache: &mut Self::Cache, k: &Self::T, v: &Self::T) -> Result<()>;
    /// Causal attention of Q [B, H, n, d] — the queries of the cache's newest n rows — over
    /// every row of the cache: query i sees keys j ≤ len − n + i. O like Q. Flash-decoding on
    /// the GPU path.
    fn cache_attend(&self, cache: &Self::Cache, q: &Self::T, scale: f32) -> Result<Self::T>;
    /// Waits for the path's queued work (the GPU's; the CPU path is always done).
    fn idle(&self) -> impl Future<Output = Result<()>>;
    /// Captures the work `build` records as a pass to [`replay`](Self::replay), returning it with
    /// what `build` returned (tensors the replays rewrite). `None`, without running `build`, on a
    /// path that cannot capture: its caller runs the pass each time instead.
    fn capture<R>(&self, build: impl FnOnce() -> Result<R>) -> Result<Option<(Self::Replay, R)>>;
    /// Runs a captured pass again, on the inputs as they are now.
    fn replay(&self, pass: &Self::Replay) -> Result<()>;
    /// Rewrites ids in place: an input of a captured pass, between replays.
    fn write_ids(&self, ids: &Self::Ids, values: &[u32]) -> Result<()>;
    /// Greedy decoding's hand-over, recorded at the end of a one-token pass so that a captured
    /// pass feeds itself: the likeliest id of `logits`' last row
    /// ([`greedy_pick`](crate::cpu::greedy_pick)'s rule) into `token`; `position` and the
    /// length of `caches` (made together by [`caches`](Self::caches)) moved on by one; the row
    /// and the id logged at row `position % cap` of `log` [cap, V + 1]. Only on a path that
    /// captures; the others refuse.
    fn feed_greedy(
        &self,
        _logits: &Self::T,
        _token: &Self::Ids,
        _position: &Self::Ids,
        _caches: &[Self::Cache],
        _log: &Self::T,
    ) -> Result<()> {
        Err(no_capture("feed_greedy"))
    }

    /// [N, H·d] → [H, N, d]: one matrix per attention head.
    fn split_heads(&self, x: &Self::T, heads: usize) -> Result<Self::T> {
        let [n, width] = two_axes("split_heads", self.shape(x))?;
        let d = per_head("split_heads", width, heads)?;
        let heads_first = self.swap12(&self.reshape(x, &[1, n, heads, d])?)?;
        self.reshape(&heads_first, &[heads, n, d])
    }

    /// [H, N, d] → [N, H·d]: the heads side by side again.
    fn merge_heads(&self, x: &Self::T) -> Result<Self::T> {
        let [h, n, d] = match *self.shape(x) {
            [h, n, d] => [h, n, d],
            ref other => {
                return Err(Error::shape(
                    "merge_heads",
                    format!("shape {other:?}: expected [heads, N, d]"),
                ));
            }
        };
        let rows = self.swap12(&self.reshape(x, &[1, h, n, d])?)?;
        self.reshape(&rows, &[n, h * d])
    }

    /// [N, 3·H·d] (one sequence) → Q, K and V, each [H, N, d].
    fn split_heads_qkv(&self, qkv: &Self::T, heads: usize) -> Result<[Self::T; 3]> {
        let [n, width] = two_axes("split_qkv", self.shape(qkv))?;
        let d = per_head("split_qkv", width, 3 * heads)?;
        let [q, k, v] = self.split_qkv(qkv, [1, n, heads, heads, d])?;
        Ok([
            self.reshape(&q, &[heads, n, d])?,
            self.reshape(&k, &[heads, n, d])?,
            self.reshape(&v, &[heads, n, d])?,
        ])
    }
}

/// `adamw_together`'s operands, checked before anything runs: one gradient, two moments and
/// one set of hyper-parameters per tensor, each of its tensor's shape, every set valid and all
/// of one step (alike but for lr and weight decay), on every path alike.
fn check_together<B: Backend + ?Sized>(
    b: &B,
    p: &[B::T],
    g: &[B::T],
    m: &[B::T],
    v: &[B::T],
    h: &[AdamW],
) -> Result<()> {
    let op = "adamw_together";
    let n = p.len();
    let others = [g.len(), m.len(), v.len(), h.len()];
    if others != [n; 4] {
        return Err(Error::shape(
            op,
            format!("{n} tensors with {others:?} gradients, moments and hyper-parameter sets"),
        ));
    }
    let shared = |h: &AdamW| (h.beta1, h.beta2, h.eps, h.step);
    for i in 0..n {
        for (name, t) in [("g", &g[i]), ("m", &m[i]), ("v", &v[i])] {
            if b.shape(t) != b.shape(&p[i]) {
                return Err(Error::shape(
                    op,
                    format!(
                        "{name}[{i}] has shape {:?}, p[{i}] has {:?}",
                        b.shape(t),
                        b.shape(&p[i])
                    ),
                ));
            }
        }
        h[i].check(op)?;
        if shared(&h[i]) != shared(&h[0]) {
            return Err(Error::InvalidArgument {
                op,
                detail: format!(
                    "set {i} has betas, eps or step unlike set 0's: one step takes one of each"
                ),
            });
        }
    }
    Ok(())
}

/// `out` replaced by `value`, which must have its shape: the `*_into` methods' default.
fn replace<B: Backend + ?Sized>(
    op: &'static str,
    b: &B,
    out: &mut B::T,
    value: B::T,
) -> Result<()> {
    if b.shape(&value) != b.shape(out) {
        return Err(Error::shape(
            op,
            format!(
                "the output has shape {:?}, the op makes {:?}",
                b.shape(out),
                b.shape(&value)
            ),
        ));
    }
    *out = value;
    Ok(())
}

/// The two extents of a matrix.
fn two_axes(op: &'static str, shape: &[usize]) -> Result<[usize; 2]> {
    match *shape {
        [n, width] => Ok([n, width]),
        _ => Err(Error::shape(
            op,
            format!("shape {shape:?}: expected a matrix [N, width]"),
        )),
    }
}

/// The width of each of `parts` equal parts of `width`.
fn per_head(op: &'static str, width: usize, parts: usize) -> Result<usize> {
    if parts == 0 || !width.is_multiple_of(parts) {
        return Err(Error::shape(
            op,
            format!("a width of {width} does not split into {parts} heads"),
        ));
    }
    Ok(width / parts)
}

/// [B, H, T, d] of Q, named in the error when Q has another rank.
fn bhtd(op: &'static str, shape: &[usize]) -> Result<[usize; 4]> {
    match *shape {
        [b, h, t, d] => Ok([b, h, t, d]),
        _ => Err(Error::shape(
            op,
            format!("Q has shape {shape:?}: expected [B, H, T, d]"),
        )),
    }
}

/// What a path that runs every call as it comes says when asked for a replay's parts.
pub(crate) fn no_capture(op: &'static str) -> Error {
    Error::InvalidArgument {
        op,
        detail: "this path runs every pass as it comes: it captures nothing to replay".into(),
    }
}
