//! The GPU side of the crate: the `Gpu` context (`device.rs`), a launch (`dispatch.rs`), the
//! recording it goes into (`record.rs`) and its submission (`submit.rs`), GPU timestamps
//! (`timing.rs`), plans captured once and replayed, and launches prepared for benchmarks (`plan.rs`), readback (`readback.rs`),
//! the buffer pool (`memory.rs`), compiled kernels (`kernel.rs`) and counters (`counters.rs`).
//!
//! An op call records its launch into the device's current recording; the recording is
//! submitted when a value is read back, when the caller flushes, or when it is full (a long
//! one in pieces, so the GPU starts on the first launches while the host encodes the rest).
//! Work whose shapes do not change can be captured once into a plan and replayed. Buffers come from a pool and bind groups from a cache, so work that repeats its
//! shapes allocates nothing after its first run; [`Counters`] shows it.
//!
//! This file only names the modules and what they offer: no module here imports it back.

mod counters;
mod device;
mod dispatch;
mod kernel;
pub(crate) mod memory;
mod plan;
pub(crate) mod readback;
mod record;
pub(crate) mod submit;
mod timing;

pub use counters::Counters;
pub(crate) use device::wrap_groups;
pub use device::{Gpu, GpuOptions, OPTIONAL_FEATURES};
pub(crate) use dispatch::Bindable;
pub use dispatch::Dispatch;
pub(crate) use plan::Captured;
pub use plan::{Plan, Prepared};
pub use record::{PassTime, PassTiming, submissions_for};
