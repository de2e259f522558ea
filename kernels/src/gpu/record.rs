//! The recording: what op calls have appended and how it becomes one command buffer — one
//! compute pass between copies, with GPU timestamps where asked. Parameters go into one ring
//! buffer at aligned offsets (a dynamic offset each), and bind groups are cached per (kernel,
//! buffer set), so a chain of ops that repeats its shapes binds nothing new. `submit.rs` appends
//! and submits; a replayed plan is one entry holding its own frozen commands.

use std::collections::HashMap;
use std::sync::Arc;

use super::kernel::Kernel;
use super::memory::Slice;
use crate::trace::Trace;

/// Bytes of the parameter ring; a recording whose parameters would overflow it is submitted
/// first, and the next one starts at the ring's beginning again (the queue orders the write
/// after the work that read the old values).
pub(super) const RING_BYTES: u64 = 512 * 1024;
/// Launches per submission at most: a long chain is submitted in pieces.
pub(super) const MAX_COMMANDS: usize = 4096;
/// Bind groups kept at most; past it the cache starts over.
pub(super) const MAX_BIND_GROUPS: usize = 8192;
/// Launches in the first piece of a submission; each later piece holds twice the one before.
/// A long recording is submitted in pieces so the GPU starts on the first launches while the
/// host encodes the rest (on the H200 wgpu encodes a launch in about 3 µs and a small model's
/// launch runs in about 5: kernels/perf/plans-and-pieces.md).
pub(super) const FIRST_PIECE: usize = 8;
/// Timestamp queries per timing session (wgpu allows 4096 per query set).
pub(super) const MAX_QUERIES: u32 = 4096;

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
    /// When it began, in ms after the earliest span read with it (the queue's one clock).
    pub start_ms: f64,
}

/// A recorded command.
pub(crate) enum Command {
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
    /// A replayed plan's commands, encoded in place.
    Replay(Arc<[Command]>),
}

/// What a capture (`plan.rs`) has seen so far, in order.
#[derive(Default)]
pub(super) struct Capture {
    /// The steps and what op calls said of them, for a rewrite before freezing.
    pub trace: Trace<Step>,
    /// Why the capture cannot be a plan (a submission or readback was asked for inside it).
    pub refused: Option<String>,
}

/// One captured step: a launch, whose bind group is made when the plan is frozen, or a copy.
pub(crate) enum Step {
    Launch {
        kernel: Arc<Kernel>,
        buffers: Vec<Slice>,
        params: Vec<u8>,
        groups: [u32; 3],
    },
    Copy(Command),
}

/// The parameter ring.
pub(super) struct Ring {
    pub id: u64,
    pub buffer: wgpu::Buffer,
}

/// Timestamp queries of a timing session, and what each pair measured.
pub(super) struct Queries {
    pub set: wgpu::QuerySet,
    pub resolve: wgpu::Buffer,
    pub labels: Vec<String>,
}

type BindKey = (u64, Vec<(u64, u64, u64)>);

/// The recording state of one device.
#[derive(Default)]
pub(crate) struct Recorder {
    pub(super) commands: Vec<Command>,
    /// This recording's parameter blocks, written into the ring when it is submitted.
    pub(super) params: Vec<u8>,
    pub(super) binds: HashMap<BindKey, wgpu::BindGroup>,
    pub(super) ring: Option<Ring>,
    pub(super) timing: PassTiming,
    pub(super) queries: Option<Queries>,
    /// While a plan is captured, what op calls record goes here instead (`plan.rs`).
    pub(super) capture: Option<Capture>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("commands", &self.commands.len())
            .field("params", &self.params.len())
            .field("bind_groups", &self.binds.len())
            .field("timing", &self.timing)
            .field("capturing", &self.capture.is_some())
            .finish_non_exhaustive()
    }
}

/// The commands with each replayed plan's own in its place.
pub(super) fn flatten(commands: &[Command]) -> Vec<&Command> {
    let mut flat = Vec::with_capacity(commands.len());
    for c in commands {
        match c {
            Command::Replay(inner) => flat.extend(inner.iter()),
            c => flat.push(c),
        }
    }
    flat
}

/// The launches in each piece of a recording of `launches`: [`FIRST_PIECE`], then twice as
/// many each time, the last piece taking what is left (one piece when there are none).
fn piece_sizes(launches: usize) -> Vec<usize> {
    let (mut left, mut size, mut sizes) = (launches, FIRST_PIECE, Vec::new());
    while left > size {
        sizes.push(size);
        left -= size;
        size *= 2;
    }
    sizes.push(left);
    sizes
}

/// The commands cut into pieces submitted one after another, as [`piece_sizes`] counts their
/// launches; a copy stays with the launches before it.
pub(super) fn pieces<'a>(flat: &'a [&'a Command]) -> Vec<&'a [&'a Command]> {
    let is_launch = |c: &Command| matches!(c, Command::Dispatch { .. });
    let sizes = piece_sizes(flat.iter().filter(|c| is_launch(c)).count());
    let mut out = Vec::with_capacity(sizes.len());
    let (mut start, mut launches) = (0, 0);
    for (i, c) in flat.iter().enumerate() {
        if is_launch(c) {
            if sizes.get(out.len()) == Some(&launches) && out.len() + 1 < sizes.len() {
                out.push(&flat[start..i]);
                (start, launches) = (i, 0);
            }
            launches += 1;
        }
    }
    out.push(&flat[start..]);
    out
}

/// Submissions a recording of `launches` launches (and no more than [`MAX_COMMANDS`]) is
/// submitted in.
pub fn submissions_for(launches: usize) -> usize {
    piece_sizes(launches).len()
}

/// Encodes `commands` with timestamps: around the whole submission, or around each launch.
/// Past the query set's capacity the rest is encoded untimed.
pub(super) fn encode_timed(
    rec: &mut Recorder,
    encoder: &mut wgpu::CommandEncoder,
    commands: &[&Command],
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
                    _ => copy(encoder, c),
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
pub(super) fn encode(
    encoder: &mut wgpu::CommandEncoder,
    commands: &[&Command],
    stamps: Option<(&wgpu::QuerySet, u32)>,
) {
    let runs: Vec<&[&Command]> = commands
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
            // Plans are flattened before encoding.
            Some(Command::Replay(_)) | None => {}
        }
    }
}

pub(super) fn record_dispatch(pass: &mut wgpu::ComputePass<'_>, c: &Command) {
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
