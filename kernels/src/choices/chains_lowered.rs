//! The plan-only recording as the chain rules (`kiln::fusion::chains`) read it, each chain they
//! find lowered to the choices the GPU path's launches would have.

use std::ops::Range;

use super::{ChoiceBackend, ShapeTensor, Step};
use crate::families::{mlp, reduce_layernorm};
use crate::fusion::chains::{Attention, Chains, FeedForward};
use crate::launch::flash::{FlashCall, HEAD_DIMS};
use crate::select::Selector;
use crate::shape::{self, AttentionDims};
use crate::trace::{Note, Trace};

/// The plan-only recording as the chain rules read it, lowering what they find to choices.
pub(super) struct ChoicePath<'s, 'a> {
    pub selector: &'s Selector<'a>,
    pub trace: &'s mut Trace<Step>,
    /// Each rewrite's steps and how many launches took their place, in order.
    pub replaced: Vec<(Range<usize>, usize)>,
}

impl Chains for ChoicePath<'_, '_> {
    type V = ShapeTensor;
    type Launch = Step;

    fn len(&self) -> usize {
        self.trace.steps.len()
    }

    fn notes(&self) -> &[Note] {
        &self.trace.notes
    }

    fn bound_outside(&self, v: &ShapeTensor, except: Range<usize>) -> bool {
        let steps = self.trace.steps.iter().enumerate();
        steps
            .filter(|(i, _)| !except.contains(i))
            .any(|(_, s)| s.binds.contains(&v.id))
    }

    fn replace(&mut self, range: Range<usize>, with: Vec<Step>) {
        self.replaced.push((range.clone(), with.len()));
        self.trace.replace_with(range, with);
    }

    fn attention(&self, a: &Attention<ShapeTensor>) -> Option<(Range<usize>, Vec<Step>)> {
        // [.., N, d] batched products as flash's [B, H, N, d], as the GPU path views them.
        let four = |t: &ShapeTensor| -> Option<Vec<usize>> {
            let sh = &t.shape;
            let (n, d) = (sh[sh.len().checked_sub(2)?], sh[sh.len() - 1]);
            let count: usize = sh.iter().product();
            Some(vec![1, count / (n * d).max(1), n, d])
        };
        let (q, k, v) = (four(&a.q)?, four(&a.k)?, four(&a.v)?);
        let dims = AttentionDims::grouped("flash_fwd", &q, &k, &v).ok()?;
        if !HEAD_DIMS.contains(&dims.head_dim) {
            return None;
        }
        let call = FlashCall {
            family: "flash_fwd",
            dtype: a.q.dtype,
            dims,
            causal: a.causal,
        };
        let choice = self.selector.choose(&call, None).ok()?;
        let binds = [&a.q, &a.k, &a.v, &a.o];
        // The merged rows written by the flash launch where its heads make whole batches.
        if let Some((swap, y, heads)) = &a.merged
            && *heads > 0
            && dims.batch_heads.is_multiple_of(*heads)
        {
            let step = ChoiceBackend::plain(choice, &[&a.q, &a.k, &a.v, y]);
            return Some((a.steps.start..swap.end, vec![step]));
        }
        Some((a.steps.clone(), vec![ChoiceBackend::plain(choice, &binds)]))
    }

    fn feed_forward(&self, f: &FeedForward<ShapeTensor>) -> Option<Vec<Step>> {
        let (m, d) = shape::rows_cols("mlp", &f.x.shape).ok()?;
        let hidden = *f.w1.shape.last()?;
        let n = *f.w2.shape.last()?;
        let slices = self
            .selector
            .choose(&mlp::Call::of([m, d, hidden, n], None), None)
            .ok()?;
        let named = reduce_layernorm::design_for(self.selector, n, true)?;
        let sum = self
            .selector
            .choose(&reduce_layernorm::call(n, true), Some(&named))
            .ok()?;
        let inputs = [&f.x, &f.w1, &f.b1, &f.w2];
        let norm = [
            &f.b2,
            &f.residual,
            &f.gamma,
            &f.beta,
            &f.product,
            &f.sum,
            &f.y,
        ];
        Some(vec![
            ChoiceBackend::plain(slices, &inputs),
            ChoiceBackend::plain(sum, &norm),
        ])
    }
}
