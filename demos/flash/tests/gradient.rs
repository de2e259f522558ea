//! The whole model's gradient on the CPU path against central finite differences of its loss,
//! on a tiny shape with weights large enough that every term matters.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use flash::backend::CpuBackend;
use flash::model::{self, Inputs, Params};
use flash::preset::Config;
use kiln_app::kiln::cpu::Array;

fn loss(b: &CpuBackend, c: &Config, p: &Params<Array>, inp: &Inputs<Vec<u32>>) -> f64 {
    let (losses, _) = model::loss_and_grads(b, c, p, inp).unwrap();
    model::mean(&losses.data)
}

/// Plain multi-head attention, and 4 query heads over 2 key/value heads.
#[test]
fn model_gradient_matches_finite_differences() {
    for (heads, kv_heads) in [(2, 2), (4, 2)] {
        gradient_matches_finite_differences(Config {
            vocab: 7,
            d_model: 8,
            heads,
            kv_heads,
            layers: 2,
            seq: 5,
            batch: 2,
        });
    }
}

fn gradient_matches_finite_differences(c: Config) {
    let b = CpuBackend::plain();
    let mut p = Params::init(&c, 3).unwrap();
    // Scale the weights up (std 0.02 → 0.4) and give the norms non-trivial gains and biases,
    // so that attention, gelu and the norms are far from their linear regimes.
    for (i, (name, _)) in model::layout(&c).iter().enumerate() {
        for (j, x) in p.tensors[i].data.iter_mut().enumerate() {
            if name.ends_with("gamma") {
                *x = 1.0 + 0.3 * ((j as f32) * 0.7).sin();
            } else if name.ends_with("beta") {
                *x = 0.2 * ((j as f32) * 1.3).cos();
            } else {
                *x *= 20.0;
            }
        }
    }
    let tokens = [1, 4, 2, 6, 0, 3, 3, 5, 1, 2];
    let targets = [4, 2, 6, 0, 3, 3, 5, 1, 2, 6];
    let inp = Inputs::new(&b, &c, &tokens, &targets).unwrap();
    let (_, grads) = model::loss_and_grads(&b, &c, &p, &inp).unwrap();

    let h = 2e-3f32;
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    let mut checked = 0;
    for (i, (name, _)) in model::layout(&c).iter().enumerate() {
        let n = p.tensors[i].data.len();
        // A few entries of every tensor, spread over it.
        for j in (0..n).step_by((n / 5).max(1)) {
            let keep = p.tensors[i].data[j];
            p.tensors[i].data[j] = keep + h;
            let up = loss(&b, &c, &p, &inp);
            p.tensors[i].data[j] = keep - h;
            let down = loss(&b, &c, &p, &inp);
            p.tensors[i].data[j] = keep;
            let numeric = (up - down) / (2.0 * f64::from(h));
            let analytic = f64::from(grads.tensors[i].data[j]);
            diff += (numeric - analytic).powi(2);
            norm += numeric.powi(2);
            checked += 1;
            assert!(
                (numeric - analytic).abs() <= 2e-3 + 0.05 * numeric.abs(),
                "{name}[{j}]: analytic {analytic:.6}, finite differences {numeric:.6}"
            );
        }
    }
    let rel = (diff / norm).sqrt();
    println!(
        "model gradient, {} heads over {} key/value heads: {checked} entries, relative L2 error {rel:.2e} against finite differences",
        c.heads, c.kv_heads
    );
    assert!(rel < 1e-2, "relative L2 error {rel}");
}

#[test]
fn threaded_cpu_path_equals_the_plain_one() {
    let c = Config {
        vocab: 11,
        d_model: 16,
        heads: 4,
        kv_heads: 2,
        layers: 1,
        seq: 9,
        batch: 3,
    };
    let p = Params::init(&c, 5).unwrap();
    let tokens: Vec<u32> = (0..27).map(|i| (i * 7 % 11) as u32).collect();
    let targets: Vec<u32> = (0..27).map(|i| (i * 5 % 11) as u32).collect();
    let plain = CpuBackend::plain();
    let threaded = CpuBackend { threads: 3 };
    let (l1, g1) = model::loss_and_grads(
        &plain,
        &c,
        &p,
        &Inputs::new(&plain, &c, &tokens, &targets).unwrap(),
    )
    .unwrap();
    let (l2, g2) = model::loss_and_grads(
        &threaded,
        &c,
        &p,
        &Inputs::new(&threaded, &c, &tokens, &targets).unwrap(),
    )
    .unwrap();
    assert_eq!(l1.data, l2.data);
    for (a, b) in g1.tensors.iter().zip(&g2.tensors) {
        assert_eq!(a.data, b.data);
    }
}
