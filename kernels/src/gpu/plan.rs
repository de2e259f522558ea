//! `Plan`: a fixed-shape chain of launches captured once and replayed from a flat list. A lazy
//! op call selects its variant, allocates its output, packs its parameters and looks up its
//! bind group on every call; for work whose shapes do not change (a model's forward at one
//! token count, a training step) all of that is the same each time. Capturing runs the op calls
//! once with the recorder set aside; freezing writes every launch's parameters into one buffer
//! and makes every bind group; a replay then appends the whole list to the recording as one
//! entry, so what a call costs the host is wgpu's encoding and the submission.
//!
//! `Prepared` is the same freezing for benchmarks that record the launches into their own
//! command encoder.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::counters::Live;
use super::device::Gpu;
use super::dispatch::Dispatch;
use super::memory::{Block, Slice, lock};
use super::record::{Capture, Command, MAX_COMMANDS, Step};
use crate::error::{Error, Result};
use crate::trace::{Noting, Trace};

/// Launches and copies captured once, their parameters written and their bind groups made:
/// [`replay`](Self::replay) runs them again on the buffers they were captured with. Tensors the
/// captured calls returned stay bound to the plan and hold the newest replay's results; inputs
/// made before the capture are rewritten with [`Tensor::write`](crate::Tensor::write) between
/// replays. Data uploaded inside the capture is uploaded once.
pub struct Plan {
    gpu: Gpu,
    commands: Arc<[Command]>,
    blocks: Vec<Arc<Block>>,
    kernels: Vec<String>,
    _params: Option<wgpu::Buffer>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("launches", &self.kernels.len())
            .field("steps", &self.commands.len())
            .field("buffers", &self.blocks.len())
            .finish_non_exhaustive()
    }
}

impl Plan {
    /// Appends the plan's launches to the current recording as one entry (submitted at the
    /// next readback or flush, with whatever else is recorded). Work recorded before runs
    /// first; a write to one of the plan's buffers after it submits it first.
    pub fn replay(&self) -> Result<()> {
        let inner = &self.gpu.inner;
        let mut rec = lock(&inner.recorder);
        if rec.capture.is_some() {
            return Err(Error::InvalidArgument {
                op: "replay",
                detail: "a plan cannot be replayed inside a capture".into(),
            });
        }
        if rec.commands.len() >= MAX_COMMANDS {
            drop(rec);
            self.gpu.flush()?;
            rec = lock(&inner.recorder);
        }
        let epoch = inner.epoch.load(Ordering::Relaxed);
        for b in &self.blocks {
            b.used_in.store(epoch, Ordering::Relaxed);
        }
        rec.commands.push(Command::Replay(self.commands.clone()));
        Live::bump(&inner.counters.dispatches, self.kernels.len() as u64);
        Ok(())
    }

    /// The device the plan runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Kernel launches per replay.
    pub fn launches(&self) -> usize {
        self.kernels.len()
    }

    /// `family/variant` of each launch, in order.
    pub fn kernels(&self) -> &[String] {
        &self.kernels
    }
}

impl Gpu {
    /// Captures the launches `build` records into a [`Plan`], returning it with what `build`
    /// returned (tensors bound to the plan). Work recorded before is submitted first. Nothing
    /// `build` records runs during the capture: a readback or flush inside it is refused, and
    /// so is a capture inside a capture.
    pub fn capture<R>(&self, build: impl FnOnce() -> Result<R>) -> Result<(Plan, R)> {
        let (captured, out) = self.capture_steps(build)?;
        Ok((self.plan_of(captured)?, out))
    }

    /// [`capture`](Self::capture)'s first half: the steps `build` recorded and the notes op
    /// calls left on them, not yet frozen, so that a caller may rewrite them first.
    pub(crate) fn capture_steps<R>(
        &self,
        build: impl FnOnce() -> Result<R>,
    ) -> Result<(Captured, R)> {
        self.flush()?;
        {
            let mut rec = lock(&self.inner.recorder);
            if rec.capture.is_some() {
                return Err(Error::InvalidArgument {
                    op: "capture",
                    detail: "a capture is already under way on this device".into(),
                });
            }
            rec.capture = Some(Capture::default());
        }
        let built = build();
        let captured = lock(&self.inner.recorder)
            .capture
            .take()
            .unwrap_or_default();
        let out = built?;
        if let Some(why) = captured.refused {
            return Err(Error::InvalidArgument {
                op: "capture",
                detail: why,
            });
        }
        Ok((captured.trace, out))
    }

    /// [`capture`](Self::capture)'s second half: the steps frozen into a plan.
    pub(crate) fn plan_of(&self, captured: Captured) -> Result<Plan> {
        let (commands, params) = self.freeze(captured.steps)?;
        let mut blocks: HashMap<u64, Arc<Block>> = HashMap::new();
        let mut kernels = Vec::new();
        for c in &commands {
            match c {
                Command::Dispatch { kernel, _hold, .. } => {
                    kernels.push(kernel.label.clone());
                    blocks.extend(_hold.iter().map(|s| (s.block.id, s.block.clone())));
                }
                Command::Copy { _hold, .. } => {
                    blocks.extend(_hold.iter().map(|s| (s.block.id, s.block.clone())))
                }
                Command::Replay(_) => {}
            }
        }
        Ok(Plan {
            gpu: self.clone(),
            commands: commands.into(),
            blocks: blocks.into_values().collect(),
            kernels,
            _params: params,
        })
    }

    /// Begins an op call's noting: the number of steps the capture under way holds (`None`
    /// outside a capture), read before the call records, to [`annotate`](Self::annotate) what
    /// it made. A fold made before it is not the call's.
    pub(crate) fn note_from(&self) -> Option<usize> {
        lock(&self.inner.recorder)
            .capture
            .as_mut()
            .map(|c| c.trace.begin_call())
    }

    /// Notes `what` of the steps recorded since step `from` of the capture under way — or,
    /// when the call's one launch took the place of the step before `from`
    /// ([`replace_last`](Self::replace_last)), of that step; `links`: whether the call is a
    /// link of a chain a rewrite takes whole, [`Note::links`]. (A call that folded a launch and
    /// then recorded more would be noted on what it appended only: none does.)
    pub(crate) fn annotate(&self, from: usize, what: Arc<dyn Noting>, links: bool) {
        if let Some(c) = lock(&self.inner.recorder).capture.as_mut() {
            c.trace.annotate(from, what, links);
        }
    }

    /// Prepares launches for a benchmark that records them many times itself.
    pub fn prepare(&self, dispatches: &[&Dispatch]) -> Result<Prepared> {
        let steps = dispatches.iter().map(|&d| Step::from(d.clone())).collect();
        let (commands, params) = self.freeze(steps)?;
        Ok(Prepared {
            commands,
            _params: params,
        })
    }

    /// The steps as commands: every launch's parameters at an aligned offset of one buffer of
    /// their own, every bind group made.
    fn freeze(&self, steps: Vec<Step>) -> Result<(Vec<Command>, Option<wgpu::Buffer>)> {
        let mut bytes = Vec::new();
        let mut offsets = Vec::with_capacity(steps.len());
        for s in &steps {
            match s {
                Step::Launch { kernel, params, .. } if kernel.uniform.is_some() => {
                    let at = bytes.len();
                    offsets.push(at as u32);
                    bytes.extend_from_slice(params);
                    bytes.resize(at + self.param_slot(params.len() as u64) as usize, 0);
                }
                _ => offsets.push(0),
            }
        }
        let params = (!bytes.is_empty()).then(|| {
            use wgpu::util::DeviceExt;
            Live::bump(&self.inner.counters.buffers_created, 1);
            self.inner
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("kiln plan params"),
                    contents: &bytes,
                    usage: wgpu::BufferUsages::UNIFORM,
                })
        });
        let mut commands = Vec::with_capacity(steps.len());
        for (s, offset) in steps.into_iter().zip(offsets) {
            commands.push(match s {
                Step::Launch {
                    kernel,
                    buffers,
                    groups,
                    ..
                } => Command::Dispatch {
                    bind: self.create_bind_group(&kernel, &buffers, params.as_ref())?,
                    kernel,
                    offset,
                    groups,
                    _hold: buffers,
                },
                Step::Copy(c) => c,
            });
        }
        Ok((commands, params))
    }
}

/// A capture's steps and notes before they are frozen into a [`Plan`].
pub(crate) type Captured = Trace<Step>;

impl Trace<Step> {
    /// How many steps (launches and copies) it holds.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether a step outside `except` binds any byte of `s`.
    pub fn bound_outside(&self, s: &Slice, except: Range<usize>) -> bool {
        (0..self.steps.len()).any(|i| !except.contains(&i) && self.binds(i, s))
    }

    /// Whether step `i` binds any byte of `s`.
    pub fn binds(&self, i: usize, s: &Slice) -> bool {
        match self.steps.get(i) {
            Some(Step::Launch { buffers, .. }) => buffers.iter().any(|b| b.overlaps(s)),
            Some(Step::Copy(Command::Copy { _hold, .. })) => _hold.iter().any(|b| b.overlaps(s)),
            Some(Step::Copy(_)) => true,
            None => false,
        }
    }

    /// Step `i`'s label (`family/variant`) and bound slices, when it is a launch.
    pub fn launch(&self, i: usize) -> Option<(&str, &[Slice])> {
        match self.steps.get(i) {
            Some(Step::Launch {
                kernel, buffers, ..
            }) => Some((&kernel.label, buffers)),
            _ => None,
        }
    }

    /// In launch `i`, binds `to` wherever exactly `from`'s bytes were bound (`to` as large): the
    /// launch then writes or reads there instead.
    pub fn rebind(&mut self, i: usize, from: &Slice, to: &Slice) {
        if let Some(Step::Launch { buffers, .. }) = self.steps.get_mut(i) {
            for b in buffers.iter_mut().filter(|b| b.key() == from.key()) {
                *b = to.clone();
            }
        }
    }

    /// Replaces the steps `range` (at least one) with the launch `with`; the notes on them go,
    /// later notes move up.
    pub fn replace(&mut self, range: Range<usize>, with: Dispatch) {
        self.replace_launches(range, vec![with]);
    }

    /// Replaces the steps `range` (at least one) with the launches `with`, in order.
    pub fn replace_launches(&mut self, range: Range<usize>, with: Vec<Dispatch>) {
        self.replace_with(range, with.into_iter().map(Step::from).collect());
    }
}

/// Launches made ready once for benchmarks that record the same work many times into their
/// own command encoder: parameters in a buffer of their own, bind groups made once.
pub struct Prepared {
    commands: Vec<Command>,
    _params: Option<wgpu::Buffer>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("launches", &self.commands.len())
            .finish_non_exhaustive()
    }
}

impl Prepared {
    /// Records the launches, in order, into `pass`.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        for c in &self.commands {
            super::record::record_dispatch(pass, c);
        }
    }
}
