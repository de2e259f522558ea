//! Kiln's fleet benchmark: run a campaign over every kernel variant on the device in hand,
//! write a versioned report, validate reports read back, and merge many devices' reports into
//! the tuned table `kiln`'s selector loads; and the walkthrough of all that for presenter mode.

pub mod campaign;
pub mod case_models;
pub mod crowd;
pub mod curated;
pub mod error;
pub mod export;
mod json;
pub mod merge;
mod parse;
pub mod report;
pub mod review;
pub mod show;
pub mod talk;
pub mod text;
pub mod validate;

pub use error::{FleetError, Result};
pub use report::Report;
