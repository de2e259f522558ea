//! `TensorOps`: the ops a model is written against, implemented by the GPU [`Tensor`] and the
//! CPU [`Array`], so that one function runs on either path and the two can be timed and
//! compared.

use crate::cpu::{self, Array};
use crate::error::{Error, Result};
use crate::ops;
use crate::tensor::Tensor;

pub trait TensorOps: Sized {
    fn shape(&self) -> &[usize];
    /// Batched matrix product (see [`ops::matmul`]).
    fn matmul(&self, other: &Self) -> Result<Self>;
    /// Elementwise sum with numpy broadcasting (see [`ops::add`]).
    fn add(&self, other: &Self) -> Result<Self>;
    /// Softmax of `scale · self` over the last axis (see [`ops::softmax`]).
    fn softmax(&self, causal: bool, scale: f32) -> Result<Self>;
    /// Layer normalisation over the last axis (see [`ops::layernorm`]).
    fn layernorm(&self, gamma: &Self, beta: &Self, eps: f32) -> Result<Self>;
    /// Elementwise gelu (see [`ops::gelu`]).
    fn gelu(&self) -> Result<Self>;
    /// The last two axes swapped: [.., r, c] → [.., c, r].
    fn t(&self) -> Result<Self>;
    /// [N, H·d] → [H, N, d]: one matrix per attention head.
    fn split_heads(&self, heads: usize) -> Result<Self>;
    /// [H, N, d] → [N, H·d]: the heads side by side again.
    fn merge_heads(&self) -> Result<Self>;
}

/// The [N, H, d] view of an [N, H·d] shape.
fn heads_shape(shape: &[usize], heads: usize) -> Result<[usize; 3]> {
    match *shape {
        [n, width] if heads > 0 && width % heads == 0 => Ok([n, heads, width / heads]),
        _ => Err(Error::shape(
            "split_heads",
            format!("shape {shape:?} does not split into {heads} heads: expected [N, heads · d]"),
        )),
    }
}

fn merged_shape(shape: &[usize]) -> Result<[usize; 2]> {
    match *shape {
        [h, n, d] => Ok([n, h * d]),
        _ => Err(Error::shape(
            "merge_heads",
            format!("shape {shape:?}: expected [heads, N, d]"),
        )),
    }
}

impl TensorOps for Tensor {
    fn shape(&self) -> &[usize] {
        Tensor::shape(self)
    }
    fn matmul(&self, other: &Self) -> Result<Self> {
        ops::matmul(self, other)
    }
    fn add(&self, other: &Self) -> Result<Self> {
        ops::add(self, other)
    }
    fn softmax(&self, causal: bool, scale: f32) -> Result<Self> {
        ops::softmax(self, causal, scale)
    }
    fn layernorm(&self, gamma: &Self, beta: &Self, eps: f32) -> Result<Self> {
        ops::layernorm(self, gamma, beta, eps)
    }
    fn gelu(&self) -> Result<Self> {
        ops::gelu(self)
    }
    fn t(&self) -> Result<Self> {
        ops::transpose(self)
    }
    fn split_heads(&self, heads: usize) -> Result<Self> {
        ops::swap_axes01(&self.reshape(&heads_shape(Tensor::shape(self), heads)?)?)
    }
    fn merge_heads(&self) -> Result<Self> {
        let merged = merged_shape(Tensor::shape(self))?;
        ops::swap_axes01(self)?.reshape(&merged)
    }
}

impl TensorOps for Array {
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn matmul(&self, other: &Self) -> Result<Self> {
        cpu::matmul(self, other)
    }
    fn add(&self, other: &Self) -> Result<Self> {
        cpu::add(self, other)
    }
    fn softmax(&self, causal: bool, scale: f32) -> Result<Self> {
        cpu::softmax(self, causal, scale)
    }
    fn layernorm(&self, gamma: &Self, beta: &Self, eps: f32) -> Result<Self> {
        cpu::layernorm(self, gamma, beta, eps)
    }
    fn gelu(&self) -> Result<Self> {
        cpu::gelu(self)
    }
    fn t(&self) -> Result<Self> {
        cpu::transpose(self)
    }
    fn split_heads(&self, heads: usize) -> Result<Self> {
        let shape = heads_shape(&self.shape, heads)?;
        cpu::swap_axes01(&Array::new(&shape, self.data.clone())?)
    }
    fn merge_heads(&self) -> Result<Self> {
        let merged = merged_shape(&self.shape)?;
        let swapped = cpu::swap_axes01(self)?;
        Array::new(&merged, swapped.data)
    }
}
