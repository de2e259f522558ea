//! `Dispatch`: one kernel launch, checked against the shader's bindings and ready to record.

use std::sync::Arc;

use super::device::Gpu;
use super::kernel::Kernel;
use super::memory::Slice;
use crate::error::{Error, Result};
use crate::registry::Variant;

/// What a launch binds: a byte range of a pooled buffer. Tensors are the one kind; naming the
/// trait rather than `Tensor` keeps the GPU layer below the tensors built on it.
pub(crate) trait Bindable {
    fn slice(&self) -> &Slice;
}

/// One kernel launch, ready to record: the kernel, the buffers it binds (in binding order), its
/// parameter bytes and its grid. Making one creates nothing on the GPU.
#[derive(Clone, Debug)]
pub struct Dispatch {
    pub(crate) kernel: Arc<Kernel>,
    pub(crate) buffers: Vec<Slice>,
    pub(crate) params: Vec<u8>,
    pub(crate) groups: [u32; 3],
}

impl Dispatch {
    /// A launch of `variant` binding `buffers` (tensors, in practice) in order and `params` as
    /// its parameter block.
    pub(crate) fn new<B: Bindable, P: bytemuck::Pod>(
        gpu: &Gpu,
        variant: &Variant,
        buffers: &[&B],
        params: &P,
        groups: [u32; 3],
    ) -> Result<Dispatch> {
        let kernel = gpu.kernel(variant)?;
        let buffers = buffers.iter().map(|b| b.slice().clone()).collect();
        Dispatch::with_kernel(kernel, buffers, bytemuck::bytes_of(params).to_vec(), groups)
    }

    pub(crate) fn with_kernel(
        kernel: Arc<Kernel>,
        buffers: Vec<Slice>,
        params: Vec<u8>,
        groups: [u32; 3],
    ) -> Result<Dispatch> {
        let wrong = |detail: String| Error::InvalidArgument {
            op: "dispatch",
            detail: format!("{}: {detail}", kernel.label),
        };
        if buffers.len() != kernel.storage.len() {
            return Err(wrong(format!(
                "{} buffers given, the shader binds {}",
                buffers.len(),
                kernel.storage.len()
            )));
        }
        // The Rust struct may carry padding past the shader's block, never less than it.
        match kernel.uniform {
            Some((_, size)) if (params.len() as u64) < size => {
                return Err(wrong(format!(
                    "a {}-byte parameter block, the shader's is {size}",
                    params.len()
                )));
            }
            None if !params.is_empty() => {
                return Err(wrong("parameters given, the shader has none".into()));
            }
            _ => {}
        }
        Ok(Dispatch {
            kernel,
            buffers,
            params,
            groups,
        })
    }

    /// `family/variant` of the kernel.
    pub fn label(&self) -> &str {
        &self.kernel.label
    }
}
