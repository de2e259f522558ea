//! reduce_adamw_table's cases: one optimiser step over three tensors packed in one buffer (gaps
//! between them where the device's alignment puts them), the first and last stepped on the sum
//! of their slices in an arena of slices (3 and 5 of them, at aligned places with gaps), the
//! middle one on its gradient as it is. Each run first copies the starting parameters, gradients
//! and moments back in (over the whole span, gaps included), then steps; only the step is timed.
//! The summed gradients are checked as well as the step.
use crate::cases::prelude::*;

use super::cpu::{Cut, reduce_adamw_table};
use crate::error::Error;
use crate::families::adamw_table::cpu::Row;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    use crate::families::copy::plan as plan_copy;
    let mut inputs = Inputs::for_family("reduce_adamw_table");
    let n = z.elementwise;
    // The last ends on a whole vec4, so the span is whole vec4s: the resets are copies.
    let shapes = [
        vec![3, 7],
        vec![n / 2 + 1],
        vec![(n / 3).next_multiple_of(4).max(4)],
    ];
    let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    let packed = || -> Result<(Vec<Tensor>, Tensor, Vec<usize>)> {
        let parts = Tensor::packed(gpu, &refs, DType::F32)?;
        let views: Vec<&Tensor> = parts.iter().collect();
        let (span, at) = Tensor::span(&views)
            .ok_or_else(|| Error::shape("reduce_adamw_table", "packed tensors without a span"))?;
        Ok((parts, span, at))
    };
    let (p, sp, at) = packed()?;
    let (g, sg, _) = packed()?;
    let (m, sm, _) = packed()?;
    let (v, sv, _) = packed()?;
    let span = sp.numel();
    let start = |t: &Tensor, data: Vec<f32>| -> Result<(Tensor, Array)> {
        let fresh = Tensor::from_slice(gpu, &[span], &data, DType::F32)?;
        t.write(&data)?;
        Ok((fresh, Array::new(&[span], data)?))
    };
    let (p0, mut pa) = start(&sp, inputs.data(span, DType::F32))?;
    let (g0, mut ga) = start(&sg, inputs.data(span, DType::F32))?;
    let (m0, mut ma) = start(&sm, inputs.data(span, DType::F32))?;
    let v_start = inputs
        .data(span, DType::F32)
        .iter()
        .map(|x| x.abs())
        .collect();
    let (v0, mut va) = start(&sv, v_start)?;
    // Slices of the first tensor from element 64 (a gap before it), of the last after a gap of
    // 5 elements: the kernel reads each cut where the table says.
    let len = |i: usize| p[i].numel();
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
    let base = crate::optim::AdamW {
        lr: 1e-3,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay: 0.01,
        step: 10,
    };
    // Learning rates and weight decays that differ per tensor, as the table allows.
    let h =
        [(1e-3, 0.01), (2e-3, 0.0), (5e-4, 0.1)].map(|(lr, weight_decay)| crate::optim::AdamW {
            lr,
            weight_decay,
            ..base
        });
    let rows: Vec<Row> = (0..3)
        .map(|i| Row {
            start: at[i],
            len: len(i),
            h: h[i],
        })
        .collect();
    reduce_adamw_table(
        &mut pa,
        &mut ga,
        &mut ma,
        &mut va,
        &rows,
        &partials_a,
        &cuts,
    )?;
    let corrections = crate::families::adamw::bias_corrections(gpu, &base)?;
    let summed = 3 * len(0) + 5 * len(2);
    Ok(vec![Case {
        family: "reduce_adamw_table",
        fixed: vec![dtype_is(DType::F32)],
        name: format!("reduce_adamw_table 3 tensors over {span}, 2 cut in 3 and 5, f32"),
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, 1e-6),
        flops: 16.0 * span as f64 + summed as f64,
        bytes: (8.0 * span as f64 + summed as f64) * 4.0,
        outputs: vec![
            values(&sp, &pa.data),
            values(&sg, &ga.data),
            values(&sm, &ma.data),
            values(&sv, &va.data),
        ],
        plan: Box::new(move |name| {
            let (step, choice) =
                super::plan(&p, &g, &m, &v, &h, &corrections, &partials, &cuts, name)?;
            Ok(Planned {
                all: vec![
                    plan_copy(&p0, &sp, None)?.0,
                    plan_copy(&g0, &sg, None)?.0,
                    plan_copy(&m0, &sm, None)?.0,
                    plan_copy(&v0, &sv, None)?.0,
                    step,
                ],
                timed: vec![4],
                choice,
            })
        }),
    }])
}
