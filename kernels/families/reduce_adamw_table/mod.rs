//! The weight gradients' split-K sums folded into the optimiser step that reads them. A
//! training step's weight-gradient products (Xᵀ · dY over every token) are small in M and N and
//! long in K, so on a large GPU they are cut along K, each followed by a sum launch
//! (`matmul_reduce`) into its place in the gradient arena, which nothing reads but the AdamW
//! table step at the end. A captured step is rewritten (`kiln::fusion`): the slices go into one
//! arena, the sums are dropped and this family's launch adds each cut gradient's slices as it
//! steps on it, writing the gradient too. The model code calls what it always did.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::adamw_table::{self, Checked};
use crate::gpu::Dispatch;
use crate::launch::{check_no_alias, check_operands, launch_elementwise};
use crate::optim::AdamW;
use crate::select::Choice;
use crate::tensor::Tensor;
use cpu::{Cut, check_count, check_cuts};

const OP: &str = "reduce_adamw_table";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

/// Checks the call and prepares its launch: `adamw_table`'s step of `p` by `g` (each group
/// packed alike), where `cuts[i]` (for tensor `i`, in the order given) names the slices of
/// `partials` (f32, flat) that sum to `g[i]`; those are summed, written to `g[i]` and stepped on.
#[allow(clippy::too_many_arguments)]
pub fn launch(
    p: &[Tensor],
    g: &[Tensor],
    m: &[Tensor],
    v: &[Tensor],
    h: &[AdamW],
    corrections: &Tensor,
    partials: &Tensor,
    cuts: &[Option<Cut>],
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let Checked {
        spans: [sp, sg, sm, sv],
        rows,
        order,
        params,
    } = adamw_table::check(p, g, m, v, h, corrections)?;
    check_operands(OP, &[&sp, partials])?;
    if partials.dtype() != DType::F32 || partials.shape().len() != 1 {
        return Err(Error::shape(
            OP,
            format!("the slices are {:?}: a flat f32 arena", partials.shape()),
        ));
    }
    check_count(cuts.len(), p.len())?;
    // The table's order: by start, as the rows are.
    let sorted_cuts: Vec<Option<Cut>> = order.iter().map(|&i| cuts[i]).collect();
    check_cuts(&rows, &sorted_cuts, partials.numel())?;
    // The gradients are written here too: no buffer the launch reads or writes may share them.
    check_no_alias(OP, &sg, &[partials, corrections])?;
    for written in [&sp, &sm, &sv] {
        check_no_alias(OP, written, &[partials])?;
    }
    let table: Vec<u32> = rows
        .iter()
        .zip(&sorted_cuts)
        .flat_map(|(r, c)| {
            let (slices, first) = c.map_or((0, 0), |c| (c.slices as u32, c.first as u32));
            let [a, b, lr, wd] = r.words();
            [a, b, lr, wd, slices, first, 0, 0]
        })
        .collect();
    let table = Tensor::from_u32(sp.gpu(), &[rows.len(), 8], &table)?;
    launch_elementwise(
        OP,
        &sp,
        None,
        sp.numel(),
        named,
        &[&sp, &sg, &sm, &sv, corrections, &table, partials],
        &params,
    )
}
