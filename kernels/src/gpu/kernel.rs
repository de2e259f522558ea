//! A compiled kernel: its pipeline, and the bind group layout read off the shader by naga (the
//! storage buffers in binding order, the parameter block as a uniform with a dynamic offset into
//! the device's parameter ring), so launches bind by position and parameters cost no buffer.

use crate::error::{Error, Result};

/// A compute pipeline and what its group 0 binds.
#[derive(Debug)]
pub(crate) struct Kernel {
    /// Unique per device: bind groups are cached by it.
    pub id: u64,
    /// `family/variant`, for errors and timings.
    pub label: String,
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
    /// Binding numbers of the storage buffers, in increasing order.
    pub storage: Vec<u32>,
    /// The parameter block: its binding and size in bytes.
    pub uniform: Option<(u32, u64)>,
}

/// The group-0 resources of a validated module: storage bindings with whether they are
/// written, and the uniform binding with its size.
pub(crate) struct Bindings {
    pub storage: Vec<(u32, bool)>,
    pub uniform: Option<(u32, u64)>,
}

impl Bindings {
    pub fn of(label: &str, module: &naga::Module) -> Result<Bindings> {
        let mut storage = Vec::new();
        let mut uniform = None;
        for (_, var) in module.global_variables.iter() {
            let Some(binding) = &var.binding else {
                continue;
            };
            if binding.group != 0 {
                return Err(layout_error(label, "bindings outside group 0"));
            }
            match var.space {
                naga::AddressSpace::Storage { access } => {
                    storage.push((binding.binding, access.contains(naga::StorageAccess::STORE)))
                }
                naga::AddressSpace::Uniform => {
                    if uniform.is_some() {
                        return Err(layout_error(label, "more than one uniform block"));
                    }
                    let size = module.types[var.ty]
                        .inner
                        .try_size(module.to_ctx())
                        .ok_or_else(|| layout_error(label, "a uniform block of no known size"))?;
                    uniform = Some((binding.binding, u64::from(size)));
                }
                _ => return Err(layout_error(label, "a binding that is not a buffer")),
            }
        }
        storage.sort_unstable();
        Ok(Bindings { storage, uniform })
    }

    /// The bind group layout: the uniform takes a dynamic offset.
    pub fn layout(&self, device: &wgpu::Device, label: &str) -> wgpu::BindGroupLayout {
        let buffer = |binding, ty, has_dynamic_offset| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset,
                min_binding_size: None,
            },
            count: None,
        };
        let mut entries: Vec<_> = self
            .storage
            .iter()
            .map(|&(b, written)| {
                buffer(
                    b,
                    wgpu::BufferBindingType::Storage {
                        read_only: !written,
                    },
                    false,
                )
            })
            .collect();
        if let Some((b, _)) = self.uniform {
            entries.push(buffer(b, wgpu::BufferBindingType::Uniform, true));
        }
        device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(label),
            entries: &entries,
        })
    }
}

fn layout_error(label: &str, detail: &str) -> Error {
    let (family, variant) = label.split_once('/').unwrap_or((label, ""));
    Error::ShaderValidation {
        family: family.to_string(),
        variant: variant.to_string(),
        line: None,
        detail: format!("unsupported binding layout: {detail}"),
    }
}
