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
use crate::ops;
use crate::optim::AdamW;
use crate::tensor::Tensor;

/// The ops of a model's forward and backward passes and its optimiser step, on one path.
pub trait Backend {
    /// A tensor on this path.
    type T: Clone;
    /// Token ids on this path.
    type Ids;

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
    /// [B·T, 3·H·d] (Q, K and V side by side, as one projection makes them) → Q, K and V, each
    /// [B, H, T, d].
    fn split_qkv(&self, qkv: &Self::T, dims: [usize; 4]) -> Result<[Self::T; 3]>;
    /// Causal flash attention over [B, H, T, d]: (O, LSE).
    fn attention(
        &self,
        q: &Self::T,
        k: &Self::T,
        v: &Self::T,
        scale: f32,
    ) -> Result<(Self::T, Self::T)>;
    /// dQ, dK and dV side by side as [B·T, 3·H·d]: the gradient of the product that made
    /// Q, K and V (the layout `split_qkv` takes apart).
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
    /// One AdamW update of `p` (and its moments) in place.
    fn adamw(
        &self,
        p: &mut Self::T,
        g: &Self::T,
        m: &mut Self::T,
        v: &mut Self::T,
        h: &AdamW,
    ) -> Result<()>;
    /// Waits for the path's queued work (the GPU's; the CPU path is always done).
    fn idle(&self) -> impl Future<Output = Result<()>>;

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
        let [q, k, v] = self.split_qkv(qkv, [1, n, heads, d])?;
        Ok([
            self.reshape(&q, &[heads, n, d])?,
            self.reshape(&k, &[heads, n, d])?,
            self.reshape(&v, &[heads, n, d])?,
        ])
    }
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

/// The GPU path: every op a kiln kernel rendered for this adapter.
#[derive(Clone, Debug)]
pub struct GpuBackend {
    pub gpu: Gpu,
}

impl Backend for GpuBackend {
    type T = Tensor;
    type Ids = Tensor;

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
        ops::swap_axes12(x)
    }
    fn split_qkv(&self, qkv: &Tensor, [b, t, h, d]: [usize; 4]) -> Result<[Tensor; 3]> {
        // [B, T, 3H, d] → [B, 3H, T, d] = [B, 3, H·T·d] → [3, B, H·T·d]: three parts, each a
        // view [B, H, T, d] where the device's offset alignment allows.
        let heads = ops::swap_axes12(&qkv.reshape(&[b, t, 3 * h, d])?)?;
        let stacked = if b == 1 {
            heads
        } else {
            ops::swap_axes12(&heads.reshape(&[1, b, 3, h * t * d])?)?
        };
        let stacked = stacked.reshape(&[3, b, h, t, d])?;
        Ok([stacked.part(0)?, stacked.part(1)?, stacked.part(2)?])
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
        // dQ, dK and dV written straight into the parts of one [3, B, H, T, d] tensor, then
        // that stacked back into [B, T, 3H, d] — split_qkv's steps in reverse.
        let [b, h, t, d] = bhtd("attention_backward", q.shape())?;
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
        let heads = if b == 1 {
            stacked
        } else {
            ops::swap_axes12(&stacked.reshape(&[1, 3, b, h * t * d])?)?
        };
        let rows = ops::swap_axes12(&heads.reshape(&[b, 3 * h, t, d])?)?;
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
    ) -> Result<()> {
        ops::adamw(p, g, m, v, h)
    }
    async fn idle(&self) -> Result<()> {
        self.gpu.idle().await
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
    /// output are concatenated back in order.
    fn per_heads<const N: usize>(
        &self,
        inputs: &[&Array],
        f: impl Fn(&[Array]) -> Result<[Vec<f32>; N]> + Sync,
    ) -> Result<[Vec<f32>; N]> {
        let shape = &inputs[0].shape;
        if shape.len() < 2 {
            return Err(Error::shape(
                "attention",
                format!("shape {shape:?}: expected [.., T, d]"),
            ));
        }
        let (t, d) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        let bh: usize = shape[..shape.len() - 2].iter().product();
        let parts = split(bh, self.threads, |range| {
            let slices = inputs
                .iter()
                .map(|x| {
                    // Every input is [.., T, d] like the first: one [T, d] matrix per (b, h).
                    let per = t * d;
                    Array::new(
                        &[range.len(), t, d],
                        x.data[range.start * per..range.end * per].to_vec(),
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
    fn split_qkv(&self, qkv: &Array, [b, t, h, d]: [usize; 4]) -> Result<[Array; 3]> {
        // [B, T, 3, H, d] → [B, 3, T, H, d] (swap T and the three) → per part [B, T, H, d] →
        // [B, H, T, d].
        let x = Array::new(&[b, t, 3, h * d], qkv.data.clone())?;
        let parts = cpu::swap_axes12(&x)?;
        let per = t * h * d;
        let part = |i: usize| -> Result<Array> {
            let rows: Vec<f32> = (0..b)
                .flat_map(|bi| parts.data[(bi * 3 + i) * per..][..per].iter().copied())
                .collect();
            cpu::swap_axes12(&Array::new(&[b, t, h, d], rows)?)
        };
        Ok([part(0)?, part(1)?, part(2)?])
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
        // The plain backward recomputes the probabilities row by row from Q and K.
        let [dq, dk, dv] = self.per_heads(&[q, k, v, d_o], |s| {
            let g = cpu::attention_backward(&s[0], &s[1], &s[2], &s[3], true, scale)?;
            Ok([g.dq.data, g.dk.data, g.dv.data])
        })?;
        // Each [B, H, T, d] → [B, T, H, d], then side by side per row: [B·T, 3·H·d].
        let rows = [dq, dk, dv]
            .into_iter()
            .map(|g| cpu::swap_axes12(&Array::new(&[b, h, t, d], g)?))
            .collect::<Result<Vec<Array>>>()?;
        let width = h * d;
        let mut out = Vec::with_capacity(3 * b * t * width);
        for r in 0..b * t {
            for g in &rows {
                out.extend_from_slice(&g.data[r * width..(r + 1) * width]);
            }
        }
        Array::new(&[b * t, 3 * width], out)
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
    ) -> Result<()> {
        cpu::adamw(p, g, m, v, h)
    }
    async fn idle(&self) -> Result<()> {
        Ok(())
    }
}
