//! Elementwise addition with broadcasting on the GPU.

pub(crate) mod cases;
pub mod cpu;

use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::Dispatch;
use crate::registry::Variant;
use crate::select::{self, Bucket, Choice, Key, Request, filter, prefer};
use crate::shape::Broadcast;
use crate::tensor::Tensor;

use crate::launch::{check_no_alias, check_operands, check_out_shape, dtype_value, record};

const OP: &str = "add";

/// How the kernel walks C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// A and B of one shape, an element per thread.
    Contiguous,
    /// A and B of one shape, a vec4 per thread (the count a multiple of 4).
    Vec4,
    /// Any shapes that broadcast (rank ≤ 4).
    Broadcast,
}

/// What the launcher and the rule read of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Design {
    pub dtype: DType,
    pub wg: u32,
    pub form: Form,
}

impl Design {
    pub fn parse(v: &Variant) -> Result<Self> {
        Ok(Design {
            dtype: v.dtype()?,
            wg: v.count("wg")?,
            form: v.one_of(
                "form",
                &[
                    ("contiguous", Form::Contiguous),
                    ("vec4", Form::Vec4),
                    ("broadcast", Form::Broadcast),
                ],
            )?,
        })
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    count: u32,
    _pad: [u32; 3],
    shape: [u32; 4],
    stride_a: [u32; 4],
    stride_b: [u32; 4],
}

/// C = A + B, broadcasting numpy-style (rank ≤ 4).
pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let bc = Broadcast::new(OP, a.shape(), b.shape())?;
    let c = Tensor::uninit(a.gpu(), &bc.shape, a.dtype())?;
    add_into(a, b, &c, None)?;
    Ok(c)
}

/// Writes A + B into `c`, with the named variant or the selector's choice.
pub fn add_into(a: &Tensor, b: &Tensor, c: &Tensor, named: Option<&str>) -> Result<Choice> {
    record(a.gpu(), launch(a, b, c, named)?)
}

/// An add call as the selector sees it.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub dtype: DType,
    /// Elements of C.
    pub count: usize,
    /// Whether A and B have one shape (no broadcasting).
    pub same_shape: bool,
}

impl select::Call for Call {
    fn key(&self) -> Key {
        Key::new(
            OP,
            self.dtype,
            &[self.count],
            u32::from(self.same_shape),
            Bucket::new(&[('n', select::bucket(self.count))]),
        )
    }

    fn request(&self, _: &DeviceProfile) -> Request<'_> {
        let (same, count) = (self.same_shape, self.count);
        Request {
            key: self.key(),
            fixed: vec![dtype_value(self.dtype)],
            filters: vec![
                filter("contiguous needs equal shapes", move |v| {
                    Ok(Design::parse(v)?.form != Form::Contiguous || same)
                }),
                filter(
                    "vec4 needs equal shapes and a count divisible by 4",
                    move |v| {
                        Ok(Design::parse(v)?.form != Form::Vec4
                            || (same && count.is_multiple_of(4)))
                    },
                ),
            ],
            order: vec![
                prefer("vec4, then contiguous, then broadcast", |v| {
                    Ok(match Design::parse(v)?.form {
                        Form::Vec4 => 2,
                        Form::Contiguous => 1,
                        Form::Broadcast => 0,
                    })
                }),
                prefer("the widest workgroup", |v| {
                    Ok(i64::from(Design::parse(v)?.wg))
                }),
            ],
            left_open: &[],
        }
    }
}

/// The selector's call for A + B of these shapes.
pub fn call(dtype: DType, a: &[usize], b: &[usize]) -> Result<Call> {
    let bc = Broadcast::new(OP, a, b)?;
    Ok(Call {
        dtype,
        count: bc.shape.iter().product(),
        same_shape: bc.is_same_shape(a, b),
    })
}

/// Checks the call and prepares its launch.
pub fn launch(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[a, b, c])?;
    let bc = Broadcast::new(OP, a.shape(), b.shape())?;
    check_out_shape(OP, c, &bc.shape)?;
    check_no_alias(OP, c, &[a, b])?;
    let choice = a
        .gpu()
        .selector()
        .choose(&call(a.dtype(), a.shape(), b.shape())?, named)?;
    let gpu = a.gpu();
    let design = Design::parse(&choice.variant)?;
    let lanes = if design.form == Form::Vec4 { 4 } else { 1 };
    let count = (c.numel() / lanes) as u64;
    let wg = u64::from(design.wg.max(1));
    let groups = gpu.groups(OP, count.div_ceil(wg))?;
    let as_u32 = |x: [usize; 4]| x.map(|v| v as u32);
    let params = Params {
        count: count as u32,
        _pad: [0; 3],
        shape: as_u32(bc.shape4),
        stride_a: as_u32(bc.stride_a),
        stride_b: as_u32(bc.stride_b),
    };
    let dispatch = Dispatch::new(gpu, &choice.variant, &[a, b, c], &params, groups)?;
    Ok((dispatch, choice))
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{add, add_into};
}
