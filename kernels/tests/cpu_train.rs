//! The training references on the CPU: each backward against central differences of its
//! forward (the loss summed in f64 over the f32 forward, step 1e-2: the differences agree to
//! about 1e-5, the tolerances leave a factor of ten), plus small hand-checked cases and the
//! errors bad input must give.
#![allow(clippy::unwrap_used)]

mod common;

use common::random;
use kiln::Error;
use kiln::cpu::{self, Array};
use kiln::optim::AdamW;

fn arr(seed: u64, shape: &[usize], gain: f32) -> Array {
    let n = shape.iter().product();
    let data = random(seed, n).into_iter().map(|x| x * gain).collect();
    Array::new(shape, data).unwrap()
}

fn assert_close(case: &str, got: &[f32], want: &[f32], tol: f64) {
    let err = cpu::rel_l2(got, want);
    assert!(
        err <= tol,
        "{case}: relative L2 error {err:.3e} over {tol:.0e} (got {got:?}, want {want:?})"
    );
}

/// Central differences of `loss` at `x`, one element at a time, step `h`.
fn numeric(x: &Array, h: f32, loss: impl Fn(&Array) -> f64) -> Vec<f32> {
    let mut x = x.clone();
    (0..x.data.len())
        .map(|i| {
            let old = x.data[i];
            x.data[i] = old + h;
            let up = loss(&x);
            x.data[i] = old - h;
            let down = loss(&x);
            x.data[i] = old;
            ((up - down) / (2.0 * f64::from(h))) as f32
        })
        .collect()
}

#[test]
fn gelu_backward_matches_finite_differences() {
    // Inputs over [-4, 4): both tails and the curved middle.
    let x = arr(1, &[3, 7], 4.0);
    let w = arr(2, &[3, 7], 1.0);
    let dx = cpu::gelu_backward(&x, &w).unwrap();
    let num = numeric(&x, 1e-2, |x| cpu::gelu(x).unwrap().dot(&w));
    assert_close("gelu_backward", &dx.data, &num, 2e-4);
    // gelu'(0) = Φ(0) = 1/2.
    let one = |v: f32| Array::new(&[1], vec![v]).unwrap();
    let at0 = cpu::gelu_backward(&one(0.0), &one(1.0)).unwrap();
    assert_eq!(at0.data, vec![0.5]);
}

#[test]
fn layernorm_backward_matches_finite_differences() {
    let (rows, cols) = (3, 5);
    let x = arr(3, &[rows, cols], 2.0);
    let gamma = arr(4, &[cols], 1.5);
    let beta = arr(5, &[cols], 1.0);
    let w = arr(6, &[rows, cols], 1.0);
    let eps = 1e-5;
    let (dx, dgamma, dbeta) = cpu::layernorm_backward(&x, &gamma, &w, eps).unwrap();
    assert_eq!(
        (dx.shape.as_slice(), dgamma.shape.as_slice()),
        (&[rows, cols][..], &[cols][..])
    );
    let h = 1e-2;
    let num_x = numeric(&x, h, |x| {
        cpu::layernorm(x, &gamma, &beta, eps).unwrap().dot(&w)
    });
    assert_close("layernorm dx", &dx.data, &num_x, 2e-4);
    let num_g = numeric(&gamma, h, |g| {
        cpu::layernorm(&x, g, &beta, eps).unwrap().dot(&w)
    });
    assert_close("layernorm dgamma", &dgamma.data, &num_g, 1e-4);
    let num_b = numeric(&beta, h, |b| {
        cpu::layernorm(&x, &gamma, b, eps).unwrap().dot(&w)
    });
    assert_close("layernorm dbeta", &dbeta.data, &num_b, 1e-4);
    // dx sums to zero over each row: layer norm ignores a shift of its input.
    for r in 0..rows {
        let s: f32 = dx.data[r * cols..][..cols].iter().sum();
        assert!(s.abs() < 1e-5, "row {r} of dx sums to {s}");
    }
}

#[test]
fn cross_entropy_gradient_matches_finite_differences() {
    // Leading extents [2, 3] make 6 rows of a vocabulary of 5.
    let logits = arr(7, &[2, 3, 5], 3.0);
    let targets = [0, 4, 2, 2, 1, 3];
    let scale = 1.0 / 6.0;
    let (loss, dlogits) = cpu::cross_entropy(&logits, &targets, scale).unwrap();
    assert_eq!(loss.shape, vec![6]);
    assert_eq!(dlogits.shape, logits.shape);
    // L = grad_scale · Σ loss: dL/dlogits is dlogits.
    let num = numeric(&logits, 1e-2, |l| {
        let (loss, _) = cpu::cross_entropy(l, &targets, scale).unwrap();
        f64::from(scale) * loss.data.iter().map(|&v| f64::from(v)).sum::<f64>()
    });
    assert_close("cross_entropy dlogits", &dlogits.data, &num, 2e-4);
    // Each row of (softmax − onehot) sums to zero.
    for r in 0..6 {
        let s: f32 = dlogits.data[r * 5..][..5].iter().sum();
        assert!(s.abs() < 1e-6, "row {r} sums to {s}");
    }
}

#[test]
fn cross_entropy_hand_values() {
    // Uniform logits over 4 classes: loss ln 4, gradient 1/4 − onehot.
    let logits = Array::new(&[1, 4], vec![2.0; 4]).unwrap();
    let (loss, d) = cpu::cross_entropy(&logits, &[1], 1.0).unwrap();
    assert!((loss.data[0] - 4f32.ln()).abs() < 1e-6, "{:?}", loss.data);
    assert_eq!(d.data, vec![0.25, -0.75, 0.25, 0.25]);
    // Large logits do not overflow: the max is subtracted first.
    let logits = Array::new(&[1, 2], vec![1000.0, 1000.0 + 3f32.ln()]).unwrap();
    let (loss, _) = cpu::cross_entropy(&logits, &[1], 1.0).unwrap();
    assert!(
        (loss.data[0] - (4.0f32 / 3.0).ln()).abs() < 1e-4,
        "{:?}",
        loss.data
    );
}

#[test]
fn embedding_backward_matches_finite_differences() {
    // L = Σ embedding(table, tokens) ∘ G, so dL/dtable = embedding_backward(G, tokens).
    let vocab = 4;
    let table = arr(8, &[vocab, 3], 1.0);
    let tokens = [2, 0, 2, 2, 1];
    let g = arr(9, &[tokens.len(), 3], 1.0);
    let d = cpu::embedding_backward(&g, &tokens, vocab).unwrap();
    assert_eq!(d.shape, vec![vocab, 3]);
    let num = numeric(&table, 1e-2, |t| {
        cpu::embedding(t, &tokens).unwrap().dot(&g)
    });
    assert_close("embedding_backward", &d.data, &num, 1e-5);
    // Id 3 never occurs: its row is zeros.
    assert_eq!(&d.data[9..], &[0.0; 3]);
}

#[test]
fn embedding_hand_values() {
    let table = Array::new(&[3, 2], vec![1., 2., 3., 4., 5., 6.]).unwrap();
    let y = cpu::embedding(&table, &[2, 0, 2]).unwrap();
    assert_eq!(y.shape, vec![3, 2]);
    assert_eq!(y.data, vec![5., 6., 1., 2., 5., 6.]);
    // Rows are summed in token order.
    let dy = Array::new(&[3, 2], vec![1., 1., 10., 10., 100., 100.]).unwrap();
    let d = cpu::embedding_backward(&dy, &[2, 0, 2], 3).unwrap();
    assert_eq!(d.data, vec![10., 10., 0., 0., 101., 101.]);
}

#[test]
fn swap_axes12_hand_values() {
    // [1, 2, 3, 1] → [1, 3, 2, 1]: a 2×3 matrix of scalars transposed.
    let x = Array::new(&[1, 2, 3, 1], vec![1., 2., 3., 4., 5., 6.]).unwrap();
    let y = cpu::swap_axes12(&x).unwrap();
    assert_eq!(y.shape, vec![1, 3, 2, 1]);
    assert_eq!(y.data, vec![1., 4., 2., 5., 3., 6.]);
    // With an outer extent and rows of 2: each outer block swaps on its own.
    let x = arr(10, &[2, 3, 4, 2], 1.0);
    let y = cpu::swap_axes12(&x).unwrap();
    for n in 0..2 {
        let block = Array::new(&[3, 4, 2], x.data[n * 24..][..24].to_vec()).unwrap();
        assert_eq!(
            &y.data[n * 24..][..24],
            cpu::swap_axes01(&block).unwrap().data.as_slice()
        );
    }
    // Swapping twice gives the input back.
    assert_eq!(cpu::swap_axes12(&y).unwrap(), x);
}

fn hyper(step: u32) -> AdamW {
    AdamW {
        lr: 0.1,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay: 0.01,
        step,
    }
}

#[test]
fn adamw_first_step_moves_by_lr_times_the_sign() {
    // Step 1 from zero moments: m̂ = g, v̂ = g², so the step is lr · (sign(g) + wd · p).
    let mut p = Array::new(&[3], vec![1.0, -2.0, 0.5]).unwrap();
    let g = Array::new(&[3], vec![0.3, -0.02, 4.0]).unwrap();
    let mut m = Array::new(&[3], vec![0.0; 3]).unwrap();
    let mut v = m.clone();
    let h = hyper(1);
    let (bc1, bc2) = h.bias_corrections();
    assert!((bc1 - 0.1).abs() < 1e-6 && (bc2 - 0.001).abs() < 1e-6);
    cpu::adamw(&mut p, &g, &mut m, &mut v, &h).unwrap();
    let want = [
        1.0 - 0.1 * (1.0 + 0.01),
        -2.0 - 0.1 * (-1.0 - 0.02),
        0.5 - 0.1 * (1.0 + 0.005),
    ];
    assert_close("adamw step 1", &p.data, &want, 1e-5);
    assert_close("adamw m", &m.data, &[0.03, -0.002, 0.4], 1e-6);
    // 1 − 0.999 is 0.99998713e-3 in f32: 1.3e-5 off the decimal value.
    assert_close("adamw v", &v.data, &[9e-5, 4e-7, 0.016], 1e-4);
}

#[test]
fn bad_input_is_an_error_never_a_panic() {
    let logits = arr(11, &[3, 4], 1.0);
    let e = cpu::cross_entropy(&logits, &[0, 4, 1], 1.0).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("target 4"),
        "{e}"
    );
    let e = cpu::cross_entropy(&logits, &[0, 1], 1.0).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let e = cpu::cross_entropy(&arr(12, &[4], 1.0), &[0], 1.0).unwrap_err();
    assert!(e.to_string().contains("rank ≥ 2"), "{e}");
    assert!(cpu::cross_entropy(&logits, &[0, 1, 2], f32::NAN).is_err());

    let table = arr(13, &[3, 2], 1.0);
    let e = cpu::embedding(&table, &[0, 3]).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("token 3"),
        "{e}"
    );
    assert!(cpu::embedding(&arr(14, &[6], 1.0), &[0]).is_err());
    assert!(cpu::embedding(&table, &[]).is_err());
    let dy = arr(15, &[2, 2], 1.0);
    assert!(cpu::embedding_backward(&dy, &[0, 5], 3).is_err());
    assert!(cpu::embedding_backward(&dy, &[0], 3).is_err());
    assert!(cpu::embedding_backward(&dy, &[0, 1], 0).is_err());

    let x = arr(16, &[2, 3], 1.0);
    assert!(cpu::gelu_backward(&x, &arr(17, &[3, 2], 1.0)).is_err());
    assert!(cpu::layernorm_backward(&x, &arr(18, &[2], 1.0), &x, 1e-5).is_err());
    assert!(cpu::layernorm_backward(&x, &arr(18, &[3], 1.0), &arr(19, &[6], 1.0), 1e-5).is_err());
    assert!(cpu::layernorm_backward(&x, &arr(18, &[3], 1.0), &x, f32::NAN).is_err());
    assert!(cpu::swap_axes12(&x).is_err());
    // A hand-built array whose data is short of its shape.
    let short = Array {
        shape: vec![2, 3],
        data: vec![0.0; 4],
    };
    assert!(cpu::layernorm_backward(&short, &arr(18, &[3], 1.0), &x, 1e-5).is_err());

    let mut p = arr(20, &[4], 1.0);
    let (mut m, mut v) = (arr(21, &[4], 0.0), arr(22, &[4], 0.0));
    let g = arr(23, &[4], 1.0);
    let before = p.clone();
    let e = cpu::adamw(&mut p, &g, &mut m, &mut v, &hyper(0)).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("step"),
        "{e}"
    );
    let nan_lr = AdamW {
        lr: f32::NAN,
        ..hyper(1)
    };
    assert!(cpu::adamw(&mut p, &g, &mut m, &mut v, &nan_lr).is_err());
    let e = cpu::adamw(&mut p, &arr(24, &[5], 1.0), &mut m, &mut v, &hyper(1)).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    assert_eq!(p, before, "a refused update must not touch the parameters");
}
