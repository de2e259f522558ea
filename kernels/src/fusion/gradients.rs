//! The optimiser's sums: where a captured training step's AdamW table launch steps on weight
//! gradients that split products' sums wrote, the sums go and the table launch adds each
//! gradient's slices as it reads it (`reduce_adamw_table`). The GPU path alone: the plan-only
//! path models no training step. The rule reads the capture's launches themselves (which
//! buffers each binds), not only its notes.

use super::Noted;
use crate::families::matmul_reduce;
use crate::families::reduce_adamw_table::{self, cpu::Cut};
use crate::gpu::memory::Slice;
use crate::gpu::{Bindable, Captured};
use crate::tensor::Tensor;
use crate::{DType, Gpu};

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
pub(super) fn fold_gradient_sums(gpu: &Gpu, c: &mut Captured) -> usize {
    let Some((at, step)) =
        c.notes
            .iter()
            .rev()
            .find_map(|n| match n.what.as_any().downcast_ref::<Noted<Tensor>>() {
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
    let Ok((launch, _)) = reduce_adamw_table::launch(
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
