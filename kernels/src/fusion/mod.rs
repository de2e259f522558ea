//! Fusion: every place where Kiln runs op calls as fewer launches than the calls would make,
//! decided here once for every path that records them. The model code calls the ops it always
//! did (the attention demo's 20 lines, a training step); the GPU path (`gpu`) and the plan-only
//! path (`kiln::ChoiceBackend`) record each call into a [`Trace`](crate::trace::Trace) and ask
//! this module what to run instead:
//!
//! - **Folds** ([`newest`]): as a call is recorded, the launch just before it — a product
//!   written whole, or the sum of a product cut along K — is taken into the call's own launch
//!   where that launch has a form for it. A product's two-output epilogues write an elementwise
//!   op of it (gelu, its gradient) or its split into attention heads; `reduce_layernorm`,
//!   `reduce_layernorm_backward` and `reduce_permute` add the slices of a cut product as they
//!   read it. Each writes the product too, with the same sums in the same order.
//! - **Chain rewrites** ([`chains`]): in a captured pass whose reads are known, a chain of noted
//!   calls whose intermediates nothing else reads becomes fewer launches: attention's scores,
//!   softmax and weighted values one flash launch (writing the heads merged into rows where a
//!   swap followed), and, asked for, a feed-forward block `mlp`'s slices and the norm that sums
//!   them.
//! - **The optimiser's sums** (`gradients`, the GPU path alone: the plan-only path models no
//!   training step): the weight gradients' split sums added by the AdamW table launch.
//!
//! The rules read a path's recording through [`Value`] (which tensor is which) and its notes
//! ([`Noted`]); a path lowers each decision to its own launches (dispatches, or choices).

pub(crate) mod chains;
pub(crate) mod gpu;
mod gradients;
pub(crate) mod newest;
#[cfg(test)]
mod tests;

use crate::dtype::DType;
use crate::optim::AdamW;

pub use chains::{Fused, Rewrites};
pub(crate) use gpu::{add_layernorm, elementwise, layernorm_backward, note, permute, swap12};
pub use gpu::{capture, capture_reading, capture_reading_with};

/// A tensor as the rules tell tensors apart: which bytes it is, its shape and dtype.
pub(crate) trait Value: Clone + std::fmt::Debug + 'static {
    /// Two values with equal keys are the same bytes (views of one tensor included).
    type Key: PartialEq + std::fmt::Debug;
    fn key(&self) -> Self::Key;
    /// Whether the two share any byte.
    fn overlaps(&self, other: &Self) -> bool;
    fn shape(&self) -> &[usize];
    fn dtype(&self) -> DType;
}

/// What an op call made, as the rewrites read it: the path notes each of these calls on the
/// steps it recorded.
#[derive(Debug)]
pub(crate) enum Noted<V> {
    /// S = Q · Kᵀ (batched, no epilogue).
    Scores { q: V, k: V, s: V },
    /// P = softmax(scale · S) over the last axis.
    Softmax {
        s: V,
        p: V,
        causal: bool,
        scale: f32,
    },
    /// O = P · V (batched, no epilogue).
    Weighted { p: V, v: V, o: V },
    /// Y = X with its middle axes swapped, X [B, H, N, d].
    Swapped { x: V, y: V },
    /// One AdamW step over a table of packed tensors.
    Optimizer(Box<Stepped<V>>),
    /// H = gelu(X · W + b) over the last axis (`linear_gelu`).
    LinearGelu { x: V, w: V, b: V, h: V },
    /// Y = X · W + b over the last axis (`linear`).
    Linear { x: V, w: V, b: V, y: V },
    /// S = X + R and Y = layernorm(S) (`add_layernorm`).
    AddLayerNorm(Box<Normed<V>>),
}

impl<V> Noted<V> {
    /// Whether the call is a link of a chain a rewrite takes as a whole (attention's three).
    pub fn links(&self) -> bool {
        matches!(
            self,
            Noted::Scores { .. } | Noted::Softmax { .. } | Noted::Weighted { .. }
        )
    }
}

/// The tensors and settings of a noted residual layer norm.
#[derive(Debug)]
pub(crate) struct Normed<V> {
    pub x: V,
    pub r: V,
    pub gamma: V,
    pub beta: V,
    pub sum: V,
    pub y: V,
    pub eps: f32,
}

/// The tensors and settings of a noted optimiser step.
#[derive(Debug)]
pub(crate) struct Stepped<V> {
    pub p: Vec<V>,
    pub g: Vec<V>,
    pub m: Vec<V>,
    pub v: Vec<V>,
    pub h: Vec<AdamW>,
    pub corrections: V,
}
