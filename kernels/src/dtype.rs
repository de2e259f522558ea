//! `DType`: the element types a tensor and a kernel variant can have. It sits at the bottom of
//! the crate: the registry, the selector and tensors all name it, and it names nothing of theirs.

use crate::error::{Error, Result};

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F16,
    /// Packed data such as RGBA8 pixels; read with `read_u32`.
    U32,
}

impl DType {
    /// The WGSL type name, also the `dtype` value in template contracts.
    pub fn wgsl(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::U32 => "u32",
        }
    }

    pub fn size(self) -> u64 {
        match self {
            DType::F32 | DType::U32 => 4,
            DType::F16 => 2,
        }
    }

    /// Parses `f32`, `f16` or `u32`.
    pub fn parse(s: &str) -> Result<DType> {
        match s {
            "f32" => Ok(DType::F32),
            "f16" => Ok(DType::F16),
            "u32" => Ok(DType::U32),
            other => Err(Error::Parse {
                what: "dtype".into(),
                detail: format!("`{other}` is not a dtype (f32, f16, u32)"),
            }),
        }
    }
}
