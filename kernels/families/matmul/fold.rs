//! The op after a product folded into the product: where the newest launch recorded is a whole
//! product (no epilogue, or a bias) writing the tensor that `ops::gelu`, `ops::gelu_backward`,
//! `ops::permute` (into heads) or `ops::swap_axes12` is called on, it is taken back and recorded
//! again with a two-output epilogue that writes the product as before and the op's result too.
//! A training pass's MLP keeps its pre-activation for the backward pass, so `matmul_gelu`
//! cannot serve it; Q, K and V come out of one product and go into heads, and so does the
//! gradient of the attention's output. The model code calls the ops it always did.

use super::{Design, Epilogue, OP, Params, with_epilogue, with_heads};
use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::{Bindable, Dispatch};
use crate::tensor::Tensor;

/// y = gelu(c) folded into the product that wrote `c`. Returns whether it folded; when it did
/// not (another launch came after the product, the product was cut along K, it ends a chain a
/// capture may rewrite, or no variant takes it), nothing was changed.
pub(crate) fn gelu(c: &Tensor, y: &Tensor) -> Result<bool> {
    fold(c, y, Op::Gelu)
}

/// dx = dy · gelu′(x) folded into the product that wrote `dy`, as [`gelu`] folds.
pub(crate) fn gelu_backward(x: &Tensor, dy: &Tensor, dx: &Tensor) -> Result<bool> {
    fold(dy, dx, Op::GeluGrad(x))
}

/// X [B, T, P, H, d] into y [P, B, H, T, d] (`ops::permute` with order [2, 0, 3, 1]) folded
/// into the product [B·T, P·H·d] that wrote X, as [`gelu`] folds.
pub(crate) fn heads(x: &Tensor, y: &Tensor) -> Result<bool> {
    let (&[b, t, p, h, d], &[p2, b2, h2, t2, d2]) = (x.shape(), y.shape()) else {
        return Ok(false);
    };
    if [p2, b2, h2, t2, d2] != [p, b, h, t, d] {
        return Ok(false);
    }
    let c = x.reshape(&[b * t, p * h * d])?;
    fold(&c, y, Op::Heads([t, h, d]))
}

/// What the fold writes into y.
#[derive(Clone, Copy)]
enum Op<'a> {
    Gelu,
    GeluGrad(&'a Tensor),
    Heads([usize; 3]),
}

fn fold(c: &Tensor, y: &Tensor, op: Op<'_>) -> Result<bool> {
    let gpu = c.gpu();
    let x = match op {
        Op::GeluGrad(x) => Some(x),
        _ => None,
    };
    let same_size = matches!(op, Op::Heads(_)) || y.shape() == c.shape();
    let f32_like = |t: &Tensor| t.dtype() == DType::F32 && t.shape() == c.shape();
    let wrong_x = x.is_some_and(|x| !f32_like(x));
    if c.dtype() != DType::F32 || y.dtype() != DType::F32 || !same_size || wrong_x {
        return Ok(false);
    }
    // x is read where C and y are written: it must be neither.
    if x.is_some_and(|x| x.slice().overlaps(c.slice()) || x.slice().overlaps(y.slice())) {
        return Ok(false);
    }
    let Some(&n) = c.shape().last().filter(|&&n| n > 0) else {
        return Ok(false);
    };
    // The bias of a product without one; made before the recorder is locked.
    let zeros = Tensor::kept_zeros(gpu, &[n], DType::F32)?;
    let epilogue = match op {
        Op::Gelu => Epilogue::BiasAndGelu,
        Op::GeluGrad(_) => Epilogue::BiasAndGeluGrad,
        Op::Heads(_) => Epilogue::BiasAndHeads,
    };
    let registry = gpu.registry();
    gpu.replace_last(|last| {
        let name = last.label.strip_prefix("matmul/")?;
        let recorded = registry
            .variants(OP)
            .ok()?
            .iter()
            .find(|v| v.name == name)?;
        let (bias, operands) = match (Design::parse(recorded).ok()?.epilogue, last.buffers) {
            (Epilogue::None, [a, b, written]) => (zeros.slice(), [a, b, written]),
            (Epilogue::Bias, [a, b, written, bias]) => (bias, [a, b, written]),
            _ => return None,
        };
        if operands[2].key() != c.slice().key() || bias.size != n as u64 * 4 {
            return None;
        }
        let params = last.params.get(..size_of::<Params>())?;
        let params: Params = bytemuck::try_pod_read_unaligned(params).ok()?;
        if params.splits != 1 {
            return None;
        }
        // Heads split the one matrix of a batch of one, of the shape the view of it says.
        if let Op::Heads(_) = op
            && (params.batch != 1
                || [params.m, params.n] != [c.shape()[0], c.shape()[1]].map(|e| e as u32))
        {
            return None;
        }
        let bytes = match op {
            Op::Heads(heads) => with_heads(last.params, heads)?,
            _ => last.params.to_vec(),
        };
        let kernel = gpu
            .kernel(&with_epilogue(registry, recorded, epilogue).ok()?)
            .ok()?;
        let mut buffers: Vec<_> = operands.into_iter().cloned().collect();
        buffers.extend([bias.clone(), y.slice().clone()]);
        buffers.extend(x.map(|x| x.slice().clone()));
        Dispatch::with_kernel(kernel, buffers, bytes, last.groups).ok()
    })
}
