//! The CPU reference: each cut row's gradient summed from its slices in order (as
//! `matmul_reduce` sums them), then `adamw_table`'s step over every row.

use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};
use crate::families::adamw_table::cpu::{Row, adamw_table};

const OP: &str = "reduce_adamw_table";

/// Where a row's gradient comes from: `slices` K slices of its product, [slices, len] from
/// element `first` of the slices' arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    pub slices: usize,
    pub first: usize,
}

/// Checks that there is a cut (or none) per tensor.
pub fn check_count(cuts: usize, tensors: usize) -> Result<()> {
    if cuts == tensors {
        return Ok(());
    }
    Err(Error::shape(
        OP,
        format!("{cuts} cuts for {tensors} tensors: give one (or none) per tensor"),
    ))
}

/// Checks `cuts` (one per row, `None` for a gradient taken as it is) against rows over an arena
/// of slices `partials` elements long.
pub fn check_cuts(rows: &[Row], cuts: &[Option<Cut>], partials: usize) -> Result<()> {
    check_count(cuts.len(), rows.len())?;
    for (i, (r, c)) in rows.iter().zip(cuts).enumerate() {
        let Some(c) = c else { continue };
        let end = c
            .slices
            .checked_mul(r.len)
            .and_then(|n| n.checked_add(c.first));
        if c.slices == 0 || end.is_none_or(|end| end > partials || end > u32::MAX as usize) {
            return Err(Error::shape(
                OP,
                format!(
                    "tensor {i}'s {} slices of {} from element {} do not lie within the {partials} elements of the slices",
                    c.slices, r.len, c.first
                ),
            ));
        }
    }
    Ok(())
}

/// `adamw_table` over `rows` of the flat arenas, each row with a cut first given the sum of its
/// slices as its gradient (written to `g`).
pub fn reduce_adamw_table(
    p: &mut Array,
    g: &mut Array,
    m: &mut Array,
    v: &mut Array,
    rows: &[Row],
    partials: &Array,
    cuts: &[Option<Cut>],
) -> Result<()> {
    check_array(OP, partials)?;
    check_cuts(rows, cuts, partials.data.len())?;
    if g.data.len() != p.data.len() {
        return Err(Error::shape(OP, "g and p are arenas of one length"));
    }
    for (r, c) in rows.iter().zip(cuts) {
        let Some(c) = c else { continue };
        for j in 0..r.len {
            let mut sum = 0.0f32;
            for s in 0..c.slices {
                sum += partials.data[c.first + s * r.len + j];
            }
            g.data[r.start + j] = sum;
        }
    }
    adamw_table(p, g, m, v, rows)
}
