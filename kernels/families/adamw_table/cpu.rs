//! The CPU reference of one AdamW step over a table of tensors packed in one arena: `adamw`'s
//! rule applied to each row's elements.

use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};
use crate::families::adamw::cpu::step_elements;
use crate::optim::AdamW;

const OP: &str = "adamw_table";

/// One tensor of an arena: elements `start .. start + len`, and its step's hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    pub start: usize,
    pub len: usize,
    pub h: AdamW,
}

/// Checks a table against an arena of `span` elements: at least one row; rows non-empty,
/// sorted by start, apart and inside the span; valid hyper-parameters that share betas, eps
/// and step (the kernel reads only lr and weight decay per row).
pub fn check_table(rows: &[Row], span: usize) -> Result<()> {
    let Some(first) = rows.first() else {
        return Err(Error::shape(OP, "the table has no rows"));
    };
    let mut end = 0;
    for (i, r) in rows.iter().enumerate() {
        r.h.check(OP)?;
        let shared = |h: &AdamW| (h.beta1, h.beta2, h.eps, h.step);
        if shared(&r.h) != shared(&first.h) {
            return Err(Error::InvalidArgument {
                op: OP,
                detail: format!(
                    "row {i} has betas, eps or step unlike row 0's ({:?} against {:?}): one launch takes one of each",
                    shared(&r.h),
                    shared(&first.h)
                ),
            });
        }
        if r.len == 0 || r.start < end || r.start + r.len > span {
            return Err(Error::shape(
                OP,
                format!(
                    "row {i} covers elements {}..{}: rows must be non-empty, sorted, apart and within the {span} elements",
                    r.start,
                    r.start + r.len
                ),
            ));
        }
        end = r.start + r.len;
    }
    Ok(())
}

/// One AdamW step on each row's elements of the flat arenas `p`, `g`, `m` and `v` (one
/// length); elements outside every row are left as they are.
pub fn adamw_table(
    p: &mut Array,
    g: &Array,
    m: &mut Array,
    v: &mut Array,
    rows: &[Row],
) -> Result<()> {
    for (name, t) in [("p", &*p), ("g", g), ("m", &*m), ("v", &*v)] {
        check_array(OP, t)?;
        if t.shape.len() != 1 || t.shape != p.shape {
            return Err(Error::shape(
                OP,
                format!(
                    "{name} has shape {:?}; the arenas are flat and alike, p is {:?}",
                    t.shape, p.shape
                ),
            ));
        }
    }
    check_table(rows, p.data.len())?;
    for r in rows {
        let at = r.start..r.start + r.len;
        step_elements(
            &mut p.data[at.clone()],
            &g.data[at.clone()],
            &mut m.data[at.clone()],
            &mut v.data[at],
            &r.h,
        );
    }
    Ok(())
}
