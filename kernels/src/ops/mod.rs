//! The ops models call. Each family's launcher lives in its folder (`families/<family>/mod.rs`)
//! and is re-exported here under the family's name, with the calls its `api` module names; an
//! op that chains several families (the flash backward, naive attention) lives here. Each op has
//! - `<op>(…) -> Tensor`: an output from the pool, and the chosen variant's launch recorded into
//!   the device's current recording (submitted at the next readback or flush);
//! - `<op>_into(…, out, named)`: write into a given tensor, optionally with a named variant;
//! - `launch(…)`: the `Dispatch` and the `Choice` (checked, not recorded), for benchmarks that
//!   record it often and for fusion, which puts it in another launch's place;
//! - a `select::Call` describing a call to the selector without tensors (`call(…)` or a struct).

pub mod attention;

// Every family module, and what each offers models (its `api`), written by the build script.
include!(concat!(env!("OUT_DIR"), "/ops_exports.rs"));

pub use crate::launch::{ElementDesign, Elementwise, Reduce, RowDesign, Rowwise};
pub use attention::{
    flash_attention_backward, flash_attention_backward_into, naive_attention,
    naive_attention_backward,
};

use crate::error::Result;
use crate::tensor::Tensor;

/// Tensors of one shape stacked along a new first axis (see [`Tensor::stack`]).
pub fn stack(parts: &[&Tensor]) -> Result<Tensor> {
    Tensor::stack(parts)
}

impl Tensor {
    /// `self · other` (see [`matmul::matmul`]).
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        matmul(self, other)
    }

    /// `self + other` with broadcasting (see [`add::add`]).
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        add(self, other)
    }

    /// Softmax over the last axis (see [`softmax::softmax`]).
    pub fn softmax(&self, causal: bool, scale: f32) -> Result<Tensor> {
        softmax(self, causal, scale)
    }

    /// Layer normalisation over the last axis (see [`layernorm::layernorm`]).
    pub fn layernorm(&self, gamma: &Tensor, beta: &Tensor, eps: f32) -> Result<Tensor> {
        layernorm(self, gamma, beta, eps)
    }
}
