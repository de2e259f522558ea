//! The GPU path's side of fusion: its recording read as the rules read it ([`Newest`], the
//! capture's notes) and each decision lowered to dispatches. The op calls reach the folds
//! through the functions here; a capture that knows its reads runs the chain rewrites.

use std::ops::Range;
use std::sync::Arc;

use super::chains::{self, Attention, Chains, FeedForward, Fused, Rewrites};
use super::newest::{self, Fold, Newest, Next};
use super::{Noted, Value};
use crate::Gpu;
use crate::dtype::DType;
use crate::elementwise::ElementOp;
use crate::error::Result;
use crate::families::{
    flash_fwd, matmul, matmul_reduce, mlp, reduce_layernorm, reduce_layernorm_backward,
    reduce_permute,
};
use crate::gpu::submit::Last;
use crate::gpu::{Bindable, Captured, Dispatch, Plan};
use crate::launch::flash::lse_shape;
use crate::registry::Variant;
use crate::select::Choice;
use crate::tensor::Tensor;
use crate::trace::Note;

impl Value for Tensor {
    type Key = (u64, u64, u64);
    fn key(&self) -> Self::Key {
        self.slice().key()
    }
    fn overlaps(&self, other: &Self) -> bool {
        self.slice().overlaps(other.slice())
    }
    fn shape(&self) -> &[usize] {
        Tensor::shape(self)
    }
    fn dtype(&self) -> DType {
        Tensor::dtype(self)
    }
}

/// Notes what the op call that recorded since step `from` made (nothing outside a capture).
pub(crate) fn note(gpu: &Gpu, from: Option<usize>, what: impl FnOnce() -> Noted<Tensor>) {
    if let Some(from) = from {
        let what = what();
        let links = what.links();
        // Shared between threads natively, as the device is; the browser has one thread.
        #[allow(clippy::arc_with_non_send_sync)]
        let what = Arc::new(what);
        gpu.annotate(from, what, links);
    }
}

/// The newest launch as a fold reads it.
fn newest<'a>(gpu: &'a Gpu, last: &Last<'a>) -> Newest<'a, Tensor> {
    if let Some(p) = matmul::launched(gpu.registry(), last.label, last.buffers, last.params)
        && p.splits == 1
    {
        return Newest::Product {
            variant: p.variant,
            batch: p.batch,
            m: p.m,
            n: p.n,
            c: p.operands[2].key(),
        };
    }
    match matmul_reduce::recorded(last.label, last.buffers) {
        Some(sum) => Newest::Sum {
            c: sum.c.key(),
            bias: sum.bias.map(|b| (b.size / 4) as usize),
        },
        None => Newest::Other,
    }
}

/// Asks the rules what `next` runs in place of the newest launch and its own, and puts the
/// launch `lower` makes of that decision in place. Returns whether it did; when the rules
/// decline or `lower` cannot make the launch, nothing changes.
fn fold_with(
    gpu: &Gpu,
    next: &Next<'_, Tensor>,
    lower: impl FnOnce(&Fold, &Last<'_>) -> Option<Dispatch>,
) -> Result<bool> {
    gpu.replace_last(|last| {
        let fold = newest::fold(gpu.registry(), &newest(gpu, last), next)?;
        lower(&fold, last)
    })
}

/// The product's launch again in `variant`, binding `extra` after its bias (a product without
/// one binds `zeros`) and with `params` where given.
fn product_again(
    gpu: &Gpu,
    last: &Last<'_>,
    variant: &Variant,
    zeros: &Tensor,
    extra: &[&Tensor],
    params: Option<Vec<u8>>,
) -> Option<Dispatch> {
    let p = matmul::launched(gpu.registry(), last.label, last.buffers, last.params)?;
    let kernel = gpu.kernel(variant).ok()?;
    let mut buffers: Vec<_> = p.operands.into_iter().cloned().collect();
    buffers.push(p.bias.unwrap_or(zeros.slice()).clone());
    buffers.extend(extra.iter().map(|t| t.slice().clone()));
    let params = params.unwrap_or_else(|| last.params.to_vec());
    Dispatch::with_kernel(kernel, buffers, params, last.groups).ok()
}

/// The slices and the bias of the sum that is the newest launch, as tensors for the launch
/// that takes it over (C of `count` elements).
fn sum_parts(gpu: &Gpu, last: &Last<'_>, count: usize) -> Option<(Tensor, Option<Tensor>)> {
    let sum = matmul_reduce::recorded(last.label, last.buffers)?;
    let bias = sum.bias.map(|b| {
        let n = (b.size / 4) as usize;
        Tensor::over(gpu, b.clone(), &[n], DType::F32)
    });
    Some((sum.partials(gpu, count), bias))
}

/// The bias a product without one binds, for an op whose product operand is `c`; made before
/// the recorder is locked.
fn zeros_for(c: &Tensor) -> Result<Option<Tensor>> {
    match c.shape().last() {
        Some(&n) if n > 0 => Tensor::kept_zeros(c.gpu(), &[n], DType::F32).map(Some),
        _ => Ok(None),
    }
}

/// `op` over `operands` into `y` from the launch of the product that wrote an operand.
pub(crate) fn elementwise(op: ElementOp, operands: &[&Tensor], y: &Tensor) -> Result<bool> {
    let Some((_, at)) = newest::epilogue_for(op) else {
        return Ok(false);
    };
    let Some(zeros) = zeros_for(operands.get(at).copied().unwrap_or(y))? else {
        return Ok(false);
    };
    let next = Next::Elementwise { op, operands };
    fold_with(y.gpu(), &next, |fold, last| {
        let Fold::Product(variant) = fold else {
            return None;
        };
        // The epilogue binds the op's result, then the operands other than the product.
        let mut extra = vec![y];
        extra.extend(
            (0..operands.len())
                .filter(|&i| i != at)
                .map(|i| operands[i]),
        );
        product_again(y.gpu(), last, variant, &zeros, &extra, None)
    })
}

/// `permute(x, order)` into `y`: the launch that sums the cut product that wrote X, or where
/// the move puts a whole product [B·T, P·H·d] into heads (`order` [2, 0, 3, 1] of X [B, T, P,
/// H, d]), the product's launch.
pub(crate) fn permute(x: &Tensor, order: [usize; 4], y: &Tensor) -> Result<bool> {
    let heads = match (order, x.shape()) {
        ([2, 0, 3, 1], &[b, t, p, h, d]) => Some([b, t, p, h, d]),
        _ => None,
    };
    moved(x, order, y, heads.map(|e| (y.clone(), e)))
}

/// `x` [a, b, c, d] with its middle axes swapped into `y`: as [`permute`] does it, over [a, b,
/// c, 1, d] (the sum's launch) or [a, b, 1, c, d] (heads: rows of b, one part of c heads of d).
pub(crate) fn swap12(x: &Tensor, y: &Tensor) -> Result<bool> {
    let &[a, b, c, d] = x.shape() else {
        return Ok(false);
    };
    let (x5, y5) = (x.reshape(&[a, b, c, 1, d])?, y.reshape(&[a, c, b, 1, d])?);
    let heads = y.reshape(&[1, a, c, b, d])?;
    moved(&x5, [0, 2, 1, 3], &y5, Some((heads, [a, b, 1, c, d])))
}

/// A move of `x` into `y`, taking the sum before it; `heads`: where it puts a whole product
/// into heads, y as [P, B, H, T, d] and X's extents [B, T, P, H, d].
fn moved(
    x: &Tensor,
    order: [usize; 4],
    y: &Tensor,
    heads: Option<(Tensor, [usize; 5])>,
) -> Result<bool> {
    let gpu = x.gpu();
    let Some(zeros) = zeros_for(x)? else {
        return Ok(false);
    };
    let extents = heads.as_ref().map(|(_, e)| *e);
    let next = Next::Moved { x, heads: extents };
    fold_with(gpu, &next, |fold, last| match fold {
        Fold::Sum { named, .. } => {
            let (partials, bias) = sum_parts(gpu, last, x.numel())?;
            let planned =
                reduce_permute::launch(&partials, bias.as_ref(), x, order, y, named.as_deref());
            planned.ok().map(|(d, _)| d)
        }
        Fold::Product(variant) => {
            let (y_heads, [_, t, _, h, d]) = heads.as_ref()?;
            let params = matmul::with_heads(last.params, [*t, *h, *d])?;
            product_again(gpu, last, variant, &zeros, &[y_heads], Some(params))
        }
    })
}

/// `add_layernorm(x, r)` as one `reduce_layernorm` launch that sums the cut product that wrote
/// `x` or `r` (the other is the residual) in the design of `norm`, the plain norm's variant.
#[allow(clippy::too_many_arguments)]
pub(crate) fn add_layernorm(
    x: &Tensor,
    r: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    [sum, y]: [&Tensor; 2],
    eps: f32,
    norm: &Variant,
) -> Result<bool> {
    let gpu = x.gpu();
    let next = Next::AddLayerNorm { x, r, norm };
    fold_with(gpu, &next, |fold, last| {
        let &Fold::Sum {
            ref named, product, ..
        } = fold
        else {
            return None;
        };
        let (product, residual) = if product == 0 { (x, r) } else { (r, x) };
        let (partials, bias) = sum_parts(gpu, last, x.numel())?;
        let planned = reduce_layernorm::launch(
            &partials,
            bias.as_ref(),
            residual,
            gamma,
            beta,
            [product, sum, y],
            eps,
            named.as_deref(),
        );
        planned.ok().map(|(d, _)| d)
    })
}

/// The layer norm's backward's first launch (dX and the row statistics into `stats`) as one
/// `reduce_layernorm_backward` launch that sums the cut product that wrote `dy`, in the design
/// of `norm`, the variant `layernorm_backward` chose (the same threads and reductions, so the
/// same bits). Returns its choice where it folded; the caller records the dgamma/dbeta launch
/// after it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn layernorm_backward(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    acc: Option<&Tensor>,
    [dx, stats]: [&Tensor; 2],
    eps: f32,
    norm: &Variant,
) -> Result<Option<Choice>> {
    let gpu = x.gpu();
    if dy.shape() != x.shape() {
        return Ok(None);
    }
    let next = Next::LayerNormBackward { dy, norm };
    let mut chosen = None;
    fold_with(gpu, &next, |fold, last| {
        let Fold::Sum { named, .. } = fold else {
            return None;
        };
        let (partials, _) = sum_parts(gpu, last, x.numel())?;
        let outputs = [dy, dx, stats];
        let planned = reduce_layernorm_backward::launch(
            &partials,
            x,
            gamma,
            acc,
            outputs,
            eps,
            named.as_deref(),
        );
        let (dispatch, choice) = planned.ok()?;
        chosen = Some(choice);
        Some(dispatch)
    })?;
    Ok(chosen)
}

/// Captures `build` into a plan (as [`Gpu::capture`]) with the rewrites that keep every
/// result: a training step's weight-gradient sums folded into its optimiser step.
pub fn capture<R>(gpu: &Gpu, build: impl FnOnce() -> Result<R>) -> Result<(Plan, R)> {
    let (mut captured, out) = gpu.capture_steps(build)?;
    super::gradients::fold_gradient_sums(gpu, &mut captured);
    Ok((gpu.plan_of(captured)?, out))
}

/// Captures `build` into a plan in which only the tensors `reads` names are read after a
/// replay: what lies between may be fused away (attention chains into flash launches). The
/// other tensors `build` returns hold nothing meaningful after a replay. Returns the plan, what
/// `build` returned and what was fused. [`capture_reading_with`] asks for the rewrites that are
/// not measured to pay.
pub fn capture_reading<R>(
    gpu: &Gpu,
    build: impl FnOnce() -> Result<R>,
    reads: impl FnOnce(&R) -> Vec<Tensor>,
) -> Result<(Plan, R, Fused)> {
    capture_reading_with(gpu, Rewrites::default(), build, reads)
}

/// [`capture_reading`] with the rewrites `rewrites` turns on besides.
pub fn capture_reading_with<R>(
    gpu: &Gpu,
    rewrites: Rewrites,
    build: impl FnOnce() -> Result<R>,
    reads: impl FnOnce(&R) -> Vec<Tensor>,
) -> Result<(Plan, R, Fused)> {
    let (mut captured, out) = gpu.capture_steps(build)?;
    let read = reads(&out);
    let mut chains = GpuChains {
        gpu,
        captured: &mut captured,
    };
    let fused = chains::rewrite(&mut chains, rewrites, &read);
    super::gradients::fold_gradient_sums(gpu, &mut captured);
    Ok((gpu.plan_of(captured)?, out, fused))
}

/// A capture as the chain rules read it, lowering what they find to dispatches.
pub(crate) struct GpuChains<'a> {
    pub gpu: &'a Gpu,
    pub captured: &'a mut Captured,
}

impl Chains for GpuChains<'_> {
    type V = Tensor;
    type Launch = Dispatch;

    fn len(&self) -> usize {
        self.captured.len()
    }

    fn notes(&self) -> &[Note] {
        &self.captured.notes
    }

    fn bound_outside(&self, v: &Tensor, except: Range<usize>) -> bool {
        self.captured.bound_outside(v.slice(), except)
    }

    fn replace(&mut self, range: Range<usize>, with: Vec<Dispatch>) {
        self.captured.replace_launches(range, with);
    }

    fn attention(&self, a: &Attention<Tensor>) -> Option<(Range<usize>, Vec<Dispatch>)> {
        // [.., N, d] batched products as flash's [B, H, N, d]: views of the same bytes.
        let four = |t: &Tensor| -> Option<Tensor> {
            let sh = t.shape();
            let (n, d) = (sh[sh.len().checked_sub(2)?], sh[sh.len() - 1]);
            t.reshape(&[1, t.numel() / (n * d), n, d]).ok()
        };
        let (q, k, v, o) = (four(&a.q)?, four(&a.k)?, four(&a.v)?, four(&a.o)?);
        let lse = Tensor::uninit(q.gpu(), &lse_shape(&q), DType::F32).ok()?;
        // The merged rows written by the flash launch itself where it takes them; else the
        // chain fused as before and the swap kept.
        if let Some((swap, y, heads)) = &a.merged
            && let Ok((dispatch, _)) = flash_fwd::launch_forward_merged(
                &q, &k, &v, y, &lse, *heads, a.causal, a.scale, None,
            )
        {
            return Some((a.steps.start..swap.end, vec![dispatch]));
        }
        let (dispatch, _) =
            flash_fwd::launch_forward(&q, &k, &v, &o, &lse, a.causal, a.scale, None).ok()?;
        Some((a.steps.clone(), vec![dispatch]))
    }

    fn feed_forward(&self, f: &FeedForward<Tensor>) -> Option<Vec<Dispatch>> {
        let (rows, d) = crate::shape::rows_cols("mlp", f.x.shape()).ok()?;
        let x = f.x.reshape(&[rows, d]).ok()?;
        let (partials, variant) = mlp::workspace(&x, &f.w1, &f.b1, &f.w2, None).ok()?;
        let (slices, _) = mlp::launch(&x, &f.w1, &f.b1, &f.w2, &partials, Some(&variant)).ok()?;
        let cols = *f.product.shape().last()?;
        let named = reduce_layernorm::design_for(&self.gpu.selector(), cols, true)?;
        let (sum, _) = reduce_layernorm::launch(
            &partials,
            Some(&f.b2),
            &f.residual,
            &f.gamma,
            &f.beta,
            [&f.product, &f.sum, &f.y],
            f.eps,
            Some(&named),
        )
        .ok()?;
        Some(vec![slices, sum])
    }
}
