//! adamw_table's cases: one optimiser step over three tensors packed in one buffer, with gaps
//! between them where the device's alignment puts them. Each run first copies the starting
//! parameters and moments back in (over the whole span, gaps included), then steps; only the
//! step is timed. The gaps must come out as they went in.
use crate::cases::prelude::*;

use super::cpu::{Row, adamw_table};
use crate::error::Error;
use crate::gpu::Dispatch;
use crate::optim::AdamW;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

/// The step the table families' cases take (`adamw_table`'s and `reduce_adamw_table`'s): three
/// tensors packed alike in four groups (parameters, gradients, first and second moments), each
/// group's span written with fresh inputs and kept beside it to restore it before each run, the
/// same values on the CPU, and learning rates and weight decays that differ per tensor.
pub(crate) struct Fixture {
    /// p, g, m, v: each group's tensors, views of its span.
    pub groups: [Vec<Tensor>; 4],
    pub spans: [Tensor; 4],
    /// Each span's starting values, on the GPU (to copy back) and on the CPU.
    starts: [Tensor; 4],
    pub arrays: [Array; 4],
    pub rows: Vec<Row>,
    pub h: [AdamW; 3],
    /// The shared settings (`h` but for lr and weight decay): its bias corrections.
    pub corrections: Tensor,
}

impl Fixture {
    pub fn new(gpu: &Gpu, z: &Sizes, inputs: &mut Inputs) -> Result<Fixture> {
        let n = z.elementwise;
        // The last ends on a whole vec4, so the span is whole vec4s: the resets are copies.
        let shapes = [
            vec![3, 7],
            vec![n / 2 + 1],
            vec![(n / 3).next_multiple_of(4).max(4)],
        ];
        let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let mut groups = Vec::with_capacity(4);
        let mut spans = Vec::with_capacity(4);
        let mut at = Vec::new();
        for _ in 0..4 {
            let parts = Tensor::packed(gpu, &refs, DType::F32)?;
            let views: Vec<&Tensor> = parts.iter().collect();
            let (span, starts) = Tensor::span(&views)
                .ok_or_else(|| Error::shape("adamw_table", "packed tensors without a span"))?;
            at = starts;
            groups.push(parts);
            spans.push(span);
        }
        let span = spans[0].numel();
        let mut starts = Vec::with_capacity(4);
        let mut arrays = Vec::with_capacity(4);
        for (i, s) in spans.iter().enumerate() {
            let data = inputs.data(span, DType::F32);
            // The second moment is a running mean of squares: never negative.
            let data: Vec<f32> = match i {
                3 => data.iter().map(|x| x.abs()).collect(),
                _ => data,
            };
            s.write(&data)?;
            starts.push(Tensor::from_slice(gpu, &[span], &data, DType::F32)?);
            arrays.push(Array::new(&[span], data)?);
        }
        let base = crate::families::adamw::cases::SETTINGS;
        let h = [(1e-3, 0.01), (2e-3, 0.0), (5e-4, 0.1)].map(|(lr, weight_decay)| AdamW {
            lr,
            weight_decay,
            ..base
        });
        let rows = (0..3)
            .map(|i| Row {
                start: at[i],
                len: groups[0][i].numel(),
                h: h[i],
            })
            .collect();
        Ok(Fixture {
            groups: four(groups)?,
            spans: four(spans)?,
            starts: four(starts)?,
            arrays: four(arrays)?,
            rows,
            h,
            corrections: crate::families::adamw::bias_corrections(gpu, &base)?,
        })
    }

    /// The copies that put the starting values back into the groups `which` (0 p, 1 g, 2 m, 3 v).
    pub fn resets(&self, which: &[usize]) -> Result<Vec<Dispatch>> {
        which
            .iter()
            .map(|&i| Ok(crate::families::copy::launch(&self.starts[i], &self.spans[i], None)?.0))
            .collect()
    }
}

/// The four groups' values as one array each.
fn four<T>(v: Vec<T>) -> Result<[T; 4]> {
    v.try_into()
        .map_err(|_| Error::shape("adamw_table", "four groups expected"))
}

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("adamw_table");
    let f = Fixture::new(gpu, z, &mut inputs)?;
    let [mut pa, ga, mut ma, mut va] = f.arrays.clone();
    adamw_table(&mut pa, &ga, &mut ma, &mut va, &f.rows)?;
    let span = f.spans[0].numel();
    let [sp, _, sm, sv] = &f.spans;
    Ok(vec![Case {
        family: "adamw_table",
        fixed: vec![dtype_is(DType::F32)],
        name: format!("adamw_table 3 tensors over {span} f32"),
        // m and v: 2.9× the H100's worst (4.2e-8; lavapipe and SwiftShader 0); p its own
        // bound, 10× the H100's 9.9e-10.
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [1.2e-7, 3e-3]),
        flops: 16.0 * span as f64,
        bytes: 7.0 * span as f64 * 4.0,
        outputs: vec![
            values(sp, &pa.data)
                .named("p")
                .within(proof_bound(z, DType::F32, [1e-8, 3e-3])),
            values(sm, &ma.data).named("m"),
            values(sv, &va.data).named("v"),
        ],
        launch: Box::new(move |name| {
            let [p, g, m, v] = &f.groups;
            let (step, choice) = super::launch(p, g, m, v, &f.h, &f.corrections, name)?;
            let mut all = f.resets(&[0, 2, 3])?;
            all.push(step);
            Ok(Launches {
                all,
                timed: vec![3],
                choice,
            })
        }),
    }])
}
