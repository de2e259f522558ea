//! reduce_adamw_table's cases: `adamw_table`'s step (its case fixture: three tensors packed in
//! one buffer, gaps between them), the first and last tensors stepped on the sum of their slices
//! in an arena of slices (3 and 5 of them, at places with gaps before them), the middle one on its
//! gradient as it is. Each run first copies the starting parameters, gradients and moments back
//! in, then steps; only the step is timed. The summed gradients are checked with the step.
use crate::cases::prelude::*;

use super::cpu::{Cut, reduce_adamw_table};
use crate::families::adamw_table::cases::Fixture;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("reduce_adamw_table");
    let f = Fixture::new(gpu, z, &mut inputs)?;
    // The first tensor's slices from element 64 (a gap before them), the last's after a gap of
    // 5 elements: the kernel reads each cut where the table says.
    let len = |i: usize| f.rows[i].len;
    let cuts = [
        Some(Cut {
            slices: 3,
            first: 64,
        }),
        None,
        Some(Cut {
            slices: 5,
            first: 64 + 3 * len(0) + 5,
        }),
    ];
    let elements = 64 + 3 * len(0) + 5 + 5 * len(2);
    let (partials, partials_a) = inputs.pair(gpu, &[elements], DType::F32)?;
    let [mut pa, mut ga, mut ma, mut va] = f.arrays.clone();
    reduce_adamw_table(
        &mut pa,
        &mut ga,
        &mut ma,
        &mut va,
        &f.rows,
        &partials_a,
        &cuts,
    )?;
    let span = f.spans[0].numel();
    let summed = 3 * len(0) + 5 * len(2);
    let [sp, sg, sm, sv] = &f.spans;
    Ok(vec![Case {
        family: "reduce_adamw_table",
        fixed: vec![dtype_is(DType::F32)],
        name: format!("reduce_adamw_table 3 tensors over {span}, 2 cut in 3 and 5, f32"),
        // m and v: 2.9× the H100's worst (4.2e-8; lavapipe and SwiftShader 0); p its own
        // bound, 10× the H100's 9.9e-10.
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [1.2e-7, 3e-3]),
        flops: 16.0 * span as f64 + summed as f64,
        bytes: (8.0 * span as f64 + summed as f64) * 4.0,
        outputs: vec![
            values(sp, &pa.data)
                .named("p")
                .within(proof_bound(z, DType::F32, [1e-8, 3e-3])),
            values(sg, &ga.data).named("g").exact_in(z),
            values(sm, &ma.data).named("m"),
            values(sv, &va.data).named("v"),
        ],
        launch: Box::new(move |name| {
            let [p, g, m, v] = &f.groups;
            let (step, choice) =
                super::launch(p, g, m, v, &f.h, &f.corrections, &partials, &cuts, name)?;
            let mut all = f.resets(&[0, 1, 2, 3])?;
            all.push(step);
            Ok(Launches {
                all,
                timed: vec![4],
                choice,
            })
        }),
    }])
}
