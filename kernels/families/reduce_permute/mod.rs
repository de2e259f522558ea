//! A split product's sum folded into the permute or the swap of axes that reads it: where a
//! product cut along K ends the recording with its sum (`matmul_reduce`, with a bias or none)
//! and the next call permutes that product (Q, K and V of one projection put into heads, a
//! gradient put back into heads, heads merged), the sum is taken back and this one launch
//! writes the product and its permutation. The model code calls the kernels it always did; the
//! fold happens here, beneath it.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::matmul::Epilogue;
use crate::families::matmul_reduce;
use crate::families::permute::cpu::permuted;
use crate::gpu::Dispatch;
use crate::launch::{
    ElementDesign, check_input_shape, check_no_alias, check_operands, check_out_shape,
};
use crate::select::Choice;
use crate::tensor::Tensor;

const OP: &str = "reduce_permute";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    extents: [u32; 4],
    c: u32,
    strides: [u32; 4],
    splits: u32,
    n: u32,
    count: u32,
}

/// Checks the call and prepares its launch: C = Σ partials (+ bias), Y = C with its leading
/// axes in `order` (as `permute` takes them).
pub fn launch(
    partials: &Tensor,
    bias: Option<&Tensor>,
    c: &Tensor,
    order: [usize; 4],
    y: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let mut all = vec![partials, c, y];
    all.extend(bias);
    check_operands(OP, &all)?;
    if c.dtype() != DType::F32 {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "every tensor is f32 (K is cut only for f32 products)".into(),
        });
    }
    let ([e0, e1, e2, e3, cols], strides) = permuted(c.shape(), order)?;
    check_out_shape(OP, y, &[e0, e1, e2, e3, cols])?;
    let count = c.numel();
    let splits = matmul_reduce::slices(OP, partials, count)?;
    let n = match bias {
        Some(b) => {
            let n = b.numel();
            check_input_shape(OP, "bias", b, &[n])?;
            if n == 0 || !count.is_multiple_of(n) {
                return Err(Error::shape(
                    OP,
                    format!("C has {count} elements: not rows of the bias's {n}"),
                ));
            }
            n
        }
        None => count,
    };
    let mut inputs = vec![partials];
    inputs.extend(bias);
    check_no_alias(OP, c, &inputs)?;
    check_no_alias(OP, y, &inputs)?;
    check_no_alias(OP, y, &[c])?;
    let gpu = c.gpu();
    let epilogue = if bias.is_some() {
        Epilogue::Bias
    } else {
        Epilogue::None
    };
    let choice = gpu.selector().choose(&call(epilogue), named)?;
    let wg = u64::from(Design::parse(&choice.variant)?.wg.max(1));
    let params = Params {
        extents: [e0, e1, e2, e3].map(|e| e as u32),
        c: cols as u32,
        strides: strides.map(|s| s as u32),
        splits: splits as u32,
        n: n as u32,
        count: count as u32,
    };
    let groups = gpu.groups(OP, (count as u64).div_ceil(wg))?;
    let dispatch = Dispatch::new(gpu, &choice.variant, &all, &params, groups)?;
    Ok((dispatch, choice))
}

/// The selector's call for a split product's sum and its permutation (its variants chosen as
/// `matmul_reduce`'s are).
pub fn call(epilogue: Epilogue) -> matmul_reduce::Call {
    matmul_reduce::Call {
        family: OP,
        epilogue,
    }
}
