//! One AdamW step over many tensors in one launch, as PyTorch's multi-tensor optimisers do:
//! parameters, gradients and both moments each packed in one buffer at the same offsets
//! ([`Tensor::packed`]), and a table of each tensor's range, learning rate and weight decay.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::adamw::check_corrections;
use crate::gpu::Dispatch;
use crate::launch::{
    check_input_shape, check_no_alias, check_operands, launch_elementwise, record,
};
use crate::optim::AdamW;
use crate::select::Choice;
use crate::tensor::Tensor;
use cpu::{Row, check_table};

const OP: &str = "adamw_table";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Params {
    span: u32,
    tensors: u32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    _pad: [u32; 3],
}

/// The four groups an update reads and writes: parameters, gradients, first and second moments.
struct Groups<'a> {
    p: &'a [Tensor],
    g: &'a [Tensor],
    m: &'a [Tensor],
    v: &'a [Tensor],
}

impl Groups<'_> {
    /// Each group's spanning tensor, and each tensor's first element in it (one list: the
    /// groups must be packed alike).
    fn spans(&self) -> Result<([Tensor; 4], Vec<usize>)> {
        let n = self.p.len();
        if n == 0 || [self.g.len(), self.m.len(), self.v.len()] != [n; 3] {
            return Err(Error::shape(
                OP,
                format!(
                    "{n} parameters, {} gradients, {} and {} moments: give one of each per tensor",
                    self.g.len(),
                    self.m.len(),
                    self.v.len()
                ),
            ));
        }
        let mut spans = Vec::with_capacity(4);
        let mut first: Option<Vec<usize>> = None;
        for (name, group) in [("p", self.p), ("g", self.g), ("m", self.m), ("v", self.v)] {
            let parts: Vec<&Tensor> = group.iter().collect();
            let (span, at) = Tensor::span(&parts).ok_or_else(|| {
                Error::shape(
                    OP,
                    format!("the {name} tensors are not views of one buffer (pack them with Tensor::packed)"),
                )
            })?;
            match &first {
                Some(want)
                    if *want != at || spans.first().map(Tensor::numel) != Some(span.numel()) =>
                {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "the {name} tensors are packed unlike the parameters: the four groups need one layout"
                        ),
                    ));
                }
                _ => first = Some(at),
            }
            spans.push(span);
        }
        let [p, g, m, v]: [Tensor; 4] = spans
            .try_into()
            .map_err(|_| Error::shape(OP, "four groups expected"))?;
        Ok(([p, g, m, v], first.unwrap_or_default()))
    }
}

/// Whether `p`, `g`, `m` and `v` are packed alike (each group views of one buffer, the i-th
/// tensors of the four at the same place in their buffers): what [`adamw_table`] takes.
pub fn packed_alike(p: &[Tensor], g: &[Tensor], m: &[Tensor], v: &[Tensor]) -> bool {
    Groups { p, g, m, v }.spans().is_ok()
}

/// One AdamW step of every tensor `p[i]` with gradient `g[i]` and moments `m[i]`, `v[i]` (each
/// group packed alike, [`packed_alike`]) by `h[i]` (alike but for lr and weight decay), in one
/// launch. `corrections` (f32 [2]) must hold the step's bias corrections when it runs. Every
/// check runs before anything is launched.
pub fn adamw_table(
    p: &[Tensor],
    g: &[Tensor],
    m: &[Tensor],
    v: &[Tensor],
    h: &[AdamW],
    corrections: &Tensor,
) -> Result<Choice> {
    let first = p
        .first()
        .ok_or_else(|| Error::shape(OP, "no tensors to update"))?;
    record(first.gpu(), launch(p, g, m, v, h, corrections, None)?)
}

/// Checks the call and prepares its launch (the table uploaded once, here).
pub fn launch(
    p: &[Tensor],
    g: &[Tensor],
    m: &[Tensor],
    v: &[Tensor],
    h: &[AdamW],
    corrections: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let checked = check(p, g, m, v, h, corrections)?;
    let table: Vec<u32> = checked.rows.iter().flat_map(Row::words).collect();
    let [sp, sg, sm, sv] = &checked.spans;
    let table = Tensor::from_u32(sp.gpu(), &[checked.rows.len(), 4], &table)?;
    launch_elementwise(
        OP,
        sp,
        None,
        sp.numel(),
        named,
        &[sp, sg, sm, sv, corrections, &table],
        &checked.params,
    )
}

/// A checked table step: each group's spanning tensor (p, g, m, v), the rows sorted by start,
/// the index (in the order given) of each row's tensor, and the launch's parameter block.
pub(crate) struct Checked {
    pub spans: [Tensor; 4],
    pub rows: Vec<Row>,
    pub order: Vec<usize>,
    pub params: Params,
}

impl Row {
    /// The row's four table words: start, end, bits of lr, bits of weight decay.
    pub(crate) fn words(&self) -> [u32; 4] {
        [
            self.start as u32,
            (self.start + self.len) as u32,
            self.h.lr.to_bits(),
            self.h.weight_decay.to_bits(),
        ]
    }
}

/// Every check of a table step (shared with `reduce_adamw_table`), before anything is made.
pub(crate) fn check(
    p: &[Tensor],
    g: &[Tensor],
    m: &[Tensor],
    v: &[Tensor],
    h: &[AdamW],
    corrections: &Tensor,
) -> Result<Checked> {
    let groups = Groups { p, g, m, v };
    let ([sp, sg, sm, sv], at) = groups.spans()?;
    if h.len() != p.len() {
        return Err(Error::shape(
            OP,
            format!("{} hyper-parameter sets for {} tensors", h.len(), p.len()),
        ));
    }
    check_operands(OP, &[&sp, &sg, &sm, &sv])?;
    check_operands(OP, &[&sp, corrections])?;
    check_corrections(OP, corrections)?;
    if sp.dtype() != DType::F32 {
        return Err(Error::shape(OP, "the tensors must be f32"));
    }
    for (i, want) in p.iter().enumerate() {
        for (name, t) in [("g", &g[i]), ("m", &m[i]), ("v", &v[i])] {
            check_input_shape(OP, name, t, want.shape())?;
        }
    }
    // p, m and v are written while g (and each other) are read: four separate buffers.
    check_no_alias(OP, &sp, &[&sg, &sm, &sv, corrections])?;
    check_no_alias(OP, &sm, &[&sg, &sv, corrections])?;
    check_no_alias(OP, &sv, &[&sg, corrections])?;
    let span = sp.numel();
    let words = u32::try_from(span)
        .map_err(|_| Error::shape(OP, format!("{span} elements: more than a u32 counts")))?;
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by_key(|&i| at[i]);
    let rows: Vec<Row> = order
        .iter()
        .map(|&i| Row {
            start: at[i],
            len: p[i].numel(),
            h: h[i],
        })
        .collect();
    check_table(&rows, span)?;
    let params = Params {
        span: words,
        tensors: rows.len() as u32,
        beta1: h[0].beta1,
        beta2: h[0].beta2,
        eps: h[0].eps,
        _pad: [0; 3],
    };
    Ok(Checked {
        spans: [sp, sg, sm, sv],
        rows,
        order,
        params,
    })
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{adamw_table, packed_alike};
}
