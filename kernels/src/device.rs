//! `DeviceProfile`: what the kernels are rendered for — the adapter's identity, features and limits.
//!
//! Profiles serialise to JSON so that stored profiles (`kernels/profiles/*.json`) let every
//! variant be rendered and validated without the GPU they describe.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Features of the device that change which kernel variants exist.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileFeatures {
    /// `SHADER_F16`: f16 arithmetic and storage in WGSL.
    pub shader_f16: bool,
    /// `SUBGROUP`: subgroup built-ins (reductions across a subgroup).
    pub subgroup: bool,
    /// `TIMESTAMP_QUERY`: GPU timestamps at compute-pass boundaries.
    pub timestamp_query: bool,
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX`: matrix-multiply-accumulate units from WGSL.
    pub cooperative_matrix: bool,
    /// `SHADER_FLOAT32_ATOMIC` (native only): `atomicAdd` on f32 in storage buffers.
    #[serde(default)]
    pub float32_atomic: bool,
}

impl ProfileFeatures {
    /// Whether the named feature (as written in template contracts) is present.
    pub fn has(&self, name: &str) -> Option<bool> {
        match name {
            "shader_f16" => Some(self.shader_f16),
            "subgroup" => Some(self.subgroup),
            "timestamp_query" => Some(self.timestamp_query),
            "cooperative_matrix" => Some(self.cooperative_matrix),
            "float32_atomic" => Some(self.float32_atomic),
            _ => None,
        }
    }

    fn from_wgpu(f: wgpu::Features) -> Self {
        ProfileFeatures {
            shader_f16: f.contains(wgpu::Features::SHADER_F16),
            subgroup: f.contains(wgpu::Features::SUBGROUP),
            timestamp_query: f.contains(wgpu::Features::TIMESTAMP_QUERY),
            cooperative_matrix: f.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
            float32_atomic: f.contains(wgpu::Features::SHADER_FLOAT32_ATOMIC),
        }
    }
}

/// The limits that decide whether a variant fits and whether a call is too large.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileLimits {
    pub max_compute_workgroup_storage_size: u32,
    pub max_compute_invocations_per_workgroup: u32,
    pub max_compute_workgroup_size_x: u32,
    pub max_compute_workgroup_size_y: u32,
    pub max_compute_workgroup_size_z: u32,
    pub max_compute_workgroups_per_dimension: u32,
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_storage_buffers_per_shader_stage: u32,
}

impl ProfileLimits {
    /// The limits every WebGPU implementation guarantees.
    pub fn webgpu_defaults() -> Self {
        Self::from_wgpu(&wgpu::Limits::defaults())
    }

    fn from_wgpu(l: &wgpu::Limits) -> Self {
        ProfileLimits {
            max_compute_workgroup_storage_size: l.max_compute_workgroup_storage_size,
            max_compute_invocations_per_workgroup: l.max_compute_invocations_per_workgroup,
            max_compute_workgroup_size_x: l.max_compute_workgroup_size_x,
            max_compute_workgroup_size_y: l.max_compute_workgroup_size_y,
            max_compute_workgroup_size_z: l.max_compute_workgroup_size_z,
            max_compute_workgroups_per_dimension: l.max_compute_workgroups_per_dimension,
            max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
            max_buffer_size: l.max_buffer_size,
            max_storage_buffers_per_shader_stage: l.max_storage_buffers_per_shader_stage,
        }
    }
}

/// One matrix-multiply-accumulate shape the adapter offers through cooperative matrices.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoopMatrixConfig {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    /// Element type of A and B (`f16`, `f32`, …).
    pub ab: String,
    /// Element type of the accumulator C and the result.
    pub cr: String,
}

impl CoopMatrixConfig {
    /// `MxNxK ab>cr`, as contracts name the configuration they need (`16x16x16 f16>f32`).
    pub fn name(&self) -> String {
        format!("{}x{}x{} {}>{}", self.m, self.n, self.k, self.ab, self.cr)
    }
}

/// A capability tier: what a family offers is decided per tier (its contract's experimental
/// sets name the tiers where a design is kept out of the headline), not per device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// A browser without subgroups or f16: WebGPU's guarantees.
    Webgpu,
    /// A browser with subgroups or f16.
    WebgpuPlus,
    /// A native adapter (Vulkan, Metal, DX12), hardware or software.
    Native,
    /// A native adapter with cooperative matrices and f32 atomics.
    NativeCoop,
}

impl Tier {
    pub const ALL: [Tier; 4] = [
        Tier::Webgpu,
        Tier::WebgpuPlus,
        Tier::Native,
        Tier::NativeCoop,
    ];

    /// The name contracts use (`tier == 'native_coop'`).
    pub fn name(self) -> &'static str {
        match self {
            Tier::Webgpu => "webgpu",
            Tier::WebgpuPlus => "webgpu_plus",
            Tier::Native => "native",
            Tier::NativeCoop => "native_coop",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything about an adapter that kernel rendering and selection depend on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceProfile {
    /// Adapter name as the driver reports it.
    pub name: String,
    /// `vulkan`, `metal`, `dx12`, `webgpu` (browser), …
    pub backend: String,
    /// `discrete`, `integrated`, `virtual`, `cpu` or `other`.
    pub device_type: String,
    pub vendor: u32,
    pub device: u32,
    pub driver: String,
    pub driver_info: String,
    pub features: ProfileFeatures,
    /// Smallest and largest subgroup size (0 when subgroups are absent or unknown).
    pub subgroup_min_size: u32,
    pub subgroup_max_size: u32,
    pub cooperative_matrix: Vec<CoopMatrixConfig>,
    pub limits: ProfileLimits,
}

impl DeviceProfile {
    /// The profile of a device created from `adapter` with `features` and `limits`.
    pub fn new(adapter: &wgpu::Adapter, features: wgpu::Features, limits: &wgpu::Limits) -> Self {
        let info = adapter.get_info();
        let features = ProfileFeatures::from_wgpu(features);
        let cooperative_matrix = if features.cooperative_matrix {
            adapter
                .cooperative_matrix_properties()
                .iter()
                .map(|p| CoopMatrixConfig {
                    m: p.m_size,
                    n: p.n_size,
                    k: p.k_size,
                    ab: scalar_name(p.ab_type),
                    cr: scalar_name(p.cr_type),
                })
                .collect()
        } else {
            Vec::new()
        };
        let (subgroup_min_size, subgroup_max_size) = if features.subgroup {
            (info.subgroup_min_size, info.subgroup_max_size)
        } else {
            (0, 0)
        };
        // Browsers may withhold the adapter's description: name it by what is known.
        let name = if info.name.is_empty() {
            format!(
                "unnamed {} adapter ({})",
                backend_name(info.backend),
                device_type_name(info.device_type)
            )
        } else {
            info.name.clone()
        };
        DeviceProfile {
            name,
            backend: backend_name(info.backend).to_string(),
            device_type: device_type_name(info.device_type).to_string(),
            vendor: info.vendor,
            device: info.device,
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
            features,
            subgroup_min_size,
            subgroup_max_size,
            cooperative_matrix,
            limits: ProfileLimits::from_wgpu(limits),
        }
    }

    /// Reads a profile from JSON, naming `what` (a file name, say) in the error.
    pub fn from_json(what: &str, json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|e| Error::Parse {
            what: what.to_string(),
            detail: e.to_string(),
        })
    }

    /// Pretty JSON, the format of the stored profiles.
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The device class tuned-table entries and fleet merges group by: backend, device type,
    /// vendor, the features that decide which variants exist (f16, subgroups and their size,
    /// cooperative matrices) and the workgroup storage limit in KiB — for example
    /// `vulkan/discrete/10de/f16+sg32+coop/48k`.
    pub fn class(&self) -> String {
        let f = &self.features;
        let mut features = Vec::new();
        if f.shader_f16 {
            features.push("f16".to_string());
        }
        if f.subgroup {
            features.push(format!("sg{}", self.subgroup_min_size));
        }
        if f.cooperative_matrix {
            features.push("coop".into());
        }
        let features = if features.is_empty() {
            "none".to_string()
        } else {
            features.join("+")
        };
        format!(
            "{}/{}/{:04x}/{features}/{}k",
            self.backend,
            self.device_type,
            self.vendor,
            self.limits.max_compute_workgroup_storage_size / 1024
        )
    }

    /// The adapter's capability tier.
    pub fn tier(&self) -> Tier {
        let f = &self.features;
        match (self.backend == "webgpu", f.subgroup || f.shader_f16) {
            (true, false) => Tier::Webgpu,
            (true, true) => Tier::WebgpuPlus,
            (false, _) if f.cooperative_matrix && f.float32_atomic => Tier::NativeCoop,
            (false, _) => Tier::Native,
        }
    }

    /// Whether the adapter is a software rasterizer running on the CPU (lavapipe, SwiftShader):
    /// no GPU clocks to bring up, and compiles that take seconds.
    pub fn is_software(&self) -> bool {
        self.device_type == "cpu"
    }

    /// Whether WGSL for this device must say `enable subgroups;` (browsers require it,
    /// naga rejects it).
    pub fn wgsl_needs_subgroup_enable(&self) -> bool {
        self.backend == "webgpu"
    }
}

/// The profiles stored in the repository, by name: rendering and validation are tested on each.
pub fn stored_profiles() -> Result<Vec<(&'static str, DeviceProfile)>> {
    const STORED: [(&str, &str); 5] = [
        ("lavapipe", include_str!("../profiles/lavapipe.json")),
        (
            "chromium-swiftshader",
            include_str!("../profiles/chromium-swiftshader.json"),
        ),
        (
            "webgpu-defaults",
            include_str!("../profiles/webgpu-defaults.json"),
        ),
        ("nvidia-h200", include_str!("../profiles/nvidia-h200.json")),
        // Chrome's WebGPU (Dawn) on the same GPU, as dawn.node reported it there: f32 only.
        (
            "dawn-nvidia-h200",
            include_str!("../profiles/dawn-nvidia-h200.json"),
        ),
    ];
    STORED
        .iter()
        .map(|(name, json)| Ok((*name, DeviceProfile::from_json(name, json)?)))
        .collect()
}

fn backend_name(b: wgpu::Backend) -> &'static str {
    match b {
        wgpu::Backend::Noop => "noop",
        wgpu::Backend::Vulkan => "vulkan",
        wgpu::Backend::Metal => "metal",
        wgpu::Backend::Dx12 => "dx12",
        wgpu::Backend::Gl => "gl",
        wgpu::Backend::BrowserWebGpu => "webgpu",
    }
}

fn device_type_name(t: wgpu::DeviceType) -> &'static str {
    match t {
        wgpu::DeviceType::Other => "other",
        wgpu::DeviceType::IntegratedGpu => "integrated",
        wgpu::DeviceType::DiscreteGpu => "discrete",
        wgpu::DeviceType::VirtualGpu => "virtual",
        wgpu::DeviceType::Cpu => "cpu",
    }
}

fn scalar_name(t: wgpu::CooperativeScalarType) -> String {
    format!("{t:?}").to_lowercase()
}
