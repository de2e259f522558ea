//! The `Gpu` context: device, queue and profile, a pipeline cache keyed by (family, variant),
//! buffer creation checked against the device limits, and wgpu errors turned into `Error`s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::device::DeviceProfile;
use crate::error::{Error, Result};
use crate::platform;
use crate::registry::{Registry, Variant};
use crate::select::TunedTable;

/// How to find and open the device.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Backends to consider; `None` takes `WGPU_BACKEND` from the environment, else the primary
    /// backends (Vulkan, Metal, DX12, browser WebGPU).
    pub backends: Option<wgpu::Backends>,
    /// Features not to request even if the adapter has them (to test or compare the fallbacks).
    pub without: wgpu::Features,
}

impl GpuOptions {
    /// The backends to consider: the explicit choice, else `WGPU_BACKEND`, else the primary ones.
    pub fn backends(&self) -> wgpu::Backends {
        self.backends
            .unwrap_or_else(|| wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY))
    }
}

/// The features Kiln's kernels can use, requested whenever the adapter offers them.
const WANTED: wgpu::Features = wgpu::Features::SHADER_F16
    .union(wgpu::Features::SUBGROUP)
    .union(wgpu::Features::TIMESTAMP_QUERY)
    .union(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
    .union(wgpu::Features::SHADER_FLOAT32_ATOMIC);

/// The opt-in wgpu asks for before it enables an `EXPERIMENTAL_*` feature.
#[allow(unsafe_code)] // the crate's one unsafe block: wgpu's token, no memory is touched here
fn experimental(features: wgpu::Features) -> wgpu::ExperimentalFeatures {
    if features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
        // SAFETY: wgpu marks cooperative matrices experimental because its implementation is
        // young. Kiln offers the route only where the adapter reports configurations, checks
        // every result against the CPU reference in its tests and benchmarks, and `kiln
        // --without coop` turns the feature off.
        unsafe { wgpu::ExperimentalFeatures::enabled() }
    } else {
        wgpu::ExperimentalFeatures::disabled()
    }
}

/// A GPU ready to run Kiln's kernels. Cheap to clone: clones share one device.
#[derive(Clone, Debug)]
pub struct Gpu {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    device: wgpu::Device,
    queue: wgpu::Queue,
    profile: DeviceProfile,
    registry: Registry,
    tuned: TunedTable,
    pipelines: Mutex<HashMap<(String, String), wgpu::ComputePipeline>>,
    /// Errors wgpu reported outside an error scope, and device loss; taken by `check`.
    errors: Arc<Mutex<Vec<Error>>>,
}

impl Gpu {
    /// Finds an adapter (honouring `WGPU_ADAPTER_NAME`, `WGPU_BACKEND`,
    /// `WGPU_POWER_PREF`) and opens a device on it.
    pub async fn new(options: &GpuOptions) -> Result<Gpu> {
        let backends = options.backends();
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle().with_env();
        desc.backends = backends;
        let instance = wgpu::Instance::new(desc);
        let adapter = match wgpu::util::initialize_adapter_from_env(&instance, None).await {
            Ok(adapter) => adapter,
            Err(_) => instance
                .request_adapter(&wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::from_env()
                        .unwrap_or(wgpu::PowerPreference::HighPerformance),
                    ..Default::default()
                })
                .await
                .map_err(|e| Error::NoAdapter(format!("{e} (backends: {backends:?})")))?,
        };
        Self::from_adapter(&adapter, options).await
    }

    /// Opens a device on `adapter` with its own limits and the features Kiln uses.
    pub async fn from_adapter(adapter: &wgpu::Adapter, options: &GpuOptions) -> Result<Gpu> {
        let features = adapter.features() & WANTED & !options.without;
        // Ask for everything the adapter offers: the defaults are WebGPU's minimums.
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("kiln"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features: experimental(features),
                ..Default::default()
            })
            .await
            .map_err(|e| Error::NoAdapter(format!("request_device: {e}")))?;
        let profile = DeviceProfile::new(adapter, device.features(), &device.limits());

        let errors: Arc<Mutex<Vec<Error>>> = Arc::default();
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e| push(&sink, convert(e))));
        let sink = errors.clone();
        device.set_device_lost_callback(move |reason, message| {
            push(&sink, Error::DeviceLost(format!("{reason:?}: {message}")));
        });

        // Natively wgpu's handles are Send + Sync; on wasm32 they are single-threaded, and so
        // is the browser's main thread that holds this Arc.
        #[allow(clippy::arc_with_non_send_sync)]
        Ok(Gpu {
            inner: Arc::new(Inner {
                device,
                queue,
                profile,
                registry: Registry::builtin()?,
                tuned: TunedTable::builtin()?,
                pipelines: Mutex::default(),
                errors,
            }),
        })
    }

    /// Whether two handles share one device (tensors of one op must).
    pub fn same_device(&self, other: &Gpu) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.inner.device
    }

    pub fn queue(&self) -> &wgpu::Queue {
        &self.inner.queue
    }

    /// What the kernels are rendered for.
    pub fn profile(&self) -> &DeviceProfile {
        &self.inner.profile
    }

    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// This GPU with `table` in place of the built-in tuned table (a freshly merged one, say).
    /// Only before the handle is cloned: clones share one table.
    pub fn with_tuned(mut self, table: TunedTable) -> Result<Gpu> {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                inner.tuned = table;
                Ok(self)
            }
            None => Err(Error::InvalidArgument {
                op: "with_tuned",
                detail: "the GPU handle has been cloned; set the table before sharing it".into(),
            }),
        }
    }

    pub fn tuned(&self) -> &TunedTable {
        &self.inner.tuned
    }

    /// The error of an op this device cannot run, naming the adapter.
    pub(crate) fn unsupported(&self, op: &'static str, detail: impl Into<String>) -> Error {
        Error::Unsupported {
            op,
            adapter: self.inner.profile.name.clone(),
            detail: detail.into(),
        }
    }

    /// The compiled pipeline of a variant, rendered, validated and built on first use.
    pub fn pipeline(&self, variant: &Variant) -> Result<wgpu::ComputePipeline> {
        let key = (variant.family.clone(), variant.name.clone());
        if let Some(p) = self.lock_pipelines().get(&key) {
            return Ok(p.clone());
        }
        let source = self
            .inner
            .registry
            .render_validated(variant, &self.inner.profile)?;
        let pipeline = self.build_pipeline(&variant.family, &variant.name, &source)?;
        self.lock_pipelines().insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// Whether this variant's pipeline has been built on this device already.
    pub fn has_pipeline(&self, family: &str, variant: &str) -> bool {
        self.lock_pipelines()
            .contains_key(&(family.to_string(), variant.to_string()))
    }

    /// The (family, variant) pairs compiled so far on this device, sorted: what a program ran.
    pub fn compiled(&self) -> Vec<(String, String)> {
        let mut keys: Vec<_> = self.lock_pipelines().keys().cloned().collect();
        keys.sort();
        keys
    }

    /// Builds a compute pipeline (entry point `main`) from WGSL, with naga's validation first
    /// and wgpu's errors captured in an error scope.
    pub fn compile(
        &self,
        family: &str,
        variant: &str,
        source: &str,
    ) -> Result<wgpu::ComputePipeline> {
        crate::registry::validate_wgsl(family, variant, source, &self.inner.profile)?;
        self.build_pipeline(family, variant, source)
    }

    /// Builds a pipeline from WGSL that naga has already validated.
    fn build_pipeline(
        &self,
        family: &str,
        variant: &str,
        source: &str,
    ) -> Result<wgpu::ComputePipeline> {
        let device = &self.inner.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let label = format!("{family}/{variant}");
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(&label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&label),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let sink = self.inner.errors.clone();
        if let Some(e) = platform::scope_error(scope.pop(), move |e| push(&sink, convert(e))) {
            return Err(Error::ShaderValidation {
                family: family.to_string(),
                variant: variant.to_string(),
                line: None,
                detail: e.to_string(),
            });
        }
        Ok(pipeline)
    }

    /// Creates a storage buffer of `bytes`, refusing sizes over the device limits before
    /// asking wgpu. The size is rounded up to 4 bytes (the copy alignment).
    pub(crate) fn storage_buffer(
        &self,
        op: &'static str,
        what: &str,
        bytes: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer> {
        let limits = &self.inner.profile.limits;
        let size = bytes
            .checked_next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
            .unwrap_or(u64::MAX);
        for (limit, allowed) in [
            (
                "max_storage_buffer_binding_size",
                limits.max_storage_buffer_binding_size,
            ),
            ("max_buffer_size", limits.max_buffer_size),
        ] {
            if size > allowed {
                return Err(Error::OverLimit {
                    op,
                    what: what.to_string(),
                    limit,
                    needed: size,
                    allowed,
                });
            }
        }
        let scope = self
            .inner
            .device
            .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = self.inner.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(op),
            size,
            usage: usage | wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let sink = self.inner.errors.clone();
        if let Some(e) = platform::scope_error(scope.pop(), move |e| push(&sink, convert(e))) {
            return Err(convert(e));
        }
        Ok(buffer)
    }

    /// Workgroup counts for `groups` workgroups in a row on this device, folded into y past
    /// its per-dimension limit (see [`fold_groups`]).
    pub(crate) fn groups(&self, op: &'static str, groups: u64) -> Result<[u32; 3]> {
        fold_groups(
            op,
            groups,
            self.inner
                .profile
                .limits
                .max_compute_workgroups_per_dimension,
        )
    }

    /// A uniform buffer holding `params`.
    pub(crate) fn uniform<T: bytemuck::Pod>(&self, params: &T) -> wgpu::Buffer {
        use wgpu::util::DeviceExt;
        self.inner
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("kiln params"),
                contents: bytemuck::bytes_of(params),
                usage: wgpu::BufferUsages::UNIFORM,
            })
    }

    /// Records the dispatches into one command buffer and submits it.
    pub fn submit(&self, dispatches: &[&Dispatch]) {
        let mut encoder =
            self.inner
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("kiln"),
                });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            for d in dispatches {
                d.record(&mut pass);
            }
        }
        self.inner.queue.submit([encoder.finish()]);
    }

    /// Waits for all submitted work (natively; in the browser it returns at once), then reports
    /// any error wgpu raised meanwhile.
    pub fn finish(&self) -> Result<()> {
        platform::drive(&self.inner.device)?;
        self.check()
    }

    /// Waits until the GPU has finished everything submitted so far, without blocking the
    /// browser's event loop; then reports any error wgpu raised meanwhile.
    pub async fn idle(&self) -> Result<()> {
        let (tx, rx) = futures_channel::oneshot::channel();
        self.inner.queue.on_submitted_work_done(move || {
            let _ = tx.send(());
        });
        platform::drive(&self.inner.device)?;
        rx.await
            .map_err(|_| Error::DeviceLost("the queue dropped a completion callback".into()))?;
        self.check()
    }

    /// Returns (and clears) the first error wgpu reported outside an error scope, if any.
    pub fn check(&self) -> Result<()> {
        let mut errors = self
            .inner
            .errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match errors.drain(..).next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn lock_pipelines(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(String, String), wgpu::ComputePipeline>> {
        self.inner
            .pipelines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// One kernel launch, ready to record: pipeline, bindings and workgroup counts.
#[derive(Debug)]
pub struct Dispatch {
    pub(crate) pipeline: wgpu::ComputePipeline,
    pub(crate) bind_group: wgpu::BindGroup,
    pub(crate) groups: [u32; 3],
}

impl Dispatch {
    /// Binds `buffers` in order (bindings 0, 1, …) to the pipeline's group 0.
    pub(crate) fn new(
        gpu: &Gpu,
        pipeline: wgpu::ComputePipeline,
        buffers: &[&wgpu::Buffer],
        groups: [u32; 3],
    ) -> Dispatch {
        let layout = pipeline.get_bind_group_layout(0);
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let bind_group = gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &entries,
        });
        Dispatch {
            pipeline,
            bind_group,
            groups,
        }
    }

    pub(crate) fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        let [x, y, z] = self.groups;
        pass.dispatch_workgroups(x, y, z);
    }
}

/// Workgroup counts for `groups` workgroups in a row, folded into y past the per-dimension
/// limit (kernels index them as x + y · num_workgroups.x).
pub(crate) fn fold_groups(op: &'static str, groups: u64, max_per_dim: u32) -> Result<[u32; 3]> {
    let max = u64::from(max_per_dim);
    if groups <= max {
        return Ok([groups.max(1) as u32, 1, 1]);
    }
    let y = groups.div_ceil(max);
    if y > max {
        return Err(Error::OverLimit {
            op,
            what: format!("a grid of {groups} workgroups"),
            limit: "max_compute_workgroups_per_dimension (squared)",
            needed: groups,
            allowed: max * max,
        });
    }
    Ok([max as u32, y as u32, 1])
}

fn push(sink: &Mutex<Vec<Error>>, e: Error) {
    sink.lock().unwrap_or_else(PoisonError::into_inner).push(e);
}

fn convert(e: wgpu::Error) -> Error {
    match e {
        wgpu::Error::OutOfMemory { .. } => Error::OutOfMemory(e.to_string()),
        other => Error::Gpu(other.to_string()),
    }
}
