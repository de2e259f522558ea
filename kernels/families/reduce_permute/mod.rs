//! A split product's sum folded into the permute or the swap of axes that reads it: where a
//! product cut along K ends the recording with its sum (`matmul_reduce`, with a bias or none)
//! and the next call permutes that product (Q, K and V of one projection put into heads, a
//! gradient put back into heads, heads merged), the sum is taken back and this one launch
//! writes the product and its permutation. The model code calls the kernels it always did; the
//! fold happens here, beneath it.

pub(crate) mod cases;
pub mod cpu;

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::matmul::Epilogue;
use crate::families::permute::cpu::permuted;
use crate::gpu::{Bindable, Dispatch};
use crate::launch::{
    ElementDesign, check_input_shape, check_no_alias, check_operands, check_out_shape, dtype_value,
};
use crate::select::{self, Bucket, Choice, Key, Request, prefer};
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
pub fn plan(
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
    let splits = match partials.shape() {
        [s, rest] if *rest == count && *s > 0 => *s,
        other => {
            return Err(Error::shape(
                OP,
                format!("the slices are {other:?}: expected [splits, {count}]"),
            ));
        }
    };
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
    let choice = gpu.selector().choose(&Call(epilogue), named)?;
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

/// `permute(x, order)` into `y` as one launch with the sum of the split product that wrote
/// `x`, when that sum (with a bias or none) is the newest launch recorded: it is replaced by
/// this family's launch, which writes `x` too. Returns whether it folded; when it did not
/// (another launch came after the sum, the sum ends a chain a capture may rewrite, or no variant
/// takes the call), nothing was changed.
pub(crate) fn fold(x: &Tensor, order: [usize; 4], y: &Tensor) -> Result<bool> {
    let gpu = x.gpu();
    if x.dtype() != DType::F32 {
        return Ok(false);
    }
    let count = x.numel();
    // matmul_reduce binds (partials, C) and, with a bias epilogue, the bias; its C must be x.
    gpu.replace_last(|label, bound| {
        let kind = label.strip_prefix("matmul_reduce/")?;
        let with_bias = match bound.len() {
            2 if !kind.contains("_bias") => false,
            3 if kind.ends_with("_bias") => true,
            _ => return None,
        };
        if bound[1].key() != x.slice().key() || count == 0 {
            return None;
        }
        let splits = (bound[0].size / 4) as usize / count;
        let partials = Tensor::over(gpu, bound[0].clone(), &[splits, count], DType::F32);
        let bias = with_bias.then(|| {
            let n = (bound[2].size / 4) as usize;
            Tensor::over(gpu, bound[2].clone(), &[n], DType::F32)
        });
        let planned = plan(&partials, bias.as_ref(), x, order, y, None);
        planned.ok().map(|(dispatch, _)| dispatch)
    })
}

/// The selector's call for a split product's sum and its permutation.
#[derive(Clone, Copy, Debug)]
pub struct Call(pub Epilogue);

impl select::Call for Call {
    fn key(&self) -> Key {
        Key::new(OP, DType::F32, &[], self.0 as u32, Bucket::NONE)
    }

    fn request(&self, _: &DeviceProfile) -> Request<'_> {
        Request {
            key: self.key(),
            fixed: vec![
                dtype_value(DType::F32),
                ("epilogue", Param::Str(self.0.name().into())),
            ],
            filters: Vec::new(),
            order: vec![prefer("the widest workgroup", |v| {
                Ok(i64::from(Design::parse(v)?.wg))
            })],
            left_open: &[],
        }
    }
}
