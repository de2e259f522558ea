//! Chain rewrites: in a captured pass that knows which of its results are read, chains of noted
//! calls whose intermediates nothing else reads run as fewer launches. [`rewrite`] finds them
//! in any path's recording ([`Chains`]) and asks the path for the launches that replace them.

use std::ops::Range;

use super::{Noted, Value};
use crate::dtype::DType;
use crate::trace::Note;

/// Rewrites [`rewrite`] may make that are off by default, each because a GPU measured it
/// slower than the launches it replaces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rewrites {
    /// Feed-forward blocks as `mlp`'s slices and the norm that sums them: two launches where
    /// there were three to five, but on the H100 the `mlp` kernels took 1.8–2.4× the time of
    /// the two products at MiniLM's shapes (kernels/perf/mlp-fusion-slower.md).
    pub feed_forward: bool,
}

/// What a rewrite fused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fused {
    /// Attention chains run as one flash launch each (the heads merged by it where a swap
    /// followed).
    pub attention: usize,
    /// Feed-forward blocks run as `mlp`'s slices and the residual norm that sums them.
    pub feed_forward: usize,
    /// Launches the two took off the pass (three or four a chain, one to three a block: as
    /// many as their products were cut along K).
    pub launches_saved: usize,
}

/// Scores, softmax and weighted values recorded one after another, whose scores and weights
/// nothing else binds or reads: one flash forward launch.
#[derive(Debug)]
pub(crate) struct Attention<V> {
    /// The three calls' steps.
    pub steps: Range<usize>,
    pub q: V,
    pub k: V,
    pub v: V,
    pub o: V,
    pub causal: bool,
    pub scale: f32,
    /// Where the heads are merged into rows right after (a transformer's attention before its
    /// output projection: a noted swap of O's middle axes, one launch) and O is read by nothing
    /// else: the swap's steps, its output and the number of heads. The flash launch may write
    /// the merged rows itself.
    pub merged: Option<(Range<usize>, V, usize)>,
}

/// A feed-forward block — `linear_gelu`, `linear` of its output, `add_layernorm` of that —
/// whose hidden layer and product nothing else binds or reads: `mlp`'s slices (the hidden layer
/// kept in workgroup memory) and `reduce_layernorm`, which adds them with the bias and the
/// residual and norms the rows in the design of the norm the call would have taken.
#[derive(Debug)]
pub(crate) struct FeedForward<V> {
    pub steps: Range<usize>,
    pub x: V,
    pub w1: V,
    pub b1: V,
    pub w2: V,
    pub b2: V,
    /// The second product's output, which the norm's launch writes too.
    pub product: V,
    pub residual: V,
    pub gamma: V,
    pub beta: V,
    /// The residual sum and the normed rows.
    pub sum: V,
    pub y: V,
    pub eps: f32,
}

/// A recorded op list as the chain rules read and rewrite it; its path lowers a chain to its
/// own launches.
pub(crate) trait Chains {
    type V: Value;
    type Launch;
    /// How many steps it holds.
    fn len(&self) -> usize;
    fn notes(&self) -> &[Note];
    /// Whether a step outside `except` binds any byte of `v`.
    fn bound_outside(&self, v: &Self::V, except: Range<usize>) -> bool;
    /// Replaces the steps `range` with `with` (the notes on them go).
    fn replace(&mut self, range: Range<usize>, with: Vec<Self::Launch>);
    /// The launches of a fused chain and the steps they replace (its own, or with the swap
    /// after it where the launch writes the merged rows); `None` where this path's kernels do
    /// not take it (a head size the flash kernels are not rendered for).
    fn attention(&self, chain: &Attention<Self::V>) -> Option<(Range<usize>, Vec<Self::Launch>)>;
    /// The launches of a fused block; `None` where this path's kernels do not take it.
    fn feed_forward(&self, block: &FeedForward<Self::V>) -> Option<Vec<Self::Launch>>;
}

/// Runs the rewrites over `t`, `read` being what the caller reads after the pass: attention
/// chains always, feed-forward blocks where `rewrites` asks.
pub(crate) fn rewrite<T: Chains>(t: &mut T, rewrites: Rewrites, read: &[T::V]) -> Fused {
    let before = t.len();
    let attention = rewrite_each(t, |t, i| {
        let chain = attention(t, i, read)?;
        t.attention(&chain)
    });
    let feed_forward = if rewrites.feed_forward {
        rewrite_each(t, |t, i| {
            let block = feed_forward(t, i, read)?;
            Some((block.steps.clone(), t.feed_forward(&block)?))
        })
    } else {
        0
    };
    Fused {
        attention,
        feed_forward,
        launches_saved: before.saturating_sub(t.len()),
    }
}

/// Replaces each chain `find` takes (from its first note `i`: the steps it replaces and the
/// launches in their place), from the first note on. Returns how many.
fn rewrite_each<T: Chains>(
    t: &mut T,
    mut find: impl FnMut(&T, usize) -> Option<(Range<usize>, Vec<T::Launch>)>,
) -> usize {
    let mut done = 0;
    let mut i = 0;
    while i + 3 <= t.notes().len() {
        match find(t, i) {
            Some((range, launches)) => {
                t.replace(range, launches);
                done += 1;
            }
            None => i += 1,
        }
    }
    done
}

/// Note `i` as the call made it, with its steps.
fn noted<T: Chains>(t: &T, i: usize) -> Option<(Range<usize>, &Noted<T::V>)> {
    let n = t.notes().get(i)?;
    let what = n.what.as_any().downcast_ref::<Noted<T::V>>()?;
    Some((n.steps.clone(), what))
}

/// Whether no step outside `range` binds `v` and the caller does not read it.
fn dead<T: Chains>(t: &T, v: &T::V, range: &Range<usize>, read: &[T::V]) -> bool {
    !t.bound_outside(v, range.clone()) && !read.iter().any(|r| r.overlaps(v))
}

/// The attention chain whose first call is note `i`.
fn attention<T: Chains>(t: &T, i: usize, read: &[T::V]) -> Option<Attention<T::V>> {
    let (
        Some((s0, Noted::Scores { q, k, s })),
        Some((
            s1,
            Noted::Softmax {
                s: s_in,
                p,
                causal,
                scale,
            },
        )),
        Some((s2, Noted::Weighted { p: p_in, v, o })),
    ) = (noted(t, i), noted(t, i + 1), noted(t, i + 2))
    else {
        return None;
    };
    let adjacent = s0.end == s1.start && s1.end == s2.start;
    if !adjacent || s.key() != s_in.key() || p.key() != p_in.key() {
        return None;
    }
    // The softmax masks a square of scores (key j after row i); flash's mask is the same there.
    let rows = |v: &T::V| v.shape().len().checked_sub(2).map(|a| v.shape()[a]);
    if *causal && rows(q) != rows(k) {
        return None;
    }
    let steps = s0.start..s2.end;
    if !dead(t, s, &steps, read) || !dead(t, p, &steps, read) {
        return None;
    }
    Some(Attention {
        merged: merging(t, i + 3, o, steps.clone(), read),
        steps,
        q: q.clone(),
        k: k.clone(),
        v: v.clone(),
        o: o.clone(),
        causal: *causal,
        scale: *scale,
    })
}

/// Note `j`, when it is one launch right after the chain's steps `chain` that swaps `o`'s
/// middle axes ([B, H, N, d] → [B, N, H, d]) and nothing else binds `o` (nor does the caller
/// read it): the swap's steps, its output and H.
fn merging<T: Chains>(
    t: &T,
    j: usize,
    o: &T::V,
    chain: Range<usize>,
    read: &[T::V],
) -> Option<(Range<usize>, T::V, usize)> {
    let (steps, Noted::Swapped { x, y }) = noted(t, j)? else {
        return None;
    };
    let &[_, heads, _, _] = x.shape() else {
        return None;
    };
    let one = steps.start == chain.end && steps.len() == 1;
    if !one || x.key() != o.key() {
        return None;
    }
    let whole = chain.start..steps.end;
    dead(t, o, &whole, read).then(|| (steps, y.clone(), heads))
}

/// The feed-forward block whose first call is note `i`.
fn feed_forward<T: Chains>(t: &T, i: usize, read: &[T::V]) -> Option<FeedForward<T::V>> {
    let (
        Some((s0, Noted::LinearGelu { x, w: w1, b: b1, h })),
        Some((
            s1,
            Noted::Linear {
                x: h_in,
                w: w2,
                b: b2,
                y: product,
            },
        )),
        Some((s2, Noted::AddLayerNorm(norm))),
    ) = (noted(t, i), noted(t, i + 1), noted(t, i + 2))
    else {
        return None;
    };
    // Where the norm took the product's split sum into its launch, that launch is the norm's
    // step and the product's note ends before it.
    let adjacent = s0.end == s1.start && s1.end == s2.start;
    let residual = if norm.x.key() == product.key() {
        &norm.r
    } else if norm.r.key() == product.key() {
        &norm.x
    } else {
        return None;
    };
    if !adjacent || h.key() != h_in.key() || x.dtype() != DType::F32 {
        return None;
    }
    // The hidden layer is bound by the two products alone (not the norm's residual, say);
    // the product by them and the norm, which writes it anyway.
    let steps = s0.start..s2.end;
    let products = s0.start..s1.end;
    if !dead(t, h, &products, read) || !dead(t, product, &steps, read) {
        return None;
    }
    Some(FeedForward {
        steps,
        x: x.clone(),
        w1: w1.clone(),
        b1: b1.clone(),
        w2: w2.clone(),
        b2: b2.clone(),
        product: product.clone(),
        residual: residual.clone(),
        gamma: norm.gamma.clone(),
        beta: norm.beta.clone(),
        sum: norm.sum.clone(),
        y: norm.y.clone(),
        eps: norm.eps,
    })
}
