//! Fusing what a captured pass chains, where the caller does not read what lies between: a
//! plan that knows which of its results are read ([`capture_reading`]) runs attention's scores,
//! softmax and weighted values as one flash launch when the scores and the weights are read by
//! nothing else. The model code still calls the three ops (the GPU path notes each call in the
//! capture, [`note`]); the rewrite happens between the capture and the plan's freezing.

use std::ops::Range;
use std::sync::Arc;

use crate::error::Result;
use crate::families::reduce_adamw_table::{self, cpu::Cut};
use crate::families::{matmul_reduce, mlp, reduce_layernorm};
use crate::gpu::memory::Slice;
use crate::gpu::{Bindable, Captured, Dispatch, Plan};
use crate::launch::flash::lse_shape;
use crate::optim::AdamW;
use crate::tensor::Tensor;
use crate::{DType, Gpu};

/// What an op call made, as the rewrite reads it.
#[derive(Debug)]
pub(crate) enum Noted {
    /// S = Q · Kᵀ (batched, no epilogue).
    Scores { q: Tensor, k: Tensor, s: Tensor },
    /// P = softmax(scale · S) over the last axis.
    Softmax {
        s: Tensor,
        p: Tensor,
        causal: bool,
        scale: f32,
    },
    /// O = P · V (batched, no epilogue).
    Weighted { p: Tensor, v: Tensor, o: Tensor },
    /// Y = X with its middle axes swapped (`ops::swap_axes12`), X [B, H, N, d].
    Swapped { x: Tensor, y: Tensor },
    /// One AdamW step over a table of packed tensors (`ops::adamw_table`).
    Optimizer(Box<Stepped>),
    /// H = gelu(X · W + b) over the last axis (`ops::linear_gelu`).
    Expanded {
        x: Tensor,
        w: Tensor,
        b: Tensor,
        h: Tensor,
    },
    /// Y = X · W + b over the last axis (`ops::linear`).
    Projected {
        x: Tensor,
        w: Tensor,
        b: Tensor,
        y: Tensor,
    },
    /// S = X + R and Y = layernorm(S) (`ops::add_layernorm`).
    Normed(Box<Normed>),
}

/// The tensors and settings of a noted residual layer norm.
#[derive(Debug)]
pub(crate) struct Normed {
    pub x: Tensor,
    pub r: Tensor,
    pub gamma: Tensor,
    pub beta: Tensor,
    pub sum: Tensor,
    pub y: Tensor,
    pub eps: f32,
}

/// The tensors and settings of a noted optimiser step.
#[derive(Debug)]
pub(crate) struct Stepped {
    pub p: Vec<Tensor>,
    pub g: Vec<Tensor>,
    pub m: Vec<Tensor>,
    pub v: Vec<Tensor>,
    pub h: Vec<AdamW>,
    pub corrections: Tensor,
}

/// Notes what the op call that recorded since step `from` made (nothing outside a capture).
pub(crate) fn note(gpu: &Gpu, from: Option<usize>, what: impl FnOnce() -> Noted) {
    if let Some(from) = from {
        let what = what();
        let links = matches!(
            what,
            Noted::Scores { .. } | Noted::Softmax { .. } | Noted::Weighted { .. }
        );
        // Shared between threads natively, as the device is; the browser has one thread.
        #[allow(clippy::arc_with_non_send_sync)]
        let what = Arc::new(what);
        gpu.annotate(from, what, links);
    }
}

/// Captures `build` into a plan (as [`Gpu::capture`]) with the rewrites that keep every
/// result: a training step's weight-gradient sums folded into its optimiser step
/// ([`fold_gradient_sums`]).
pub fn capture<R>(gpu: &Gpu, build: impl FnOnce() -> Result<R>) -> Result<(Plan, R)> {
    let (mut captured, out) = gpu.capture_steps(build)?;
    fold_gradient_sums(gpu, &mut captured);
    Ok((gpu.plan_of(captured)?, out))
}

/// Captures `build` into a plan in which only the tensors `reads` names are read after a
/// replay: what lies between may be fused away (attention chains into flash launches). The
/// other tensors `build` returns hold nothing meaningful after a replay. Returns the plan, what
/// `build` returned and what was fused. [`capture_reading_with`] asks for the rewrites that are
/// not measured to pay.
pub fn capture_reading<R>(
    gpu: &Gpu,
    build: impl FnOnce() -> Result<R>,
    reads: impl FnOnce(&R) -> Vec<Tensor>,
) -> Result<(Plan, R, Fused)> {
    capture_reading_with(gpu, Rewrites::default(), build, reads)
}

/// [`capture_reading`] with the rewrites `rewrites` turns on besides.
pub fn capture_reading_with<R>(
    gpu: &Gpu,
    rewrites: Rewrites,
    build: impl FnOnce() -> Result<R>,
    reads: impl FnOnce(&R) -> Vec<Tensor>,
) -> Result<(Plan, R, Fused)> {
    let (mut captured, out) = gpu.capture_steps(build)?;
    let read = reads(&out);
    let before = captured.len();
    let attention = fuse_attention(&mut captured, &read);
    let feed_forward = if rewrites.feed_forward {
        fuse_feed_forward(gpu, &mut captured, &read)
    } else {
        0
    };
    let launches_saved = before - captured.len();
    fold_gradient_sums(gpu, &mut captured);
    let fused = Fused {
        attention,
        feed_forward,
        launches_saved,
    };
    Ok((gpu.plan_of(captured)?, out, fused))
}

/// Rewrites [`capture_reading_with`] may make that are off by default, each because a GPU
/// measured it slower than the launches it replaces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rewrites {
    /// Feed-forward blocks as `mlp`'s slices and the norm that sums them: two launches where
    /// there were three to five, but on the H100 the `mlp` kernels took 1.8–2.4× the time of
    /// the two products at MiniLM's shapes (kernels/PERF.md, 2026-12-06).
    pub feed_forward: bool,
}

/// What [`capture_reading`] or [`capture_reading_with`] fused.
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

/// One weight gradient whose split product's sum the optimiser step takes over.
struct Folded {
    /// The tensor's place in the step's lists.
    tensor: usize,
    /// The product's launch (it writes `slices`) and its sum's (right after it).
    product: usize,
    sum: usize,
    slices: Slice,
    /// How many slices of the gradient's size `slices` holds.
    parts: usize,
}

/// Where the newest optimiser step of the capture (`ops::adamw_table`, noted) steps on
/// gradients that split products' sums wrote, and nothing else binds them between (or binds
/// those products' slices at all), the slices go into one arena, the sums are dropped and the
/// step becomes one `reduce_adamw_table` launch that adds each gradient's slices as it reads
/// it (writing the gradient too: the same bits where they were read before). Returns how many
/// sums went; where nothing qualifies, or the step cannot be planned so, nothing changes.
fn fold_gradient_sums(gpu: &Gpu, c: &mut Captured) -> usize {
    let Some((at, step)) =
        c.notes
            .iter()
            .rev()
            .find_map(|n| match n.what.as_any().downcast_ref::<Noted>() {
                Some(Noted::Optimizer(s)) if n.steps.len() == 1 => Some((n.steps.start, s)),
                _ => None,
            })
    else {
        return 0;
    };
    let noted = |i: usize| c.notes.iter().any(|n| n.steps.contains(&i));
    let mut folds = Vec::new();
    for (tensor, g) in step.g.iter().enumerate() {
        let Some(sum) = (0..at).rev().find(|&j| c.binds(j, g.slice())) else {
            continue;
        };
        let Some(product) = sum.checked_sub(1) else {
            continue;
        };
        let Some(recorded) = c
            .launch(sum)
            .and_then(|(label, bound)| matmul_reduce::recorded(label, bound))
        else {
            continue;
        };
        let slices = recorded.partials.clone();
        let bytes = g.numel().max(1) as u64 * 4;
        let whole = slices.size % bytes == 0;
        let writes_slices = c.launch(product).is_some_and(|(label, bound)| {
            label.starts_with("matmul/") && bound.iter().any(|b| b.key() == slices.key())
        });
        if recorded.bias.is_some()
            || recorded.c.key() != g.slice().key()
            || !whole
            || !writes_slices
            || c.bound_outside(&slices, product..sum + 1)
            || noted(product)
            || noted(sum)
        {
            continue;
        }
        let parts = (slices.size / bytes) as usize;
        folds.push(Folded {
            tensor,
            product,
            sum,
            slices,
            parts,
        });
    }
    // The arena: each gradient's slices at an offset the device binds, all within one binding.
    let align = (gpu.storage_align() / 4) as usize;
    let limits = &gpu.profile().limits;
    let most = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size)
        / 4;
    let mut cuts = vec![None; step.g.len()];
    let mut end = 0usize;
    folds.retain(|f| {
        let first = end.next_multiple_of(align);
        let next = first + (f.slices.size / 4) as usize;
        if next as u64 > most {
            return false;
        }
        cuts[f.tensor] = Some(Cut {
            slices: f.parts,
            first,
        });
        end = next;
        true
    });
    if folds.is_empty() {
        return 0;
    }
    let Ok(arena) = Tensor::uninit(gpu, &[end], DType::F32) else {
        return 0;
    };
    let Ok((launch, _)) = reduce_adamw_table::plan(
        &step.p,
        &step.g,
        &step.m,
        &step.v,
        &step.h,
        &step.corrections,
        &arena,
        &cuts,
        None,
    ) else {
        return 0;
    };
    let regions: Vec<Slice> = folds
        .iter()
        .map(|f| {
            let first = cuts[f.tensor].map_or(0, |c| c.first) as u64;
            let mut region = arena.slice().clone();
            region.offset += first * 4;
            region.size = f.slices.size;
            region
        })
        .collect();
    c.replace(at..at + 1, launch);
    // Latest first: removing a sum moves only the steps after it.
    let mut order: Vec<usize> = (0..folds.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(folds[k].sum));
    for k in order {
        let f = &folds[k];
        c.rebind(f.product, &f.slices, &regions[k]);
        c.remove(f.sum);
    }
    folds.len()
}

/// Scores, softmax and weighted values, recorded one after another, whose scores and weights
/// no other step binds and the caller does not read, become one flash forward launch. A chain
/// the flash kernels do not take (a head size they are not rendered for) stays as it was.
fn fuse_attention(c: &mut Captured, read: &[Tensor]) -> usize {
    rewrite_chains(c, |c, i| {
        fusable(c, i, read).map(|(range, d)| (range, vec![d]))
    })
}

/// Replaces each chain of notes that `rewrite` takes (from its first note `i`: the steps it
/// replaces and the launches in their place), from the first note on. Returns how many.
fn rewrite_chains(
    c: &mut Captured,
    mut rewrite: impl FnMut(&Captured, usize) -> Option<(Range<usize>, Vec<Dispatch>)>,
) -> usize {
    let mut done = 0;
    let mut i = 0;
    while i + 3 <= c.notes.len() {
        match rewrite(c, i) {
            Some((range, launches)) => {
                c.replace_with(range, launches);
                done += 1;
            }
            None => i += 1,
        }
    }
    done
}

/// Whether no step outside `range` binds `t` and the caller does not read it.
fn dead(c: &Captured, t: &Tensor, range: &Range<usize>, read: &[Tensor]) -> bool {
    !c.bound_outside(t.slice(), range.clone())
        && !read.iter().any(|r| r.slice().overlaps(t.slice()))
}

/// The flash launch that replaces the chain starting at note `i`, and the steps it replaces.
fn fusable(c: &Captured, i: usize, read: &[Tensor]) -> Option<(Range<usize>, Dispatch)> {
    let at = |j: usize| c.notes[j].what.as_any().downcast_ref::<Noted>();
    let (
        Some(Noted::Scores { q, k, s }),
        Some(Noted::Softmax {
            s: s_in,
            p,
            causal,
            scale,
        }),
        Some(Noted::Weighted { p: p_in, v, o }),
    ) = (at(i), at(i + 1), at(i + 2))
    else {
        return None;
    };
    let same = |a: &Tensor, b: &Tensor| a.slice().key() == b.slice().key();
    let ranges = [
        &c.notes[i].steps,
        &c.notes[i + 1].steps,
        &c.notes[i + 2].steps,
    ];
    let adjacent = ranges[0].end == ranges[1].start && ranges[1].end == ranges[2].start;
    if !adjacent || !same(s, s_in) || !same(p, p_in) {
        return None;
    }
    // The softmax masks a square of scores (key j after row i); flash's mask is the same there.
    let rows = |t: &Tensor| t.shape().len().checked_sub(2).map(|a| t.shape()[a]);
    if *causal && rows(q) != rows(k) {
        return None;
    }
    let range = ranges[0].start..ranges[2].end;
    if !dead(c, s, &range, read) || !dead(c, p, &range, read) {
        return None;
    }
    // [.., N, d] batched products as flash's [B, H, N, d]: views of the same bytes.
    let four = |t: &Tensor| -> Option<Tensor> {
        let sh = t.shape();
        let (n, d) = (sh[sh.len().checked_sub(2)?], sh[sh.len() - 1]);
        t.reshape(&[1, t.numel() / (n * d), n, d]).ok()
    };
    let (q4, k4, v4, o4) = (four(q)?, four(k)?, four(v)?, four(o)?);
    let lse = Tensor::uninit(q.gpu(), &lse_shape(&q4), DType::F32).ok()?;
    // The heads merged into rows right after (a transformer's attention before its output
    // projection), O read by nothing else: the flash launch writes the merged rows itself.
    // (Where the merged form is refused, the chain is fused as before and the swap stays.)
    if let Some((merged, y, heads)) = merging(c, i + 3, o, range.clone(), read)
        && let Ok((dispatch, _)) = crate::families::flash_fwd::plan_forward_merged(
            &q4, &k4, &v4, y, &lse, heads, *causal, *scale, None,
        )
    {
        return Some((range.start..merged.end, dispatch));
    }
    let (dispatch, _) =
        crate::families::flash_fwd::plan_forward(&q4, &k4, &v4, &o4, &lse, *causal, *scale, None)
            .ok()?;
    Some((range, dispatch))
}

/// A feed-forward block recorded as three calls — `linear_gelu`, `linear` of its output, and
/// `add_layernorm` of that — whose hidden layer and product nothing else binds and the caller
/// does not read, becomes two launches: `mlp`'s slices (the hidden layer kept in workgroup
/// memory) and `reduce_layernorm`, which adds them with the bias and the residual and norms the
/// rows (in the design of the norm the call would have taken). A block the `mlp` kernels do not
/// take (not f32) stays as it was. Returns how many were fused.
fn fuse_feed_forward(gpu: &Gpu, c: &mut Captured, read: &[Tensor]) -> usize {
    rewrite_chains(c, |c, i| feed_forward(gpu, c, i, read))
}

/// The two launches that replace the block whose first call is note `i`, and its steps.
fn feed_forward(
    gpu: &Gpu,
    c: &Captured,
    i: usize,
    read: &[Tensor],
) -> Option<(Range<usize>, Vec<Dispatch>)> {
    let at = |j: usize| c.notes[j].what.as_any().downcast_ref::<Noted>();
    let (
        Some(Noted::Expanded { x, w: w1, b: b1, h }),
        Some(Noted::Projected {
            x: h_in,
            w: w2,
            b: b2,
            y: product,
        }),
        Some(Noted::Normed(norm)),
    ) = (at(i), at(i + 1), at(i + 2))
    else {
        return None;
    };
    let same = |a: &Tensor, b: &Tensor| a.slice().key() == b.slice().key();
    let steps = [
        &c.notes[i].steps,
        &c.notes[i + 1].steps,
        &c.notes[i + 2].steps,
    ];
    // Where the norm took the product's split sum into its launch, that launch is the norm's
    // step and the product's note ends before it.
    let adjacent = steps[0].end == steps[1].start && steps[1].end == steps[2].start;
    let residual = if same(&norm.x, product) {
        &norm.r
    } else if same(&norm.r, product) {
        &norm.x
    } else {
        return None;
    };
    if !adjacent || !same(h, h_in) || x.dtype() != DType::F32 {
        return None;
    }
    // The hidden layer is bound by the two products alone (not the norm's residual, say);
    // the product by them and the norm, which writes it anyway.
    let range = steps[0].start..steps[2].end;
    let products = steps[0].start..steps[1].end;
    if !dead(c, h, &products, read) || !dead(c, product, &range, read) {
        return None;
    }
    let (rows, d) = crate::shape::rows_cols("mlp", x.shape()).ok()?;
    let x = x.reshape(&[rows, d]).ok()?;
    let (partials, variant) = mlp::workspace(&x, w1, b1, w2, None).ok()?;
    let (slices, _) = mlp::plan(&x, w1, b1, w2, &partials, Some(&variant)).ok()?;
    let cols = *product.shape().last()?;
    let named = reduce_layernorm::design_for(gpu, cols, true)?;
    let (sum, _) = reduce_layernorm::plan(
        &partials,
        Some(b2),
        residual,
        &norm.gamma,
        &norm.beta,
        [product, &norm.sum, &norm.y],
        norm.eps,
        Some(&named),
    )
    .ok()?;
    Some((range, vec![slices, sum]))
}

/// Note `j`, when it is one launch right after the chain's steps `chain` that swaps `o`'s
/// middle axes ([B, H, N, d] → [B, N, H, d]) and nothing else binds `o` (nor does the caller
/// read it): the swap's steps, its output and H.
fn merging<'c>(
    c: &'c Captured,
    j: usize,
    o: &Tensor,
    chain: Range<usize>,
    read: &[Tensor],
) -> Option<(Range<usize>, &'c Tensor, usize)> {
    let note = c.notes.get(j)?;
    let Some(Noted::Swapped { x, y }) = note.what.as_any().downcast_ref::<Noted>() else {
        return None;
    };
    let &[_, heads, _, _] = x.shape() else {
        return None;
    };
    let steps = note.steps.clone();
    let one = steps.start == chain.end && steps.len() == 1;
    if !one || x.slice().key() != o.slice().key() {
        return None;
    }
    dead(c, o, &(chain.start..steps.end), read).then_some((steps, y, heads))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::matmul::{Epilogue, Layout, plan_split};
    use crate::{GpuOptions, ops};

    /// The family of each of the plan's launches.
    fn families(plan: &Plan) -> Vec<&str> {
        plan.kernels()
            .iter()
            .map(|k| k.split('/').next().unwrap_or(""))
            .collect()
    }

    /// Records `a · b` into `c` with K cut in `splits` (as a GPU cuts a product of few rows),
    /// noted as `what` made it.
    fn record_cut(
        [a, b, c]: [&Tensor; 3],
        epilogue: Option<(&Tensor, Epilogue)>,
        splits: usize,
        what: impl FnOnce() -> Noted,
    ) -> Result<()> {
        let gpu = a.gpu();
        let from = gpu.note_from();
        let cut = plan_split(a, b, c, Layout::default(), epilogue, Some(splits))?;
        gpu.record(&cut.dispatches.iter().collect::<Vec<_>>())?;
        note(gpu, from, what);
        Ok(())
    }

    /// O = P · V for P [h, n, n] and V [h, n, d], K cut in 3, noted as attention's weighted
    /// values (a link of the chain a rewrite takes whole).
    fn weighted_cut(p: &Tensor, v: &Tensor) -> Result<Tensor> {
        let [h, n, d] = [p.shape()[0], p.shape()[1], v.shape()[2]];
        let o = Tensor::uninit(p.gpu(), &[h, n, d], DType::F32)?;
        record_cut([p, v, &o], None, 3, || Noted::Weighted {
            p: p.clone(),
            v: v.clone(),
            o: o.clone(),
        })?;
        Ok(o)
    }

    /// A call whose launch takes the place of the step before it is noted on that step (the
    /// swap into heads that takes a cut product's sum, `reduce_permute`); a fold made before a
    /// call began is not the call's (an unnoted swap folds the sum, then a noted swap of a
    /// single head, a view that records nothing, is noted on no step).
    #[test]
    fn a_folding_call_notes_the_step_it_took() -> Result<()> {
        use crate::Backend;
        let gpu = &pollster::block_on(Gpu::new(&GpuOptions::default()))?;
        let path = crate::GpuBackend { gpu: gpu.clone() };
        let (h, n, d) = (2, 100, 32);
        let ones = |shape: &[usize]| Tensor::full(gpu, shape, 0.5, DType::F32);
        let (p, v, one) = (ones(&[h, n, n])?, ones(&[h, n, d])?, ones(&[n, d])?);
        for noted_fold in [true, false] {
            let (c, _) = gpu.capture_steps(|| {
                let o = weighted_cut(&p, &v)?;
                let heads = o.reshape(&[1, h, n, d])?;
                if noted_fold {
                    return path.swap12(&heads);
                }
                ops::swap_axes12(&heads)?;
                path.swap12(&one.reshape(&[1, 1, n, d])?)
            })?;
            let label = |i: usize| c.launch(i).map(|(l, _)| l.split('/').next().unwrap_or(""));
            assert_eq!(
                [label(0), label(1)],
                [Some("matmul"), Some("reduce_permute")]
            );
            let steps: Vec<_> = c.notes.iter().map(|n| n.steps.clone()).collect();
            // The product keeps its slices; the folding call has the sum's place.
            let swap = if noted_fold { 1..2 } else { 2..2 };
            assert_eq!(steps, [0..1, swap], "noted fold: {noted_fold}");
        }
        Ok(())
    }

    /// A split product's sum that ends a chain of noted calls (the weighted values after the
    /// softmax) is left for the chain's rewrite: the swap after it does not take it. Without
    /// the softmax noted before it, the same sum is folded into the swap.
    #[test]
    fn a_fold_leaves_the_sum_that_ends_a_noted_chain() -> Result<()> {
        let gpu = &pollster::block_on(Gpu::new(&GpuOptions::default()))?;
        // 100 keys: K long enough to cut in 3 slices of 32 or more.
        let (h, n, d) = (2, 100, 32);
        let ones = |shape: &[usize]| Tensor::full(gpu, shape, 0.5, DType::F32);
        let (s, v) = (ones(&[h, n, n])?, ones(&[h, n, d])?);
        for chained in [true, false] {
            let (captured, _) = gpu.capture_steps(|| {
                let from = gpu.note_from();
                let p = ops::softmax(&s, false, 1.0)?;
                if chained {
                    note(gpu, from, || Noted::Softmax {
                        s: s.clone(),
                        p: p.clone(),
                        causal: false,
                        scale: 1.0,
                    });
                }
                let o = weighted_cut(&p, &v)?;
                ops::swap_axes12(&o.reshape(&[1, h, n, d])?)
            })?;
            let plan = gpu.plan_of(captured)?;
            let want: &[&str] = match chained {
                true => &["softmax", "matmul", "matmul_reduce", "swap_axes"],
                false => &["softmax", "matmul", "reduce_permute"],
            };
            assert_eq!(families(&plan), want, "chained: {chained}");
        }
        Ok(())
    }

    /// A feed-forward block whose products were both cut along K (a GPU's picks at few rows):
    /// the norm took the second product's sum into its launch as it was recorded, and the
    /// rewrite still finds the block and runs it as `mlp` and the norm, right.
    #[test]
    fn a_block_whose_products_were_cut_is_still_fused() -> Result<()> {
        use crate::cases::Inputs;
        use crate::cpu;
        let gpu = &pollster::block_on(Gpu::new(&GpuOptions::default()))?;
        let path = crate::GpuBackend { gpu: gpu.clone() };
        // K 64 cut in 2, K 150 cut in 3; 13 rows, no tile multiple.
        let (rows, d, hidden) = (13, 64, 150);
        let mut inputs = Inputs::for_family("mlp");
        let mut pair = |shape: &[usize]| inputs.pair(gpu, shape, DType::F32);
        let (x, xa) = pair(&[rows, d])?;
        let (w1, w1a) = pair(&[d, hidden])?;
        let (b1, b1a) = pair(&[hidden])?;
        let (w2, w2a) = pair(&[hidden, d])?;
        let (b2, b2a) = pair(&[d])?;
        let (g, ga) = pair(&[d])?;
        let (beta, betaa) = pair(&[d])?;
        let h = Tensor::uninit(gpu, &[rows, hidden], DType::F32)?;
        let ff = Tensor::uninit(gpu, &[rows, d], DType::F32)?;
        let (mut captured, (_, y)) = gpu.capture_steps(|| {
            let gelu = Some((&b1, Epilogue::BiasGelu));
            record_cut([&x, &w1, &h], gelu, 2, || Noted::Expanded {
                x: x.clone(),
                w: w1.clone(),
                b: b1.clone(),
                h: h.clone(),
            })?;
            let bias = Some((&b2, Epilogue::Bias));
            record_cut([&h, &w2, &ff], bias, 3, || Noted::Projected {
                x: h.clone(),
                w: w2.clone(),
                b: b2.clone(),
                y: ff.clone(),
            })?;
            crate::Backend::add_layernorm(&path, &ff, &x, &g, &beta, 1e-5)
        })?;
        let recorded: Vec<String> = captured
            .notes
            .iter()
            .map(|n| format!("{:?}", n.steps))
            .collect();
        assert_eq!(
            recorded,
            ["0..2", "2..3", "3..4"],
            "the norm took the sum's place"
        );
        assert_eq!(
            fuse_feed_forward(gpu, &mut captured, std::slice::from_ref(&y)),
            1
        );
        let plan = gpu.plan_of(captured)?;
        assert_eq!(families(&plan), ["mlp", "reduce_layernorm"]);
        y.write(&vec![f32::NAN; y.numel()])?;
        plan.replay()?;
        let hidden_a = cpu::linear_gelu(&xa, &w1a, &b1a)?;
        let (_, want) =
            cpu::add_layernorm(&cpu::linear(&hidden_a, &w2a, &b2a)?, &xa, &ga, &betaa, 1e-5)?;
        let got = pollster::block_on(y.read())?;
        let err = cpu::rel_l2(&got, &want.data);
        assert!(err < 1e-6, "relative L2 {err:.2e}");
        Ok(())
    }

    /// A swap noted right before a split product (a flash layer's merged heads, then its output
    /// projection) is no link of a chain: the product's sum still folds into the norm after it.
    #[test]
    fn a_noted_swap_does_not_hold_back_the_next_products_fold() -> Result<()> {
        let gpu = &pollster::block_on(Gpu::new(&GpuOptions::default()))?;
        // K = h · d = 64: two slices of 32.
        let (h, n, d) = (2, 9, 32);
        let ones = |shape: &[usize]| Tensor::full(gpu, shape, 0.5, DType::F32);
        let (o, w, r) = (ones(&[1, h, n, d])?, ones(&[h * d, 24])?, ones(&[n, 24])?);
        let (gamma, beta) = (ones(&[24])?, ones(&[24])?);
        let (captured, _) = gpu.capture_steps(|| {
            let from = gpu.note_from();
            let rows = ops::swap_axes12(&o)?;
            note(gpu, from, || Noted::Swapped {
                x: o.clone(),
                y: rows.clone(),
            });
            let rows = rows.reshape(&[n, h * d])?;
            let c = Tensor::uninit(gpu, &[n, 24], DType::F32)?;
            record_cut([&rows, &w, &c], None, 2, || Noted::Weighted {
                p: rows.clone(),
                v: w.clone(),
                o: c.clone(),
            })?;
            ops::add_layernorm(&c, &r, &gamma, &beta, 1e-5)
        })?;
        let plan = gpu.plan_of(captured)?;
        assert_eq!(families(&plan), ["swap_axes", "matmul", "reduce_layernorm"]);
        Ok(())
    }
}
