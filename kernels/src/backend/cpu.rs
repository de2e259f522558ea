//! The CPU path: kiln's CPU references, on one thread or split across the cores.

use crate::cpu::{self, Array};
use crate::elementwise::ElementOp;
use crate::error::{Error, Result};
use crate::optim::AdamW;

use super::{Backend, bhtd, no_capture};

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
    fn alloc_together(&self, shapes: &[Vec<usize>]) -> Result<Vec<Array>> {
        // Zeros made in place: the trait's default uploads them, which here is a second copy
        // on every training step.
        shapes
            .iter()
            .map(|s| Array::new(s, vec![0.0; s.iter().product()]))
            .collect()
    }
    fn ids(&self, ids: &[u32]) -> Result<Vec<u32>> {
        Ok(ids.to_vec())
    }
    fn read(&self, t: &Array) -> impl Future<Output = Result<Vec<f32>>> + 'static {
        std::future::ready(Ok(t.data.clone()))
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
    fn elementwise(&self, op: ElementOp, operands: &[&Array]) -> Result<Array> {
        crate::elementwise::cpu(op, operands)
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
