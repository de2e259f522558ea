//! A product's gelu, or the gelu backward that reads it, folded into the product: where the
//! newest launch recorded is a whole product (no epilogue, or a bias) writing the tensor that
//! `ops::gelu` or `ops::gelu_backward` is called on, it is taken back and recorded again with a
//! two-output epilogue that writes the product as before and the gelu (or the gradient) too.
//! A training pass's MLP keeps its pre-activation for the backward pass, so `matmul_gelu`
//! cannot serve it; this takes one launch off each way. The model code calls the ops it always
//! did.

use super::{Design, Epilogue, OP, Params, with_epilogue};
use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::{Bindable, Dispatch};
use crate::tensor::Tensor;

/// y = gelu(c) folded into the product that wrote `c`. Returns whether it folded; when it did
/// not (another launch came after the product, the product was cut along K, it ends a chain a
/// capture may rewrite, or no variant takes it), nothing was changed.
pub(crate) fn gelu(c: &Tensor, y: &Tensor) -> Result<bool> {
    fold(c, y, None)
}

/// dx = dy · gelu′(x) folded into the product that wrote `dy`, as [`gelu`] folds.
pub(crate) fn gelu_backward(x: &Tensor, dy: &Tensor, dx: &Tensor) -> Result<bool> {
    fold(dy, dx, Some(x))
}

fn fold(c: &Tensor, y: &Tensor, x: Option<&Tensor>) -> Result<bool> {
    let gpu = c.gpu();
    let f32_like = |t: &Tensor| t.dtype() == DType::F32 && t.shape() == c.shape();
    if c.dtype() != DType::F32 || !f32_like(y) || x.is_some_and(|x| !f32_like(x)) {
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
    let epilogue = match x {
        Some(_) => Epilogue::BiasAndGeluGrad,
        None => Epilogue::BiasAndGelu,
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
        let kernel = gpu
            .kernel(&with_epilogue(registry, recorded, epilogue).ok()?)
            .ok()?;
        let mut buffers: Vec<_> = operands.into_iter().cloned().collect();
        buffers.extend([bias.clone(), y.slice().clone()]);
        buffers.extend(x.map(|x| x.slice().clone()));
        Dispatch::with_kernel(kernel, buffers, last.params.to_vec(), last.groups).ok()
    })
}
