//! What the device has been asked to do, counted: submissions, dispatches, the objects created
//! along the way, and the host's time in wgpu's encoding and submission. A demo takes a snapshot
//! before and after a forward pass or a step and reports the difference, so "nothing allocated
//! per call" is a number, not a promise.

use std::ops::Sub;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// A snapshot of the counters (or the difference of two).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Command buffers handed to the queue.
    pub submissions: u64,
    /// Kernel launches recorded.
    pub dispatches: u64,
    /// Buffers created: tensors the pool could not serve, readback staging, parameter rings.
    pub buffers_created: u64,
    /// Bind groups created (the cache serves repeats of a pipeline and buffer set).
    pub bind_groups_created: u64,
    /// Compute pipelines built.
    pub pipelines_created: u64,
    /// Uploads from the CPU (`queue.write_buffer`), the parameter ring's included.
    pub writes: u64,
    /// Copies back to the CPU.
    pub readbacks: u64,
    /// Host time (ns, wall clock) encoding recordings into command buffers: passes, pipelines,
    /// bind groups and dispatches handed to wgpu, up to `finish`. Unlike the counts, it differs
    /// from run to run.
    pub encode_ns: u64,
    /// Host time (ns, wall clock) in the recordings' `queue.submit` calls (not in a readback's
    /// or a timing session's own).
    pub queue_submit_ns: u64,
}

impl Sub for Counters {
    type Output = Counters;

    fn sub(self, before: Counters) -> Counters {
        Counters {
            submissions: self.submissions - before.submissions,
            dispatches: self.dispatches - before.dispatches,
            buffers_created: self.buffers_created - before.buffers_created,
            bind_groups_created: self.bind_groups_created - before.bind_groups_created,
            pipelines_created: self.pipelines_created - before.pipelines_created,
            writes: self.writes - before.writes,
            readbacks: self.readbacks - before.readbacks,
            encode_ns: self.encode_ns - before.encode_ns,
            queue_submit_ns: self.queue_submit_ns - before.queue_submit_ns,
        }
    }
}

/// The live counters of one device.
#[derive(Debug, Default)]
pub(crate) struct Live {
    pub submissions: AtomicU64,
    pub dispatches: AtomicU64,
    pub buffers_created: AtomicU64,
    pub bind_groups_created: AtomicU64,
    pub pipelines_created: AtomicU64,
    pub writes: AtomicU64,
    pub readbacks: AtomicU64,
    pub encode_ns: AtomicU64,
    pub queue_submit_ns: AtomicU64,
}

impl Live {
    pub fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Counters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Counters {
            submissions: get(&self.submissions),
            dispatches: get(&self.dispatches),
            buffers_created: get(&self.buffers_created),
            bind_groups_created: get(&self.bind_groups_created),
            pipelines_created: get(&self.pipelines_created),
            writes: get(&self.writes),
            readbacks: get(&self.readbacks),
            encode_ns: get(&self.encode_ns),
            queue_submit_ns: get(&self.queue_submit_ns),
        }
    }
}
