//! adamw's cases: one optimiser step in place. Each run first copies the starting parameters
//! and moments back in, then steps; only the step is timed.
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

/// The settings of the AdamW cases (the table families' too): a step well past the first.
pub(crate) const SETTINGS: crate::optim::AdamW = crate::optim::AdamW {
    lr: 1e-3,
    beta1: 0.9,
    beta2: 0.999,
    eps: 1e-8,
    weight_decay: 0.01,
    step: 10,
};

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    use crate::families::copy::launch as launch_copy;
    let mut inputs = Inputs::for_family("adamw");
    // Whole vec4s: the resets are copies.
    let n = z.elementwise.next_multiple_of(4);
    let (p0, mut pa) = inputs.pair(gpu, &[n], DType::F32)?;
    let (g, ga) = inputs.pair(gpu, &[n], DType::F32)?;
    let (m0, mut ma) = inputs.pair(gpu, &[n], DType::F32)?;
    let v_start: Vec<f32> = inputs.data(n, DType::F32).iter().map(|x| x.abs()).collect();
    let v0 = Tensor::from_slice(gpu, &[n], &v_start, DType::F32)?;
    let mut va = Array::new(&[n], v_start)?;
    let h = SETTINGS;
    cpu::adamw(&mut pa, &ga, &mut ma, &mut va, &h)?;
    let corrections = super::bias_corrections(gpu, &h)?;
    let (o_p, p) = out(gpu, &[n], DType::F32, pa.data)?;
    let (o_m, m) = out(gpu, &[n], DType::F32, ma.data)?;
    let (o_v, v) = out(gpu, &[n], DType::F32, va.data)?;
    Ok(vec![Case {
        family: "adamw",
        fixed: vec![dtype_is(DType::F32)],
        name: format!("adamw {n} f32"),
        // m and v: 2.9× the H100's worst (4.2e-8; lavapipe and SwiftShader 0); p its own
        // bound, 10× the H100's 9.9e-10.
        tolerance: tolerance(z, DType::F32, CAMPAIGN_TOLERANCE, [1.2e-7, 3e-3]),
        flops: 16.0 * n as f64,
        bytes: 7.0 * n as f64 * 4.0,
        outputs: vec![
            o_p.named("p")
                .within(proof_bound(z, DType::F32, [1e-8, 3e-3])),
            o_m.named("m"),
            o_v.named("v"),
        ],
        launch: Box::new(move |name| {
            let (step, choice) =
                crate::families::adamw::launch(&p, &g, &m, &v, &h, &corrections, name)?;
            Ok(Launches {
                all: vec![
                    launch_copy(&p0, &p, None)?.0,
                    launch_copy(&m0, &m, None)?.0,
                    launch_copy(&v0, &v, None)?.0,
                    step,
                ],
                timed: vec![3],
                choice,
            })
        }),
    }])
}
