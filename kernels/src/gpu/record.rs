//! Recording: op calls append their launches to the device's current recording, and the
//! recording becomes one command buffer — one compute pass between copies — submitted when a
//! value is read back, when the caller flushes, or when the recording is full. Parameters go
//! into one ring buffer at aligned offsets (a dynamic offset each), and bind groups are cached
//! per (kernel, buffer set), so a chain of ops that repeats its shapes binds nothing new.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::gpu::counters::Live;
use crate::gpu::kernel::Kernel;
use crate::gpu::memory::{Slice, lock};
use crate::registry::Variant;
use crate::tensor::Tensor;

/// Bytes of the parameter ring; a recording whose parameters would overflow it is submitted
/// first, and the next one starts at the ring's beginning again (the queue orders the write
/// after the work that read the old values).
const RING_BYTES: u64 = 512 * 1024;
/// Launches per submission at most: a long chain is submitted in pieces.
const MAX_COMMANDS: usize = 4096;
/// Bind groups kept at most; past it the cache starts over.
const MAX_BIND_GROUPS: usize = 8192;
/// Timestamp queries per timing session (wgpu allows 4096 per query set).
const MAX_QUERIES: u32 = 4096;

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
    /// A launch of `variant` binding `tensors` in order and `params` as its parameter block.
    pub(crate) fn new<P: bytemuck::Pod>(
        gpu: &Gpu,
        variant: &Variant,
        tensors: &[&Tensor],
        params: &P,
        groups: [u32; 3],
    ) -> Result<Dispatch> {
        let kernel = gpu.kernel(variant)?;
        let buffers = tensors.iter().map(|t| t.slice().clone()).collect();
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

/// How submissions are timed with GPU timestamps (where the device has them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PassTiming {
    #[default]
    Off,
    /// One sample per submission: from the start of its first compute pass to the end of its
    /// last.
    PerSubmission,
    /// One sample per launch, each in a pass of its own (adds the cost of a pass boundary).
    PerDispatch,
}

/// GPU time of one timed span.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PassTime {
    /// `family/variant` of the launch, or `submission`.
    pub what: String,
    pub ms: f64,
}

/// A recorded command.
enum Command {
    Dispatch {
        kernel: Arc<Kernel>,
        bind: wgpu::BindGroup,
        offset: u32,
        groups: [u32; 3],
        /// Keeps the bound buffers out of the pool until the work is submitted.
        _hold: Vec<Slice>,
    },
    Copy {
        src: wgpu::Buffer,
        src_offset: u64,
        dst: wgpu::Buffer,
        dst_offset: u64,
        size: u64,
        _hold: Vec<Slice>,
    },
}

/// The parameter ring.
struct Ring {
    id: u64,
    buffer: wgpu::Buffer,
}

/// Timestamp queries of a timing session, and what each pair measured.
struct Queries {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    labels: Vec<String>,
}

type BindKey = (u64, Vec<(u64, u64, u64)>);

/// The recording state of one device.
#[derive(Default)]
pub(crate) struct Recorder {
    commands: Vec<Command>,
    arena: Vec<u8>,
    binds: HashMap<BindKey, wgpu::BindGroup>,
    ring: Option<Ring>,
    timing: PassTiming,
    queries: Option<Queries>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("commands", &self.commands.len())
            .field("arena", &self.arena.len())
            .field("bind_groups", &self.binds.len())
            .field("timing", &self.timing)
            .finish_non_exhaustive()
    }
}

/// Prepared launches for benchmarks that record the same work many times into their own
/// command encoder: parameters in a buffer of their own, bind groups made once.
#[derive(Debug)]
pub struct Prepared {
    steps: Vec<(
        wgpu::ComputePipeline,
        wgpu::BindGroup,
        Option<u32>,
        [u32; 3],
    )>,
    _params: Option<wgpu::Buffer>,
    _hold: Vec<Slice>,
}

impl Prepared {
    /// Records the launches, in order, into `pass`.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        for (pipeline, bind, offset, [x, y, z]) in &self.steps {
            pass.set_pipeline(pipeline);
            match offset {
                Some(o) => pass.set_bind_group(0, bind, &[*o]),
                None => pass.set_bind_group(0, bind, &[]),
            }
            pass.dispatch_workgroups(*x, *y, *z);
        }
    }
}

impl Gpu {
    /// Appends launches to the current recording (submitted at the next readback or flush).
    pub fn record(&self, dispatches: &[&Dispatch]) -> Result<()> {
        for d in dispatches {
            self.record_owned((*d).clone())?;
        }
        Ok(())
    }

    /// Appends launches to the current recording, taking them.
    pub(crate) fn record_all(&self, dispatches: Vec<Dispatch>) -> Result<()> {
        dispatches
            .into_iter()
            .try_for_each(|d| self.record_owned(d))
    }

    /// Appends one launch to the current recording, taking it.
    pub(crate) fn record_owned(&self, d: Dispatch) -> Result<()> {
        let slot = self.param_slot(d.params.len() as u64);
        let mut rec = lock(&self.inner.recorder);
        if rec.commands.len() >= MAX_COMMANDS || rec.arena.len() as u64 + slot > RING_BYTES {
            drop(rec);
            self.flush()?;
            rec = lock(&self.inner.recorder);
        }
        let ring = self.ring(&mut rec)?;
        self.forget_evicted(&mut rec);
        let offset = rec.arena.len() as u32;
        if d.kernel.uniform.is_some() {
            rec.arena.extend_from_slice(&d.params);
            rec.arena.resize(offset as usize + slot as usize, 0);
        }
        let bind = self.bind_group(&mut rec, &d.kernel, &d.buffers, &ring)?;
        let epoch = self.inner.epoch.load(Ordering::Relaxed);
        for s in &d.buffers {
            s.block.used_in.store(epoch, Ordering::Relaxed);
        }
        rec.commands.push(Command::Dispatch {
            kernel: d.kernel,
            bind,
            offset,
            groups: d.groups,
            _hold: d.buffers,
        });
        Live::bump(&self.inner.counters.dispatches, 1);
        Ok(())
    }

    /// Appends a buffer-to-buffer copy of `src` into `dst` (same size) to the recording.
    pub(crate) fn record_copy(&self, src: &Slice, dst: &Slice) -> Result<()> {
        if src.size != dst.size {
            return Err(Error::InvalidArgument {
                op: "copy",
                detail: format!("{} bytes into {}", src.size, dst.size),
            });
        }
        let epoch = self.inner.epoch.load(Ordering::Relaxed);
        src.block.used_in.store(epoch, Ordering::Relaxed);
        dst.block.used_in.store(epoch, Ordering::Relaxed);
        self.push_command(Command::Copy {
            src: src.block.raw.clone(),
            src_offset: src.offset,
            dst: dst.block.raw.clone(),
            dst_offset: dst.offset,
            size: src.size,
            _hold: vec![src.clone(), dst.clone()],
        })
    }

    /// Appends a copy from a buffer outside the pool (query results) into `dst`.
    pub(crate) fn record_copy_from(&self, src: &wgpu::Buffer, dst: &Slice) -> Result<()> {
        dst.block
            .used_in
            .store(self.inner.epoch.load(Ordering::Relaxed), Ordering::Relaxed);
        self.push_command(Command::Copy {
            src: src.clone(),
            src_offset: 0,
            dst: dst.block.raw.clone(),
            dst_offset: dst.offset,
            size: dst.size,
            _hold: vec![dst.clone()],
        })
    }

    fn push_command(&self, c: Command) -> Result<()> {
        let mut rec = lock(&self.inner.recorder);
        if rec.commands.len() >= MAX_COMMANDS {
            drop(rec);
            self.flush()?;
            rec = lock(&self.inner.recorder);
        }
        rec.commands.push(c);
        Ok(())
    }

    /// Records the launches and submits everything recorded so far.
    pub fn submit(&self, dispatches: &[&Dispatch]) -> Result<()> {
        self.record(dispatches)?;
        self.flush()
    }

    /// Submits everything recorded so far as one command buffer (nothing when there is none).
    pub fn flush(&self) -> Result<()> {
        self.flush_with(None)
    }

    /// [`flush`](Self::flush), with `extra` encoded after the recording into the same command
    /// buffer (a display pass drawing what the recording computed): one submission per frame.
    pub fn flush_with(
        &self,
        extra: Option<&mut dyn FnMut(&mut wgpu::CommandEncoder)>,
    ) -> Result<()> {
        // The recording stays locked until it is submitted: another thread's flush must not
        // rewrite the parameter ring between this one's write and its submission.
        let mut rec = lock(&self.inner.recorder);
        if rec.commands.is_empty() && extra.is_none() {
            return Ok(());
        }
        self.inner.epoch.fetch_add(1, Ordering::Relaxed);
        let commands = std::mem::take(&mut rec.commands);
        let arena = std::mem::take(&mut rec.arena);
        let device = &self.inner.device;
        let queue = &self.inner.queue;
        if let (Some(ring), false) = (&rec.ring, arena.is_empty()) {
            queue.write_buffer(&ring.buffer, 0, &arena);
            Live::bump(&self.inner.counters.writes, 1);
        }
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("kiln recording"),
        });
        let timing = rec.timing;
        if timing == PassTiming::Off || !self.profile().features.timestamp_query {
            encode(&mut encoder, &commands, None);
        } else {
            encode_timed(&mut rec, &mut encoder, &commands, timing);
        }
        if let Some(extra) = extra {
            extra(&mut encoder);
        }
        queue.submit([encoder.finish()]);
        Live::bump(&self.inner.counters.submissions, 1);
        drop(rec);
        // The recorded buffers may go back to the pool now: later writes to them are ordered
        // after this submission by the queue.
        drop(commands);
        Ok(())
    }

    /// Times the following submissions with GPU timestamps (a no-op without them); the
    /// samples are read with [`take_pass_times`](Self::take_pass_times).
    pub fn set_pass_timing(&self, timing: PassTiming) -> Result<()> {
        self.flush()?;
        let mut rec = lock(&self.inner.recorder);
        rec.timing = timing;
        if timing != PassTiming::Off && rec.queries.is_none() {
            rec.queries = self.new_queries();
        }
        Ok(())
    }

    /// The GPU times measured since timing was turned on (or last taken), in order.
    pub async fn take_pass_times(&self) -> Result<Vec<PassTime>> {
        self.flush()?;
        let taken = {
            let mut rec = lock(&self.inner.recorder);
            match &mut rec.queries {
                Some(q) if !q.labels.is_empty() => Some((
                    q.set.clone(),
                    q.resolve.clone(),
                    std::mem::take(&mut q.labels),
                )),
                _ => None,
            }
        };
        let Some((set, resolve, labels)) = taken else {
            return Ok(Vec::new());
        };
        let count = 2 * labels.len() as u32;
        let mut encoder =
            self.inner
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("kiln pass timing"),
                });
        encoder.resolve_query_set(&set, 0..count, &resolve, 0);
        self.inner.queue.submit([encoder.finish()]);
        Live::bump(&self.inner.counters.submissions, 1);
        let all = crate::tensor::read_raw(self, &resolve, u64::from(count) * 8).await?;
        let ns_per_tick = f64::from(self.inner.queue.get_timestamp_period());
        let stamp = |c: &[u8]| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            u64::from_le_bytes(b)
        };
        Ok(all
            .chunks_exact(16)
            .zip(labels)
            .map(|(pair, what)| {
                let ticks = stamp(&pair[8..16]).saturating_sub(stamp(&pair[..8]));
                PassTime {
                    what,
                    ms: ticks as f64 * ns_per_tick / 1e6,
                }
            })
            .collect())
    }

    /// Prepares launches for a benchmark that records them many times itself.
    pub fn prepare(&self, dispatches: &[&Dispatch]) -> Result<Prepared> {
        let device = &self.inner.device;
        let mut bytes = Vec::new();
        let mut offsets = Vec::new();
        for d in dispatches {
            if d.kernel.uniform.is_none() {
                offsets.push(None);
                continue;
            }
            let at = bytes.len();
            offsets.push(Some(at as u32));
            bytes.extend_from_slice(&d.params);
            bytes.resize(at + self.param_slot(d.params.len() as u64) as usize, 0);
        }
        let params = (!bytes.is_empty()).then(|| {
            use wgpu::util::DeviceExt;
            Live::bump(&self.inner.counters.buffers_created, 1);
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("kiln prepared params"),
                contents: &bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            })
        });
        let mut steps = Vec::new();
        let mut hold = Vec::new();
        for (d, offset) in dispatches.iter().zip(offsets) {
            let bind = self.create_bind_group(&d.kernel, &d.buffers, params.as_ref())?;
            steps.push((d.kernel.pipeline.clone(), bind, offset, d.groups));
            hold.extend(d.buffers.iter().cloned());
        }
        Ok(Prepared {
            steps,
            _params: params,
            _hold: hold,
        })
    }

    /// Bytes one launch's parameters take in the ring: the block rounded up to the device's
    /// uniform offset alignment.
    fn param_slot(&self, len: u64) -> u64 {
        let align = u64::from(self.inner.uniform_align).max(16);
        len.max(16).next_multiple_of(align)
    }

    fn ring(&self, rec: &mut Recorder) -> Result<wgpu::Buffer> {
        if let Some(r) = &rec.ring {
            return Ok(r.buffer.clone());
        }
        let buffer = self.inner.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("kiln params ring"),
            size: RING_BYTES,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Live::bump(&self.inner.counters.buffers_created, 1);
        let id = self.inner.pool.next_id();
        rec.ring = Some(Ring {
            id,
            buffer: buffer.clone(),
        });
        Ok(buffer)
    }

    /// Drops cached bind groups that hold buffers the pool let go of.
    fn forget_evicted(&self, rec: &mut Recorder) {
        let gone = self.inner.pool.take_evicted();
        if !gone.is_empty() {
            rec.binds
                .retain(|(_, slices), _| !slices.iter().any(|(id, ..)| gone.contains(id)));
        }
    }

    fn bind_group(
        &self,
        rec: &mut Recorder,
        kernel: &Kernel,
        buffers: &[Slice],
        ring: &wgpu::Buffer,
    ) -> Result<wgpu::BindGroup> {
        let ring_id = rec.ring.as_ref().map_or(0, |r| r.id);
        let mut slices: Vec<(u64, u64, u64)> = buffers.iter().map(Slice::key).collect();
        if let Some((_, size)) = kernel.uniform {
            slices.push((ring_id, 0, size));
        }
        let key = (kernel.id, slices);
        if let Some(b) = rec.binds.get(&key) {
            return Ok(b.clone());
        }
        let bind = self.create_bind_group(kernel, buffers, Some(ring))?;
        if rec.binds.len() >= MAX_BIND_GROUPS {
            rec.binds.clear();
        }
        rec.binds.insert(key, bind.clone());
        Ok(bind)
    }

    fn create_bind_group(
        &self,
        kernel: &Kernel,
        buffers: &[Slice],
        params: Option<&wgpu::Buffer>,
    ) -> Result<wgpu::BindGroup> {
        let mut entries: Vec<wgpu::BindGroupEntry> = kernel
            .storage
            .iter()
            .zip(buffers)
            .map(|(&binding, s)| wgpu::BindGroupEntry {
                binding,
                resource: wgpu::BindingResource::Buffer(s.binding()),
            })
            .collect();
        if let Some((binding, size)) = kernel.uniform {
            let buffer = params.ok_or_else(|| Error::InvalidArgument {
                op: "dispatch",
                detail: format!("{}: no parameter buffer", kernel.label),
            })?;
            entries.push(wgpu::BindGroupEntry {
                binding,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: 0,
                    size: wgpu::BufferSize::new(size.next_multiple_of(16)),
                }),
            });
        }
        Live::bump(&self.inner.counters.bind_groups_created, 1);
        Ok(self
            .inner
            .device
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&kernel.label),
                layout: &kernel.layout,
                entries: &entries,
            }))
    }

    fn new_queries(&self) -> Option<Queries> {
        if !self.profile().features.timestamp_query {
            return None;
        }
        let device = &self.inner.device;
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("kiln pass timing"),
            ty: wgpu::QueryType::Timestamp,
            count: MAX_QUERIES,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("kiln pass timing"),
            size: u64::from(MAX_QUERIES) * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Live::bump(&self.inner.counters.buffers_created, 1);
        Some(Queries {
            set,
            resolve,
            labels: Vec::new(),
        })
    }
}

/// Encodes `commands` with timestamps: around the whole submission, or around each launch.
/// Past the query set's capacity the rest is encoded untimed.
fn encode_timed(
    rec: &mut Recorder,
    encoder: &mut wgpu::CommandEncoder,
    commands: &[Command],
    timing: PassTiming,
) {
    let Some(q) = rec.queries.as_mut() else {
        encode(encoder, commands, None);
        return;
    };
    let first = 2 * q.labels.len() as u32;
    let launches = commands
        .iter()
        .filter(|c| matches!(c, Command::Dispatch { .. }))
        .count() as u32;
    let needed = match timing {
        PassTiming::PerDispatch => 2 * launches,
        _ => 2 * u32::from(launches > 0),
    };
    if launches == 0 || first + needed > MAX_QUERIES {
        encode(encoder, commands, None);
        return;
    }
    match timing {
        PassTiming::PerDispatch => {
            let mut next = first;
            for c in commands {
                match c {
                    Command::Dispatch { kernel, .. } => {
                        let writes = wgpu::ComputePassTimestampWrites {
                            query_set: &q.set,
                            beginning_of_pass_write_index: Some(next),
                            end_of_pass_write_index: Some(next + 1),
                        };
                        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                            label: Some(&kernel.label),
                            timestamp_writes: Some(writes),
                        });
                        record_dispatch(&mut pass, c);
                        q.labels.push(kernel.label.clone());
                        next += 2;
                    }
                    Command::Copy { .. } => copy(encoder, c),
                }
            }
        }
        _ => {
            encode(encoder, commands, Some((&q.set, first)));
            q.labels.push("submission".into());
        }
    }
}

/// Encodes the commands: runs of launches share one compute pass, copies go between passes.
/// With `stamps`, the first pass writes a timestamp at its start and the last at its end.
fn encode(
    encoder: &mut wgpu::CommandEncoder,
    commands: &[Command],
    stamps: Option<(&wgpu::QuerySet, u32)>,
) {
    let runs: Vec<&[Command]> = commands
        .chunk_by(|a, b| {
            matches!(a, Command::Dispatch { .. }) && matches!(b, Command::Dispatch { .. })
        })
        .collect();
    let passes = runs
        .iter()
        .filter(|r| matches!(r.first(), Some(Command::Dispatch { .. })))
        .count();
    let mut pass_no = 0;
    for run in runs {
        match run.first() {
            Some(c @ Command::Copy { .. }) => copy(encoder, c),
            Some(Command::Dispatch { .. }) => {
                let writes = stamps.map(|(set, first)| wgpu::ComputePassTimestampWrites {
                    query_set: set,
                    beginning_of_pass_write_index: (pass_no == 0).then_some(first),
                    end_of_pass_write_index: (pass_no + 1 == passes).then_some(first + 1),
                });
                let writes = writes.filter(|w| {
                    w.beginning_of_pass_write_index.is_some() || w.end_of_pass_write_index.is_some()
                });
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("kiln"),
                    timestamp_writes: writes,
                });
                for c in run {
                    record_dispatch(&mut pass, c);
                }
                pass_no += 1;
            }
            None => {}
        }
    }
}

fn record_dispatch(pass: &mut wgpu::ComputePass<'_>, c: &Command) {
    if let Command::Dispatch {
        kernel,
        bind,
        offset,
        groups: [x, y, z],
        ..
    } = c
    {
        pass.set_pipeline(&kernel.pipeline);
        if kernel.uniform.is_some() {
            pass.set_bind_group(0, bind, &[*offset]);
        } else {
            pass.set_bind_group(0, bind, &[]);
        }
        pass.dispatch_workgroups(*x, *y, *z);
    }
}

fn copy(encoder: &mut wgpu::CommandEncoder, c: &Command) {
    if let Command::Copy {
        src,
        src_offset,
        dst,
        dst_offset,
        size,
        ..
    } = c
    {
        encoder.copy_buffer_to_buffer(src, *src_offset, dst, *dst_offset, *size);
    }
}
