//! The GPU path: every op a kiln kernel rendered for the adapter in hand.

use crate::Gpu;
use crate::cpu::Array;
use crate::dtype::DType;
use crate::elementwise::ElementOp;
use crate::error::{Error, Result};
use crate::fusion::{Normed, Noted, Stepped, note};
use crate::gpu::Plan;
use crate::ops;
use crate::optim::AdamW;
use crate::tensor::Tensor;

use super::{Backend, bhtd, check_together};

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

impl GpuBackend {
    /// Runs `op`; inside a capture, notes what it made (`what` of its output) on the steps it
    /// recorded, for `kiln::fusion`.
    fn noted(
        &self,
        op: impl FnOnce() -> Result<Tensor>,
        what: impl FnOnce(Tensor) -> Noted<Tensor>,
    ) -> Result<Tensor> {
        let from = self.gpu.note_from();
        let out = op()?;
        note(&self.gpu, from, || what(out.clone()));
        Ok(out)
    }
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
    fn read(&self, t: &Tensor) -> impl Future<Output = Result<Vec<f32>>> + 'static {
        let started = t.start_read();
        async move { started?.await }
    }
    fn shape<'a>(&self, t: &'a Tensor) -> &'a [usize] {
        t.shape()
    }
    fn reshape(&self, t: &Tensor, shape: &[usize]) -> Result<Tensor> {
        t.reshape(shape)
    }
    // The products, the softmax and the residual norm note what they made in a capture, for
    // `kiln::fusion`.
    fn matmul(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        self.noted(
            || ops::matmul(a, b),
            |o| Noted::Weighted {
                p: a.clone(),
                v: b.clone(),
                o,
            },
        )
    }
    fn matmul_bt(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        self.noted(
            || ops::matmul_bt(a, b),
            |s| Noted::Scores {
                q: a.clone(),
                k: b.clone(),
                s,
            },
        )
    }
    fn matmul_at(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ops::matmul_at(a, b)
    }
    fn linear(&self, x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
        self.noted(
            || ops::linear(x, w, b),
            |y| Noted::Linear {
                x: x.clone(),
                w: w.clone(),
                b: b.clone(),
                y,
            },
        )
    }
    fn linear_gelu(&self, x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
        self.noted(
            || ops::linear_gelu(x, w, b),
            |h| Noted::LinearGelu {
                x: x.clone(),
                w: w.clone(),
                b: b.clone(),
                h,
            },
        )
    }
    fn add(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ops::add(a, b)
    }
    fn softmax(&self, x: &Tensor, causal: bool, scale: f32) -> Result<Tensor> {
        self.noted(
            || ops::softmax(x, causal, scale),
            |p| Noted::Softmax {
                s: x.clone(),
                p,
                causal,
                scale,
            },
        )
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
        let from = self.gpu.note_from();
        let (sum, y) = ops::add_layernorm(x, r, g, b, eps)?;
        note(&self.gpu, from, || {
            Noted::AddLayerNorm(Box::new(Normed {
                x: x.clone(),
                r: r.clone(),
                gamma: g.clone(),
                beta: b.clone(),
                sum: sum.clone(),
                y: y.clone(),
                eps,
            }))
        });
        Ok((sum, y))
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
    fn elementwise(&self, op: ElementOp, operands: &[&Tensor]) -> Result<Tensor> {
        crate::elementwise::apply(op, operands)
    }
    fn transpose(&self, x: &Tensor) -> Result<Tensor> {
        ops::transpose(x)
    }
    fn swap12(&self, x: &Tensor) -> Result<Tensor> {
        self.noted(|| swapped12(x), |y| Noted::Swapped { x: x.clone(), y })
    }
    fn split_qkv(&self, qkv: &Tensor, [b, t, h, hkv, d]: [usize; 5]) -> Result<[Tensor; 3]> {
        if hkv == h {
            // [B, T, 3, H, d] → [3, B, H, T, d] in one launch: three equal parts, each a view
            // [B, H, T, d] where the device's offset alignment allows. A split product's sum
            // before it is folded into that launch (`ops::permute`).
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
            let from = self.gpu.note_from();
            ops::adamw_table(p, g, m, v, h, corrections)?;
            // Noted for `kiln::fusion`, which may fold the weight gradients' sums into the step.
            note(&self.gpu, from, || {
                Noted::Optimizer(Box::new(Stepped {
                    p: p.to_vec(),
                    g: g.to_vec(),
                    m: m.to_vec(),
                    v: v.to_vec(),
                    h: h.to_vec(),
                    corrections: corrections.clone(),
                }))
            });
            return Ok(());
        }
        check_together(self, p, g, m, v, h)?;
        // Every launch planned (and checked) before any is recorded.
        let launches = (0..p.len())
            .map(|i| {
                crate::families::adamw::launch(&p[i], &g[i], &m[i], &v[i], &h[i], corrections, None)
                    .map(|(launch, _)| launch)
            })
            .collect::<Result<Vec<_>>>()?;
        self.gpu.record_all(launches)
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
        Ok(Some(crate::fusion::capture(&self.gpu, build)?))
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
