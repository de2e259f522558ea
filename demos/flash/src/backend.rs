//! The ops the model is written against, twice: on the GPU through kiln's kernels, and on the
//! CPU path through kiln's plain CPU references (natively split across threads where the work
//! is heavy: matrix products and attention). One model function runs on either, so the two
//! paths do the same arithmetic in the same order.

use std::future::Future;

use kiln_app::kiln::cpu::{self, Array};
use kiln_app::kiln::optim::AdamW;
use kiln_app::kiln::{self, DType, Gpu, Tensor, ops};

use crate::error::Result;

/// The ops of one training step.
pub trait Backend {
    /// A tensor on this path.
    type T: Clone;
    /// Token ids on this path.
    type Ids;

    fn name(&self) -> String;
    fn upload(&self, a: &Array) -> Result<Self::T>;
    fn ids(&self, ids: &[u32]) -> Result<Self::Ids>;
    fn read(&self, t: &Self::T) -> impl Future<Output = Result<Vec<f32>>>;
    fn shape<'a>(&self, t: &'a Self::T) -> &'a [usize];
    fn reshape(&self, t: &Self::T, shape: &[usize]) -> Result<Self::T>;

    /// A · B.
    fn matmul(&self, a: &Self::T, b: &Self::T) -> Result<Self::T>;
    /// A · Bᵀ.
    fn matmul_bt(&self, a: &Self::T, b: &Self::T) -> Result<Self::T>;
    /// Aᵀ · B: the weight gradient Xᵀ · dY.
    fn matmul_at(&self, a: &Self::T, b: &Self::T) -> Result<Self::T>;
    fn add(&self, a: &Self::T, b: &Self::T) -> Result<Self::T>;
    fn layernorm(&self, x: &Self::T, g: &Self::T, b: &Self::T, eps: f32) -> Result<Self::T>;
    /// (x + r, layernorm(x + r)), in one op.
    fn add_layernorm(
        &self,
        x: &Self::T,
        r: &Self::T,
        g: &Self::T,
        b: &Self::T,
        eps: f32,
    ) -> Result<(Self::T, Self::T)>;
    /// [B·T, 3·H·d] (Q, K and V side by side) → Q, K and V, each [B, H, T, d].
    fn split_qkv(&self, qkv: &Self::T, dims: [usize; 4]) -> Result<(Self::T, Self::T, Self::T)>;
    /// (dx, dgamma, dbeta).
    fn layernorm_backward(
        &self,
        x: &Self::T,
        g: &Self::T,
        dy: &Self::T,
        eps: f32,
    ) -> Result<(Self::T, Self::T, Self::T)>;
    fn gelu(&self, x: &Self::T) -> Result<Self::T>;
    fn gelu_backward(&self, x: &Self::T, dy: &Self::T) -> Result<Self::T>;
    /// [a, b, c, d] → [a, c, b, d].
    fn swap12(&self, x: &Self::T) -> Result<Self::T>;
    /// Causal attention over [B, H, T, d]: (O, LSE).
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
        Ok(Tensor::from_slice(
            &self.gpu,
            &a.shape,
            &a.data,
            DType::F32,
        )?)
    }
    fn ids(&self, ids: &[u32]) -> Result<Tensor> {
        Ok(Tensor::from_u32(&self.gpu, &[ids.len()], ids)?)
    }
    async fn read(&self, t: &Tensor) -> Result<Vec<f32>> {
        Ok(t.read().await?)
    }
    fn shape<'a>(&self, t: &'a Tensor) -> &'a [usize] {
        t.shape()
    }
    fn reshape(&self, t: &Tensor, shape: &[usize]) -> Result<Tensor> {
        Ok(t.reshape(shape)?)
    }
    fn matmul(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        Ok(ops::matmul(a, b)?)
    }
    fn matmul_bt(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        Ok(ops::matmul_bt(a, b)?)
    }
    fn matmul_at(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        Ok(ops::matmul_at(a, b)?)
    }
    fn add(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        Ok(ops::add(a, b)?)
    }
    fn layernorm(&self, x: &Tensor, g: &Tensor, b: &Tensor, eps: f32) -> Result<Tensor> {
        Ok(ops::layernorm(x, g, b, eps)?)
    }
    fn add_layernorm(
        &self,
        x: &Tensor,
        r: &Tensor,
        g: &Tensor,
        b: &Tensor,
        eps: f32,
    ) -> Result<(Tensor, Tensor)> {
        Ok(ops::add_layernorm(x, r, g, b, eps)?)
    }
    fn split_qkv(
        &self,
        qkv: &Tensor,
        [b, t, h, d]: [usize; 4],
    ) -> Result<(Tensor, Tensor, Tensor)> {
        // [B, T, 3H, d] → [B, 3H, T, d] = [B, 3, H·T·d] → [3, B, H·T·d]: three parts, each a
        // view [B, H, T, d] where the offsets allow.
        let heads = ops::swap_axes12(&qkv.reshape(&[b, t, 3 * h, d])?)?;
        let stacked = if b == 1 {
            heads
        } else {
            ops::swap_axes12(&heads.reshape(&[1, b, 3, h * t * d])?)?
        };
        let stacked = stacked.reshape(&[3, b, h, t, d])?;
        Ok((stacked.part(0)?, stacked.part(1)?, stacked.part(2)?))
    }
    fn layernorm_backward(
        &self,
        x: &Tensor,
        g: &Tensor,
        dy: &Tensor,
        eps: f32,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        Ok(ops::layernorm_backward(x, g, dy, eps)?)
    }
    fn gelu(&self, x: &Tensor) -> Result<Tensor> {
        Ok(ops::gelu(x)?)
    }
    fn gelu_backward(&self, x: &Tensor, dy: &Tensor) -> Result<Tensor> {
        Ok(ops::gelu_backward(x, dy)?)
    }
    fn swap12(&self, x: &Tensor) -> Result<Tensor> {
        Ok(ops::swap_axes12(x)?)
    }
    fn attention(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        scale: f32,
    ) -> Result<(Tensor, Tensor)> {
        Ok(ops::flash_attention(q, k, v, true, scale)?)
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
        let [b, h, t, d] = match *q.shape() {
            [b, h, t, d] => [b, h, t, d],
            _ => {
                return Err(kiln::Error::Shape {
                    op: "attention_backward",
                    detail: format!("Q has shape {:?}: expected [B, H, T, d]", q.shape()),
                }
                .into());
            }
        };
        let stacked = Tensor::uninit(&self.gpu, &[3, b, h, t, d], q.dtype())?;
        let views: kiln::Result<Vec<Tensor>> = (0..3).map(|i| stacked.part_view(i)).collect();
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
        Ok(rows.reshape(&[b * t, 3 * h * d])?)
    }
    fn embedding(&self, table: &Tensor, ids: &Tensor) -> Result<Tensor> {
        Ok(ops::embedding(table, ids)?)
    }
    fn embedding_backward(&self, dy: &Tensor, ids: &Tensor, vocab: usize) -> Result<Tensor> {
        Ok(ops::embedding_backward(dy, ids, vocab)?)
    }
    fn cross_entropy(
        &self,
        logits: &Tensor,
        targets: &Tensor,
        grad_scale: f32,
    ) -> Result<(Tensor, Tensor)> {
        Ok(ops::cross_entropy(logits, targets, grad_scale)?)
    }
    fn adamw(
        &self,
        p: &mut Tensor,
        g: &Tensor,
        m: &mut Tensor,
        v: &mut Tensor,
        h: &AdamW,
    ) -> Result<()> {
        Ok(ops::adamw(p, g, m, v, h)?)
    }
    async fn idle(&self) -> Result<()> {
        Ok(self.gpu.idle().await?)
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

    /// A · B for 2-D A, its rows split across the threads.
    fn matmul_rows(&self, a: &Array, b: &Array) -> Result<Array> {
        let (rows, k) = match a.shape.as_slice() {
            [r, k] if self.threads > 1 && b.shape.len() == 2 => (*r, *k),
            _ => return Ok(cpu::matmul(a, b)?),
        };
        let n = b.shape[1];
        let parts = split(rows, self.threads, |range| {
            let part = Array::new(
                &[range.len(), k],
                a.data[range.start * k..range.end * k].to_vec(),
            )?;
            Ok(cpu::matmul(&part, b)?.data)
        })?;
        Ok(Array::new(&[rows, n], parts.concat())?)
    }

    /// `f` over [BH, T, d] slices of the heads, split across the threads; the results of each
    /// output are concatenated back in order.
    fn per_heads<const N: usize>(
        &self,
        inputs: &[&Array],
        f: impl Fn(&[Array]) -> Result<[Vec<f32>; N]> + Sync,
    ) -> Result<[Vec<f32>; N]> {
        let shape = &inputs[0].shape;
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
                .collect::<kiln::Result<Vec<_>>>()?;
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
                    Err(crate::error::Error::Config(
                        "a CPU worker thread panicked".into(),
                    ))
                })
            })
            .collect()
    })
}

fn array(shape: &[usize], data: Vec<f32>) -> Result<Array> {
    Ok(Array::new(shape, data)?)
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
        array(shape, t.data.clone())
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
    fn add(&self, a: &Array, b: &Array) -> Result<Array> {
        Ok(cpu::add(a, b)?)
    }
    fn layernorm(&self, x: &Array, g: &Array, b: &Array, eps: f32) -> Result<Array> {
        Ok(cpu::layernorm(x, g, b, eps)?)
    }
    fn add_layernorm(
        &self,
        x: &Array,
        r: &Array,
        g: &Array,
        b: &Array,
        eps: f32,
    ) -> Result<(Array, Array)> {
        Ok(cpu::add_layernorm(x, r, g, b, eps)?)
    }
    fn split_qkv(&self, qkv: &Array, [b, t, h, d]: [usize; 4]) -> Result<(Array, Array, Array)> {
        // [B, T, 3, H, d] → [B, 3, T, H, d] (swap T and the three) → per part [B, T, H, d] →
        // [B, H, T, d].
        let x = array(&[b, t, 3, h * d], qkv.data.clone())?;
        let parts = cpu::swap_axes12(&x)?;
        let per = t * h * d;
        let part = |i: usize| -> Result<Array> {
            let rows: Vec<f32> = (0..b)
                .flat_map(|bi| parts.data[(bi * 3 + i) * per..][..per].iter().copied())
                .collect();
            Ok(cpu::swap_axes12(&array(&[b, t, h, d], rows)?)?)
        };
        Ok((part(0)?, part(1)?, part(2)?))
    }
    fn layernorm_backward(
        &self,
        x: &Array,
        g: &Array,
        dy: &Array,
        eps: f32,
    ) -> Result<(Array, Array, Array)> {
        Ok(cpu::layernorm_backward(x, g, dy, eps)?)
    }
    fn gelu(&self, x: &Array) -> Result<Array> {
        Ok(cpu::gelu(x)?)
    }
    fn gelu_backward(&self, x: &Array, dy: &Array) -> Result<Array> {
        Ok(cpu::gelu_backward(x, dy)?)
    }
    fn swap12(&self, x: &Array) -> Result<Array> {
        Ok(cpu::swap_axes12(x)?)
    }
    fn attention(&self, q: &Array, k: &Array, v: &Array, scale: f32) -> Result<(Array, Array)> {
        let [o, lse] = self.per_heads(&[q, k, v], |s| {
            let f = cpu::attention(&s[0], &s[1], &s[2], true, scale)?;
            Ok([f.out.data, f.lse])
        })?;
        let lse_shape = &q.shape[..q.shape.len() - 1];
        Ok((array(&q.shape, o)?, array(lse_shape, lse)?))
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
        // The plain backward recomputes the probabilities row by row from Q and K.
        let [dq, dk, dv] = self.per_heads(&[q, k, v, d_o], |s| {
            let g = cpu::attention_backward(&s[0], &s[1], &s[2], &s[3], true, scale)?;
            Ok([g.dq.data, g.dk.data, g.dv.data])
        })?;
        // Each [B, H, T, d] → [B, T, H, d], then side by side per row: [B·T, 3·H·d].
        let (b, h, t, d) = match *q.shape.as_slice() {
            [b, h, t, d] => (b, h, t, d),
            _ => {
                return Err(kiln::Error::Shape {
                    op: "attention_backward",
                    detail: format!("Q has shape {:?}: expected [B, H, T, d]", q.shape),
                }
                .into());
            }
        };
        let rows = [dq, dk, dv]
            .into_iter()
            .map(|g| cpu::swap_axes12(&array(&[b, h, t, d], g)?).map_err(Into::into))
            .collect::<Result<Vec<Array>>>()?;
        let width = h * d;
        let mut out = Vec::with_capacity(3 * b * t * width);
        for r in 0..b * t {
            for g in &rows {
                out.extend_from_slice(&g.data[r * width..(r + 1) * width]);
            }
        }
        array(&[b * t, 3 * width], out)
    }
    fn embedding(&self, table: &Array, ids: &Vec<u32>) -> Result<Array> {
        Ok(cpu::embedding(table, ids)?)
    }
    fn embedding_backward(&self, dy: &Array, ids: &Vec<u32>, vocab: usize) -> Result<Array> {
        Ok(cpu::embedding_backward(dy, ids, vocab)?)
    }
    fn cross_entropy(
        &self,
        logits: &Array,
        targets: &Vec<u32>,
        grad_scale: f32,
    ) -> Result<(Array, Array)> {
        Ok(cpu::cross_entropy(logits, targets, grad_scale)?)
    }
    fn adamw(
        &self,
        p: &mut Array,
        g: &Array,
        m: &mut Array,
        v: &mut Array,
        h: &AdamW,
    ) -> Result<()> {
        Ok(cpu::adamw(p, g, m, v, h)?)
    }
    async fn idle(&self) -> Result<()> {
        Ok(())
    }
}
