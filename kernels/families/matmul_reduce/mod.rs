//! The second pass of a split-K product: the f32 slices a matmul wrote for parts of K, added in
//! order, then the epilogue (bias, bias + gelu). `matmul::plan_split` launches it when it cuts K.

pub(crate) mod cases;
pub mod cpu;

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::matmul::Epilogue;
use crate::gpu::Dispatch;
use crate::launch::{check_input_shape, check_no_alias, check_operands, dtype_value};
use crate::registry::Variant;
use crate::select::{self, Bucket, Choice, Key, Request, prefer};
use crate::tensor::Tensor;

const OP: &str = "matmul_reduce";

/// What the launcher reads of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Design {
    pub dtype: DType,
    pub wg: u32,
    pub epilogue: Epilogue,
}

impl Design {
    pub fn parse(v: &Variant) -> Result<Self> {
        Ok(Design {
            dtype: v.dtype()?,
            wg: v.count("wg")?,
            epilogue: Epilogue::parse(v)?,
        })
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    count: u32,
    n: u32,
    splits: u32,
    _pad: u32,
}

/// The sum of a split product's slices, `partials` [splits, count] (f32) into `c` (f32, count
/// elements, rows of `n`), with the epilogue's bias [n]: the second launch of a cut K, with the
/// named `matmul_reduce` variant or the selector's choice.
pub fn plan(
    partials: &Tensor,
    c: &Tensor,
    n: usize,
    epilogue: Option<(&Tensor, Epilogue)>,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let gpu = partials.gpu();
    check_operands(OP, &[partials, c])?;
    let count = c.numel();
    let bad = |detail: String| Error::InvalidArgument { op: OP, detail };
    if partials.dtype() != DType::F32 || c.dtype() != DType::F32 {
        return Err(bad(
            "the slices and C are f32 (K is cut only for f32 products)".into(),
        ));
    }
    if n == 0 || count == 0 || !count.is_multiple_of(n) {
        return Err(bad(format!("C has {count} elements: not rows of {n}")));
    }
    let splits = match partials.shape() {
        [s, rest] if *rest == count && *s > 0 => *s,
        other => {
            return Err(bad(format!(
                "the slices are {other:?}: expected [splits, {count}]"
            )));
        }
    };
    check_no_alias(OP, c, &[partials])?;
    let (bias, kind) = match epilogue {
        Some((bias, kind)) if kind != Epilogue::None => {
            check_operands(OP, &[partials, bias])?;
            check_input_shape(OP, "bias", bias, &[n])?;
            check_no_alias(OP, c, &[bias])?;
            (Some(bias), kind)
        }
        _ => (None, Epilogue::None),
    };
    let choice = gpu.selector().choose(&Call(kind), named)?;
    let wg = u64::from(Design::parse(&choice.variant)?.wg.max(1));
    let mut tensors = vec![partials, c];
    tensors.extend(bias);
    let params = Params {
        count: count as u32,
        n: n as u32,
        splits: splits as u32,
        _pad: 0,
    };
    let groups = gpu.groups(OP, (count as u64).div_ceil(wg))?;
    let dispatch = Dispatch::new(gpu, &choice.variant, &tensors, &params, groups)?;
    Ok((dispatch, choice))
}

/// The selector's call for the sum of a split product's slices.
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
