//! The training ops on the GPU against their CPU references: gelu and layernorm backward,
//! cross-entropy, AdamW, embedding and its gradient, swap_axes12. Random inputs from a seeded
//! generator, outputs poisoned with NaN first, every variant the adapter offers, shapes that are
//! not multiples of any workgroup (37 rows, 83 columns, a vocabulary of 67), and the errors and
//! NaN markers bad input gives. Runs on lavapipe in CI; no adapter is a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{assert_close, gpu, poisoned, read, scaled_input as input, tolerance, variants};
use kiln::cpu::{self, Array};
use kiln::ops::layernorm_backward::BackwardVariants;
use kiln::optim::AdamW;
use kiln::{DType, Error, Tensor, ops};
use rand::{Rng, SeedableRng, rngs::StdRng};

const ROWS: usize = 37;
const COLS: usize = 83;
const VOCAB: usize = 67;

/// Seeded ids below `below`, each id likely to repeat.
fn ids(seed: u64, n: usize, below: usize) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(0..below as u32)).collect()
}

fn ids_tensor(ids: &[u32]) -> Tensor {
    Tensor::from_u32(gpu(), &[ids.len()], ids).unwrap()
}

/// The error of a call that must fail.
fn refused<T: std::fmt::Debug>(r: kiln::Result<T>) -> Error {
    r.expect_err("expected an error")
}

#[test]
fn gelu_backward_every_variant() {
    // Inputs over [-4, 4): the erf approximation's tails and the curved middle.
    let shapes: [&[usize]; 3] = [&[ROWS, COLS], &[1], &[3, 5, 257]];
    for dtype in [DType::F32, DType::F16] {
        for v in variants("gelu_backward", dtype) {
            for (i, shape) in shapes.iter().enumerate() {
                let (x, x_cpu) = input(10 + i as u64, shape, 4.0, dtype);
                let (dy, dy_cpu) = input(20 + i as u64, shape, 1.0, dtype);
                let want = cpu::gelu_backward(&x_cpu, &dy_cpu).unwrap();
                let dx = poisoned(shape, dtype);
                ops::gelu_backward_into(&x, &dy, &dx, Some(&v.name)).unwrap();
                assert_close(
                    &format!("gelu_backward {} {shape:?}", v.name),
                    &read(&dx),
                    &want.data,
                    tolerance(dtype),
                );
            }
        }
    }
    let (x, _) = input(30, &[4, 5], 1.0, DType::F32);
    assert_eq!(ops::gelu_backward(&x, &x).unwrap().shape(), &[4, 5]);
}

#[test]
fn layernorm_backward_every_variant_of_both_kernels() {
    let rows_vs = variants("layernorm_backward", DType::F32);
    let cols_vs = variants("layernorm_params_backward", DType::F32);
    let shapes: [&[usize]; 3] = [&[ROWS, COLS], &[2, 3, 300], &[1, 7]];
    // Every row-kernel variant once, the column-kernel variants taken in turn beside them.
    let pairs = rows_vs.len().max(cols_vs.len());
    for k in 0..pairs {
        let (rv, cv) = (&rows_vs[k % rows_vs.len()], &cols_vs[k % cols_vs.len()]);
        for (i, shape) in shapes.iter().enumerate() {
            let cols = shape[shape.len() - 1];
            let seed = 100 + 10 * i as u64;
            // Offset and spread the inputs: the centring must hold up away from zero.
            let (x, x_cpu) = input(seed, shape, 3.0, DType::F32);
            let (g, g_cpu) = input(seed + 1, &[cols], 1.5, DType::F32);
            let (dy, dy_cpu) = input(seed + 2, shape, 1.0, DType::F32);
            // The accumulate variants add a residual's gradient to dX as they write it.
            let (acc, acc_cpu) = input(seed + 3, shape, 1.0, DType::F32);
            let adds = rv.get("accumulate") == Some(&kiln::contract::Param::Bool(true));
            let (want_dx, want_dg, want_db) = if adds {
                cpu::layernorm_backward_add(&x_cpu, &g_cpu, &dy_cpu, &acc_cpu, 1e-5).unwrap()
            } else {
                cpu::layernorm_backward(&x_cpu, &g_cpu, &dy_cpu, 1e-5).unwrap()
            };
            let (dx, dg, db) = (
                poisoned(shape, DType::F32),
                poisoned(&[cols], DType::F32),
                poisoned(&[cols], DType::F32),
            );
            let named = BackwardVariants {
                rows: Some(&rv.name),
                params: Some(&cv.name),
            };
            let plan = if adds {
                ops::layernorm_backward::launch_add(&x, &g, &dy, &acc, &dx, &dg, &db, 1e-5, named)
            } else {
                ops::layernorm_backward::launch(&x, &g, &dy, &dx, &dg, &db, 1e-5, named)
            }
            .unwrap();
            let refs: Vec<&kiln::Dispatch> = plan.dispatches.iter().collect();
            gpu().submit(&refs).unwrap();
            let case = format!("layernorm_backward {} + {} {shape:?}", rv.name, cv.name);
            assert_close(&format!("{case} dx"), &read(&dx), &want_dx.data, 1e-5);
            assert_close(&format!("{case} dgamma"), &read(&dg), &want_dg.data, 1e-5);
            assert_close(&format!("{case} dbeta"), &read(&db), &want_db.data, 1e-5);
            // The scratch holds each row's mean and 1/std, as the forward computes them.
            let stats = read(&plan.stats);
            let (rows, _) = kiln::shape::rows_cols("test", shape).unwrap();
            let mut want_stats = Vec::new();
            for r in 0..rows {
                let row = &x_cpu.data[r * cols..][..cols];
                let mean = row.iter().sum::<f32>() / cols as f32;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / cols as f32;
                want_stats.extend([mean, 1.0 / (var + 1e-5).sqrt()]);
            }
            assert_close(&format!("{case} stats"), &stats, &want_stats, 1e-5);
        }
    }
    println!(
        "layernorm_backward: {} row and {} column variants checked",
        rows_vs.len(),
        cols_vs.len()
    );
}

#[test]
fn layernorm_backward_by_the_selector_is_deterministic() {
    let (x, x_cpu) = input(200, &[ROWS, COLS], 2.0, DType::F32);
    let (g, g_cpu) = input(201, &[COLS], 1.0, DType::F32);
    let (dy, dy_cpu) = input(202, &[ROWS, COLS], 1.0, DType::F32);
    let (dx, dg, db) = ops::layernorm_backward(&x, &g, &dy, 1e-5).unwrap();
    let (want_dx, want_dg, want_db) =
        cpu::layernorm_backward(&x_cpu, &g_cpu, &dy_cpu, 1e-5).unwrap();
    assert_eq!(
        (dx.shape(), dg.shape(), db.shape()),
        (&[ROWS, COLS][..], &[COLS][..], &[COLS][..])
    );
    assert_close("layernorm_backward dx", &read(&dx), &want_dx.data, 1e-5);
    assert_close("layernorm_backward dgamma", &read(&dg), &want_dg.data, 1e-5);
    assert_close("layernorm_backward dbeta", &read(&db), &want_db.data, 1e-5);
    // One thread per column adds the rows in order: every run gives the same bits.
    let (_, dg2, db2) = ops::layernorm_backward(&x, &g, &dy, 1e-5).unwrap();
    assert_eq!(read(&dg), read(&dg2));
    assert_eq!(read(&db), read(&db2));
}

#[test]
fn cross_entropy_every_variant() {
    // Logits ×4: peaked rows; [2, 5, 130] has leading extents that flatten to 10 rows; a
    // vocabulary of 1 gives a loss and gradient of exactly zero.
    let shapes: [&[usize]; 4] = [&[ROWS, VOCAB], &[2, 5, 130], &[3, 1], &[1, 300]];
    for v in variants("cross_entropy", DType::F32) {
        for (i, shape) in shapes.iter().enumerate() {
            let vocab = shape[shape.len() - 1];
            let rows = shape.iter().product::<usize>() / vocab;
            let (logits, logits_cpu) = input(300 + i as u64, shape, 4.0, DType::F32);
            let targets = ids(310 + i as u64, rows, vocab);
            let scale = 1.0 / rows as f32;
            let (want_loss, want_d) = cpu::cross_entropy(&logits_cpu, &targets, scale).unwrap();
            let loss = poisoned(&[rows], DType::F32);
            let d = poisoned(shape, DType::F32);
            ops::cross_entropy_into(
                &logits,
                &ids_tensor(&targets),
                &loss,
                &d,
                scale,
                Some(&v.name),
            )
            .unwrap();
            let case = format!("cross_entropy {} {shape:?}", v.name);
            assert_close(&format!("{case} loss"), &read(&loss), &want_loss.data, 1e-5);
            assert_close(&format!("{case} dlogits"), &read(&d), &want_d.data, 1e-5);
        }
    }
    let (logits, _) = input(320, &[4, 9], 1.0, DType::F32);
    let (loss, d) = ops::cross_entropy(&logits, &ids_tensor(&[0, 8, 3, 3]), 0.25).unwrap();
    assert_eq!((loss.shape(), d.shape()), (&[4][..], &[4, 9][..]));
}

#[test]
fn cross_entropy_target_out_of_range_is_nan_on_gpu_and_an_error_on_cpu() {
    let (logits, logits_cpu) = input(330, &[ROWS, VOCAB], 2.0, DType::F32);
    let mut targets = ids(331, ROWS, VOCAB);
    targets[5] = VOCAB as u32;
    targets[20] = u32::MAX;
    let e = cpu::cross_entropy(&logits_cpu, &targets, 1.0).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    for v in variants("cross_entropy", DType::F32) {
        let loss = poisoned(&[ROWS], DType::F32);
        let d = poisoned(&[ROWS, VOCAB], DType::F32);
        ops::cross_entropy_into(
            &logits,
            &ids_tensor(&targets),
            &loss,
            &d,
            1.0,
            Some(&v.name),
        )
        .unwrap();
        let (loss, d) = (read(&loss), read(&d));
        // The bad rows are NaN throughout; the others are right (written, not poison).
        let mut fixed = targets.clone();
        fixed[5] = 0;
        fixed[20] = 0;
        let (want_loss, want_d) = cpu::cross_entropy(&logits_cpu, &fixed, 1.0).unwrap();
        for r in 0..ROWS {
            let row = &d[r * VOCAB..][..VOCAB];
            if r == 5 || r == 20 {
                assert!(loss[r].is_nan(), "{}: loss of bad row {r}", v.name);
                assert!(row.iter().all(|x| x.is_nan()), "{}: row {r}", v.name);
            } else {
                assert_close(
                    &format!("{} row {r}", v.name),
                    row,
                    &want_d.data[r * VOCAB..][..VOCAB],
                    1e-5,
                );
                assert!(
                    (loss[r] - want_loss.data[r]).abs() <= 1e-5 * want_loss.data[r].abs().max(1.0)
                );
            }
        }
    }
}

fn hyper(step: u32) -> AdamW {
    AdamW {
        lr: 1e-2,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay: 0.01,
        step,
    }
}

#[test]
fn adamw_every_variant_over_several_steps() {
    let shape = [ROWS, COLS];
    for v in variants("adamw", DType::F32) {
        let (p, mut p_cpu) = input(400, &shape, 1.0, DType::F32);
        // Moments start at zero, as in training.
        let m = Tensor::full(gpu(), &shape, 0.0, DType::F32).unwrap();
        let vv = Tensor::full(gpu(), &shape, 0.0, DType::F32).unwrap();
        let mut m_cpu = Array::new(&shape, vec![0.0; ROWS * COLS]).unwrap();
        let mut v_cpu = m_cpu.clone();
        for step in 1..=6 {
            let (g, g_cpu) = input(410 + u64::from(step), &shape, 0.5, DType::F32);
            let h = hyper(step);
            let corrections = ops::bias_corrections(gpu(), &h).unwrap();
            ops::adamw_into(&p, &g, &m, &vv, &h, &corrections, Some(&v.name)).unwrap();
            cpu::adamw(&mut p_cpu, &g_cpu, &mut m_cpu, &mut v_cpu, &h).unwrap();
        }
        let case = format!("adamw {} after 6 steps", v.name);
        assert_close(&format!("{case} p"), &read(&p), &p_cpu.data, 1e-5);
        assert_close(&format!("{case} m"), &read(&m), &m_cpu.data, 1e-5);
        assert_close(&format!("{case} v"), &read(&vv), &v_cpu.data, 1e-5);
    }
    // Not a multiple of any workgroup, and one element: the tail is updated too.
    for n in [1, 257] {
        let (p, mut p_cpu) = input(420, &[n], 1.0, DType::F32);
        let (g, g_cpu) = input(421, &[n], 1.0, DType::F32);
        let (m, mut m_cpu) = input(422, &[n], 0.1, DType::F32);
        let (vv, v_cpu) = input(423, &[n], 0.1, DType::F32);
        // v ≥ 0, as a second moment is.
        let v_pos: Vec<f32> = v_cpu.data.iter().map(|x| x.abs()).collect();
        vv.write(&v_pos).unwrap();
        let mut v_cpu = Array::new(&[n], v_pos).unwrap();
        ops::adamw(&p, &g, &m, &vv, &hyper(3)).unwrap();
        cpu::adamw(&mut p_cpu, &g_cpu, &mut m_cpu, &mut v_cpu, &hyper(3)).unwrap();
        assert_close(&format!("adamw [{n}] p"), &read(&p), &p_cpu.data, 1e-5);
        assert_close(&format!("adamw [{n}] v"), &read(&vv), &v_cpu.data, 1e-5);
    }
}

#[test]
fn adamw_refuses_bad_calls_before_launching() {
    let (p, _) = input(430, &[5, 7], 1.0, DType::F32);
    let (g, _) = input(431, &[5, 7], 1.0, DType::F32);
    let (m, _) = input(432, &[5, 7], 0.1, DType::F32);
    let vv = Tensor::full(gpu(), &[5, 7], 0.01, DType::F32).unwrap();
    let before = read(&p);
    let e = refused(ops::adamw(&p, &g, &m, &vv, &hyper(0)));
    assert!(
        matches!(e, Error::InvalidArgument { op: "adamw", .. }) && e.to_string().contains("step"),
        "{e}"
    );
    for lr in [f32::NAN, f32::INFINITY] {
        let h = AdamW { lr, ..hyper(1) };
        let e = refused(ops::adamw(&p, &g, &m, &vv, &h));
        assert!(e.to_string().contains("lr"), "{e}");
    }
    let (g_bad, _) = input(433, &[7, 5], 1.0, DType::F32);
    let e = refused(ops::adamw(&p, &g_bad, &m, &vv, &hyper(1)));
    assert!(
        matches!(e, Error::Shape { .. }) && e.to_string().contains("g has shape [7, 5]"),
        "{e}"
    );
    // m and v given as one tensor: each would overwrite the other's state.
    let e = refused(ops::adamw(&p, &g, &m, &m, &hyper(1)));
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    assert_eq!(read(&p), before, "a refused update must not touch p");
}

/// A device of the test's own, for counting what a call launches.
fn fresh() -> kiln::Gpu {
    pollster::block_on(kiln::Gpu::new(&kiln::GpuOptions::default())).unwrap()
}

/// Shapes packed together for the AdamW table: odd sizes, so that alignment leaves gaps.
const PACKED: [&[usize]; 4] = [&[5, 7], &[1], &[ROWS, COLS], &[83]];

/// What the gaps between packed tensors hold: finite, so that an update written there shows.
const GAP: f32 = 1234.5;

/// Tensors of `PACKED` in one buffer, its gaps filled with `GAP`, each tensor filled from
/// `seed` (scaled by `gain`; absolute values where `positive`): the views, their CPU copies and
/// the span they make.
fn packed_group(
    gpu: &kiln::Gpu,
    seed: u64,
    gain: f32,
    positive: bool,
) -> (Vec<Tensor>, Vec<Array>, Tensor) {
    let parts = Tensor::packed(gpu, &PACKED, DType::F32).unwrap();
    let views: Vec<&Tensor> = parts.iter().collect();
    let (span, _) = Tensor::span(&views).unwrap();
    span.write(&vec![GAP; span.numel()]).unwrap();
    let arrays = refill(&parts, seed, gain, positive);
    (parts, arrays, span)
}

/// Writes fresh seeded values into each packed tensor; returns them as arrays.
fn refill(parts: &[Tensor], seed: u64, gain: f32, positive: bool) -> Vec<Array> {
    parts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let data: Vec<f32> = common::random(seed + i as u64, t.numel())
                .into_iter()
                .map(|x| if positive { (x * gain).abs() } else { x * gain })
                .collect();
            t.write(&data).unwrap();
            Array::new(t.shape(), data).unwrap()
        })
        .collect()
}

/// Per-tensor hyper-parameters of one step: learning rates that differ, no weight decay on
/// the 1-D tensors (as a model's training step sets it).
fn table_hypers(parts: &[Tensor], step: u32) -> Vec<AdamW> {
    parts
        .iter()
        .enumerate()
        .map(|(i, t)| AdamW {
            lr: 1e-2 / (1 + i) as f32,
            weight_decay: if t.shape().len() > 1 { 0.01 } else { 0.0 },
            ..hyper(step)
        })
        .collect()
}

/// Whether every element of `span` outside `parts` still holds `GAP`: the gaps were not touched.
fn gaps_untouched(span: &Tensor, parts: &[Tensor]) -> bool {
    let views: Vec<&Tensor> = parts.iter().collect();
    let (_, at) = Tensor::span(&views).unwrap();
    let mut inside = vec![false; span.numel()];
    for (t, &start) in parts.iter().zip(&at) {
        inside[start..start + t.numel()].fill(true);
    }
    read(span)
        .iter()
        .zip(inside)
        .all(|(x, used)| used || *x == GAP)
}

#[test]
fn adamw_table_every_variant_over_several_steps() {
    for v in variants("adamw_table", DType::F32) {
        let (p, mut p_cpu, p_span) = packed_group(gpu(), 440, 1.0, false);
        let (g, _, _) = packed_group(gpu(), 450, 0.5, false);
        // Moments start from values of their own (a step well into training), v ≥ 0.
        let (m, mut m_cpu, m_span) = packed_group(gpu(), 460, 0.1, false);
        let (vv, mut v_cpu, v_span) = packed_group(gpu(), 470, 0.1, true);
        for step in 1..=6 {
            let g_cpu = refill(&g, 480 + 10 * u64::from(step), 0.5, false);
            let h = table_hypers(&p, step);
            let corrections = ops::bias_corrections(gpu(), &h[0]).unwrap();
            let (launch, _) =
                ops::adamw_table::launch(&p, &g, &m, &vv, &h, &corrections, Some(&v.name)).unwrap();
            gpu().record(&[&launch]).unwrap();
            for i in 0..p.len() {
                cpu::adamw(
                    &mut p_cpu[i],
                    &g_cpu[i],
                    &mut m_cpu[i],
                    &mut v_cpu[i],
                    &h[i],
                )
                .unwrap();
            }
        }
        for i in 0..p.len() {
            let case = format!(
                "adamw_table {} tensor {i} {:?} after 6 steps",
                v.name, PACKED[i]
            );
            assert_close(&format!("{case} p"), &read(&p[i]), &p_cpu[i].data, 1e-5);
            assert_close(&format!("{case} m"), &read(&m[i]), &m_cpu[i].data, 1e-5);
            assert_close(&format!("{case} v"), &read(&vv[i]), &v_cpu[i].data, 1e-5);
        }
        for (name, span, parts) in [("p", &p_span, &p), ("m", &m_span, &m), ("v", &v_span, &vv)] {
            assert!(
                gaps_untouched(span, parts),
                "{}: a gap of {name} was written",
                v.name
            );
        }
    }
}

/// `arrays` on the GPU path: packed together, or each in a buffer of its own.
fn upload(b: &kiln::GpuBackend, arrays: &[Array], packed: bool) -> Vec<Tensor> {
    use kiln::Backend;
    if packed {
        b.upload_together(arrays).unwrap()
    } else {
        arrays.iter().map(|x| b.upload(x).unwrap()).collect()
    }
}

#[test]
fn adamw_together_is_one_launch_when_packed_and_one_per_tensor_when_not() {
    use kiln::backend::{Backend, GpuBackend};
    // A device of its own: other tests' launches would count.
    let gpu = &fresh();
    let b = GpuBackend { gpu: gpu.clone() };
    let arrays = |seed: u64, gain: f32| -> Vec<Array> {
        PACKED
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n = s.iter().product();
                let data = common::random(seed + i as u64, n)
                    .iter()
                    .map(|x| (x * gain).abs())
                    .collect();
                Array::new(s, data).unwrap()
            })
            .collect()
    };
    let (p0, g0, m0, v0) = (
        arrays(600, 1.0),
        arrays(610, 0.5),
        arrays(620, 0.1),
        arrays(630, 0.1),
    );
    let h = {
        let (parts, _, _) = packed_group(gpu, 640, 1.0, false);
        table_hypers(&parts, 4)
    };
    let corrections = b.bias_corrections(&h[0]).unwrap();
    let mut want = (p0.clone(), m0.clone(), v0.clone());
    for i in 0..p0.len() {
        cpu::adamw(
            &mut want.0[i],
            &g0[i],
            &mut want.1[i],
            &mut want.2[i],
            &h[i],
        )
        .unwrap();
    }
    for packed in [true, false] {
        let up = |a: &[Array]| upload(&b, a, packed);
        let (mut p, g, mut m, mut vv) = (up(&p0), up(&g0), up(&m0), up(&v0));
        gpu.flush().unwrap();
        let before = gpu.counters();
        b.adamw_together(&mut p, &g, &mut m, &mut vv, &h, &corrections)
            .unwrap();
        let spent = gpu.counters() - before;
        let launches = if packed { 1 } else { PACKED.len() as u64 };
        assert_eq!(spent.dispatches, launches, "packed {packed}: {spent:?}");
        for i in 0..p.len() {
            let case = format!("adamw_together packed {packed} tensor {i}");
            assert_close(&format!("{case} p"), &read(&p[i]), &want.0[i].data, 1e-5);
            assert_close(&format!("{case} m"), &read(&m[i]), &want.1[i].data, 1e-5);
            assert_close(&format!("{case} v"), &read(&vv[i]), &want.2[i].data, 1e-5);
        }
    }
    // Sets of unlike betas are refused on both paths before anything runs, packed or not.
    let mut mixed = h.clone();
    mixed[1].beta2 = 0.9;
    for packed in [true, false] {
        let up = |a: &[Array]| upload(&b, a, packed);
        let (mut p, g, mut m, mut vv) = (up(&p0), up(&g0), up(&m0), up(&v0));
        gpu.flush().unwrap();
        let before = gpu.counters();
        let e = b.adamw_together(&mut p, &g, &mut m, &mut vv, &mixed, &corrections);
        let e = e.expect_err("unlike betas").to_string();
        assert!(e.contains("betas"), "packed {packed}: {e}");
        assert_eq!((gpu.counters() - before).dispatches, 0, "packed {packed}");
    }
    let cpu_path = kiln::CpuBackend::plain();
    let (mut p, mut m, mut vv) = (p0.clone(), m0.clone(), v0.clone());
    let corrections = cpu_path.bias_corrections(&h[0]).unwrap();
    let e = cpu_path.adamw_together(&mut p, &g0, &mut m, &mut vv, &mixed, &corrections);
    assert!(e.expect_err("unlike betas").to_string().contains("betas"));
    assert_eq!(p, p0, "the CPU path refused before updating");
}

#[test]
fn adamw_table_refuses_what_is_not_packed_alike_before_launching() {
    // A device of its own: other tests' launches would count.
    let gpu = &fresh();
    let (p, _, _) = packed_group(gpu, 700, 1.0, false);
    let (g, _, _) = packed_group(gpu, 710, 0.5, false);
    let (m, _, _) = packed_group(gpu, 720, 0.1, false);
    let (vv, _, _) = packed_group(gpu, 730, 0.1, true);
    let h = table_hypers(&p, 2);
    let corrections = ops::bias_corrections(gpu, &h[0]).unwrap();
    assert!(ops::packed_alike(&p, &g, &m, &vv));
    let before: Vec<Vec<f32>> = p.iter().map(read).collect();
    gpu.flush().unwrap();
    let counted = gpu.counters();
    let call = |g: &[Tensor], m: &[Tensor], vv: &[Tensor], h: &[AdamW]| {
        refused(ops::adamw_table(&p, g, m, vv, h, &corrections)).to_string()
    };
    // Gradients in buffers of their own.
    let loose: Vec<Tensor> = g
        .iter()
        .map(|t| Tensor::full(gpu, t.shape(), 0.0, DType::F32).unwrap())
        .collect();
    assert!(!ops::packed_alike(&p, &loose, &m, &vv));
    let e = call(&loose, &m, &vv, &h);
    assert!(e.contains("not views of one buffer"), "{e}");
    // Gradients packed in another order: same buffer, another layout.
    let mut shuffled: Vec<&[usize]> = PACKED.to_vec();
    shuffled.reverse();
    let mut other = Tensor::packed(gpu, &shuffled, DType::F32).unwrap();
    other.reverse();
    let e = call(&other, &m, &vv, &h);
    assert!(e.contains("packed unlike"), "{e}");
    // One launch takes one pair of betas.
    let mut mixed = h.clone();
    mixed[2].beta1 = 0.8;
    let e = call(&g, &m, &vv, &mixed);
    assert!(e.contains("betas"), "{e}");
    let e = call(&g, &m, &vv, &h[1..]);
    assert!(e.contains("hyper-parameter sets"), "{e}");
    // The moments given as one group: each would overwrite the other.
    let e = call(&g, &m, &m, &h);
    assert!(e.contains("shares its buffer"), "{e}");
    let e = call(&g[1..], &m, &vv, &h);
    assert!(e.contains("gradients"), "{e}");
    assert_eq!((gpu.counters() - counted).dispatches, 0, "nothing launched");
    let after: Vec<Vec<f32>> = p.iter().map(read).collect();
    assert_eq!(after, before, "a refused update must not touch p");
}

#[test]
fn embedding_every_variant_and_nan_for_bad_tokens() {
    let (table, table_cpu) = input(500, &[VOCAB, COLS], 1.0, DType::F32);
    let tokens = ids(501, ROWS, VOCAB);
    let want = cpu::embedding(&table_cpu, &tokens).unwrap();
    let mut bad = tokens.clone();
    bad[3] = VOCAB as u32;
    bad[ROWS - 1] = u32::MAX;
    let e = cpu::embedding(&table_cpu, &bad).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    for v in variants("embedding", DType::F32) {
        let y = poisoned(&[ROWS, COLS], DType::F32);
        ops::embedding_into(&table, &ids_tensor(&tokens), &y, Some(&v.name)).unwrap();
        // A gather: the very same values.
        assert_eq!(read(&y), want.data, "embedding {}", v.name);

        let y = Tensor::full(gpu(), &[ROWS, COLS], 7.0, DType::F32).unwrap();
        ops::embedding_into(&table, &ids_tensor(&bad), &y, Some(&v.name)).unwrap();
        let got = read(&y);
        for (r, row) in got.chunks(COLS).enumerate() {
            if r == 3 || r == ROWS - 1 {
                assert!(row.iter().all(|x| x.is_nan()), "{}: row {r}", v.name);
            } else {
                assert_eq!(row, &want.data[r * COLS..][..COLS], "{}: row {r}", v.name);
            }
        }
    }
    let y = ops::embedding(&table, &ids_tensor(&[0, 66, 66])).unwrap();
    assert_eq!(y.shape(), &[3, COLS]);
}

#[test]
fn embedding_backward_every_variant() {
    // 37 tokens over a vocabulary of 67: repeats, and ids that never occur (zero rows).
    let tokens = ids(600, ROWS, VOCAB);
    let (dy, dy_cpu) = input(601, &[ROWS, COLS], 1.0, DType::F32);
    let want = cpu::embedding_backward(&dy_cpu, &tokens, VOCAB).unwrap();
    let distinct: std::collections::HashSet<u32> = tokens.iter().copied().collect();
    assert!(want.data.contains(&0.0) && distinct.len() < tokens.len());
    for v in variants("embedding_backward", DType::F32) {
        let d = poisoned(&[VOCAB, COLS], DType::F32);
        ops::embedding_backward_into(&dy, &ids_tensor(&tokens), &d, Some(&v.name)).unwrap();
        let got = read(&d);
        // The same additions in the same order as the CPU path: the same bits.
        assert_close(
            &format!("embedding_backward {}", v.name),
            &got,
            &want.data,
            1e-6,
        );
        assert_eq!(
            got, want.data,
            "embedding_backward {} is not bit-exact",
            v.name
        );
    }
    // 300 tokens: cut into 8 runs added in order, the same bits on every run.
    let long = ids(602, 300, VOCAB);
    let (dy_long, dy_long_cpu) = input(603, &[300, COLS], 1.0, DType::F32);
    let want = cpu::embedding_backward(&dy_long_cpu, &long, VOCAB).unwrap();
    for v in variants("embedding_backward", DType::F32) {
        let run = || {
            let d = poisoned(&[VOCAB, COLS], DType::F32);
            ops::embedding_backward_into(&dy_long, &ids_tensor(&long), &d, Some(&v.name)).unwrap();
            read(&d)
        };
        let got = run();
        assert_close(&format!("{} over 300", v.name), &got, &want.data, 6e-8);
        assert_eq!(got, run(), "{} differs between runs", v.name);
    }
    let d = ops::embedding_backward(&dy, &ids_tensor(&tokens), VOCAB).unwrap();
    assert_eq!(d.shape(), &[VOCAB, COLS]);
    // A token out of range adds to no row on the GPU; the CPU path refuses it.
    let mut bad = tokens.clone();
    bad[0] = VOCAB as u32;
    assert!(cpu::embedding_backward(&dy_cpu, &bad, VOCAB).is_err());
    let got = read(&ops::embedding_backward(&dy, &ids_tensor(&bad), VOCAB).unwrap());
    let mut dy_skip = dy_cpu.clone();
    dy_skip.data[..COLS].fill(0.0);
    let mut skip = bad.clone();
    skip[0] = 0;
    // Row 0 of dy zeroed and sent to id 0: adds +0.0, which changes no sum.
    let want = cpu::embedding_backward(&dy_skip, &skip, VOCAB).unwrap();
    assert_close(
        "embedding_backward with a bad token",
        &got,
        &want.data,
        1e-6,
    );
}

#[test]
fn swap_axes12_every_variant_and_swap_axes01_unchanged() {
    for dtype in [DType::F32, DType::F16] {
        let (x, x_cpu) = input(700, &[3, 37, 5, 7], 1.0, dtype);
        let want = cpu::swap_axes12(&x_cpu).unwrap();
        let (x3, x3_cpu) = input(701, &[5, 3, 33], 1.0, dtype);
        let want3 = cpu::swap_axes01(&x3_cpu).unwrap();
        for v in variants("swap_axes", dtype) {
            let y = poisoned(&[3, 5, 37, 7], dtype);
            ops::swap_axes12_into(&x, &y, Some(&v.name)).unwrap();
            assert_eq!(read(&y), want.data, "swap_axes12 {}", v.name);
            // The rank-3 op is the outer = 1 case of the same kernel.
            let y3 = poisoned(&[3, 5, 33], dtype);
            ops::swap_axes01_into(&x3, &y3, Some(&v.name)).unwrap();
            assert_eq!(read(&y3), want3.data, "swap_axes01 {}", v.name);
        }
        let y = ops::swap_axes12(&x).unwrap();
        assert_eq!(y.shape(), &[3, 5, 37, 7]);
        assert_eq!(read(&ops::swap_axes12(&y).unwrap()), x_cpu.data);
    }
    assert!(ops::swap_axes12(&input(702, &[5, 3, 33], 1.0, DType::F32).0).is_err());
    assert!(ops::swap_axes01(&input(703, &[2, 5, 3, 33], 1.0, DType::F32).0).is_err());
}

#[test]
fn permute_every_variant_every_order() {
    // Every order of the four leading axes, extents that are not multiples of a workgroup.
    let shape = [2, 3, 5, 7, 9];
    let mut orders = Vec::new();
    for a in 0..4 {
        for b in 0..4 {
            for c in 0..4 {
                for d in 0..4 {
                    let order = [a, b, c, d];
                    if (0..4).all(|axis| order.contains(&axis)) {
                        orders.push(order);
                    }
                }
            }
        }
    }
    assert_eq!(orders.len(), 24);
    for dtype in [DType::F32, DType::F16] {
        let (x, x_cpu) = input(710, &shape, 1.0, dtype);
        for v in variants("permute", dtype) {
            for &order in &orders {
                let want = cpu::permute(&x_cpu, order).unwrap();
                let y = poisoned(&want.shape, dtype);
                ops::permute_into(&x, order, &y, Some(&v.name)).unwrap();
                assert_eq!(read(&y), want.data, "permute {} {order:?}", v.name);
            }
        }
        // The split of Q, K and V into heads and its inverse give back what went in.
        let heads = ops::permute(&x, [2, 0, 3, 1]).unwrap();
        assert_eq!(heads.shape(), &[5, 2, 7, 3, 9]);
        assert_eq!(
            read(&ops::permute(&heads, [1, 3, 0, 2]).unwrap()),
            x_cpu.data
        );
    }
    let x = input(711, &shape, 1.0, DType::F32).0;
    for order in [[0, 1, 2, 2], [0, 1, 2, 4]] {
        let e = refused(ops::permute(&x, order));
        assert!(
            e.to_string()
                .contains("each of the axes 0, 1, 2 and 3 once"),
            "{e}"
        );
    }
    let e = refused(ops::permute(
        &input(712, &[2, 3, 4, 5], 1.0, DType::F32).0,
        [0, 1, 2, 3],
    ));
    assert!(e.to_string().contains("expected rank 5"), "{e}");
}

#[test]
fn shape_and_argument_errors() {
    let t = |shape: &[usize]| input(800, shape, 1.0, DType::F32).0;
    let shape_error = |e: Error| matches!(e, Error::Shape { .. });

    let e = refused(ops::gelu_backward(&t(&[4, 5]), &t(&[5, 4])));
    assert!(e.to_string().contains("dy has shape [5, 4]"), "{e}");

    let e = refused(ops::layernorm_backward(
        &t(&[3, 4]),
        &t(&[5]),
        &t(&[3, 4]),
        1e-5,
    ));
    assert!(
        e.to_string().contains("gamma has shape [5], expected [4]"),
        "{e}"
    );
    let e = refused(ops::layernorm_backward(
        &t(&[3, 4]),
        &t(&[4]),
        &t(&[4, 3]),
        1e-5,
    ));
    assert!(shape_error(e));
    let e = refused(ops::layernorm_backward(
        &t(&[3, 4]),
        &t(&[4]),
        &t(&[3, 4]),
        -1.0,
    ));
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");

    let logits = t(&[4, 9]);
    let e = refused(ops::cross_entropy(&logits, &ids_tensor(&[0, 1, 2]), 1.0));
    assert!(e.to_string().contains("3 targets for 4 rows"), "{e}");
    let e = refused(ops::cross_entropy(&t(&[9]), &ids_tensor(&[0]), 1.0));
    assert!(e.to_string().contains("rank ≥ 2"), "{e}");
    let e = refused(ops::cross_entropy(&logits, &t(&[4]), 1.0));
    assert!(
        e.to_string().contains("targets must be a u32 tensor"),
        "{e}"
    );
    let e = refused(ops::cross_entropy(
        &logits,
        &ids_tensor(&[0, 1, 2, 3]),
        f32::NAN,
    ));
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    let loss = poisoned(&[4], DType::F32);
    let e = refused(ops::cross_entropy_into(
        &logits,
        &ids_tensor(&[0, 1, 2, 3]),
        &loss,
        &logits,
        1.0,
        None,
    ));
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");

    let e = refused(ops::embedding(&t(&[VOCAB * COLS]), &ids_tensor(&[0])));
    assert!(e.to_string().contains("expected [vocab, cols]"), "{e}");
    let two_d = Tensor::from_u32(gpu(), &[2, 2], &[0, 1, 2, 3]).unwrap();
    let e = refused(ops::embedding(&t(&[5, 3]), &two_d));
    assert!(e.to_string().contains("one axis"), "{e}");
    let e = refused(ops::embedding_backward(
        &t(&[4, 3]),
        &ids_tensor(&[0, 1]),
        5,
    ));
    assert!(
        e.to_string().contains("expected [2, cols] for 2 tokens"),
        "{e}"
    );
    let e = refused(ops::embedding_backward(
        &t(&[2, 3]),
        &ids_tensor(&[0, 1]),
        0,
    ));
    assert!(shape_error(e));

    let e = refused(ops::swap_axes12(&t(&[2, 3])));
    assert!(e.to_string().contains("expected rank 4"), "{e}");
}
