//! `Backend` over shapes: each op checked as the GPU path checks it, its launches chosen and
//! recorded, and the fusion rules asked where a launch may be taken into the next.

use super::{ChoiceBackend, ShapeTensor, Step, Writes, last, rank4, same_dtype};
use crate::backend::Backend;
use crate::cpu::Array;
use crate::dtype::DType;
use crate::elementwise::ElementOp;
use crate::error::{Error, Result};
use crate::families::matmul::{self, Epilogue};
use crate::families::{add, layernorm, reduce_layernorm, softmax};
use crate::fusion::newest::{Fold, Next};
use crate::fusion::{Normed, Noted};
use crate::optim::AdamW;
use crate::shape::{self, Broadcast};

impl Backend for ChoiceBackend<'_> {
    type T = ShapeTensor;
    type Ids = ShapeTensor;
    type Cache = ();
    type Replay = ();

    fn name(&self) -> String {
        format!("plan only ({})", self.selector.profile.name)
    }
    fn upload(&self, a: &Array) -> Result<ShapeTensor> {
        Ok(ShapeTensor::new(&a.shape, DType::F32))
    }
    fn ids(&self, ids: &[u32]) -> Result<ShapeTensor> {
        Ok(ShapeTensor::new(&[ids.len()], DType::U32))
    }
    fn read(&self, _: &ShapeTensor) -> impl Future<Output = Result<Vec<f32>>> + 'static {
        std::future::ready(Err(self.not_modelled("read")))
    }
    fn shape<'s>(&self, t: &'s ShapeTensor) -> &'s [usize] {
        &t.shape
    }
    fn reshape(&self, t: &ShapeTensor, shape: &[usize]) -> Result<ShapeTensor> {
        if shape::numel(shape) != shape::numel(&t.shape) {
            return Err(Error::shape(
                "reshape",
                format!("{:?} cannot become {shape:?}", t.shape),
            ));
        }
        Ok(t.view(shape))
    }
    fn matmul(&self, a: &ShapeTensor, b: &ShapeTensor) -> Result<ShapeTensor> {
        let layout = matmul::Layout::default();
        self.product("matmul", [a, b], None, layout, Epilogue::None, |o| {
            Some(Noted::Weighted {
                p: a.clone(),
                v: b.clone(),
                o: o.clone(),
            })
        })
    }
    fn matmul_bt(&self, a: &ShapeTensor, b: &ShapeTensor) -> Result<ShapeTensor> {
        let layout = matmul::Layout {
            a_trans: false,
            b_trans: true,
        };
        self.product("matmul_bt", [a, b], None, layout, Epilogue::None, |s| {
            Some(Noted::Scores {
                q: a.clone(),
                k: b.clone(),
                s: s.clone(),
            })
        })
    }
    fn matmul_at(&self, a: &ShapeTensor, b: &ShapeTensor) -> Result<ShapeTensor> {
        let layout = matmul::Layout {
            a_trans: true,
            b_trans: false,
        };
        self.product("matmul_at", [a, b], None, layout, Epilogue::None, |_| None)
    }
    fn linear(&self, x: &ShapeTensor, w: &ShapeTensor, b: &ShapeTensor) -> Result<ShapeTensor> {
        self.linear_with("linear", [x, w, b], Epilogue::Bias, |y| {
            Some(Noted::Linear {
                x: x.clone(),
                w: w.clone(),
                b: b.clone(),
                y: y.clone(),
            })
        })
    }
    fn linear_gelu(
        &self,
        x: &ShapeTensor,
        w: &ShapeTensor,
        b: &ShapeTensor,
    ) -> Result<ShapeTensor> {
        self.linear_with("linear_gelu", [x, w, b], Epilogue::BiasGelu, |h| {
            Some(Noted::LinearGelu {
                x: x.clone(),
                w: w.clone(),
                b: b.clone(),
                h: h.clone(),
            })
        })
    }
    fn matmul_gelu(&self, x: &ShapeTensor, w: &ShapeTensor) -> Result<ShapeTensor> {
        // The GPU path's one launch: the bias_gelu epilogue over a zero bias.
        let zeros = ShapeTensor::new(&[last("matmul", &w.shape)?], x.dtype);
        self.linear_with("matmul_gelu", [x, w, &zeros], Epilogue::BiasGelu, |_| None)
    }
    fn add(&self, a: &ShapeTensor, b: &ShapeTensor) -> Result<ShapeTensor> {
        same_dtype("add", a, b)?;
        let bc = Broadcast::new("add", &a.shape, &b.shape)?;
        let call = add::call(a.dtype, &a.shape, &b.shape)?;
        let c = ShapeTensor::new(&bc.shape, a.dtype);
        let step = Self::plain(self.selector.choose(&call, None)?, &[a, b, &c]);
        self.record("add", vec![step], None);
        Ok(c)
    }
    fn softmax(&self, x: &ShapeTensor, causal: bool, scale: f32) -> Result<ShapeTensor> {
        let cols = last("softmax", &x.shape)?;
        let choice = self
            .selector
            .choose(&softmax::call(x.dtype, cols, causal), None)?;
        let p = ShapeTensor::new(&x.shape, x.dtype);
        let what = Noted::Softmax {
            s: x.clone(),
            p: p.clone(),
            causal,
            scale,
        };
        self.record("softmax", vec![Self::plain(choice, &[x, &p])], Some(what));
        Ok(p)
    }
    fn layernorm(
        &self,
        x: &ShapeTensor,
        g: &ShapeTensor,
        b: &ShapeTensor,
        _eps: f32,
    ) -> Result<ShapeTensor> {
        let cols = last("layernorm", &x.shape)?;
        let choice = self
            .selector
            .choose(&layernorm::call(x.dtype, cols, false), None)?;
        let y = ShapeTensor::new(&x.shape, x.dtype);
        self.record("layernorm", vec![Self::plain(choice, &[x, g, b, &y])], None);
        Ok(y)
    }
    fn add_layernorm(
        &self,
        x: &ShapeTensor,
        r: &ShapeTensor,
        g: &ShapeTensor,
        b: &ShapeTensor,
        eps: f32,
    ) -> Result<(ShapeTensor, ShapeTensor)> {
        if x.shape != r.shape || x.dtype != r.dtype {
            return Err(Error::shape(
                "add_layernorm",
                format!("x {:?} and the residual {:?} differ", x.shape, r.shape),
            ));
        }
        let cols = last("add_layernorm", &x.shape)?;
        let norm = self
            .selector
            .choose(&layernorm::call(x.dtype, cols, true), None)?;
        let (sum, y) = (
            ShapeTensor::new(&x.shape, x.dtype),
            ShapeTensor::new(&x.shape, x.dtype),
        );
        let binds = [x, r, g, b, &sum, &y].map(|t| t.id).to_vec();
        let next = Next::AddLayerNorm {
            x,
            r,
            norm: &norm.variant,
        };
        let lower = |fold: &Fold| {
            let Fold::Sum { named, bias, .. } = fold else {
                return None;
            };
            let call = reduce_layernorm::call(cols, bias.is_some());
            self.selector.choose(&call, named.as_deref()).ok()
        };
        let own = || Ok(Some(Self::plain(norm.clone(), &[x, r, g, b, &sum, &y])));
        let what = Noted::AddLayerNorm(Box::new(Normed {
            x: x.clone(),
            r: r.clone(),
            gamma: g.clone(),
            beta: b.clone(),
            sum: sum.clone(),
            y: y.clone(),
            eps,
        }));
        self.record_folding("add_layernorm", &next, lower, own, binds, Some(what))?;
        Ok((sum, y))
    }
    fn layernorm_backward(
        &self,
        _x: &ShapeTensor,
        _g: &ShapeTensor,
        _dy: &ShapeTensor,
        _eps: f32,
    ) -> Result<(ShapeTensor, ShapeTensor, ShapeTensor)> {
        Err(self.not_modelled("layernorm_backward"))
    }
    fn elementwise(&self, op: ElementOp, operands: &[&ShapeTensor]) -> Result<ShapeTensor> {
        let first = operands
            .first()
            .copied()
            .ok_or_else(|| Error::InvalidArgument {
                op: op.family(),
                detail: "no operands".into(),
            })?;
        let alike = operands
            .iter()
            .all(|o| o.shape == first.shape && o.dtype == first.dtype);
        if operands.len() != op.operands().len() || !alike {
            return Err(Error::shape(
                op.family(),
                format!("{} operands of one shape and dtype", op.operands().len()),
            ));
        }
        let y = ShapeTensor::new(&first.shape, first.dtype);
        let mut binds: Vec<u64> = operands.iter().map(|o| o.id).collect();
        binds.push(y.id);
        let next = Next::Elementwise { op, operands };
        let own = || {
            let choice = self.elementwise_launch(op.family(), first.dtype)?;
            Ok(Some(Step {
                choice,
                binds: binds.clone(),
                writes: Writes::Other,
            }))
        };
        self.record_folding(op.family(), &next, |_| None, own, Vec::new(), None)?;
        Ok(y)
    }
    fn transpose(&self, x: &ShapeTensor) -> Result<ShapeTensor> {
        if x.shape.len() < 2 {
            return Err(Error::shape(
                "transpose",
                format!("shape {:?} has no two axes to swap", x.shape),
            ));
        }
        let mut shape = x.shape.clone();
        let r = shape.len();
        shape.swap(r - 2, r - 1);
        let y = ShapeTensor::new(&shape, x.dtype);
        let choice = self.elementwise_launch("transpose", x.dtype)?;
        self.record("transpose", vec![Self::plain(choice, &[x, &y])], None);
        Ok(y)
    }
    fn swap12(&self, x: &ShapeTensor) -> Result<ShapeTensor> {
        let [a, b, c, d] = rank4("swap_axes", &x.shape)?;
        // Where b or c is 1 the GPU path swaps by a view: no launch, nothing folded.
        if b == 1 || c == 1 {
            self.record("swap12", Vec::new(), None);
            return Ok(x.view(&[a, c, b, d]));
        }
        let y = ShapeTensor::new(&[a, c, b, d], x.dtype);
        let what = Noted::Swapped {
            x: x.clone(),
            y: y.clone(),
        };
        let heads = Some([a, b, 1, c, d]);
        self.moved("swap12", x, &y, heads, "swap_axes", Some(what))?;
        Ok(y)
    }
    /// As the GPU path splits: with as many K/V heads as Q heads, one `permute` ([B, T, 3, H,
    /// d] → [3, B, H, T, d]), which the rules may fold into the product or the sum before it;
    /// otherwise the heads to the front (one swap, folded the same way; with grouped heads and
    /// a batch, copies after it).
    fn split_qkv(
        &self,
        qkv: &ShapeTensor,
        [b, t, h, hkv, d]: [usize; 5],
    ) -> Result<[ShapeTensor; 3]> {
        let part = |heads: usize| ShapeTensor::new(&[b, heads, t, d], qkv.dtype);
        if hkv != h {
            let x = self.reshape(qkv, &[b, t, h + 2 * hkv, d])?;
            let y = ShapeTensor::new(&[b, h + 2 * hkv, t, d], qkv.dtype);
            let heads = Some([b, t, 1, h + 2 * hkv, d]);
            self.moved("split_qkv", &x, &y, heads, "swap_axes", None)?;
            return Ok([part(h), part(hkv), part(hkv)]);
        }
        let x = self.reshape(qkv, &[b, t, 3, h, d])?;
        let stacked = ShapeTensor::new(&[3, b, h, t, d], qkv.dtype);
        let heads = Some([b, t, 3, h, d]);
        self.moved("split_qkv", &x, &stacked, heads, "permute", None)?;
        // The three parts of the stacked tensor, each [B, H, T, d] (no rule reads them apart).
        Ok([part(h), part(h), part(h)])
    }
    fn attention(
        &self,
        _q: &ShapeTensor,
        _k: &ShapeTensor,
        _v: &ShapeTensor,
        _scale: f32,
    ) -> Result<(ShapeTensor, ShapeTensor)> {
        Err(self.not_modelled("attention"))
    }
    fn attention_backward(
        &self,
        _q: &ShapeTensor,
        _k: &ShapeTensor,
        _v: &ShapeTensor,
        _o: &ShapeTensor,
        _lse: &ShapeTensor,
        _d_o: &ShapeTensor,
        _scale: f32,
    ) -> Result<ShapeTensor> {
        Err(self.not_modelled("attention_backward"))
    }
    fn embedding(&self, _table: &ShapeTensor, _ids: &ShapeTensor) -> Result<ShapeTensor> {
        Err(self.not_modelled("embedding"))
    }
    fn embedding_backward(
        &self,
        _dy: &ShapeTensor,
        _ids: &ShapeTensor,
        _vocab: usize,
    ) -> Result<ShapeTensor> {
        Err(self.not_modelled("embedding_backward"))
    }
    fn cross_entropy(
        &self,
        _logits: &ShapeTensor,
        _targets: &ShapeTensor,
        _grad_scale: f32,
    ) -> Result<(ShapeTensor, ShapeTensor)> {
        Err(self.not_modelled("cross_entropy"))
    }
    fn adamw(
        &self,
        _p: &mut ShapeTensor,
        _g: &ShapeTensor,
        _m: &mut ShapeTensor,
        _v: &mut ShapeTensor,
        _h: &AdamW,
        _corrections: &ShapeTensor,
    ) -> Result<()> {
        Err(self.not_modelled("adamw"))
    }
    fn bias_corrections(&self, _h: &AdamW) -> Result<ShapeTensor> {
        Ok(ShapeTensor::new(&[2], DType::F32))
    }
    fn set_bias_corrections(&self, _corrections: &mut ShapeTensor, _h: &AdamW) -> Result<()> {
        Ok(())
    }
    fn cache(&self, _batch: usize, _heads: usize, _capacity: usize, _d: usize) -> Result<()> {
        Err(self.not_modelled("kv_append"))
    }
    fn cache_len(&self, _cache: &()) -> usize {
        0
    }
    fn cache_clear(&self, _cache: &mut ()) -> Result<()> {
        Ok(())
    }
    fn cache_grow(&self, _cache: &mut (), _n: usize) -> Result<()> {
        Err(crate::backend::no_capture("cache_grow"))
    }
    fn cache_append(&self, _cache: &mut (), _k: &ShapeTensor, _v: &ShapeTensor) -> Result<()> {
        Err(self.not_modelled("kv_append"))
    }
    fn cache_attend(&self, _cache: &(), _q: &ShapeTensor, _scale: f32) -> Result<ShapeTensor> {
        Err(self.not_modelled("flash_decode"))
    }
    async fn idle(&self) -> Result<()> {
        Ok(())
    }
    fn capture<R>(&self, _build: impl FnOnce() -> Result<R>) -> Result<Option<((), R)>> {
        Ok(None)
    }
    fn replay(&self, _pass: &()) -> Result<()> {
        Err(crate::backend::no_capture("replay"))
    }
    fn write_ids(&self, _ids: &Self::Ids, _values: &[u32]) -> Result<()> {
        Err(crate::backend::no_capture("write_ids"))
    }
}
