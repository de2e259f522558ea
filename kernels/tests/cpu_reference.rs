//! The CPU references against small cases worked out by hand.
#![allow(clippy::unwrap_used)]

use kiln::cpu::{self, Array};

fn arr(shape: &[usize], data: &[f32]) -> Array {
    Array::new(shape, data.to_vec()).unwrap()
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-6, "got {got:?}, want {want:?}");
    }
}

#[test]
fn matmul_2x3_by_3x2() {
    // [1 2 3; 4 5 6] · [7 8; 9 10; 11 12] = [58 64; 139 154]
    let a = arr(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
    let b = arr(&[3, 2], &[7., 8., 9., 10., 11., 12.]);
    let c = cpu::matmul(&a, &b).unwrap();
    assert_eq!(c.shape, vec![2, 2]);
    close(&c.data, &[58., 64., 139., 154.]);
}

#[test]
fn matmul_batched_with_broadcast_b() {
    // Two A matrices share one B = [1 2; 3 -1], not symmetric, so B read transposed would
    // show: [1 2]·B = [7 0], [3 4]·B = [15 2], [5 6]·B = [23 4], [7 8]·B = [31 6].
    let a = arr(&[2, 2, 2], &[1., 2., 3., 4., 5., 6., 7., 8.]);
    let b = arr(&[2, 2], &[1., 2., 3., -1.]);
    let c = cpu::matmul(&a, &b).unwrap();
    assert_eq!(c.shape, vec![2, 2, 2]);
    close(&c.data, &[7., 0., 15., 2., 23., 4., 31., 6.]);
}

#[test]
fn matmul_reduce_sums_slices_then_adds_the_bias() {
    // Two slices of a [1, 2] product: [1 2] + [3 4] = [4 6]; + bias [0.5 -1] = [4.5 5].
    let partials = arr(&[2, 1, 2], &[1., 2., 3., 4.]);
    close(
        &cpu::matmul_reduce(&partials, None, false).unwrap().data,
        &[4., 6.],
    );
    let bias = arr(&[2], &[0.5, -1.]);
    let c = cpu::matmul_reduce(&partials, Some(&bias), false).unwrap();
    assert_eq!(c.shape, vec![1, 2]);
    close(&c.data, &[4.5, 5.]);
    let g = cpu::matmul_reduce(&partials, Some(&bias), true).unwrap();
    close(&g.data, &cpu::gelu(&c).unwrap().data);
    assert!(cpu::matmul_reduce(&partials, None, true).is_err());
}

#[test]
fn matmul_1x1() {
    let c = cpu::matmul(&arr(&[1, 1], &[3.]), &arr(&[1, 1], &[-2.])).unwrap();
    close(&c.data, &[-6.]);
}

#[test]
fn add_same_shape_and_broadcast() {
    let a = arr(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
    let c = cpu::add(&a, &arr(&[2, 3], &[10., 20., 30., 40., 50., 60.])).unwrap();
    close(&c.data, &[11., 22., 33., 44., 55., 66.]);
    // A row vector broadcasts over rows, a column vector over columns.
    let c = cpu::add(&a, &arr(&[3], &[10., 20., 30.])).unwrap();
    close(&c.data, &[11., 22., 33., 14., 25., 36.]);
    let c = cpu::add(&arr(&[2, 1], &[100., 200.]), &arr(&[1, 3], &[1., 2., 3.])).unwrap();
    assert_eq!(c.shape, vec![2, 3]);
    close(&c.data, &[101., 102., 103., 201., 202., 203.]);
}

#[test]
fn softmax_rows_sum_to_one_and_match_hand_values() {
    // softmax([0, ln 3]) = [1/4, 3/4]; a constant row is uniform.
    let x = arr(&[2, 2], &[0., 3f32.ln(), 5., 5.]);
    let y = cpu::softmax(&x, false, 1.0).unwrap();
    close(&y.data, &[0.25, 0.75, 0.5, 0.5]);
    // Large values do not overflow: the max is subtracted first.
    let y = cpu::softmax(&arr(&[2], &[1000., 1000.]), false, 1.0).unwrap();
    close(&y.data, &[0.5, 0.5]);
    // scale multiplies the logits: softmax(2·[0, ln 3 / 2]) = [1/4, 3/4].
    let y = cpu::softmax(&arr(&[2], &[0., 3f32.ln() / 2.]), false, 2.0).unwrap();
    close(&y.data, &[0.25, 0.75]);
}

#[test]
fn softmax_causal_masks_future_keys_and_zeroes_blind_rows() {
    // Square: row i sees keys 0..=i.
    let y = cpu::softmax(&arr(&[2, 2], &[1., 9., 0., 0.]), true, 1.0).unwrap();
    close(&y.data, &[1., 0., 0.5, 0.5]);
    // Three queries, two keys: aligned at the end, the first query sees no key → zeros.
    let y = cpu::softmax(&arr(&[3, 2], &[1., 1., 1., 1., 1., 1.]), true, 1.0).unwrap();
    close(&y.data, &[0., 0., 1., 0., 0.5, 0.5]);
}

#[test]
fn softmax_row_of_minus_infinity_is_zeros_not_nan() {
    let x = arr(&[2, 2], &[f32::NEG_INFINITY, f32::NEG_INFINITY, 0.0, 0.0]);
    let y = cpu::softmax(&x, false, 1.0).unwrap();
    close(&y.data, &[0.0, 0.0, 0.5, 0.5]);
}

#[test]
fn layernorm_hand_values() {
    // x = [1, 3]: mean 2, variance 1 → [-1, 1] (eps 0), then · gamma + beta.
    let x = arr(&[1, 2], &[1., 3.]);
    let y = cpu::layernorm(&x, &arr(&[2], &[2., 3.]), &arr(&[2], &[0.5, -0.5]), 0.0).unwrap();
    close(&y.data, &[-1.5, 2.5]);
    // A constant row normalises to beta.
    let y = cpu::layernorm(
        &arr(&[1, 3], &[4., 4., 4.]),
        &arr(&[3], &[1., 1., 1.]),
        &arr(&[3], &[7., 8., 9.]),
        1e-5,
    )
    .unwrap();
    close(&y.data, &[7., 8., 9.]);
}

#[test]
fn rel_l2_flags_nan_and_length_mismatch() {
    assert_eq!(cpu::rel_l2(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
    assert!(cpu::rel_l2(&[1.0, f32::NAN], &[1.0, 2.0]).is_infinite());
    assert!(cpu::rel_l2(&[1.0], &[1.0, 2.0]).is_infinite());
    let e = cpu::rel_l2(&[1.0, 2.0], &[1.0, 2.02]);
    assert!((e - 0.02 / (1.0f64 + 2.02 * 2.02).sqrt()).abs() < 1e-6);
}

#[test]
fn sinusoid_hand_values() {
    // freq 1, phase π/2: sin(x + π/2) = cos x, cos(x + π/2) = −sin x, at x = 0 and 0.5.
    let t = cpu::sinusoid(&[1.0], &[std::f32::consts::FRAC_PI_2], 2, 0.0, 0.5).unwrap();
    assert_eq!(t.shape, vec![2, 2]);
    close(&t.data, &[1.0, 0.5f32.cos(), 0.0, -(0.5f32.sin())]);
}

#[test]
fn rgba8_hand_values() {
    // One pixel: R = 0 → 0, G = 1 → 255, B = 0.5 → round(127.5) = 128, A = 2 → clamped 255.
    let planes = arr(&[4, 1, 1], &[0.0, 1.0, 0.5, 2.0]);
    let px = cpu::rgba8(&planes, 1.0, 0.0).unwrap();
    assert_eq!(px, vec![0xff_80_ff_00]);
    // scale and bias map [-1, 1] to [0, 1]: -1 → 0, 1 → 255.
    let planes = arr(&[4, 1, 2], &[-1.0, 1.0, 0.0, 0.0, 1.0, -1.0, 1.0, 1.0]);
    let px = cpu::rgba8(&planes, 0.5, 0.5).unwrap();
    assert_eq!(px, vec![0xff_ff_80_00, 0xff_00_80_ff]);
}
