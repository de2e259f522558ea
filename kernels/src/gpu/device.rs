//! The `Gpu` context: device, queue and profile, the compiled kernels keyed by (family,
//! variant), the buffer pool, and wgpu errors turned into `Error`s. Recording and submitting
//! live in `submit.rs`, timing in `timing.rs`, readback in `readback.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::counters::{Counters, Live};
use super::kernel::Kernel;
use super::memory::{self, Block, Kind, Pool, Slice, lock};
use super::record::Recorder;
use crate::device::DeviceProfile;
use crate::error::{Error, Result};
use crate::platform;
use crate::registry::{Registry, Variant};
use crate::select::{Memo, Selector, TunedTable};

/// Bytes of free buffers the pool keeps for reuse; past it the oldest are let go.
const POOL_BYTES: u64 = 512 << 20;

/// How to find and open the device.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Backends to consider; `None` takes `WGPU_BACKEND` from the environment, else the primary
    /// backends (Vulkan, Metal, DX12, browser WebGPU).
    pub backends: Option<wgpu::Backends>,
    /// Features not to request even if the adapter has them (to test or compare the fallbacks).
    pub without: wgpu::Features,
    /// Build every kernel with wgpu's runtime checks: array indices clamped, loops bounded,
    /// integer division by zero guarded, workgroup memory zeroed at each workgroup's start. Off
    /// by default: Kiln's templates index within bounds, end their loops, divide only by
    /// parameters the host checked, and write the workgroup memory they read; on the H200 the
    /// checks cost 8–17 % (kernels/perf/runtime-checks-off.md). On to debug a kernel or to compare.
    /// Buffers stay guarded either way where the platform does it (Vulkan's robust buffer
    /// access, the browser's WebGPU, which ignores this option).
    pub runtime_checks: bool,
}

/// The device features a user may turn off by name, and the names: one table for `kiln
/// --without` and a page's `?without=` (both compare a route with its fallback on one adapter).
pub const OPTIONAL_FEATURES: [(&str, wgpu::Features); 5] = [
    ("f16", wgpu::Features::SHADER_F16),
    ("subgroups", wgpu::Features::SUBGROUP),
    ("timestamps", wgpu::Features::TIMESTAMP_QUERY),
    ("coop", wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
    ("atomic", wgpu::Features::SHADER_FLOAT32_ATOMIC),
];

impl GpuOptions {
    /// Also leaves out the features named in `list` (comma-separated names from
    /// `OPTIONAL_FEATURES`; blanks are ignored). An unknown name is an error listing the known ones.
    pub fn without_named(mut self, list: &str) -> Result<Self> {
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let Some((_, feature)) = OPTIONAL_FEATURES.iter().find(|(known, _)| *known == name)
            else {
                let known: Vec<&str> = OPTIONAL_FEATURES.iter().map(|(n, _)| *n).collect();
                return Err(Error::InvalidArgument {
                    op: "without",
                    detail: format!(
                        "{name:?} is not a feature that can be turned off ({})",
                        known.join(", ")
                    ),
                });
            };
            self.without |= *feature;
        }
        Ok(self)
    }

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

/// A shader module without wgpu's runtime checks (`GpuOptions::runtime_checks` off).
#[allow(unsafe_code)]
fn unchecked_module(
    device: &wgpu::Device,
    desc: wgpu::ShaderModuleDescriptor<'_>,
) -> wgpu::ShaderModule {
    // SAFETY: Kiln's templates index their arrays within bounds, end every loop and divide
    // only by parameters the host checked (indices past a tile's edge are guarded or clamped in
    // the template itself, `min` where a band repeats). Every variant is proven against the
    // CPU reference on shapes that are not tile multiples (kernels/tests/every_variant.rs) with
    // these checks off, on lavapipe in CI and on the H200 and the H100 in bench-gpu.sh's check
    // stage (kernels/perf/bench-gpu-one-lease.md).
    unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
}

/// The opt-in wgpu asks for before it enables an `EXPERIMENTAL_*` feature.
#[allow(unsafe_code)] // wgpu's token, no memory is touched here
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
    pub(super) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(super) struct Inner {
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) profile: DeviceProfile,
    pub(super) registry: Arc<Registry>,
    pub(super) tuned: TunedTable,
    /// Compiled kernels by family, then variant.
    pub(super) kernels: Mutex<HashMap<String, HashMap<String, Arc<Kernel>>>>,
    /// The selector's choices for calls seen before.
    pub(super) memo: Memo,
    pub(super) pool: Arc<Pool>,
    pub(super) recorder: Mutex<Recorder>,
    /// The current recording's number: a buffer it binds is marked with it, and a write to a
    /// marked buffer submits the recording first, so the write lands after the work before it.
    pub(super) epoch: AtomicU64,
    pub(super) uniform_align: u32,
    pub(super) storage_align: u32,
    pub(super) counters: Live,
    /// When a benchmark last kept the GPU busy (its clocks stay up for a while after).
    pub(super) busy_until: Mutex<Option<web_time::Instant>>,
    /// Errors wgpu reported outside an error scope, and device loss; taken by `check`.
    pub(super) errors: Arc<Mutex<Vec<Error>>>,
    /// `GpuOptions::runtime_checks`.
    pub(super) runtime_checks: bool,
    /// Zeros kept for read-only operands (an absent bias), grown as asked: see `zero_bytes`.
    pub(super) zeros: Mutex<Option<Slice>>,
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
        let (uniform_align, storage_align) = (
            device.limits().min_uniform_buffer_offset_alignment,
            device.limits().min_storage_buffer_offset_alignment,
        );

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
                registry: Registry::shared()?,
                tuned: TunedTable::builtin()?,
                kernels: Mutex::default(),
                memo: Memo::default(),
                pool: Arc::new(Pool::new(POOL_BYTES)),
                recorder: Mutex::default(),
                epoch: AtomicU64::new(1),
                uniform_align,
                storage_align,
                counters: Live::default(),
                busy_until: Mutex::default(),
                errors,
                runtime_checks: options.runtime_checks,
                zeros: Mutex::default(),
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

    /// Whether the kernels are built with wgpu's runtime checks (`GpuOptions::runtime_checks`).
    pub fn runtime_checks(&self) -> bool {
        self.inner.runtime_checks
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
                inner.memo = Memo::default();
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

    /// The selector for this device: its profile, tuned table and memo of choices.
    pub fn selector(&self) -> Selector<'_> {
        Selector {
            registry: &self.inner.registry,
            profile: &self.inner.profile,
            tuned: &self.inner.tuned,
            memo: Some(&self.inner.memo),
        }
    }

    /// What the device has been asked to do so far (take two and subtract).
    pub fn counters(&self) -> Counters {
        self.inner.counters.snapshot()
    }

    /// The compiled kernel of a variant, rendered, validated and built on first use.
    pub(crate) fn kernel(&self, variant: &Variant) -> Result<Arc<Kernel>> {
        if let Some(k) = self.cached_kernel(&variant.family, &variant.name) {
            return Ok(k);
        }
        let source = self
            .inner
            .registry
            .render_validated(variant, &self.inner.profile)?;
        let kernel = self.build_kernel(&variant.family, &variant.name, &source)?;
        lock(&self.inner.kernels)
            .entry(variant.family.clone())
            .or_default()
            .insert(variant.name.clone(), kernel.clone());
        Ok(kernel)
    }

    fn cached_kernel(&self, family: &str, variant: &str) -> Option<Arc<Kernel>> {
        lock(&self.inner.kernels).get(family)?.get(variant).cloned()
    }

    /// The compiled pipeline of a variant, rendered, validated and built on first use.
    pub fn pipeline(&self, variant: &Variant) -> Result<wgpu::ComputePipeline> {
        Ok(self.kernel(variant)?.pipeline.clone())
    }

    /// Whether this variant's pipeline has been built on this device already.
    pub fn has_pipeline(&self, family: &str, variant: &str) -> bool {
        self.cached_kernel(family, variant).is_some()
    }

    /// The (family, variant) pairs compiled so far on this device, sorted: what a program ran.
    pub fn compiled(&self) -> Vec<(String, String)> {
        let kernels = lock(&self.inner.kernels);
        let mut keys: Vec<_> = kernels
            .iter()
            .flat_map(|(f, vs)| vs.keys().map(move |v| (f.clone(), v.clone())))
            .collect();
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
        Ok(self.build_kernel(family, variant, source)?.pipeline.clone())
    }

    /// Validates WGSL with naga, reads its bindings off the module, and builds the pipeline
    /// with that layout (the parameter block at a dynamic offset).
    fn build_kernel(&self, family: &str, variant: &str, source: &str) -> Result<Arc<Kernel>> {
        let module = crate::registry::validate_wgsl(family, variant, source, &self.inner.profile)?;
        let label = format!("{family}/{variant}");
        let bindings = super::kernel::Bindings::of(&label, &module)?;
        let device = &self.inner.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let layout = bindings.layout(device, &label);
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(&label),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(&label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        };
        let shader = if self.inner.runtime_checks {
            device.create_shader_module(desc)
        } else {
            unchecked_module(device, desc)
        };
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&label),
            layout: Some(&pipeline_layout),
            module: &shader,
            // Every template's entry point is `main` (templates.rs checks it with naga).
            entry_point: Some("main"),
            compilation_options: wgpu::PipelineCompilationOptions {
                zero_initialize_workgroup_memory: self.inner.runtime_checks,
                ..Default::default()
            },
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
        Live::bump(&self.inner.counters.pipelines_created, 1);
        Ok(Arc::new(Kernel {
            id: self.inner.pool.next_id(),
            label,
            pipeline,
            layout,
            storage: bindings.storage.iter().map(|(b, _)| *b).collect(),
            uniform: bindings.uniform,
        }))
    }

    /// A buffer of at least `bytes` for `what` (said only in errors), from the pool or new,
    /// refusing sizes over the device limits before asking wgpu. Sizes are rounded up to 4
    /// bytes (the copy alignment).
    pub(crate) fn pooled_block(
        &self,
        op: &'static str,
        what: impl FnOnce() -> String,
        bytes: u64,
        kind: Kind,
    ) -> Result<Arc<Block>> {
        let limits = &self.inner.profile.limits;
        let size = bytes
            .checked_next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
            .unwrap_or(u64::MAX);
        let binding = match kind {
            Kind::Storage => limits.max_storage_buffer_binding_size,
            Kind::Readback => u64::MAX,
        };
        let checks = [
            ("max_buffer_size", limits.max_buffer_size),
            ("max_storage_buffer_binding_size", binding),
        ];
        if let Some(&(limit, allowed)) = checks.iter().find(|(_, allowed)| size > *allowed) {
            return Err(Error::OverLimit {
                op,
                what: what(),
                limit,
                needed: size,
                allowed,
            });
        }
        let class = memory::size_class(size);
        let class = if class > limits.max_buffer_size {
            size
        } else {
            class
        };
        if let Some(b) = self.inner.pool.take(class, kind) {
            return Ok(b);
        }
        let scope = self
            .inner
            .device
            .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let raw = self.inner.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(op),
            size: class,
            usage: kind.usage(),
            mapped_at_creation: false,
        });
        let sink = self.inner.errors.clone();
        if let Some(e) = platform::scope_error(scope.pop(), move |e| push(&sink, convert(e))) {
            return Err(convert(e));
        }
        Live::bump(&self.inner.counters.buffers_created, 1);
        Ok(self.inner.pool.wrap(self.inner.pool.next_id(), raw, kind))
    }

    /// Byte alignment of a view's offset into a buffer (a tensor slice bound on its own).
    pub(crate) fn storage_align(&self) -> u64 {
        u64::from(self.inner.storage_align).max(4)
    }

    /// `bytes` of zeros from one buffer the device keeps (grown as asked, written once): for
    /// read-only operands such as a product's absent bias, so a call uploads nothing. Nothing
    /// may write it.
    pub(crate) fn zero_bytes(&self, bytes: u64) -> Result<Slice> {
        let mut kept = lock(&self.inner.zeros);
        if let Some(s) = kept.as_ref().filter(|s| s.size >= bytes) {
            return Ok(Slice {
                block: s.block.clone(),
                offset: 0,
                size: bytes,
            });
        }
        let size = bytes.max(256).next_power_of_two();
        let block = self.pooled_block(
            "zeros",
            || format!("{size} bytes of zeros"),
            size,
            Kind::Storage,
        )?;
        let whole = Slice {
            block,
            offset: 0,
            size,
        };
        self.write_bytes(&whole, &vec![0u8; size as usize])?;
        *kept = Some(whole.clone());
        Ok(Slice {
            size: bytes,
            ..whole
        })
    }

    /// Writes bytes into a slice. A slice the current recording binds is submitted first, so
    /// the write lands after the work recorded before it, never under it.
    pub(crate) fn write_bytes(&self, slice: &Slice, bytes: &[u8]) -> Result<()> {
        let bound = || {
            slice.block.used_in.load(Ordering::Relaxed) == self.inner.epoch.load(Ordering::Relaxed)
        };
        // Under the recorder's lock: another thread's flush moves the epoch on before it
        // submits, and a write staged in between would land before the launches it submits.
        let mut rec = lock(&self.inner.recorder);
        // Checked again after each flush (another thread may have bound it in between); a
        // buffer marked by a capture's steps is in no recording, and an empty one submits nothing.
        while bound() && !rec.commands.is_empty() {
            drop(rec);
            self.flush()?;
            rec = lock(&self.inner.recorder);
        }
        self.inner
            .queue
            .write_buffer(&slice.block.raw, slice.offset, bytes);
        drop(rec);
        Live::bump(&self.inner.counters.writes, 1);
        Ok(())
    }

    /// Whether a benchmark kept the GPU busy within the last `ms` (so its clocks are still up).
    pub(crate) fn busy_within(&self, ms: f64) -> bool {
        lock(&self.inner.busy_until).is_some_and(|t| t.elapsed().as_secs_f64() * 1e3 < ms)
    }

    /// Notes that a benchmark has just kept the GPU busy.
    pub(crate) fn mark_busy(&self) {
        *lock(&self.inner.busy_until) = Some(web_time::Instant::now());
    }

    /// Counts a copy back to the CPU.
    pub(crate) fn count_readback(&self) {
        Live::bump(&self.inner.counters.readbacks, 1);
    }

    /// Workgroup counts for `groups` workgroups in a row on this device, wrapped into y past
    /// its per-dimension limit (see [`wrap_groups`]).
    pub(crate) fn groups(&self, op: &'static str, groups: u64) -> Result<[u32; 3]> {
        wrap_groups(
            op,
            groups,
            self.inner
                .profile
                .limits
                .max_compute_workgroups_per_dimension,
        )
    }

    /// Submits what is recorded and waits for all submitted work (natively; in the browser it
    /// returns at once), then reports any error wgpu raised meanwhile.
    pub fn finish(&self) -> Result<()> {
        self.flush()?;
        platform::drive(&self.inner.device, !self.profile().is_software())?;
        self.check()
    }

    /// Submits what is recorded and waits until the GPU has finished everything submitted so
    /// far, without blocking the browser's event loop; then reports any error wgpu raised.
    pub async fn idle(&self) -> Result<()> {
        self.flush()?;
        let (tx, rx) = futures_channel::oneshot::channel();
        self.inner.queue.on_submitted_work_done(move || {
            let _ = tx.send(());
        });
        platform::drive(&self.inner.device, !self.profile().is_software())?;
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
}

/// Workgroup counts for `groups` workgroups in a row, wrapped into y past the per-dimension
/// limit (kernels index them as x + y · num_workgroups.x).
pub(crate) fn wrap_groups(op: &'static str, groups: u64, max_per_dim: u32) -> Result<[u32; 3]> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_are_turned_off_by_their_table_names_and_an_unknown_name_is_an_error() -> Result<()>
    {
        let options = GpuOptions::default().without_named(" subgroups,,f16 ")?;
        assert_eq!(
            options.without,
            wgpu::Features::SUBGROUP | wgpu::Features::SHADER_F16
        );
        assert_eq!(
            GpuOptions::default().without_named("")?.without,
            wgpu::Features::empty()
        );
        let Err(e) = GpuOptions::default().without_named("f16,subgroup") else {
            panic!("an unknown name was taken");
        };
        let e = e.to_string();
        assert!(
            e.contains("\"subgroup\"") && e.contains("f16, subgroups, timestamps, coop, atomic"),
            "{e}"
        );
        Ok(())
    }
}
