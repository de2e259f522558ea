//! Chains of cooperative-matrix multiply-adds: the matrix units' ceiling (the third the fleet
//! campaign measures a device with, beside `copy`'s bandwidth and `fma_chain`'s vector rate),
//! with the operands in registers, or reloaded every step from workgroup memory or the buffer,
//! so that a cooperative product's bound can be named. Not used by a model.

pub(crate) mod cases;
pub mod cpu;

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::launch::{check_no_alias, check_same_device, dtype_value};
use crate::registry::Variant;
use crate::select::{self, Bucket, Choice, Key, Request, prefer};
use crate::tensor::Tensor;

const OP: &str = "mma_chain";

/// Where each step's fragments come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operands {
    /// Loaded once: the multiply-add rate alone.
    Registers,
    /// Reloaded from workgroup memory every step.
    Workgroup,
    /// Reloaded from the buffer every step.
    Storage,
}

/// What the launcher and the rule read of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Design {
    pub dtype: DType,
    pub operands: Operands,
    /// Fragments read with coopLoadT (row-major), or column-major with A and B swapped.
    pub transposed_loads: bool,
    /// Elements between rows of the fragments staged in workgroup memory.
    pub pitch: u32,
}

impl Design {
    pub fn parse(v: &Variant) -> Result<Self> {
        Ok(Design {
            dtype: v.dtype()?,
            operands: v.one_of(
                "operands",
                &[
                    ("registers", Operands::Registers),
                    ("workgroup", Operands::Workgroup),
                    ("storage", Operands::Storage),
                ],
            )?,
            transposed_loads: v.one_of("load", &[("t", true), ("swap", false)])?,
            pitch: v.count("pitch")?,
        })
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    iters: u32,
    pitch: u32,
    _pad: [u32; 2],
}

/// The selector's call: one kind of launch; the rule takes the operands in registers.
#[derive(Clone, Copy, Debug)]
pub struct Call;

impl select::Call for Call {
    fn key(&self) -> Key {
        Key::new(OP, DType::F16, &[], 0, Bucket::NONE)
    }

    fn request(&self, _: &DeviceProfile) -> Request<'_> {
        Request {
            key: self.key(),
            fixed: vec![dtype_value(DType::F16)],
            filters: Vec::new(),
            order: vec![
                prefer("the operands in registers", |v| {
                    Ok(i64::from(Design::parse(v)?.operands == Operands::Registers))
                }),
                prefer("transposed loads (as the products read)", |v| {
                    Ok(i64::from(Design::parse(v)?.transposed_loads))
                }),
                prefer("packed rows", |v| Ok(-i64::from(Design::parse(v)?.pitch))),
            ],
            left_open: &[],
        }
    }
}

/// Prepares Y [groups, 8, 4, 256] (f32) from X [4, 512] (f16: four copies of A then B):
/// 2 · 16³ · iters FLOPs per fragment.
pub fn launch(
    x: &Tensor,
    y: &Tensor,
    iters: u32,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_same_device(OP, &[x, y])?;
    check_no_alias(OP, y, &[x])?;
    if x.dtype() != DType::F16 || x.numel() != 2048 {
        return Err(Error::shape(
            OP,
            format!(
                "X is {} with {} elements: expected f16 [4, 512]",
                x.dtype().wgsl(),
                x.numel()
            ),
        ));
    }
    let per_group = 8 * 4 * 256;
    if y.dtype() != DType::F32 || y.numel() == 0 || !y.numel().is_multiple_of(per_group) {
        return Err(Error::shape(
            OP,
            format!(
                "Y is {} with {} elements: expected f32 [groups, 8, 4, 256]",
                y.dtype().wgsl(),
                y.numel()
            ),
        ));
    }
    let gpu = x.gpu();
    let choice = gpu.selector().choose(&Call, named)?;
    let design = Design::parse(&choice.variant)?;
    let groups = gpu.groups(OP, (y.numel() / per_group) as u64)?;
    let params = Params {
        iters,
        pitch: design.pitch,
        _pad: [0; 2],
    };
    let dispatch = Dispatch::new(gpu, &choice.variant, &[x, y], &params, groups)?;
    Ok((dispatch, choice))
}

/// The value a call fixes, for `Variant::takes`.
pub(crate) fn fixed() -> Vec<(&'static str, Param)> {
    vec![dtype_value(DType::F16)]
}
