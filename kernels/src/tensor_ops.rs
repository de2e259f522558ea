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
    /// A · Bᵀ, B read transposed in place (see [`ops::matmul_bt`]).
    fn matmul_bt(&self, other: &Self) -> Result<Self>;
    /// x · W + b over the last axis, in one launch (see [`ops::linear`]).
    fn linear(&self, w: &Self, b: &Self) -> Result<Self>;
    /// gelu(x · W + b), in one launch (see [`ops::linear_gelu`]).
    fn linear_gelu(&self, w: &Self, b: &Self) -> Result<Self>;
    /// Elementwise sum with numpy broadcasting (see [`ops::add`]).
    fn add(&self, other: &Self) -> Result<Self>;
    /// Softmax of `scale · self` over the last axis (see [`ops::softmax`]).
    fn softmax(&self, causal: bool, scale: f32) -> Result<Self>;
    /// Layer normalisation over the last axis (see [`ops::layernorm`]).
    fn layernorm(&self, gamma: &Self, beta: &Self, eps: f32) -> Result<Self>;
    /// (self + r, its layer norm), in one launch (see [`ops::add_layernorm`]).
    fn add_layernorm(&self, r: &Self, gamma: &Self, beta: &Self, eps: f32) -> Result<(Self, Self)>;
    /// Elementwise gelu (see [`ops::gelu`]).
    fn gelu(&self) -> Result<Self>;
    /// The last two axes swapped: [.., r, c] → [.., c, r].
    fn t(&self) -> Result<Self>;
    /// [N, H·d] → [H, N, d]: one matrix per attention head.
    fn split_heads(&self, heads: usize) -> Result<Self>;
    /// [H, N, d] → [N, H·d]: the heads side by side again.
    fn merge_heads(&self) -> Result<Self>;
    /// [N, 3·H·d] (Q, K and V side by side, as one projection makes them) → Q, K and V, each
    /// [H, N, d].
    fn split_qkv(&self, heads: usize) -> Result<[Self; 3]>;
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

/// The [N, 3·H, d] view of an [N, 3·H·d] shape.
fn qkv_shape(shape: &[usize], heads: usize) -> Result<[usize; 3]> {
    match *shape {
        [n, width] if heads > 0 && width % (3 * heads) == 0 => {
            Ok([n, 3 * heads, width / (3 * heads)])
        }
        _ => Err(Error::shape(
            "split_qkv",
            format!(
                "shape {shape:?} does not split into Q, K and V of {heads} heads: expected [N, 3 · heads · d]"
            ),
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
    fn matmul_bt(&self, other: &Self) -> Result<Self> {
        ops::matmul_bt(self, other)
    }
    fn linear(&self, w: &Self, b: &Self) -> Result<Self> {
        ops::linear(self, w, b)
    }
    fn linear_gelu(&self, w: &Self, b: &Self) -> Result<Self> {
        ops::linear_gelu(self, w, b)
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
    fn add_layernorm(&self, r: &Self, gamma: &Self, beta: &Self, eps: f32) -> Result<(Self, Self)> {
        ops::add_layernorm(self, r, gamma, beta, eps)
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
    fn split_qkv(&self, heads: usize) -> Result<[Self; 3]> {
        // [N, 3H, d] → [3H, N, d] is [3, H, N, d]: the three parts are views, not copies,
        // where the device's offset alignment allows.
        let [n, h3, d] = qkv_shape(Tensor::shape(self), heads)?;
        let stacked = ops::swap_axes01(&self.reshape(&[n, h3, d])?)?.reshape(&[3, heads, n, d])?;
        Ok([stacked.part(0)?, stacked.part(1)?, stacked.part(2)?])
    }
}

impl TensorOps for Array {
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn matmul(&self, other: &Self) -> Result<Self> {
        cpu::matmul(self, other)
    }
    fn matmul_bt(&self, other: &Self) -> Result<Self> {
        cpu::matmul(self, &cpu::transpose(other)?)
    }
    fn linear(&self, w: &Self, b: &Self) -> Result<Self> {
        cpu::linear(self, w, b)
    }
    fn linear_gelu(&self, w: &Self, b: &Self) -> Result<Self> {
        cpu::linear_gelu(self, w, b)
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
    fn add_layernorm(&self, r: &Self, gamma: &Self, beta: &Self, eps: f32) -> Result<(Self, Self)> {
        cpu::add_layernorm(self, r, gamma, beta, eps)
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
    fn split_qkv(&self, heads: usize) -> Result<[Self; 3]> {
        let [n, h3, d] = qkv_shape(&self.shape, heads)?;
        let stacked = cpu::swap_axes01(&Array::new(&[n, h3, d], self.data.clone())?)?;
        let per = heads * n * d;
        let part = |i: usize| {
            Array::new(
                &[heads, n, d],
                stacked.data[i * per..(i + 1) * per].to_vec(),
            )
        };
        Ok([part(0)?, part(1)?, part(2)?])
    }
}
