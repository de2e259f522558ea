//! The second pass of a split-K product: the f32 slices a matmul wrote for parts of K, added in
//! order, then the epilogue (bias, bias + gelu). `matmul::launch_split` launches it when it cuts K.

pub(crate) mod cases;
pub mod cpu;

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::matmul::Epilogue;
use crate::gpu::Dispatch;
use crate::gpu::memory::Slice;
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
pub fn launch(
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
    let choice = gpu.selector().choose(&Call::sum(kind), named)?;
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

/// The selector's call for the sum of a split product's slices with an epilogue: this family's
/// ([`Call::sum`]), or a family that folds the sum into its own launch (`reduce_permute`), whose
/// variants are chosen alike.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub family: &'static str,
    pub epilogue: Epilogue,
}

impl Call {
    /// This family's call.
    pub fn sum(epilogue: Epilogue) -> Call {
        Call {
            family: OP,
            epilogue,
        }
    }
}

impl select::Call for Call {
    fn key(&self) -> Key {
        Key::new(
            self.family,
            DType::F32,
            &[],
            self.epilogue as u32,
            Bucket::NONE,
        )
    }

    fn request(&self, _: &DeviceProfile) -> Request<'_> {
        Request {
            key: self.key(),
            fixed: vec![
                dtype_value(DType::F32),
                ("epilogue", Param::Str(self.epilogue.name().into())),
            ],
            filters: Vec::new(),
            order: vec![prefer("the widest workgroup", |v| {
                Ok(i64::from(Design::parse(v)?.wg))
            })],
            left_open: &[],
        }
    }
}

/// A recorded launch of this family, read back from its label and what it binds (the slices,
/// C and, with a bias epilogue, the bias): what an op that folds the sum into its own launch
/// takes over (`reduce_layernorm`, `reduce_permute`). `None` for any other launch and for the
/// bias + gelu epilogue.
pub(crate) struct Recorded<'a> {
    pub partials: &'a Slice,
    pub c: &'a Slice,
    pub bias: Option<&'a Slice>,
}

pub(crate) fn recorded<'a>(label: &str, bound: &'a [Slice]) -> Option<Recorded<'a>> {
    let kind = label.strip_prefix("matmul_reduce/")?;
    match bound {
        [partials, c] if !kind.contains("_bias") => Some(Recorded {
            partials,
            c,
            bias: None,
        }),
        [partials, c, bias] if kind.ends_with("_bias") => Some(Recorded {
            partials,
            c,
            bias: Some(bias),
        }),
        _ => None,
    }
}

impl Recorded<'_> {
    /// The slices as a [splits, count] tensor, for a C of `count` elements.
    pub fn partials(&self, gpu: &crate::Gpu, count: usize) -> Tensor {
        let splits = (self.partials.size / 4) as usize / count.max(1);
        Tensor::over(gpu, self.partials.clone(), &[splits, count], DType::F32)
    }
}

/// The number of slices of `partials`, checked to be [splits, count] with splits ≥ 1.
pub(crate) fn slices(op: &'static str, partials: &Tensor, count: usize) -> Result<usize> {
    match partials.shape() {
        [s, rest] if *rest == count && *s > 0 => Ok(*s),
        other => Err(Error::shape(
            op,
            format!("the slices are {other:?}: expected [splits, {count}]"),
        )),
    }
}
