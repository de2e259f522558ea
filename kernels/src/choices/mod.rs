//! A plan-only run of a model: [`ChoiceBackend`] implements [`Backend`] over shapes alone and
//! asks the selector, for a device or a stored profile, for each launch the GPU path would make,
//! keeping the choices in order. A page without an adapter shows the kernels the model's own
//! code picks, not a hand-kept copy of them.
//!
//! Fusion is the GPU path's own ([`kiln::fusion`](crate::fusion)): the calls are recorded into
//! the same kind of trace, the same rules fold a call into the launch before it, and
//! [`ChoiceBackend::fuse_reading`] runs the same chain rewrites a capture that knows its reads
//! runs. This file only turns the rules' decisions into choices.
//!
//! It models the ops of a forward pass. The training ops (backward passes, the loss, the
//! optimiser) are refused with an error that names them.

use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::matmul::Epilogue;
use crate::families::{matmul, reduce_permute};
use crate::fusion::chains::{self, Fused, Rewrites};
use crate::fusion::newest::{self, Fold, Newest, Next};
use crate::fusion::{Noted, Value};
use crate::launch::Elementwise;
use crate::select::{Choice, Selector};
use crate::shape::{self, MatmulDims};
use crate::trace::Trace;

mod backend;
mod chains_lowered;

use chains_lowered::ChoicePath;

/// A tensor of a plan-only run: its shape and dtype, no values, and which tensor it is (views
/// made by `reshape` are the same tensor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeTensor {
    pub shape: Vec<usize>,
    pub dtype: DType,
    id: u64,
}

impl ShapeTensor {
    /// A new tensor of this shape and dtype.
    pub fn new(shape: &[usize], dtype: DType) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        ShapeTensor {
            shape: shape.to_vec(),
            dtype,
            id: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The same tensor seen with another shape.
    fn view(&self, shape: &[usize]) -> Self {
        ShapeTensor {
            shape: shape.to_vec(),
            dtype: self.dtype,
            id: self.id,
        }
    }
}

impl Value for ShapeTensor {
    type Key = u64;
    fn key(&self) -> u64 {
        self.id
    }
    fn overlaps(&self, other: &Self) -> bool {
        self.id == other.id
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn dtype(&self) -> DType {
        self.dtype
    }
}

/// One call of the backend: the op (the [`Backend`] method) and the choices of the launches it
/// makes, in order. A call folded into the launch before it has none of its own where that
/// launch is the product's (which now writes the call's result too).
#[derive(Clone, Debug)]
pub struct CallLaunches {
    pub op: &'static str,
    pub launches: Vec<Choice>,
}

/// A recorded launch: its choice and the tensors it binds; a product's dimensions, C and bias,
/// and a sum's C and bias, as the fold rules read the newest launch.
#[derive(Clone, Debug)]
struct Step {
    choice: Choice,
    binds: Vec<u64>,
    writes: Writes,
}

#[derive(Clone, Copy, Debug)]
enum Writes {
    /// A product of [batch, M, N], whole or into slices.
    Product {
        dims: MatmulDims,
        splits: usize,
        c: u64,
    },
    /// The sum of a cut product into C, with a bias of this many elements or none.
    Sum {
        c: u64,
        bias: Option<usize>,
    },
    Other,
}

/// What the backend has recorded.
#[derive(Default)]
struct Recorded {
    trace: Trace<Step>,
    /// Each call's op and the steps that are its own.
    calls: Vec<(&'static str, Range<usize>)>,
}

/// The plan-only backend: every call checked for shape as the GPU path checks it, and its
/// launches chosen by `selector`.
pub struct ChoiceBackend<'a> {
    selector: Selector<'a>,
    recorded: RefCell<Recorded>,
}

impl std::fmt::Debug for ChoiceBackend<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChoiceBackend")
            .field("profile", &self.selector.profile.name)
            .field("launches", &self.recorded.borrow().trace.steps.len())
            .finish_non_exhaustive()
    }
}

impl<'a> ChoiceBackend<'a> {
    pub fn new(selector: Selector<'a>) -> Self {
        ChoiceBackend {
            selector,
            recorded: RefCell::new(Recorded::default()),
        }
    }

    /// The calls made so far, in order, with their launches' choices.
    pub fn made(&self) -> Vec<CallLaunches> {
        let r = self.recorded.borrow();
        r.calls
            .iter()
            .map(|(op, steps)| CallLaunches {
                op,
                launches: r.trace.steps[steps.clone()]
                    .iter()
                    .map(|s| s.choice.clone())
                    .collect(),
            })
            .collect()
    }

    /// The launches' choices so far, in order.
    pub fn launches(&self) -> Vec<Choice> {
        let r = self.recorded.borrow();
        r.trace.steps.iter().map(|s| s.choice.clone()).collect()
    }

    /// Runs the chain rewrites a GPU capture that knows its reads runs
    /// ([`capture_reading_with`](crate::fusion::capture_reading_with)) over the calls made so
    /// far, `reads` being what the caller reads after them: attention chains into flash
    /// launches, and the others `rewrites` asks for. The calls whose launches a rewrite replaced
    /// keep none; the launches in their place belong to no call ([`launches`](Self::launches)
    /// lists them).
    pub fn fuse_reading(&self, rewrites: Rewrites, reads: &[&ShapeTensor]) -> Fused {
        let read: Vec<ShapeTensor> = reads.iter().map(|t| (*t).clone()).collect();
        let mut r = self.recorded.borrow_mut();
        let before = r.trace.steps.len();
        let mut path = ChoicePath {
            selector: &self.selector,
            trace: &mut r.trace,
            replaced: Vec::new(),
        };
        let fused = chains::rewrite(&mut path, rewrites, &read);
        let replaced = std::mem::take(&mut path.replaced);
        // Calls keep the steps before every rewrite and lose those it took; later steps move.
        for (range, added) in replaced {
            let moved = |i: usize| i + added - range.len();
            for (_, steps) in &mut r.calls {
                *steps = if steps.end <= range.start {
                    steps.clone()
                } else if steps.start >= range.end {
                    moved(steps.start)..moved(steps.end)
                } else {
                    steps.start.min(range.start)..steps.start.min(range.start)
                };
            }
        }
        debug_assert!(r.trace.steps.len() + fused.launches_saved == before);
        fused
    }

    /// Records the call `op` with the launches `steps`, noted as `what` makes it.
    fn record(&self, op: &'static str, steps: Vec<Step>, what: Option<Noted<ShapeTensor>>) {
        let mut r = self.recorded.borrow_mut();
        let from = r.trace.begin_call();
        r.trace.steps.extend(steps);
        let end = r.trace.steps.len();
        r.calls.push((op, from..end));
        note(&mut r.trace, from, what);
    }

    /// The newest launch as the fold rules read it.
    fn newest<'r>(&self, r: &'r Recorded) -> Newest<'r, ShapeTensor> {
        if r.trace.newest_ends_a_chain() {
            return Newest::Other;
        }
        match r.trace.steps.last() {
            Some(Step {
                choice,
                writes: Writes::Product { dims, splits: 1, c },
                ..
            }) => Newest::Product {
                variant: &choice.variant,
                batch: dims.batch,
                m: dims.m,
                n: dims.n,
                c: *c,
            },
            Some(Step {
                writes: Writes::Sum { c, bias },
                ..
            }) => Newest::Sum { c: *c, bias: *bias },
            _ => Newest::Other,
        }
    }

    /// Asks the rules what `next` runs in place of the newest launch and its own, and records
    /// the call `op` accordingly: a product's launch in its two-output form (the call has none
    /// of its own), the sum's launch replaced by `lower`'s choice for the call (binding
    /// `binds`), or, where the rules decline, `own` (the call's own launch, or none). As on the
    /// GPU path, the call is noted (as `what`) on the step a fold took.
    fn record_folding(
        &self,
        op: &'static str,
        next: &Next<'_, ShapeTensor>,
        lower: impl FnOnce(&Fold) -> Option<Choice>,
        own: impl FnOnce() -> Result<Option<Step>>,
        binds: Vec<u64>,
        what: Option<Noted<ShapeTensor>>,
    ) -> Result<()> {
        let fold = {
            let r = self.recorded.borrow();
            newest::fold(self.selector.registry, &self.newest(&r), next)
        };
        let taken = match fold {
            Some(Fold::Product(variant)) => self.recorded.borrow().trace.steps.last().map(|last| {
                let mut step = last.clone();
                step.choice.variant = Arc::new(variant);
                // The product's call keeps its launch: it is still the product's.
                (step, false)
            }),
            Some(fold @ Fold::Sum { .. }) => lower(&fold).map(|choice| {
                let step = Step {
                    choice,
                    binds,
                    writes: Writes::Other,
                };
                (step, true)
            }),
            None => None,
        };
        let Some((step, own_launch)) = taken else {
            let steps = own()?.into_iter().collect();
            self.record(op, steps, what);
            return Ok(());
        };
        let mut r = self.recorded.borrow_mut();
        let from = r.trace.begin_call();
        r.trace.fold_last(step);
        let at = from - 1;
        if own_launch {
            for (_, steps) in &mut r.calls {
                *steps = steps.start.min(at)..steps.end.min(at);
            }
        }
        let mine = if own_launch { at..from } else { from..from };
        r.calls.push((op, mine));
        note(&mut r.trace, from, what);
        Ok(())
    }

    fn elementwise_launch(&self, family: &'static str, dtype: DType) -> Result<Choice> {
        let call = Elementwise {
            family,
            dtype,
            count: None,
        };
        self.selector.choose(&call, None)
    }

    /// A launch that writes nothing the fold rules read.
    fn plain(choice: Choice, binds: &[&ShapeTensor]) -> Step {
        Step {
            choice,
            binds: binds.iter().map(|t| t.id).collect(),
            writes: Writes::Other,
        }
    }

    /// A product of `a` and `b` (as `matmul::product` runs it), noted as `what` makes it of its
    /// output.
    fn product(
        &self,
        op: &'static str,
        [a, b]: [&ShapeTensor; 2],
        bias: Option<&ShapeTensor>,
        layout: matmul::Layout,
        epilogue: Epilogue,
        what: impl FnOnce(&ShapeTensor) -> Option<Noted<ShapeTensor>>,
    ) -> Result<ShapeTensor> {
        same_dtype(op, a, b)?;
        let dims = MatmulDims::transposed(&a.shape, &b.shape, layout.a_trans, layout.b_trans)?;
        let call = matmul::Call {
            dtype: a.dtype,
            dims,
            layout,
            epilogue,
        };
        let choices = matmul::choices_for(&self.selector, &call)?;
        let c = ShapeTensor::new(&dims.out_shape(&a.shape, &b.shape), a.dtype);
        let slices = ShapeTensor::new(&[choices.len(), c.shape.iter().product()], DType::F32);
        let mut binds = vec![a.id, b.id, c.id];
        binds.extend(bias.map(|t| t.id));
        let bias_len = bias.map(|t| t.shape.iter().product());
        let steps = match &choices[..] {
            [whole] => vec![Step {
                choice: whole.clone(),
                binds,
                writes: Writes::Product {
                    dims,
                    splits: 1,
                    c: c.id,
                },
            }],
            [cut, sum] => vec![
                Step {
                    choice: cut.clone(),
                    binds: vec![a.id, b.id, slices.id],
                    writes: Writes::Product {
                        dims,
                        splits: 2,
                        c: slices.id,
                    },
                },
                Step {
                    choice: sum.clone(),
                    binds: [slices.id, c.id]
                        .into_iter()
                        .chain(binds.get(3).copied())
                        .collect(),
                    writes: Writes::Sum {
                        c: c.id,
                        bias: bias_len,
                    },
                },
            ],
            _ => {
                return Err(Error::InvalidArgument {
                    op,
                    detail: format!("{} launches for one product", choices.len()),
                });
            }
        };
        self.record(op, steps, what(&c));
        Ok(c)
    }

    /// x · W + b over the last axis of x (as `matmul::linear` runs it).
    fn linear_with(
        &self,
        op: &'static str,
        [x, w, b]: [&ShapeTensor; 3],
        epilogue: Epilogue,
        what: impl FnOnce(&ShapeTensor) -> Option<Noted<ShapeTensor>>,
    ) -> Result<ShapeTensor> {
        let (rows, k) = shape::rows_cols("matmul", &x.shape)?;
        let flat = x.view(&[rows, k]);
        let n = last("matmul", &w.shape)?;
        if b.shape != [n] {
            return Err(Error::shape(
                "matmul",
                format!("bias has shape {:?}, expected [{n}]", b.shape),
            ));
        }
        let layout = matmul::Layout::default();
        let shaped = |y: &ShapeTensor| y.view(&shape::with_last(&x.shape, &y.shape));
        let y = self.product(op, [&flat, w], Some(b), layout, epilogue, |y| {
            what(&shaped(y))
        })?;
        Ok(shaped(&y))
    }

    /// A permutation or swap of `x` into `y`, taking the sum before it (`reduce_permute`) or, as
    /// `heads` says, the whole product before it (its heads form); else `family`'s launch.
    fn moved(
        &self,
        op: &'static str,
        x: &ShapeTensor,
        y: &ShapeTensor,
        heads: Option<[usize; 5]>,
        family: &'static str,
        what: Option<Noted<ShapeTensor>>,
    ) -> Result<()> {
        let next = Next::Moved { x, heads };
        let lower = |fold: &Fold| {
            let Fold::Sum { named, bias, .. } = fold else {
                return None;
            };
            let epilogue = if bias.is_some() {
                Epilogue::Bias
            } else {
                Epilogue::None
            };
            let call = reduce_permute::call(epilogue);
            self.selector.choose(&call, named.as_deref()).ok()
        };
        let own = || {
            let choice = self.elementwise_launch(family, x.dtype)?;
            Ok(Some(Self::plain(choice, &[x, y])))
        };
        self.record_folding(op, &next, lower, own, vec![x.id, y.id], what)
    }

    fn not_modelled(&self, op: &'static str) -> Error {
        Error::Unsupported {
            op,
            adapter: self.selector.profile.name.clone(),
            detail: "the plan-only backend models a forward pass; this op is not modelled".into(),
        }
    }
}

/// Notes `what` of the call that began at step `from`, as the GPU path notes its calls.
fn note(trace: &mut Trace<Step>, from: usize, what: Option<Noted<ShapeTensor>>) {
    if let Some(what) = what {
        let links = what.links();
        // Shared between threads natively, as the GPU path's notes are.
        #[allow(clippy::arc_with_non_send_sync)]
        trace.annotate(from, Arc::new(what), links);
    }
}

fn same_dtype(op: &'static str, a: &ShapeTensor, b: &ShapeTensor) -> Result<()> {
    if a.dtype != b.dtype {
        return Err(Error::shape(
            op,
            format!("operands of dtypes {:?} and {:?}", a.dtype, b.dtype),
        ));
    }
    Ok(())
}

fn rank4(op: &'static str, shape: &[usize]) -> Result<[usize; 4]> {
    match *shape {
        [a, b, c, d] => Ok([a, b, c, d]),
        _ => Err(Error::shape(
            op,
            format!("shape {shape:?}: expected rank 4"),
        )),
    }
}

fn last(op: &'static str, shape: &[usize]) -> Result<usize> {
    shape::non_empty(op, shape)?;
    Ok(shape[shape.len() - 1])
}
