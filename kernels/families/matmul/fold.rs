//! The op after a product folded into the product: where the newest launch recorded is a whole
//! product (no epilogue, or a bias) writing the tensor that `ops::gelu`, `ops::gelu_backward`,
//! `ops::permute` (into heads) or `ops::swap_axes12` is called on, it is taken back and recorded
//! again with a two-output epilogue that writes the product as before and the op's result too.
//! A training pass's MLP keeps its pre-activation for the backward pass, so `matmul_gelu`
//! cannot serve it; Q, K and V come out of one product and go into heads, and so does the
//! gradient of the attention's output. The model code calls the ops it always did.

use super::{Design, Epilogue, OP, Params, Second, with_epilogue, with_heads};
use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::{Bindable, Dispatch};
use crate::tensor::Tensor;

/// y = gelu(c) folded into the product that wrote `c`. Returns whether it folded; when it did
/// not (another launch came after the product, the product was cut along K, it ends a chain a
/// capture may rewrite, or no variant takes it), nothing was changed.
pub(crate) fn gelu(c: &Tensor, y: &Tensor) -> Result<bool> {
    fold(c, Second::Gelu { y })
}

/// dx = dy · gelu′(x) folded into the product that wrote `dy`, as [`gelu`] folds.
pub(crate) fn gelu_backward(x: &Tensor, dy: &Tensor, dx: &Tensor) -> Result<bool> {
    fold(dy, Second::GeluGrad { x, y: dx })
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
    fold(
        &c,
        Second::Heads {
            y,
            heads: [t, h, d],
        },
    )
}

fn fold(c: &Tensor, second: Second<'_>) -> Result<bool> {
    let gpu = c.gpu();
    let (y, x) = match second {
        Second::Gelu { y } | Second::Heads { y, .. } => (y, None),
        Second::GeluGrad { x, y } => (y, Some(x)),
    };
    let f32s = [Some(c), Some(y), x]
        .into_iter()
        .flatten()
        .all(|t| t.dtype() == DType::F32);
    // Elementwise, y (and x) are C's shape; heads checked against the product's M and N below.
    let heads = matches!(second, Second::Heads { .. });
    let shaped = heads
        || [Some(y), x]
            .into_iter()
            .flatten()
            .all(|t| t.shape() == c.shape());
    // x is read where C and y are written: it must be neither.
    let apart = x.is_none_or(|x| !x.slice().overlaps(c.slice()) && !x.slice().overlaps(y.slice()));
    let Some(&n) = c.shape().last().filter(|&&n| n > 0) else {
        return Ok(false);
    };
    if !f32s || !shaped || !apart {
        return Ok(false);
    }
    // The bias of a product without one; made before the recorder is locked.
    let zeros = Tensor::kept_zeros(gpu, &[n], DType::F32)?;
    let registry = gpu.registry();
    gpu.replace_last(|last| {
        let recorded = registry
            .variant(OP, last.label.strip_prefix("matmul/")?)
            .ok()?;
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
        let bytes = match second {
            // Heads split the one matrix of a batch of one, of the shape the view of it says.
            Second::Heads { heads, .. } => {
                let mn = [c.shape()[0], c.shape()[1]].map(|e| e as u32);
                if params.batch != 1 || [params.m, params.n] != mn {
                    return None;
                }
                with_heads(last.params, heads)?
            }
            _ => last.params.to_vec(),
        };
        let kernel = gpu
            .kernel(&with_epilogue(registry, recorded, second.epilogue()).ok()?)
            .ok()?;
        let mut buffers: Vec<_> = operands.into_iter().cloned().collect();
        buffers.push(bias.clone());
        buffers.extend(second.bound().into_iter().map(|t| t.slice().clone()));
        Dispatch::with_kernel(kernel, buffers, bytes, last.groups).ok()
    })
}
