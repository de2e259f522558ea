//! `Backend`: the ops a model is written against, one trait for the GPU path (kiln's kernels,
//! [`GpuBackend`]) and the CPU path (kiln's references, [`CpuBackend`]), so that one model
//! function runs on either and the two paths do the same arithmetic in the same order. The
//! attention demo's encoder and the flash demo's training step are both written against it.
//!
//! The CPU path comes plain (one thread: the reference, and what the browser's wasm build
//! runs) and threaded (matrix products split by rows and attention by (batch, head) across the
//! cores, natively): the same sums in the same order per element, so the two agree exactly, and
//! a speed-up claimed against the CPU says which it was measured against.

use std::future::Future;

use crate::Gpu;
use crate::cpu::{self, Array};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Plan;
use crate::ops;
use crate::optim::AdamW;
use crate::tensor::Tensor;

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
    fn read(&self, t: &Self::T) -> impl Future<Output = Result<Vec<f32>>>;
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
    fn gelu(&self, x: &Self::T) -> Result<Self::T>;
    fn gelu_backward(&self, x: &Self::T, dy: &Self::T) -> Result<Self::T>;
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
        together_counts(p.len(), [g.len(), m.len(), v.len(), h.len()])?;
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

/// The two extents of a matrix.
/// `adamw_together`'s operands: one gradient, two moments and one set of hyper-parameters per
/// tensor.
fn together_counts(n: usize, others: [usize; 4]) -> Result<()> {
    if others != [n; 4] {
        return Err(Error::shape(
            "adamw_together",
            format!("{n} tensors with {others:?} gradients, moments and hyper-parameter sets"),
        ));
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

/// [a, b, c, d] → [a, c, b, d]: a view of the same buffer when b or c is 1 (the elements are
/// in the same order: a decoding step's one row), a launch otherwise.
fn swapped12(x: &Tensor) -> Result<Tensor> {
    match *x.shape() {
        [a, b, c, d] if b == 1 || c == 1 => x.reshape(&[a, c, b, d]),
        _ => ops::swap_axes12(x),
    }
}

/// The GPU path: every op a kiln kernel rendered for this adapter.
#[derive(Clone, Debug)]
pub struct GpuBackend {
    pub gpu: Gpu,
}

impl Backend for GpuBackend {
    type T = Tensor;
    type Ids = Tensor;
    type Cache = ops::KvCache;
    type Replay = crate::gpu::Plan;

    fn name(&self) -> String {
        format!("GPU ({})", self.gpu.profile().name)
    }
    fn upload(&self, a: &Array) -> Result<Tensor> {
        Tensor::from_slice(&self.gpu, &a.shape, &a.data, DType::F32)
    }
    fn ids(&self, ids: &[u32]) -> Result<Tensor> {
        Tensor::from_u32(&self.gpu, &[ids.len()], ids)
    }
    async fn read(&self, t: &Tensor) -> Result<Vec<f32>> {
        t.read().await
    }
    fn shape<'a>(&self, t: &'a Tensor) -> &'a [usize] {
        t.shape()
    }
    fn reshape(&self, t: &Tensor, shape: &[usize]) -> Result<Tensor> {
        t.reshape(shape)
    }
    fn matmul(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ops::matmul(a, b)
    }
    fn matmul_bt(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ops::matmul_bt(a, b)
    }
    fn matmul_at(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ops::matmul_at(a, b)
    }
    fn linear(&self, x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
        ops::linear(x, w, b)
    }
    fn linear_gelu(&self, x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
        ops::linear_gelu(x, w, b)
    }
    fn add(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ops::add(a, b)
    }
    fn softmax(&self, x: &Tensor, causal: bool, scale: f32) -> Result<Tensor> {
        ops::softmax(x, causal, scale)
    }
    fn layernorm(&self, x: &Tensor, g: &Tensor, b: &Tensor, eps: f32) -> Result<Tensor> {
        ops::layernorm(x, g, b, eps)
    }
    fn add_layernorm(
        &self,
        x: &Tensor,
        r: &Tensor,
        g: &Tensor,
        b: &Tensor,
        eps: f32,
    ) -> Result<(Tensor, Tensor)> {
        ops::add_layernorm(x, r, g, b, eps)
    }
    fn layernorm_backward(
        &self,
        x: &Tensor,
        g: &Tensor,
        dy: &Tensor,
        eps: f32,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        ops::layernorm_backward(x, g, dy, eps)
    }
    fn gelu(&self, x: &Tensor) -> Result<Tensor> {
        ops::gelu(x)
    }
    fn gelu_backward(&self, x: &Tensor, dy: &Tensor) -> Result<Tensor> {
        ops::gelu_backward(x, dy)
    }
    fn transpose(&self, x: &Tensor) -> Result<Tensor> {
        ops::transpose(x)
    }
    fn swap12(&self, x: &Tensor) -> Result<Tensor> {
        swapped12(x)
    }
    fn split_qkv(&self, qkv: &Tensor, [b, t, h, hkv, d]: [usize; 5]) -> Result<[Tensor; 3]> {
        if hkv == h && b != 1 {
            // [B, T, 3, H, d] → [3, B, H, T, d] in one launch: three equal parts, each a view
            // [B, H, T, d] where the device's offset alignment allows.
            let stacked = ops::permute(&qkv.reshape(&[b, t, 3, h, d])?, [2, 0, 3, 1])?;
            return Ok([stacked.part(0)?, stacked.part(1)?, stacked.part(2)?]);
        }
        // [B, T, H + 2Hkv, d] → [B, H + 2Hkv, T, d]: each batch's Q heads, then K's, then V's.
        let heads = swapped12(&qkv.reshape(&[b, t, h + 2 * hkv, d])?)?;
        let rows = heads.reshape(&[b * (h + 2 * hkv), t, d])?;
        let take = |first: usize, count: usize| -> Result<Tensor> {
            let part = if b == 1 {
                rows.rows(first, count)?
            } else {
                // One copy of each batch's heads of the part.
                let out = Tensor::uninit(&self.gpu, &[b * count, t, d], qkv.dtype())?;
                for i in 0..b {
                    out.copy_rows(i * count, &rows, i * (h + 2 * hkv) + first, count)?;
                }
                out
            };
            part.reshape(&[b, count, t, d])
        };
        Ok([take(0, h)?, take(h, hkv)?, take(h + hkv, hkv)?])
    }
    fn attention(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        scale: f32,
    ) -> Result<(Tensor, Tensor)> {
        ops::flash_attention(q, k, v, true, scale)
    }
    fn attention_backward(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        o: &Tensor,
        lse: &Tensor,
        d_o: &Tensor,
        scale: f32,
    ) -> Result<Tensor> {
        let [b, h, t, d] = bhtd("attention_backward", q.shape())?;
        let hkv = k.shape().get(1).copied().unwrap_or(h);
        if hkv != h {
            // Grouped heads: the gradients apart, then each batch's dQ, dK and dV heads copied
            // side by side ([B, H + 2Hkv, T, d]) and the heads moved behind the tokens.
            let grads = ops::attention::Grads::like(q, k, v)?;
            ops::flash_attention_backward_into(q, k, v, o, lse, d_o, &grads, true, scale)?;
            let all = h + 2 * hkv;
            let heads = Tensor::uninit(&self.gpu, &[b * all, t, d], q.dtype())?;
            for (g, first, count) in [
                (&grads.dq, 0, h),
                (&grads.dk, h, hkv),
                (&grads.dv, h + hkv, hkv),
            ] {
                let g = g.reshape(&[b * count, t, d])?;
                for i in 0..b {
                    heads.copy_rows(i * all + first, &g, i * count, count)?;
                }
            }
            let rows = ops::swap_axes12(&heads.reshape(&[b, all, t, d])?)?;
            return rows.reshape(&[b * t, all * d]);
        }
        // dQ, dK and dV written straight into the parts of one [3, B, H, T, d] tensor, then
        // that put back into [B, T, 3H, d].
        let stacked = Tensor::uninit(&self.gpu, &[3, b, h, t, d], q.dtype())?;
        let views: Result<Vec<Tensor>> = (0..3).map(|i| stacked.part_view(i)).collect();
        let stacked = match views {
            Ok(g) => {
                let grads = ops::attention::Grads {
                    dq: g[0].clone(),
                    dk: g[1].clone(),
                    dv: g[2].clone(),
                };
                ops::flash_attention_backward_into(q, k, v, o, lse, d_o, &grads, true, scale)?;
                stacked
            }
            // The device's offset alignment allows no views here: separate gradients, stacked.
            Err(_) => {
                let grads = ops::attention::Grads::like(q, k, v)?;
                ops::flash_attention_backward_into(q, k, v, o, lse, d_o, &grads, true, scale)?;
                ops::stack(&[&grads.dq, &grads.dk, &grads.dv])?
            }
        };
        // [3, B, H, T, d] → [B, T, 3, H, d] in one launch: split_qkv's step in reverse.
        let rows = ops::permute(&stacked.reshape(&[3, b, h, t, d])?, [1, 3, 0, 2])?;
        rows.reshape(&[b * t, 3 * h * d])
    }
    fn embedding(&self, table: &Tensor, ids: &Tensor) -> Result<Tensor> {
        ops::embedding(table, ids)
    }
    fn embedding_backward(&self, dy: &Tensor, ids: &Tensor, vocab: usize) -> Result<Tensor> {
        ops::embedding_backward(dy, ids, vocab)
    }
    fn cross_entropy(
        &self,
        logits: &Tensor,
        targets: &Tensor,
        grad_scale: f32,
    ) -> Result<(Tensor, Tensor)> {
        ops::cross_entropy(logits, targets, grad_scale)
    }
    fn adamw(
        &self,
        p: &mut Tensor,
        g: &Tensor,
        m: &mut Tensor,
        v: &mut Tensor,
        h: &AdamW,
        corrections: &Tensor,
    ) -> Result<()> {
        ops::adamw_into(p, g, m, v, h, corrections, None).map(|_| ())
    }
    fn adamw_together(
        &self,
        p: &mut [Tensor],
        g: &[Tensor],
        m: &mut [Tensor],
        v: &mut [Tensor],
        h: &[AdamW],
        corrections: &Tensor,
    ) -> Result<()> {
        if p.len() > 1 && ops::packed_alike(p, g, m, v) {
            return ops::adamw_table(p, g, m, v, h, corrections).map(|_| ());
        }
        together_counts(p.len(), [g.len(), m.len(), v.len(), h.len()])?;
        for i in 0..p.len() {
            ops::adamw_into(&p[i], &g[i], &m[i], &v[i], &h[i], corrections, None)?;
        }
        Ok(())
    }
    fn upload_together(&self, arrays: &[Array]) -> Result<Vec<Tensor>> {
        let parts: Vec<(&[usize], &[f32])> = arrays
            .iter()
            .map(|a| (a.shape.as_slice(), a.data.as_slice()))
            .collect();
        Tensor::packed_from(&self.gpu, &parts, DType::F32)
    }
    fn alloc_together(&self, shapes: &[Vec<usize>]) -> Result<Vec<Tensor>> {
        let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        Tensor::packed(&self.gpu, &shapes, DType::F32)
    }
    fn matmul_gelu(&self, x: &Tensor, w: &Tensor) -> Result<Tensor> {
        ops::matmul_gelu(x, w)
    }
    fn matmul_at_into(&self, a: &Tensor, b: &Tensor, out: &mut Tensor) -> Result<()> {
        ops::matmul_at_into(a, b, out)
    }
    fn layernorm_backward_into(
        &self,
        x: &Tensor,
        g: &Tensor,
        dy: &Tensor,
        eps: f32,
        acc: Option<&Tensor>,
        dg: &mut Tensor,
        db: &mut Tensor,
    ) -> Result<Tensor> {
        let dx = Tensor::uninit(x.gpu(), x.shape(), x.dtype())?;
        let named = Default::default();
        match acc {
            Some(a) => ops::layernorm_backward_add_into(x, g, dy, a, &dx, dg, db, eps, named)?,
            None => ops::layernorm_backward_into(x, g, dy, &dx, dg, db, eps, named)?,
        };
        Ok(dx)
    }
    fn embedding_backward_into(&self, dy: &Tensor, ids: &Tensor, out: &mut Tensor) -> Result<()> {
        ops::embedding_backward_into(dy, ids, out, None).map(|_| ())
    }
    fn bias_corrections(&self, h: &AdamW) -> Result<Tensor> {
        ops::bias_corrections(&self.gpu, h)
    }
    fn set_bias_corrections(&self, corrections: &mut Tensor, h: &AdamW) -> Result<()> {
        let (bc1, bc2) = h.bias_corrections();
        corrections.write(&[bc1, bc2])
    }
    fn cache(
        &self,
        batch: usize,
        kv_heads: usize,
        capacity: usize,
        head_dim: usize,
    ) -> Result<ops::KvCache> {
        ops::KvCache::new(&self.gpu, batch, kv_heads, capacity, head_dim, DType::F32)
    }
    fn caches(
        &self,
        count: usize,
        batch: usize,
        kv_heads: usize,
        capacity: usize,
        head_dim: usize,
    ) -> Result<Vec<ops::KvCache>> {
        let shape = [batch, kv_heads, capacity, head_dim];
        ops::KvCache::group(&self.gpu, count, shape, DType::F32)
    }
    fn cache_len(&self, cache: &ops::KvCache) -> usize {
        cache.len()
    }
    fn cache_clear(&self, cache: &mut ops::KvCache) -> Result<()> {
        cache.truncate(0)
    }
    fn cache_grow(&self, cache: &mut ops::KvCache, n: usize) -> Result<()> {
        cache.grow(n)
    }
    fn cache_append(&self, cache: &mut ops::KvCache, k: &Tensor, v: &Tensor) -> Result<()> {
        cache.append(k, v)
    }
    fn cache_attend(&self, cache: &ops::KvCache, q: &Tensor, scale: f32) -> Result<Tensor> {
        Ok(cache.attend(q, true, scale)?.0)
    }
    async fn idle(&self) -> Result<()> {
        self.gpu.idle().await
    }
    fn capture<R>(&self, build: impl FnOnce() -> Result<R>) -> Result<Option<(Plan, R)>> {
        Ok(Some(self.gpu.capture(build)?))
    }
    fn replay(&self, pass: &Plan) -> Result<()> {
        pass.replay()
    }
    fn write_ids(&self, ids: &Tensor, values: &[u32]) -> Result<()> {
        ids.write_u32(values)
    }
    fn feed_greedy(
        &self,
        logits: &Tensor,
        token: &Tensor,
        position: &Tensor,
        caches: &[ops::KvCache],
        log: &Tensor,
    ) -> Result<()> {
        let Some(first) = caches.first() else {
            return Err(Error::InvalidArgument {
                op: "greedy_next",
                detail: "no cache to move on".into(),
            });
        };
        if !caches.iter().all(|c| c.shares_length(first)) {
            return Err(Error::InvalidArgument {
                op: "greedy_next",
                detail: "the caches count apart: make them together (`caches`) so that one word holds their length".into(),
            });
        }
        ops::greedy_next_into(logits, token, position, first.length(), log, None).map(|_| ())
    }
}

/// The CPU path: kiln's CPU references. With `threads > 1` the matrix products are split by
/// rows and attention by (batch, head) across that many threads; everything else runs on one.
#[derive(Clone, Copy, Debug)]
pub struct CpuBackend {
    pub threads: usize,
}

impl CpuBackend {
    /// The plain path, one thread (what the browser's wasm build runs).
    pub fn plain() -> Self {
        CpuBackend { threads: 1 }
    }

    /// Every core this machine offers.
    pub fn all_cores() -> Self {
        CpuBackend {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// A · B for 2-D A, its rows split across the threads (each row's sums as one thread would
    /// add them).
    fn matmul_rows(&self, a: &Array, b: &Array) -> Result<Array> {
        let (rows, k) = match a.shape.as_slice() {
            [r, k] if self.threads > 1 && b.shape.len() == 2 => (*r, *k),
            _ => return cpu::matmul(a, b),
        };
        let n = b.shape[1];
        let parts = split(rows, self.threads, |range| {
            let part = Array::new(
                &[range.len(), k],
                a.data[range.start * k..range.end * k].to_vec(),
            )?;
            Ok(cpu::matmul(&part, b)?.data)
        })?;
        Array::new(&[rows, n], parts.concat())
    }

    /// x · W over the last axis of x, split by rows, then `then` applied to the bias sum: the
    /// reference's linear layer (`cpu::linear`) with its product threaded.
    fn linear_rows(
        &self,
        x: &Array,
        w: &Array,
        b: &Array,
        then: fn(Array) -> Result<Array>,
    ) -> Result<Array> {
        if self.threads <= 1 {
            return then(cpu::linear(x, w, b)?);
        }
        let (rows, k) = crate::shape::rows_cols("linear", &x.shape)?;
        let y = self.matmul_rows(&Array::new(&[rows, k], x.data.clone())?, w)?;
        let shape = crate::shape::with_last(&x.shape, &y.shape);
        then(cpu::add(&Array::new(&shape, y.data)?, b)?)
    }

    /// `f` over [BH, T, d] slices of the heads, split across the threads; the results of each
    /// output are concatenated back in order. An input with fewer heads (grouped K and V) is
    /// split at the same group boundaries: a thread takes whole groups.
    fn per_heads<const N: usize>(
        &self,
        inputs: &[&Array],
        f: impl Fn(&[Array]) -> Result<[Vec<f32>; N]> + Sync,
    ) -> Result<[Vec<f32>; N]> {
        // (matrices, rows × d per matrix) of each input.
        let mut sizes = Vec::with_capacity(inputs.len());
        for x in inputs {
            let r = x.shape.len();
            if r < 2 {
                return Err(Error::shape(
                    "attention",
                    format!("shape {:?}: expected [.., T, d]", x.shape),
                ));
            }
            let matrices: usize = x.shape[..r - 2].iter().product();
            sizes.push((matrices, x.shape[r - 2] * x.shape[r - 1]));
        }
        let units = sizes.iter().map(|s| s.0).min().unwrap_or(0);
        if sizes.iter().any(|s| units == 0 || s.0 % units != 0) {
            return Err(Error::shape(
                "attention",
                format!("heads {sizes:?} do not split into equal groups"),
            ));
        }
        let parts = split(units, self.threads, |range| {
            let slices = inputs
                .iter()
                .zip(&sizes)
                .map(|(x, &(matrices, per))| {
                    let m = matrices / units;
                    let r = x.shape.len();
                    Array::new(
                        &[range.len() * m, x.shape[r - 2], x.shape[r - 1]],
                        x.data[range.start * m * per..range.end * m * per].to_vec(),
                    )
                })
                .collect::<Result<Vec<_>>>()?;
            f(&slices)
        })?;
        Ok(std::array::from_fn(|i| {
            parts.iter().flat_map(|p| p[i].iter().copied()).collect()
        }))
    }
}

/// What a path that runs every call as it comes says when asked for a replay's parts.
pub(crate) fn no_capture(op: &'static str) -> Error {
    Error::InvalidArgument {
        op,
        detail: "this path runs every pass as it comes: it captures nothing to replay".into(),
    }
}

/// The CPU path's key/value cache: keys and values [B, Hkv, capacity, d] and the rows of each
/// head that hold some.
#[derive(Clone, Debug)]
pub struct CpuCache {
    k: Array,
    v: Array,
    len: usize,
}

/// Runs `f` on `threads` contiguous ranges of `0..n` (on this thread when there is one) and
/// returns the results in order.
fn split<R: Send>(
    n: usize,
    threads: usize,
    f: impl Fn(std::ops::Range<usize>) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 {
        return Ok(vec![f(0..n)?]);
    }
    let chunk = n.div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|start| {
                let f = &f;
                s.spawn(move || f(start..(start + chunk).min(n)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::InvalidArgument {
                        op: "cpu",
                        detail: "a CPU worker thread panicked".into(),
                    })
                })
            })
            .collect()
    })
}

impl Backend for CpuBackend {
    type T = Array;
    type Ids = Vec<u32>;
    type Cache = CpuCache;
    type Replay = ();

    fn name(&self) -> String {
        if self.threads > 1 {
            format!("CPU ({} threads)", self.threads)
        } else {
            "CPU (1 thread)".into()
        }
    }
    fn upload(&self, a: &Array) -> Result<Array> {
        Ok(a.clone())
    }
    fn ids(&self, ids: &[u32]) -> Result<Vec<u32>> {
        Ok(ids.to_vec())
    }
    async fn read(&self, t: &Array) -> Result<Vec<f32>> {
        Ok(t.data.clone())
    }
    fn shape<'a>(&self, t: &'a Array) -> &'a [usize] {
        &t.shape
    }
    fn reshape(&self, t: &Array, shape: &[usize]) -> Result<Array> {
        Array::new(shape, t.data.clone())
    }
    fn matmul(&self, a: &Array, b: &Array) -> Result<Array> {
        self.matmul_rows(a, b)
    }
    fn matmul_bt(&self, a: &Array, b: &Array) -> Result<Array> {
        self.matmul_rows(a, &cpu::transpose(b)?)
    }
    fn matmul_at(&self, a: &Array, b: &Array) -> Result<Array> {
        self.matmul_rows(&cpu::transpose(a)?, b)
    }
    fn linear(&self, x: &Array, w: &Array, b: &Array) -> Result<Array> {
        self.linear_rows(x, w, b, Ok)
    }
    fn linear_gelu(&self, x: &Array, w: &Array, b: &Array) -> Result<Array> {
        self.linear_rows(x, w, b, |y| cpu::gelu(&y))
    }
    fn add(&self, a: &Array, b: &Array) -> Result<Array> {
        cpu::add(a, b)
    }
    fn softmax(&self, x: &Array, causal: bool, scale: f32) -> Result<Array> {
        cpu::softmax(x, causal, scale)
    }
    fn layernorm(&self, x: &Array, g: &Array, b: &Array, eps: f32) -> Result<Array> {
        cpu::layernorm(x, g, b, eps)
    }
    fn add_layernorm(
        &self,
        x: &Array,
        r: &Array,
        g: &Array,
        b: &Array,
        eps: f32,
    ) -> Result<(Array, Array)> {
        cpu::add_layernorm(x, r, g, b, eps)
    }
    fn layernorm_backward(
        &self,
        x: &Array,
        g: &Array,
        dy: &Array,
        eps: f32,
    ) -> Result<(Array, Array, Array)> {
        cpu::layernorm_backward(x, g, dy, eps)
    }
    fn gelu(&self, x: &Array) -> Result<Array> {
        cpu::gelu(x)
    }
    fn gelu_backward(&self, x: &Array, dy: &Array) -> Result<Array> {
        cpu::gelu_backward(x, dy)
    }
    fn transpose(&self, x: &Array) -> Result<Array> {
        cpu::transpose(x)
    }
    fn swap12(&self, x: &Array) -> Result<Array> {
        cpu::swap_axes12(x)
    }
    fn split_qkv(&self, qkv: &Array, [b, t, h, hkv, d]: [usize; 5]) -> Result<[Array; 3]> {
        // Each row's Q, K or V columns, [B, T, heads, d] → [B, heads, T, d].
        let width = (h + 2 * hkv) * d;
        crate::shape::check_len("split_qkv", &[b * t, width], qkv.data.len())?;
        let take = |first: usize, heads: usize| -> Result<Array> {
            let cols: Vec<f32> = qkv
                .data
                .chunks_exact(width)
                .flat_map(|row| row[first * d..(first + heads) * d].iter().copied())
                .collect();
            cpu::swap_axes12(&Array::new(&[b, t, heads, d], cols)?)
        };
        Ok([take(0, h)?, take(h, hkv)?, take(h + hkv, hkv)?])
    }
    fn attention(&self, q: &Array, k: &Array, v: &Array, scale: f32) -> Result<(Array, Array)> {
        let [o, lse] = self.per_heads(&[q, k, v], |s| {
            let f = cpu::attention(&s[0], &s[1], &s[2], true, scale)?;
            Ok([f.out.data, f.lse])
        })?;
        let lse_shape = &q.shape[..q.shape.len() - 1];
        Ok((Array::new(&q.shape, o)?, Array::new(lse_shape, lse)?))
    }
    fn attention_backward(
        &self,
        q: &Array,
        k: &Array,
        v: &Array,
        _o: &Array,
        _lse: &Array,
        d_o: &Array,
        scale: f32,
    ) -> Result<Array> {
        let [b, h, t, d] = bhtd("attention_backward", &q.shape)?;
        let hkv = k.shape.get(1).copied().unwrap_or(h);
        // The plain backward recomputes the probabilities row by row from Q and K.
        let [dq, dk, dv] = self.per_heads(&[q, k, v, d_o], |s| {
            let g = cpu::attention_backward(&s[0], &s[1], &s[2], &s[3], true, scale)?;
            Ok([g.dq.data, g.dk.data, g.dv.data])
        })?;
        // Each [B, heads, T, d] → [B, T, heads, d], then side by side per row:
        // [B·T, (H + 2Hkv)·d].
        let rows = [(dq, h), (dk, hkv), (dv, hkv)]
            .into_iter()
            .map(|(g, heads)| cpu::swap_axes12(&Array::new(&[b, heads, t, d], g)?))
            .collect::<Result<Vec<Array>>>()?;
        let width = (h + 2 * hkv) * d;
        let mut out = Vec::with_capacity(b * t * width);
        for r in 0..b * t {
            for g in &rows {
                let w = g.shape[2] * d;
                out.extend_from_slice(&g.data[r * w..(r + 1) * w]);
            }
        }
        Array::new(&[b * t, width], out)
    }
    fn embedding(&self, table: &Array, ids: &Vec<u32>) -> Result<Array> {
        cpu::embedding(table, ids)
    }
    fn embedding_backward(&self, dy: &Array, ids: &Vec<u32>, vocab: usize) -> Result<Array> {
        cpu::embedding_backward(dy, ids, vocab)
    }
    fn cross_entropy(
        &self,
        logits: &Array,
        targets: &Vec<u32>,
        grad_scale: f32,
    ) -> Result<(Array, Array)> {
        cpu::cross_entropy(logits, targets, grad_scale)
    }
    fn adamw(
        &self,
        p: &mut Array,
        g: &Array,
        m: &mut Array,
        v: &mut Array,
        h: &AdamW,
        corrections: &Array,
    ) -> Result<()> {
        // The CPU computes them from `h` itself; a mismatch means the model code handed the
        // GPU another step's numbers, which the shared model code should hear of here too.
        if *corrections != self.bias_corrections(h)? {
            return Err(Error::InvalidArgument {
                op: "adamw",
                detail: format!(
                    "the bias corrections {:?} are not step {}'s",
                    corrections.data, h.step
                ),
            });
        }
        cpu::adamw(p, g, m, v, h)
    }
    fn bias_corrections(&self, h: &AdamW) -> Result<Array> {
        let (bc1, bc2) = h.bias_corrections();
        Array::new(&[2], vec![bc1, bc2])
    }
    fn set_bias_corrections(&self, corrections: &mut Array, h: &AdamW) -> Result<()> {
        *corrections = self.bias_corrections(h)?;
        Ok(())
    }
    fn cache(
        &self,
        batch: usize,
        kv_heads: usize,
        capacity: usize,
        head_dim: usize,
    ) -> Result<CpuCache> {
        let shape = [batch, kv_heads, capacity, head_dim];
        if shape.contains(&0) {
            return Err(Error::shape(
                "kv_append",
                format!("an empty cache {shape:?}"),
            ));
        }
        let zeros = || Array::new(&shape, vec![0.0; shape.iter().product()]);
        Ok(CpuCache {
            k: zeros()?,
            v: zeros()?,
            len: 0,
        })
    }
    fn cache_len(&self, cache: &CpuCache) -> usize {
        cache.len
    }
    fn cache_clear(&self, cache: &mut CpuCache) -> Result<()> {
        cache.len = 0;
        Ok(())
    }
    fn cache_grow(&self, _cache: &mut CpuCache, _n: usize) -> Result<()> {
        Err(no_capture("cache_grow"))
    }
    fn cache_append(&self, cache: &mut CpuCache, k: &Array, v: &Array) -> Result<()> {
        if k.shape != v.shape {
            return Err(Error::shape(
                "kv_append",
                format!("K {:?} and V {:?} differ", k.shape, v.shape),
            ));
        }
        // K first: a K that does not fit is refused before anything is written.
        cpu::cache_append(&mut cache.k, k, cache.len)?;
        cpu::cache_append(&mut cache.v, v, cache.len)?;
        cache.len += k.shape[2];
        Ok(())
    }
    fn cache_attend(&self, cache: &CpuCache, q: &Array, scale: f32) -> Result<Array> {
        Ok(cpu::decode_attention(q, &cache.k, &cache.v, cache.len, true, scale)?.out)
    }
    async fn idle(&self) -> Result<()> {
        Ok(())
    }
    fn capture<R>(&self, _build: impl FnOnce() -> Result<R>) -> Result<Option<((), R)>> {
        Ok(None)
    }
    fn replay(&self, _pass: &()) -> Result<()> {
        Err(no_capture("replay"))
    }
    fn write_ids(&self, _ids: &Vec<u32>, _values: &[u32]) -> Result<()> {
        Err(no_capture("write_ids"))
    }
}
