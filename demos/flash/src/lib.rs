//! The flash demo: FlashAttention-2 against naive attention and the CPU path at the kernel level,
//! and a small decoder-only transformer trained end to end on kiln's kernels, GPU path against
//! CPU path, with the loss curves, ms per step and the drift between them; text generated from
//! it with a key/value cache on both paths; and a walkthrough of the algorithm for presenter
//! mode.

pub mod chart;
pub mod checkpoint;
pub mod data;
pub mod error;
pub mod generate;
pub mod model;
pub mod page;
pub mod preset;
pub mod run;
pub mod sweep;
pub mod train;
pub mod visual;
pub mod walkthrough;
#[cfg(target_arch = "wasm32")]
mod web;
pub mod writing;

pub use error::{Error, Result};
/// The ops the model is written against: kiln's one model trait and its GPU and CPU paths.
pub use kiln_app::kiln::backend;
