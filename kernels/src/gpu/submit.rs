//! Recording and submitting: op calls append launches to the device's current recording, whose
//! parameters go into one ring buffer and whose bind groups are cached; `flush` submits it.

use std::sync::atomic::Ordering;

use super::counters::Live;
use super::device::Gpu;
use super::dispatch::Dispatch;
use super::kernel::Kernel;
use super::memory::{Slice, lock};
use super::record::{
    Capture, Command, MAX_BIND_GROUPS, MAX_COMMANDS, PassTiming, RING_BYTES, Recorder, Ring, Step,
    encode, encode_timed, flatten, pieces,
};
use crate::error::{Error, Result};

/// The newest launch recorded, as [`Gpu::replace_last`] shows it to a fold.
pub(crate) struct Last<'a> {
    /// `family/variant` of its kernel.
    pub label: &'a str,
    /// The buffers it binds, in binding order.
    pub buffers: &'a [Slice],
    /// Its parameter block as the launch gave it (in a recording, padded to its slot in the
    /// ring; empty for a kernel without one).
    pub params: &'a [u8],
    pub groups: [u32; 3],
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
        if let Some(capture) = rec.capture.as_mut() {
            capture_launch(capture, d, self.inner.epoch.load(Ordering::Relaxed));
            return Ok(());
        }
        if rec.commands.len() >= MAX_COMMANDS || rec.params.len() as u64 + slot > RING_BYTES {
            drop(rec);
            self.flush()?;
            rec = lock(&self.inner.recorder);
        }
        let ring = self.ring(&mut rec)?;
        self.forget_evicted(&mut rec);
        let offset = rec.params.len() as u32;
        if d.kernel.uniform.is_some() {
            rec.params.extend_from_slice(&d.params);
            rec.params.resize(offset as usize + slot as usize, 0);
        }
        let bind = self.bind_group(&mut rec, &d.kernel, &d.buffers, &ring)?;
        // Read after any flush above: the launch belongs to the recording it joins.
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

    /// Replaces the newest launch of the recording (or of the capture under way) with the one
    /// `make(last)` returns for it, and returns whether it did: an op folds that
    /// launch into its own this way. Nothing changes when `make` declines or the newest entry
    /// is not a launch (anything recorded after it, or a submission since, keeps it), and in
    /// a capture when that launch is part of a chain of noted op calls (a call noted right after
    /// another: attention's scores, softmax and weighted values), which `kiln::fusion` may
    /// rewrite as a whole. `make` runs under the recorder's lock, so it must not record.
    pub(crate) fn replace_last(
        &self,
        make: impl FnOnce(&Last<'_>) -> Option<Dispatch>,
    ) -> Result<bool> {
        let mut rec = lock(&self.inner.recorder);
        let replacement = if let Some(capture) = rec.capture.as_mut() {
            let trace = &mut capture.trace;
            if trace.newest_ends_a_chain() {
                return Ok(false);
            }
            let Some(Step::Launch {
                kernel,
                buffers,
                params,
                groups,
            }) = trace.steps.last()
            else {
                return Ok(false);
            };
            let last = Last {
                label: &kernel.label,
                buffers,
                params,
                groups: *groups,
            };
            let Some(d) = make(&last) else {
                return Ok(false);
            };
            mark_used(&d, self.inner.epoch.load(Ordering::Relaxed));
            trace.fold_last(d.into());
            return Ok(true);
        } else {
            let Some(Command::Dispatch {
                kernel,
                _hold,
                offset,
                groups,
                ..
            }) = rec.commands.last()
            else {
                return Ok(false);
            };
            // The newest launch's block is the ring's tail: its bytes, padded to its slot.
            let params = rec.params.get(*offset as usize..).unwrap_or(&[]);
            let last = Last {
                label: &kernel.label,
                buffers: _hold,
                params,
                groups: *groups,
            };
            let Some(d) = make(&last) else {
                return Ok(false);
            };
            // Its parameter block stays in the recording's bytes, unread.
            rec.commands.pop();
            self.inner
                .counters
                .dispatches
                .fetch_sub(1, Ordering::Relaxed);
            d
        };
        drop(rec);
        self.record_owned(replacement)?;
        Ok(true)
    }

    /// Appends a buffer-to-buffer copy of `src` into `dst` (same size) to the recording.
    pub(crate) fn record_copy(&self, src: &Slice, dst: &Slice) -> Result<()> {
        if src.size != dst.size {
            return Err(Error::InvalidArgument {
                op: "copy",
                detail: format!("{} bytes into {}", src.size, dst.size),
            });
        }
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
        self.push_command(Command::Copy {
            src: src.clone(),
            src_offset: 0,
            dst: dst.block.raw.clone(),
            dst_offset: dst.offset,
            size: dst.size,
            _hold: vec![dst.clone()],
        })
    }

    /// Appends a copy, marking the buffers it holds with the recording it joins (read after
    /// any flush it makes, so a later write to them submits it first).
    fn push_command(&self, c: Command) -> Result<()> {
        let mark = |c: &Command, epoch: u64| {
            if let Command::Copy { _hold, .. } = c {
                for s in _hold {
                    s.block.used_in.store(epoch, Ordering::Relaxed);
                }
            }
        };
        let mut rec = lock(&self.inner.recorder);
        if let Some(capture) = rec.capture.as_mut() {
            mark(&c, self.inner.epoch.load(Ordering::Relaxed));
            capture.trace.steps.push(Step::Copy(c));
            return Ok(());
        }
        if rec.commands.len() >= MAX_COMMANDS {
            drop(rec);
            self.flush()?;
            rec = lock(&self.inner.recorder);
        }
        mark(&c, self.inner.epoch.load(Ordering::Relaxed));
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
    /// buffer as its last launches (a display pass drawing what the recording computed). A
    /// long recording goes in pieces (`record::pieces`): the GPU starts on the first while the
    /// rest are encoded.
    pub fn flush_with(
        &self,
        extra: Option<&mut dyn FnMut(&mut wgpu::CommandEncoder)>,
    ) -> Result<()> {
        // The recording stays locked until it is submitted: another thread's flush must not
        // rewrite the parameter ring between this one's write and its submission.
        let mut rec = lock(&self.inner.recorder);
        if let Some(capture) = rec.capture.as_mut() {
            let why = "a plan cannot submit, wait or read back before its capture ends: \
                       what it computes is read after a replay";
            capture.refused.get_or_insert_with(|| why.into());
            return Err(Error::InvalidArgument {
                op: "capture",
                detail: why.into(),
            });
        }
        if rec.commands.is_empty() && extra.is_none() {
            return Ok(());
        }
        self.inner.epoch.fetch_add(1, Ordering::Relaxed);
        let commands = std::mem::take(&mut rec.commands);
        let params = std::mem::take(&mut rec.params);
        let device = &self.inner.device;
        let queue = &self.inner.queue;
        if let (Some(ring), false) = (&rec.ring, params.is_empty()) {
            queue.write_buffer(&ring.buffer, 0, &params);
            Live::bump(&self.inner.counters.writes, 1);
        }
        let timing = rec.timing;
        let timed = timing != PassTiming::Off && self.profile().features.timestamp_query;
        let flat = flatten(&commands);
        let pieces = pieces(&flat);
        let mut extra = extra;
        let ns = |t: web_time::Instant| t.elapsed().as_nanos() as u64;
        for (i, piece) in pieces.iter().enumerate() {
            let began = web_time::Instant::now();
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("kiln recording"),
            });
            if timed {
                encode_timed(&mut rec, &mut encoder, piece, timing);
            } else {
                encode(&mut encoder, piece, None);
            }
            if i + 1 == pieces.len()
                && let Some(extra) = extra.as_mut()
            {
                extra(&mut encoder);
            }
            let buffer = encoder.finish();
            let counters = &self.inner.counters;
            Live::bump(&counters.encode_ns, ns(began));
            let began = web_time::Instant::now();
            queue.submit([buffer]);
            Live::bump(&counters.queue_submit_ns, ns(began));
            Live::bump(&counters.submissions, 1);
        }
        drop(pieces);
        drop(flat);
        drop(rec);
        // The recorded buffers may go back to the pool now: later writes to them are ordered
        // after this submission by the queue.
        drop(commands);
        Ok(())
    }

    /// Bytes one launch's parameters take in the ring: the block rounded up to the device's
    /// uniform offset alignment.
    pub(super) fn param_slot(&self, len: u64) -> u64 {
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

    pub(super) fn create_bind_group(
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
}

/// Appends launch `d` to a capture, its buffers marked as used in recording `epoch`.
fn capture_launch(capture: &mut Capture, d: Dispatch, epoch: u64) {
    mark_used(&d, epoch);
    capture.trace.steps.push(d.into());
}

/// Marks the launch's buffers as used by the recording of `epoch`.
fn mark_used(d: &Dispatch, epoch: u64) {
    for s in &d.buffers {
        s.block.used_in.store(epoch, Ordering::Relaxed);
    }
}

/// A launch as a captured step (its bind group is made when the plan is frozen).
impl From<Dispatch> for Step {
    fn from(d: Dispatch) -> Step {
        Step::Launch {
            kernel: d.kernel,
            buffers: d.buffers,
            params: d.params,
            groups: d.groups,
        }
    }
}
