//! The attention references on the CPU: the tiled FlashAttention-2 algorithm equals standard
//! attention (forward and backward), and the standard backward matches finite differences.
#![allow(clippy::unwrap_used)]

mod common;

use common::random;
use kiln::cpu::{self, Array};

fn arr(seed: u64, shape: &[usize], gain: f32) -> Array {
    let n = shape.iter().product();
    let data = random(seed, n).into_iter().map(|x| x * gain).collect();
    Array::new(shape, data).unwrap()
}

fn assert_close(case: &str, got: &[f32], want: &[f32], tol: f64) {
    let err = cpu::rel_l2(got, want);
    assert!(
        err <= tol,
        "{case}: relative L2 error {err:.3e} over {tol:.0e}"
    );
}

/// Finite LSE entries agree; +∞ (rows that see no key) in the same places.
fn assert_lse(case: &str, got: &[f32], want: &[f32]) {
    let inf = |x: &[f32]| x.iter().map(|v| v.is_infinite()).collect::<Vec<_>>();
    assert_eq!(inf(got), inf(want), "{case}: masked rows differ");
    let finite = |x: &[f32]| {
        x.iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect::<Vec<_>>()
    };
    assert_close(case, &finite(got), &finite(want), 1e-5);
}

#[test]
fn one_key_gives_its_value() {
    // With one key the softmax is 1: O = V and LSE = the one scaled score.
    let q = Array::new(&[1, 1, 2], vec![1.0, 2.0]).unwrap();
    let k = Array::new(&[1, 1, 2], vec![3.0, -1.0]).unwrap();
    let v = Array::new(&[1, 1, 2], vec![0.5, -4.0]).unwrap();
    let f = cpu::attention(&q, &k, &v, false, 0.5).unwrap();
    assert_eq!(f.out.data, vec![0.5, -4.0]);
    assert_eq!(f.lse, vec![0.5]);
}

#[test]
fn two_keys_by_hand() {
    // Scores 0 and ln 3: probabilities 1/4 and 3/4.
    let q = Array::new(&[1, 1], vec![1.0]).unwrap();
    let k = Array::new(&[2, 1], vec![0.0, 3f32.ln()]).unwrap();
    let v = Array::new(&[2, 1], vec![4.0, 8.0]).unwrap();
    let f = cpu::attention(&q, &k, &v, false, 1.0).unwrap();
    assert!((f.out.data[0] - 7.0).abs() < 1e-5, "{:?}", f.out.data);
    assert!((f.lse[0] - 4f32.ln()).abs() < 1e-6);
}

#[test]
fn causal_rows_that_see_no_key_are_zero_with_infinite_lse() {
    // Nq = 3, Nk = 1: row i sees key 0 only if 0 ≤ i + 1 − 3, so rows 0 and 1 see nothing.
    let (q, k, v) = (
        arr(1, &[3, 4], 1.0),
        arr(2, &[1, 4], 1.0),
        arr(3, &[1, 4], 1.0),
    );
    let f = cpu::attention(&q, &k, &v, true, 1.0).unwrap();
    assert_eq!(&f.out.data[..8], &[0.0; 8]);
    assert_eq!(&f.out.data[8..], &v.data[..]);
    assert_eq!(f.lse[..2], [f32::INFINITY; 2]);
    let flash = cpu::flash_forward(&q, &k, &v, true, 1.0, 2, 2).unwrap();
    assert_eq!(flash.out.data, f.out.data);
    let g = cpu::attention_backward(&q, &k, &v, &arr(4, &[3, 4], 1.0), true, 1.0).unwrap();
    assert!(g.dq.data[..8].iter().all(|&x| x == 0.0));
    assert!(
        g.dq.data
            .iter()
            .chain(&g.dk.data)
            .chain(&g.dv.data)
            .all(|x| x.is_finite())
    );
}

#[test]
fn tiled_forward_and_backward_equal_standard_attention() {
    // Blocks that do and do not divide the lengths; Nq ≠ Nk both ways; logits ×10 so the
    // running max changes between blocks and the rescaling is exercised.
    let cases = [
        (2, 1, 1, 8, 4, 4),
        (3, 17, 17, 8, 4, 8),
        (1, 64, 64, 16, 16, 16),
        (2, 33, 20, 8, 8, 5),
        (1, 20, 33, 12, 7, 16),
        (1, 100, 100, 4, 32, 16),
    ];
    for (seed, &(bh, nq, nk, d, bq, bk)) in cases.iter().enumerate() {
        for causal in [false, true] {
            let s = seed as u64 * 10;
            let q = arr(s + 1, &[bh, nq, d], 10.0);
            let k = arr(s + 2, &[bh, nk, d], 1.0);
            let v = arr(s + 3, &[bh, nk, d], 1.0);
            let d_out = arr(s + 4, &[bh, nq, d], 1.0);
            let scale = 1.0 / (d as f32).sqrt();
            let case = format!("bh{bh} nq{nq} nk{nk} d{d} blocks {bq}x{bk} causal={causal}");
            let std = cpu::attention(&q, &k, &v, causal, scale).unwrap();
            let flash = cpu::flash_forward(&q, &k, &v, causal, scale, bq, bk).unwrap();
            assert_close(&case, &flash.out.data, &std.out.data, 1e-5);
            assert_lse(&case, &flash.lse, &std.lse);
            let g = cpu::attention_backward(&q, &k, &v, &d_out, causal, scale).unwrap();
            let fg =
                cpu::flash_backward(&q, &k, &v, &flash, &d_out, causal, scale, bq, bk).unwrap();
            assert_close(&format!("{case} dQ"), &fg.dq.data, &g.dq.data, 1e-4);
            assert_close(&format!("{case} dK"), &fg.dk.data, &g.dk.data, 1e-4);
            assert_close(&format!("{case} dV"), &fg.dv.data, &g.dv.data, 1e-4);
        }
    }
}

#[test]
fn standard_backward_matches_finite_differences() {
    // L = Σ O ∘ G, so dL/dO = G; central differences in f64 of the f32 forward pass.
    for causal in [false, true] {
        let (nq, nk, d) = (3, 4, 3);
        let mut q = arr(11, &[1, nq, d], 1.0);
        let mut k = arr(12, &[1, nk, d], 1.0);
        let mut v = arr(13, &[1, nk, d], 1.0);
        let g = arr(14, &[1, nq, d], 1.0);
        let scale = 0.7;
        let grads = cpu::attention_backward(&q, &k, &v, &g, causal, scale).unwrap();
        let loss = |q: &Array, k: &Array, v: &Array| -> f64 {
            let o = cpu::attention(q, k, v, causal, scale).unwrap().out;
            o.data
                .iter()
                .zip(&g.data)
                .map(|(a, b)| f64::from(a * b))
                .sum()
        };
        let eps = 1e-2f32;
        let mut numeric = |which: usize| -> Vec<f32> {
            let n = [&q, &k, &v][which].data.len();
            (0..n)
                .map(|i| {
                    let mut at = |delta: f32| {
                        let t = [&mut q, &mut k, &mut v];
                        let x = t.into_iter().nth(which).unwrap();
                        let old = x.data[i];
                        x.data[i] = old + delta;
                        let l = loss(&q, &k, &v);
                        [&mut q, &mut k, &mut v]
                            .into_iter()
                            .nth(which)
                            .unwrap()
                            .data[i] = old;
                        l
                    };
                    ((at(eps) - at(-eps)) / (2.0 * f64::from(eps))) as f32
                })
                .collect()
        };
        for (which, name, analytic) in [
            (0, "dQ", &grads.dq),
            (1, "dK", &grads.dk),
            (2, "dV", &grads.dv),
        ] {
            let num = numeric(which);
            assert_close(
                &format!("{name} causal={causal}"),
                &analytic.data,
                &num,
                2e-3,
            );
        }
    }
}

#[test]
fn byte_model_counts_the_score_matrix() {
    use kiln::ops::attention::traffic::{self, Path};
    use kiln::shape::AttentionDims;
    // B = 4, H = 8, N = 512, f32: one score matrix is 4·B·H·N² = 33.5 MB.
    let s = [4, 8, 512, 64];
    let d = AttentionDims::new("test", &s, &s, &s).unwrap();
    assert_eq!(
        traffic::score_matrix_bytes(&d, kiln::DType::F32),
        33_554_432
    );
    let flash = traffic::total(&traffic::traffic(&d, kiln::DType::F32, Path::Flash, false));
    let naive = traffic::total(&traffic::traffic(&d, kiln::DType::F32, Path::Naive, false));
    // Q, K, V read and O written: 4 × 4·8·512·64·4 bytes, plus the LSE.
    assert_eq!(flash, 4 * 4_194_304 + 4 * 8 * 512 * 4);
    // The naive forward adds S written, read; P written, read (K is read transposed in place).
    assert_eq!(naive - (flash - 4 * 8 * 512 * 4), 4 * 33_554_432);

    // Backward: the one-pass kernel reads Q, K, V, dO, LSE and D once instead of twice, and
    // pays for zeroing dQ and for reading it back in its additions.
    let t = 4_194_304; // one [B, H, N, D] f32 tensor
    let rows = 4 * 8 * 512 * 4;
    let bwd = |path| traffic::total(&traffic::traffic(&d, kiln::DType::F32, path, true));
    assert_eq!(
        bwd(Path::Flash) - bwd(Path::FlashFused),
        (4 * t + 2 * rows) - 3 * t
    );
}
