//! A plan-only run of a model: [`ChoiceBackend`] implements [`Backend`] over shapes alone and
//! asks the selector, for a device or a stored profile, for each launch the GPU path would make,
//! keeping the choices in order. A page without an adapter shows the kernels the model's own
//! code picks, not a hand-kept copy of them.
//!
//! It models the ops of a forward pass. The training ops (backward passes, the loss, the
//! optimiser) are refused with an error that names them.

use std::cell::RefCell;

use crate::backend::Backend;
use crate::cpu::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::matmul::Epilogue;
use crate::families::{add, layernorm, matmul, reduce_layernorm, reduce_permute, softmax};
use crate::launch::Elementwise;
use crate::optim::AdamW;
use crate::select::{Choice, Selector};
use crate::shape::{self, Broadcast, MatmulDims};

/// A tensor of a plan-only run: its shape and dtype, no values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shaped {
    pub shape: Vec<usize>,
    pub dtype: DType,
}

/// One call of the backend: the op (the [`Backend`] method) and the choices of the launches it
/// makes, in order.
#[derive(Clone, Debug)]
pub struct Made {
    pub op: &'static str,
    pub launches: Vec<Choice>,
    /// A product's output shape (as `matmul::fold` reads the recorded product's).
    product: Option<Vec<usize>>,
}

/// The plan-only backend: every call checked for shape as the GPU path checks it, and its
/// launches chosen by `selector`.
#[derive(Debug)]
pub struct ChoiceBackend<'a> {
    selector: Selector<'a>,
    made: RefCell<Vec<Made>>,
}

impl<'a> ChoiceBackend<'a> {
    pub fn new(selector: Selector<'a>) -> Self {
        ChoiceBackend {
            selector,
            made: RefCell::new(Vec::new()),
        }
    }

    /// The calls made so far, in order.
    pub fn made(&self) -> Vec<Made> {
        self.made.borrow().clone()
    }

    /// The launches' choices so far, in order.
    pub fn launches(&self) -> Vec<Choice> {
        self.made
            .borrow()
            .iter()
            .flat_map(|m| m.launches.iter().cloned())
            .collect()
    }

    fn note(&self, op: &'static str, launches: Vec<Choice>) {
        self.made.borrow_mut().push(Made {
            op,
            launches,
            product: None,
        });
    }

    /// As the GPU path folds a split product's sum into the launch after it: when the newest
    /// call's last launch is that sum (with no epilogue or a bias), `fold` chooses the launch
    /// that takes it in; where it does, the sum is taken off that call. Nothing changes where
    /// there is no such sum or `fold` finds no variant.
    fn take_split_sum(&self, fold: impl FnOnce(Epilogue) -> Option<Choice>) -> Option<Choice> {
        let epilogue = {
            let made = self.made.borrow();
            if chained(&made) {
                return None;
            }
            let sum = made.last()?.launches.last()?;
            if sum.variant.family != "matmul_reduce" {
                return None;
            }
            Epilogue::parse(&sum.variant).ok()?
        };
        if epilogue == Epilogue::BiasGelu {
            return None;
        }
        let choice = fold(epilogue)?;
        self.made.borrow_mut().last_mut()?.launches.pop();
        Some(choice)
    }

    /// As the GPU path folds the op after a product into it (`matmul::fold`): when the newest
    /// call is one whole f32 product (no epilogue or a bias) whose output shape `fits`, its
    /// launch becomes the same design with the two-output `epilogue`, and true is returned.
    fn take_product(&self, fits: impl FnOnce(&[usize]) -> bool, epilogue: Epilogue) -> bool {
        let mut made = self.made.borrow_mut();
        if chained(&made) {
            return false;
        }
        let Some(last) = made.last_mut() else {
            return false;
        };
        let fitting = last.product.as_deref().is_some_and(fits);
        let [product] = &mut last.launches[..] else {
            return false;
        };
        let plain = matches!(
            matmul::Design::parse(&product.variant).map(|d| (d.dtype, d.epilogue)),
            Ok((DType::F32, Epilogue::None | Epilogue::Bias))
        );
        if !plain || !fitting {
            return false;
        }
        match matmul::with_epilogue(self.selector.registry, &product.variant, epilogue) {
            Ok(variant) => {
                product.variant = std::sync::Arc::new(variant);
                true
            }
            Err(_) => false,
        }
    }

    /// The `reduce_permute` launch that takes in a split product's sum before a permutation or
    /// a swap of axes, where the GPU path folds one ([`take_split_sum`](Self::take_split_sum)).
    fn permute_taking_sum(&self, dtype: DType) -> Option<Choice> {
        if dtype != DType::F32 {
            return None;
        }
        self.take_split_sum(|epilogue| {
            let call = reduce_permute::call(epilogue);
            self.selector.choose(&call, None).ok()
        })
    }

    fn elementwise(&self, family: &'static str, dtype: DType) -> Result<Choice> {
        let call = Elementwise {
            family,
            dtype,
            count: None,
        };
        self.selector.choose(&call, None)
    }

    /// A product of `a` and `b` (as `matmul::product` runs it): its output.
    fn product(
        &self,
        op: &'static str,
        a: &Shaped,
        b: &Shaped,
        layout: matmul::Layout,
        epilogue: matmul::Epilogue,
    ) -> Result<Shaped> {
        same_dtype(op, a, b)?;
        let dims = MatmulDims::transposed(&a.shape, &b.shape, layout.a_trans, layout.b_trans)?;
        let call = matmul::Call {
            dtype: a.dtype,
            dims,
            layout,
            epilogue,
        };
        self.note(op, matmul::choices_for(&self.selector, &call)?);
        let shape = dims.out_shape(&a.shape, &b.shape);
        if let Some(made) = self.made.borrow_mut().last_mut() {
            made.product = Some(shape.clone());
        }
        Ok(Shaped {
            shape,
            dtype: a.dtype,
        })
    }

    /// x · W + b over the last axis of x (as `matmul::linear` runs it).
    fn linear_with(
        &self,
        op: &'static str,
        x: &Shaped,
        w: &Shaped,
        b: &Shaped,
        epilogue: matmul::Epilogue,
    ) -> Result<Shaped> {
        let (rows, k) = shape::rows_cols("matmul", &x.shape)?;
        let flat = Shaped {
            shape: vec![rows, k],
            dtype: x.dtype,
        };
        let n = last("matmul", &w.shape)?;
        if b.shape != [n] {
            return Err(Error::shape(
                "matmul",
                format!("bias has shape {:?}, expected [{n}]", b.shape),
            ));
        }
        let y = self.product(op, &flat, w, matmul::Layout::default(), epilogue)?;
        Ok(Shaped {
            shape: shape::with_last(&x.shape, &y.shape),
            dtype: y.dtype,
        })
    }

    fn rowwise(&self, op: &'static str, x: &Shaped, call: crate::launch::Rowwise) -> Result<()> {
        shape::non_empty(op, &x.shape)?;
        self.note(op, vec![self.selector.choose(&call, None)?]);
        Ok(())
    }

    /// `x` with its middle two axes swapped (rank 4), and the launch: as the GPU path swaps, a
    /// split product's sum that is the newest launch is taken in (`reduce_permute`).
    /// The swap's output, and its launch: none where the product before it writes the swap
    /// too (as heads).
    fn swapped12(&self, x: &Shaped) -> Result<(Shaped, Option<Choice>)> {
        let [a, b, c, d] = rank4("swap_axes", &x.shape)?;
        let y = Shaped {
            shape: vec![a, c, b, d],
            dtype: x.dtype,
        };
        // Where b or c is 1 the GPU path swaps by a view: no launch, nothing folded.
        if b == 1 || c == 1 {
            return Ok((y, None));
        }
        if let Some(folded) = self.permute_taking_sum(x.dtype) {
            return Ok((y, Some(folded)));
        }
        if self.product_as_heads(x.dtype, [a * b, c * d]) {
            return Ok((y, None));
        }
        Ok((y, Some(self.elementwise("swap_axes", x.dtype)?)))
    }

    /// Whether the product just made, one [M, N] matrix of rows in sequences and columns in
    /// heads (`rows_cols`: [B·T, P·H·d], as the GPU path checks the recorded product's M and N),
    /// writes its split into heads too ([`take_product`](Self::take_product)).
    fn product_as_heads(&self, dtype: DType, rows_cols: [usize; 2]) -> bool {
        let fits = |s: &[usize]| s == rows_cols;
        dtype == DType::F32 && self.take_product(fits, Epilogue::BiasAndHeads)
    }

    fn not_modelled(&self, op: &'static str) -> Error {
        Error::Unsupported {
            op,
            adapter: self.selector.profile.name.clone(),
            detail: "the plan-only backend models a forward pass; this op is not modelled".into(),
        }
    }
}

/// Whether the newest call directly follows another call the GPU path notes: a captured pass
/// leaves its launch alone (a chain `ops::fuse` may rewrite: `Gpu::replace_last`).
fn chained(made: &[Made]) -> bool {
    let noted = |op: &str| matches!(op, "matmul" | "matmul_bt" | "softmax");
    matches!(made, [.., before, last] if noted(before.op) && noted(last.op))
}

fn same_dtype(op: &'static str, a: &Shaped, b: &Shaped) -> Result<()> {
    if a.dtype != b.dtype {
        return Err(Error::shape(
            op,
            format!("operands of dtypes {:?} and {:?}", a.dtype, b.dtype),
        ));
    }
    Ok(())
}

fn rank4(op: &'static str, shape: &[usize]) -> Result<[usize; 4]> {
    match *shape {
        [a, b, c, d] => Ok([a, b, c, d]),
        _ => Err(Error::shape(
            op,
            format!("shape {shape:?}: expected rank 4"),
        )),
    }
}

fn last(op: &'static str, shape: &[usize]) -> Result<usize> {
    shape::non_empty(op, shape)?;
    Ok(shape[shape.len() - 1])
}

impl Backend for ChoiceBackend<'_> {
    type T = Shaped;
    type Ids = Shaped;
    type Cache = ();
    type Replay = ();

    fn name(&self) -> String {
        format!("plan only ({})", self.selector.profile.name)
    }
    fn upload(&self, a: &Array) -> Result<Shaped> {
        Ok(Shaped {
            shape: a.shape.clone(),
            dtype: DType::F32,
        })
    }
    fn ids(&self, ids: &[u32]) -> Result<Shaped> {
        Ok(Shaped {
            shape: vec![ids.len()],
            dtype: DType::U32,
        })
    }
    async fn read(&self, _: &Shaped) -> Result<Vec<f32>> {
        Err(self.not_modelled("read"))
    }
    fn shape<'s>(&self, t: &'s Shaped) -> &'s [usize] {
        &t.shape
    }
    fn reshape(&self, t: &Shaped, shape: &[usize]) -> Result<Shaped> {
        if shape::numel(shape) != shape::numel(&t.shape) {
            return Err(Error::shape(
                "reshape",
                format!("{:?} cannot become {shape:?}", t.shape),
            ));
        }
        Ok(Shaped {
            shape: shape.to_vec(),
            dtype: t.dtype,
        })
    }
    fn matmul(&self, a: &Shaped, b: &Shaped) -> Result<Shaped> {
        let layout = matmul::Layout::default();
        self.product("matmul", a, b, layout, matmul::Epilogue::None)
    }
    fn matmul_bt(&self, a: &Shaped, b: &Shaped) -> Result<Shaped> {
        let layout = matmul::Layout {
            a_trans: false,
            b_trans: true,
        };
        self.product("matmul_bt", a, b, layout, matmul::Epilogue::None)
    }
    fn matmul_at(&self, a: &Shaped, b: &Shaped) -> Result<Shaped> {
        let layout = matmul::Layout {
            a_trans: true,
            b_trans: false,
        };
        self.product("matmul_at", a, b, layout, matmul::Epilogue::None)
    }
    fn linear(&self, x: &Shaped, w: &Shaped, b: &Shaped) -> Result<Shaped> {
        self.linear_with("linear", x, w, b, matmul::Epilogue::Bias)
    }
    fn linear_gelu(&self, x: &Shaped, w: &Shaped, b: &Shaped) -> Result<Shaped> {
        self.linear_with("linear_gelu", x, w, b, matmul::Epilogue::BiasGelu)
    }
    fn matmul_gelu(&self, x: &Shaped, w: &Shaped) -> Result<Shaped> {
        // The GPU path's one launch: the bias_gelu epilogue over a zero bias.
        let zeros = Shaped {
            shape: vec![last("matmul", &w.shape)?],
            dtype: x.dtype,
        };
        self.linear_with("matmul_gelu", x, w, &zeros, matmul::Epilogue::BiasGelu)
    }
    fn add(&self, a: &Shaped, b: &Shaped) -> Result<Shaped> {
        same_dtype("add", a, b)?;
        let bc = Broadcast::new("add", &a.shape, &b.shape)?;
        let call = add::call(a.dtype, &a.shape, &b.shape)?;
        self.note("add", vec![self.selector.choose(&call, None)?]);
        Ok(Shaped {
            shape: bc.shape,
            dtype: a.dtype,
        })
    }
    fn softmax(&self, x: &Shaped, causal: bool, _scale: f32) -> Result<Shaped> {
        let cols = last("softmax", &x.shape)?;
        self.rowwise("softmax", x, softmax::call(x.dtype, cols, causal))?;
        Ok(x.clone())
    }
    fn layernorm(&self, x: &Shaped, _g: &Shaped, _b: &Shaped, _eps: f32) -> Result<Shaped> {
        let cols = last("layernorm", &x.shape)?;
        self.rowwise("layernorm", x, layernorm::call(x.dtype, cols, false))?;
        Ok(x.clone())
    }
    fn add_layernorm(
        &self,
        x: &Shaped,
        r: &Shaped,
        _g: &Shaped,
        _b: &Shaped,
        _eps: f32,
    ) -> Result<(Shaped, Shaped)> {
        if x != r {
            return Err(Error::shape(
                "add_layernorm",
                format!("x {:?} and the residual {:?} differ", x.shape, r.shape),
            ));
        }
        let cols = last("add_layernorm", &x.shape)?;
        shape::non_empty("add_layernorm", &x.shape)?;
        let norm = self
            .selector
            .choose(&layernorm::call(x.dtype, cols, true), None)?;
        // As the GPU path folds it: a split product's sum as the newest launch, and the norm of
        // that product plus a residual, are one reduce_layernorm launch in the norm's design.
        if x.dtype == DType::F32
            && let Some(choice) = self.take_split_sum(|epilogue| {
                let call = reduce_layernorm::call(cols, epilogue == Epilogue::Bias);
                let named = reduce_layernorm::design_of(
                    self.selector.registry,
                    &norm.variant,
                    epilogue == Epilogue::Bias,
                )?;
                self.selector.choose(&call, Some(&named)).ok()
            })
        {
            self.note("add_layernorm", vec![choice]);
            return Ok((x.clone(), x.clone()));
        }
        self.note("add_layernorm", vec![norm]);
        Ok((x.clone(), x.clone()))
    }
    fn layernorm_backward(
        &self,
        _x: &Shaped,
        _g: &Shaped,
        _dy: &Shaped,
        _eps: f32,
    ) -> Result<(Shaped, Shaped, Shaped)> {
        Err(self.not_modelled("layernorm_backward"))
    }
    fn gelu(&self, x: &Shaped) -> Result<Shaped> {
        // The GPU path folds where x is the product's output, in any view of it.
        let count = |s: &[usize]| s.iter().product::<usize>();
        let same = |s: &[usize]| count(s) == count(&x.shape);
        let launches = if self.take_product(same, Epilogue::BiasAndGelu) {
            Vec::new()
        } else {
            vec![self.elementwise("gelu", x.dtype)?]
        };
        self.note("gelu", launches);
        Ok(x.clone())
    }
    fn gelu_backward(&self, _x: &Shaped, _dy: &Shaped) -> Result<Shaped> {
        Err(self.not_modelled("gelu_backward"))
    }
    fn transpose(&self, x: &Shaped) -> Result<Shaped> {
        if x.shape.len() < 2 {
            return Err(Error::shape(
                "transpose",
                format!("shape {:?} has no two axes to swap", x.shape),
            ));
        }
        self.note("transpose", vec![self.elementwise("transpose", x.dtype)?]);
        let mut shape = x.shape.clone();
        let r = shape.len();
        shape.swap(r - 2, r - 1);
        Ok(Shaped {
            shape,
            dtype: x.dtype,
        })
    }
    fn swap12(&self, x: &Shaped) -> Result<Shaped> {
        let (y, choice) = self.swapped12(x)?;
        self.note("swap12", Vec::from_iter(choice));
        Ok(y)
    }
    /// As the GPU path splits: with as many K/V heads as Q heads, one `permute` ([B, T, 3, H,
    /// d] → [3, B, H, T, d]), which takes in a split product's sum when that is the newest
    /// launch (`reduce_permute`) and is written by a whole product that is (`matmul::fold`);
    /// otherwise the heads to the front (one swap, folded the same way; with grouped heads and
    /// a batch, copies after it).
    fn split_qkv(&self, qkv: &Shaped, [b, t, h, hkv, d]: [usize; 5]) -> Result<[Shaped; 3]> {
        let part = |heads: usize| Shaped {
            shape: vec![b, heads, t, d],
            dtype: qkv.dtype,
        };
        let launch = if hkv != h {
            self.swapped12(&self.reshape(qkv, &[b, t, h + 2 * hkv, d])?)?
                .1
        } else if let Some(folded) = self.permute_taking_sum(qkv.dtype) {
            Some(folded)
        } else if self.product_as_heads(qkv.dtype, [b * t, 3 * h * d]) {
            None
        } else {
            Some(self.elementwise("permute", qkv.dtype)?)
        };
        self.note("split_qkv", Vec::from_iter(launch));
        Ok([part(h), part(hkv), part(hkv)])
    }
    fn attention(
        &self,
        _q: &Shaped,
        _k: &Shaped,
        _v: &Shaped,
        _scale: f32,
    ) -> Result<(Shaped, Shaped)> {
        Err(self.not_modelled("attention"))
    }
    fn attention_backward(
        &self,
        _q: &Shaped,
        _k: &Shaped,
        _v: &Shaped,
        _o: &Shaped,
        _lse: &Shaped,
        _d_o: &Shaped,
        _scale: f32,
    ) -> Result<Shaped> {
        Err(self.not_modelled("attention_backward"))
    }
    fn embedding(&self, _table: &Shaped, _ids: &Shaped) -> Result<Shaped> {
        Err(self.not_modelled("embedding"))
    }
    fn embedding_backward(&self, _dy: &Shaped, _ids: &Shaped, _vocab: usize) -> Result<Shaped> {
        Err(self.not_modelled("embedding_backward"))
    }
    fn cross_entropy(
        &self,
        _logits: &Shaped,
        _targets: &Shaped,
        _grad_scale: f32,
    ) -> Result<(Shaped, Shaped)> {
        Err(self.not_modelled("cross_entropy"))
    }
    fn adamw(
        &self,
        _p: &mut Shaped,
        _g: &Shaped,
        _m: &mut Shaped,
        _v: &mut Shaped,
        _h: &AdamW,
        _corrections: &Shaped,
    ) -> Result<()> {
        Err(self.not_modelled("adamw"))
    }
    fn bias_corrections(&self, _h: &AdamW) -> Result<Shaped> {
        Ok(Shaped {
            shape: vec![2],
            dtype: DType::F32,
        })
    }
    fn set_bias_corrections(&self, _corrections: &mut Shaped, _h: &AdamW) -> Result<()> {
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
    fn cache_append(&self, _cache: &mut (), _k: &Shaped, _v: &Shaped) -> Result<()> {
        Err(self.not_modelled("kv_append"))
    }
    fn cache_attend(&self, _cache: &(), _q: &Shaped, _scale: f32) -> Result<Shaped> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::select::TunedTable;

    /// What a selector for the stored profile `name` borrows.
    fn stored(name: &str) -> Result<(Registry, crate::device::DeviceProfile, TunedTable)> {
        let (_, profile) = crate::device::stored_profiles()?
            .into_iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| Error::UnknownKernel(format!("no stored profile {name}")))?;
        Ok((Registry::builtin()?, profile, TunedTable::builtin()?))
    }

    fn shaped(shape: &[usize]) -> Shaped {
        Shaped {
            shape: shape.to_vec(),
            dtype: DType::F32,
        }
    }

    #[test]
    fn a_linear_layer_is_one_product_and_bad_shapes_are_errors() -> Result<()> {
        let (registry, profile, tuned) = stored("webgpu-defaults")?;
        let b = ChoiceBackend::new(Selector::new(&registry, &profile, &tuned));
        let y = b.linear(&shaped(&[2, 5, 8]), &shaped(&[8, 12]), &shaped(&[12]))?;
        assert_eq!(y.shape, [2, 5, 12]);
        let made = b.made();
        assert_eq!(made.len(), 1);
        assert_eq!(made[0].op, "linear");
        assert_eq!(made[0].launches[0].variant.family, "matmul");
        assert_eq!(
            made[0].launches[0]
                .variant
                .get("epilogue")
                .map(|e| e.to_string()),
            Some("bias".into())
        );

        assert!(b.matmul(&shaped(&[4, 3]), &shaped(&[4, 3])).is_err());
        assert!(
            b.linear(&shaped(&[4, 8]), &shaped(&[8, 12]), &shaped(&[11]))
                .is_err()
        );
        assert!(b.reshape(&shaped(&[4, 3]), &[5, 2]).is_err());
        let refused = b.gelu_backward(&shaped(&[4]), &shaped(&[4]));
        assert!(
            matches!(&refused, Err(e) if e.to_string().contains("not modelled")),
            "{refused:?}"
        );
        assert_eq!(b.made().len(), 1, "a refused call records nothing");
        Ok(())
    }

    /// As `matmul::fold` does on the GPU path: a gelu, or a split into heads, of the product
    /// just made takes that product's launch; of anything else, a launch of its own.
    #[test]
    fn the_op_after_the_newest_product_rides_on_its_launch() -> Result<()> {
        let (registry, profile, tuned) = stored("lavapipe")?;
        let b = ChoiceBackend::new(Selector::new(&registry, &profile, &tuned));
        let u = b.matmul(&shaped(&[64, 32]), &shaped(&[32, 128]))?;
        b.gelu(&u)?;
        b.gelu(&shaped(&[64, 128]))?;
        let made = b.made();
        let epilogue = |m: &Made| m.launches[0].variant.get("epilogue").map(|e| e.to_string());
        assert_eq!(epilogue(&made[0]), Some("bias_and_gelu".into()));
        assert!(made[1].launches.is_empty(), "{:?}", made[1]);
        assert_eq!(made[2].launches[0].variant.family, "gelu");

        // Q, K and V split into heads by the product that makes them; a swap into heads of a
        // batched product's output stays a launch of its own.
        let qkv = b.linear(&shaped(&[10, 16]), &shaped(&[16, 24]), &shaped(&[24]))?;
        b.split_qkv(&qkv, [2, 5, 2, 2, 4])?;
        let o = b.matmul(&shaped(&[2, 5, 4]), &shaped(&[2, 4, 8]))?;
        b.swap12(&b.reshape(&o, &[2, 5, 2, 4])?)?;
        // A product viewed with other rows ([6, 4] as [2, 2, 3, 2]) keeps its swap.
        let c = b.matmul(&shaped(&[6, 8]), &shaped(&[8, 4]))?;
        b.swap12(&b.reshape(&c, &[2, 2, 3, 2])?)?;
        let made = b.made();
        assert_eq!(epilogue(&made[3]), Some("bias_and_heads".into()));
        assert!(made[4].launches.is_empty(), "{:?}", made[4]);
        assert_eq!(made[6].launches[0].variant.family, "swap_axes");
        assert_eq!(epilogue(&made[7]), Some("none".into()));
        assert_eq!(made[8].launches[0].variant.family, "swap_axes");
        Ok(())
    }
}
