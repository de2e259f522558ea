//! Attention on the GPU against the CPU references: the flash kernels (forward and backward)
//! for every head dimension, causal and not, sequence lengths that are not block multiples,
//! logits scaled ×10; every offered block shape; the naive GPU path; and the two GPU paths
//! against each other. Outputs are poisoned with NaN first. Runs on lavapipe in CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{assert_close, gpu, read, scaled_input as input};
use kiln::cpu::{self, Array};
use kiln::ops::attention::{self, BackwardVariants, Grads};
use kiln::{DType, Error, Tensor};

/// Relative L2 tolerances: (forward, backward), about 10× the worst these tests measured on
/// lavapipe (f32 1.17e-6 and 3.05e-6; f16 6.9e-4, the forward held to 5.8× that, and 1.06e-3:
/// `KILN_PRINT_ERRORS=1` lists every error). f16 inputs and outputs carry 11 significant bits,
/// and the backward pass multiplies several rounded values.
fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F16 => (4e-3, 1.1e-2),
        _ => (1.2e-5, 3.1e-5),
    }
}

struct Case {
    q: (Tensor, Array),
    k: (Tensor, Array),
    v: (Tensor, Array),
    d_o: (Tensor, Array),
    scale: f32,
}

/// Q is scaled ×10 so that scores are large and the running max changes between key blocks.
fn case(seed: u64, heads: usize, nq: usize, nk: usize, d: usize, dtype: DType) -> Case {
    Case {
        q: input(seed, &[1, heads, nq, d], 10.0, dtype),
        k: input(seed + 1, &[1, heads, nk, d], 1.0, dtype),
        v: input(seed + 2, &[1, heads, nk, d], 1.0, dtype),
        d_o: input(seed + 3, &[1, heads, nq, d], 1.0, dtype),
        scale: 1.0 / (d as f32).sqrt(),
    }
}

fn poisoned_like(t: &Tensor) -> Tensor {
    Tensor::full(gpu(), t.shape(), f32::NAN, t.dtype()).unwrap()
}

fn poisoned_grads(c: &Case) -> Grads {
    Grads {
        dq: poisoned_like(&c.q.0),
        dk: poisoned_like(&c.k.0),
        dv: poisoned_like(&c.v.0),
    }
}

/// LSE: +∞ exactly where the reference has it, the finite rest close.
fn assert_lse(name: &str, got: &[f32], want: &[f32]) {
    let inf = |x: &[f32]| x.iter().map(|v| *v == f32::INFINITY).collect::<Vec<_>>();
    assert_eq!(inf(got), inf(want), "{name}: rows that see no key differ");
    let finite = |x: &[f32]| {
        x.iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect::<Vec<_>>()
    };
    assert_close(name, &finite(got), &finite(want), 1e-5);
}

/// Runs the flash forward and backward (with the named variants) and checks them against the
/// standard CPU algorithm.
fn check_flash(name: &str, c: &Case, causal: bool, fwd: Option<&str>, bwd: BackwardVariants<'_>) {
    let dtype = c.q.0.dtype();
    let (tol_f, tol_b) = tolerance(dtype);
    let want = cpu::attention(&c.q.1, &c.k.1, &c.v.1, causal, c.scale).unwrap();
    let want_g =
        cpu::attention_backward(&c.q.1, &c.k.1, &c.v.1, &c.d_o.1, causal, c.scale).unwrap();

    let o = poisoned_like(&c.q.0);
    let lse_shape = &c.q.0.shape()[..3];
    let lse = Tensor::full(gpu(), lse_shape, f32::NAN, DType::F32).unwrap();
    attention::flash_attention_into(&c.q.0, &c.k.0, &c.v.0, &o, &lse, causal, c.scale, fwd)
        .unwrap();
    assert_close(&format!("{name} O"), &read(&o), &want.out.data, tol_f);
    assert_lse(&format!("{name} LSE"), &read(&lse), &want.lse);

    let g = poisoned_grads(c);
    let plan = attention::launch_backward(
        &c.q.0, &c.k.0, &c.v.0, &o, &lse, &c.d_o.0, &g, causal, c.scale, bwd,
    )
    .unwrap();
    let refs: Vec<_> = plan.dispatches.iter().collect();
    gpu().submit(&refs).unwrap();
    assert_close(&format!("{name} dQ"), &read(&g.dq), &want_g.dq.data, tol_b);
    assert_close(&format!("{name} dK"), &read(&g.dk), &want_g.dk.data, tol_b);
    assert_close(&format!("{name} dV"), &read(&g.dv), &want_g.dv.data, tol_b);
    gpu().check().unwrap();
}

fn every_head_dim_and_length(dtype: DType) {
    let mut n_cases = 0;
    for (i, &d) in attention::HEAD_DIMS.iter().enumerate() {
        for (j, &n) in [1, 17, 64, 100, 257].iter().enumerate() {
            for causal in [false, true] {
                let c = case(100 * i as u64 + 10 * j as u64, 2, n, n, d, dtype);
                let name = format!("{} d{d} n{n} causal={causal}", dtype.wgsl());
                check_flash(&name, &c, causal, None, BackwardVariants::default());
                n_cases += 1;
            }
        }
    }
    println!(
        "flash {}: {n_cases} cases, forward and backward",
        dtype.wgsl()
    );
}

#[test]
fn flash_f32_every_head_dim_and_length() {
    every_head_dim_and_length(DType::F32);
}

#[test]
fn flash_f16_every_head_dim_and_length() {
    every_head_dim_and_length(DType::F16);
}

#[test]
fn flash_unequal_lengths_and_rows_that_see_no_key() {
    // Nq = 20, Nk = 7, causal: rows 0..12 see no key (zeros, LSE +∞), the rest see some.
    for (nq, nk) in [(20, 7), (7, 20), (33, 64)] {
        for causal in [false, true] {
            let c = case(7, 3, nq, nk, 64, DType::F32);
            check_flash(
                &format!("nq{nq} nk{nk} causal={causal}"),
                &c,
                causal,
                None,
                BackwardVariants::default(),
            );
        }
    }
    let c = case(9, 1, 20, 7, 32, DType::F32);
    let (o, lse) = attention::flash_attention(&c.q.0, &c.k.0, &c.v.0, true, c.scale).unwrap();
    let o = read(&o);
    assert!(
        o[..13 * 32].iter().all(|&x| x == 0.0),
        "masked rows are not zeros"
    );
    assert!(read(&lse)[..13].iter().all(|&x| x == f32::INFINITY));
}

fn offered(family: &str, d: i64, dtype: DType, causal: bool) -> Vec<kiln::Variant> {
    let vs: Vec<_> = gpu()
        .registry()
        .supported(family, gpu().profile())
        .unwrap()
        .filter(|v| {
            v.int("head_dim").unwrap() == d
                && v.text("dtype").unwrap() == dtype.wgsl()
                && v.flag("causal").unwrap() == causal
        })
        .cloned()
        .collect();
    assert!(
        !vs.is_empty(),
        "no {family} variant for d{d} on this adapter"
    );
    vs
}

#[test]
fn every_offered_block_shape() {
    // Head dim 80 (20 vec4 columns, 5 per lane) and a length no block divides.
    let d = 80;
    let mut n = 0;
    for causal in [false, true] {
        let c = case(21, 2, 37, 37, d as usize, DType::F32);
        let fwd = offered("flash_fwd", d, DType::F32, causal);
        let dq = offered("flash_bwd_dq", d, DType::F32, causal);
        let dkdv = offered("flash_bwd_dkdv", d, DType::F32, causal);
        // Pair the lists so every variant of each family runs at least once.
        let count = fwd.len().max(dq.len()).max(dkdv.len());
        for i in 0..count {
            let (f, q, k) = (
                &fwd[i % fwd.len()],
                &dq[i % dq.len()],
                &dkdv[i % dkdv.len()],
            );
            let bwd = BackwardVariants {
                dq: Some(&q.name),
                dkdv: Some(&k.name),
                ..Default::default()
            };
            check_flash(
                &format!("{} + {} + {}", f.name, q.name, k.name),
                &c,
                causal,
                Some(&f.name),
                bwd,
            );
            n += 1;
        }
        println!(
            "causal={causal}: {} forward, {} dQ, {} dK/dV variants in {count} runs",
            fwd.len(),
            dq.len(),
            dkdv.len()
        );
    }
    assert!(n >= 10, "only {n} runs");
}

#[test]
fn tiled_route_every_head_dim() {
    // The register-blocked kernels, named explicitly (the selector prefers them on GPUs only):
    // every offered tiled variant of the three families, paired cyclically.
    // Large head dims may not fit a tiled dK/dV block in this adapter's workgroup storage
    // (32 KiB on lavapipe); those runs take the selector's choice for that family, and every
    // family must have tiled variants at d16, d32 and d64.
    let tiled = |family: &str, d: usize, dtype: DType, causal: bool| -> Vec<kiln::Variant> {
        let vs: Vec<_> = offered(family, d as i64, dtype, causal)
            .into_iter()
            .filter(|v| v.text("route").unwrap() == "tiled")
            .collect();
        assert!(d > 64 || !vs.is_empty(), "no tiled {family} for d{d}");
        vs
    };
    let pick = |vs: &[kiln::Variant], j: usize| -> Option<String> {
        (!vs.is_empty()).then(|| vs[j % vs.len()].name.clone())
    };
    let mut n = 0;
    for (i, &d) in attention::HEAD_DIMS.iter().enumerate() {
        for causal in [false, true] {
            let fwd = tiled("flash_fwd", d, DType::F32, causal);
            let dq = tiled("flash_bwd_dq", d, DType::F32, causal);
            let dkdv = tiled("flash_bwd_dkdv", d, DType::F32, causal);
            for j in 0..fwd.len().max(dq.len()).max(dkdv.len()) {
                let (f, q, k) = (pick(&fwd, j), pick(&dq, j), pick(&dkdv, j));
                let len = [17, 100, 33][j % 3];
                let c = case(300 + 10 * i as u64 + j as u64, 2, len, len, d, DType::F32);
                let bwd = BackwardVariants {
                    dq: q.as_deref(),
                    dkdv: k.as_deref(),
                    ..Default::default()
                };
                check_flash(
                    &format!("d{d} {f:?} + {q:?} + {k:?} n{len}"),
                    &c,
                    causal,
                    f.as_deref(),
                    bwd,
                );
                n += 1;
            }
        }
    }
    let c = case(399, 2, 70, 70, 64, DType::F16);
    let (f, q, k) = (
        &tiled("flash_fwd", 64, DType::F16, true)[0],
        &tiled("flash_bwd_dq", 64, DType::F16, true)[0],
        &tiled("flash_bwd_dkdv", 64, DType::F16, true)[0],
    );
    let bwd = BackwardVariants {
        dq: Some(&q.name),
        dkdv: Some(&k.name),
        ..Default::default()
    };
    check_flash(&f.name, &c, true, Some(&f.name), bwd);
    println!("tiled route: {n} f32 runs");
}

#[test]
fn coop_route_every_head_dim() {
    // The cooperative-matrix forward (offered only where the adapter has cooperative matrices;
    // none on lavapipe): every offered variant, named, on lengths that are multiples of 16 but
    // not of the 64-row or key blocks, equal and unequal, causal and not.
    let mut n = 0;
    for (i, &d) in attention::HEAD_DIMS.iter().enumerate() {
        for causal in [false, true] {
            let coop: Vec<_> = gpu()
                .registry()
                .supported("flash_fwd", gpu().profile())
                .unwrap()
                .filter(|v| {
                    v.text("route").unwrap() == "coop"
                        && v.int("head_dim").unwrap() == d as i64
                        && v.flag("causal").unwrap() == causal
                })
                .cloned()
                .collect();
            for (j, v) in coop.iter().enumerate() {
                let (nq, nk) = [(80, 80), (48, 112), (112, 48)][j % 3];
                let c = case(500 + 10 * i as u64 + j as u64, 2, nq, nk, d, DType::F16);
                let name = format!("{} nq{nq} nk{nk}", v.name);
                check_flash(
                    &name,
                    &c,
                    causal,
                    Some(&v.name),
                    BackwardVariants::default(),
                );
                n += 1;
            }
        }
    }
    // A length they cannot take is refused, not computed wrongly.
    if let Some(v) = gpu()
        .registry()
        .supported("flash_fwd", gpu().profile())
        .unwrap()
        .find(|v| v.text("route").unwrap() == "coop" && v.int("head_dim").unwrap() == 64)
    {
        let c = case(599, 1, 40, 40, 64, DType::F16);
        let o = poisoned_like(&c.q.0);
        let lse = Tensor::full(gpu(), &[1, 1, 40], f32::NAN, DType::F32).unwrap();
        let name = Some(v.name.as_str());
        let r =
            attention::flash_attention_into(&c.q.0, &c.k.0, &c.v.0, &o, &lse, false, c.scale, name);
        assert!(r.is_err(), "{} took a length of 40", v.name);
    }
    // Offered exactly where the adapter has cooperative matrices (every head dim then).
    let coop = gpu().profile().features.cooperative_matrix;
    assert_eq!(n > 0, coop, "{n} coop runs");
    println!("coop route: {n} runs");
}

/// The flash forward alone, with the named variant, against the CPU reference: O and LSE
/// (outputs poisoned with NaN first).
fn check_forward(name: &str, c: &Case, causal: bool, variant: &str) {
    let want = cpu::attention(&c.q.1, &c.k.1, &c.v.1, causal, c.scale).unwrap();
    let o = poisoned_like(&c.q.0);
    let lse = Tensor::full(gpu(), &c.q.0.shape()[..3], f32::NAN, DType::F32).unwrap();
    let choice = attention::flash_attention_into(
        &c.q.0,
        &c.k.0,
        &c.v.0,
        &o,
        &lse,
        causal,
        c.scale,
        Some(variant),
    )
    .unwrap();
    assert_eq!(choice.variant.name, variant);
    assert_close(
        &format!("{name} O"),
        &read(&o),
        &want.out.data,
        tolerance(DType::F32).0,
    );
    assert_lse(&format!("{name} LSE"), &read(&lse), &want.lse);
    gpu().check().unwrap();
}

/// Grouped query heads in the forward pass: Q with 4 heads against K and V with 2 and 1, on one
/// variant of every route the adapter offers (f16 for the cooperative one, whose fragments are
/// f16) and the rule's choice; lengths that are not block multiples, both masks; against the
/// CPU reference, itself checked against the same call with K and V repeated per query head.
#[test]
fn grouped_query_heads_in_the_forward_pass() {
    let picked = one_per_route("flash_fwd");
    let mut routes: Vec<(String, DType)> = Vec::new();
    for (route, _, _) in &picked {
        if !routes.iter().any(|(r, _)| r == route) {
            let dtype = if route == "coop" {
                DType::F16
            } else {
                DType::F32
            };
            routes.push((route.clone(), dtype));
        }
    }
    assert!(routes.len() >= 3, "routes offered: {picked:?}");
    let mut runs = 0;
    for (i, (route, dtype)) in routes.iter().enumerate() {
        // The cooperative route takes lengths that are multiples of 16 only.
        let (nq, nk) = if route == "coop" { (48, 80) } else { (37, 70) };
        for (j, kv_heads) in [2usize, 1].into_iter().enumerate() {
            let seed = 3000 + 100 * i as u64 + 10 * j as u64;
            let q = input(seed, &[2, 4, nq, 64], 10.0, *dtype);
            let k = input(seed + 1, &[2, kv_heads, nk, 64], 1.0, *dtype);
            let v = input(seed + 2, &[2, kv_heads, nk, 64], 1.0, *dtype);
            for causal in [false, true] {
                let scale = 0.125;
                let want = cpu::attention(&q.1, &k.1, &v.1, causal, scale).unwrap();
                // The reference equals the ungrouped call with each K/V head repeated.
                let repeat = |a: &Array| repeat_heads(a, 4);
                let full =
                    cpu::attention(&q.1, &repeat(&k.1), &repeat(&v.1), causal, scale).unwrap();
                assert_eq!(want, full, "the grouped reference");
                let variant = picked
                    .iter()
                    .find(|(r, c, _)| r == route && *c == causal)
                    .map(|(_, _, name)| name.as_str());
                for named in [variant, None] {
                    let o = poisoned_like(&q.0);
                    let lse = Tensor::full(gpu(), &[2, 4, nq], f32::NAN, DType::F32).unwrap();
                    attention::flash_attention_into(
                        &q.0, &k.0, &v.0, &o, &lse, causal, scale, named,
                    )
                    .unwrap();
                    let name =
                        format!("{} Hkv {kv_heads} causal={causal}", named.unwrap_or("rule"));
                    assert_close(
                        &format!("{name} O"),
                        &read(&o),
                        &want.out.data,
                        tolerance(*dtype).0,
                    );
                    assert_lse(&format!("{name} LSE"), &read(&lse), &want.lse);
                    runs += 1;
                }
            }
        }
    }
    gpu().check().unwrap();
    println!("grouped forward: {runs} runs, variants {picked:?}");
}

/// One offered variant of `family` per (route, mask) at head dim 64, f16 for the cooperative
/// route (its fragments are f16) and f32 for the others: (route, causal, name).
fn one_per_route(family: &str) -> Vec<(String, bool, String)> {
    let profile = gpu().profile();
    let mut picked: Vec<(String, bool, String)> = Vec::new();
    for v in gpu().registry().supported(family, profile).unwrap() {
        let route = v.text("route").unwrap().to_string();
        let dtype = if route == "coop" { "f16" } else { "f32" };
        let causal = v.flag("causal").unwrap();
        if v.int("head_dim").unwrap() == 64
            && v.text("dtype").unwrap() == dtype
            && v.experimental_on(profile.tier()).is_none()
            && !picked.iter().any(|(r, c, _)| *r == route && *c == causal)
        {
            picked.push((route, causal, v.name.clone()));
        }
    }
    picked
}

/// [B, Hkv, N, D] with each K/V head repeated for the `q_heads / Hkv` query heads it serves.
fn repeat_heads(a: &Array, q_heads: usize) -> Array {
    let [b, kv_heads, n, d] = a.shape[..] else {
        panic!("a rank-4 array, got {:?}", a.shape)
    };
    let per = n * d;
    let mut data = Vec::new();
    for bi in 0..b {
        for h in 0..q_heads {
            let m = bi * kv_heads + h / (q_heads / kv_heads);
            data.extend_from_slice(&a.data[m * per..][..per]);
        }
    }
    Array::new(&[b, q_heads, n, d], data).unwrap()
}

/// [B, Hq, N, D] summed over each group of `q_heads / kv_heads` query heads: the gradient of a
/// K/V head that [`repeat_heads`] repeated.
fn sum_groups(a: &Array, kv_heads: usize) -> Array {
    let [b, q_heads, n, d] = a.shape[..] else {
        panic!("a rank-4 array, got {:?}", a.shape)
    };
    let per = n * d;
    let mut data = vec![0.0f32; b * kv_heads * per];
    for bi in 0..b {
        for h in 0..q_heads {
            let m = bi * kv_heads + h / (q_heads / kv_heads);
            let src = &a.data[(bi * q_heads + h) * per..][..per];
            for (o, x) in data[m * per..][..per].iter_mut().zip(src) {
                *o += x;
            }
        }
    }
    Array::new(&[b, kv_heads, n, d], data).unwrap()
}

/// Grouped query heads in the backward pass: Q with 4 heads over K and V with 2 and 1. Each
/// backward route the adapter offers runs with its dK/dV and dQ variants named together (one per
/// route and mask, head dim 64; f16 for the cooperative route), then the one pass where the
/// adapter has f32 atomics, then the rule's choice; lengths that are not block multiples and
/// causal rows that see no key; against the CPU reference, itself checked against the ungrouped
/// call with K and V repeated per query head and its dK and dV summed over each group. Query
/// heads that K/V heads do not divide are refused.
#[test]
fn grouped_query_heads_in_the_backward_pass() {
    let (dkdv, dq, fused) = (
        one_per_route("flash_bwd_dkdv"),
        one_per_route("flash_bwd_dq"),
        one_per_route("flash_bwd_fused"),
    );
    let named = |list: &[(String, bool, String)], route: &str, causal: bool| {
        list.iter()
            .find(|(r, c, _)| r == route && *c == causal)
            .map(|(_, _, n)| n.clone())
    };
    // Each route once: (route, dtype, (Nq, Nk)).
    let mut runs: Vec<(String, DType, (usize, usize))> = Vec::new();
    for (route, _, _) in &dkdv {
        if runs.iter().any(|(r, ..)| r == route) {
            continue;
        }
        let coop = route == "coop";
        let dtype = if coop { DType::F16 } else { DType::F32 };
        // The cooperative route takes lengths that are multiples of 16 only; elsewhere Nq > Nk
        // leaves causal rows that see no key.
        let lengths = if coop { (48, 80) } else { (70, 37) };
        runs.push((route.clone(), dtype, lengths));
    }
    assert!(runs.len() >= 3, "dK/dV routes offered: {dkdv:?}");
    let mut n = 0;
    for (i, (route, dtype, (nq, nk))) in runs.iter().enumerate() {
        for (j, kv_heads) in [2usize, 1].into_iter().enumerate() {
            for causal in [false, true] {
                let c = grouped_case(
                    4000 + 100 * i as u64 + 10 * j as u64,
                    kv_heads,
                    *nq,
                    *nk,
                    *dtype,
                );
                if i == 0 {
                    check_grouped_reference(&c, kv_heads, causal);
                }
                let (a, b) = (named(&dkdv, route, causal), named(&dq, route, causal));
                let mut variants = vec![(
                    format!("{route} dkdv+dq"),
                    BackwardVariants {
                        dkdv: a.as_deref(),
                        dq: b.as_deref(),
                        ..Default::default()
                    },
                )];
                if i == 0 {
                    variants.push(("rule".to_string(), BackwardVariants::default()));
                }
                let one = named(&fused, route, causal);
                if one.is_some() {
                    variants.push((
                        format!("{route} fused"),
                        BackwardVariants {
                            fused: one.as_deref(),
                            ..Default::default()
                        },
                    ));
                }
                for (label, bwd) in variants {
                    let name = format!("{label} Hkv {kv_heads} causal={causal}");
                    check_flash(&name, &c, causal, None, bwd);
                    n += 1;
                }
            }
        }
    }
    // Four query heads over three K/V heads: a clear shape error, nothing launched.
    let c = grouped_case(4999, 1, 16, 16, DType::F32);
    let k3 = input(5000, &[2, 3, 16, 64], 1.0, DType::F32);
    let (o, lse) = attention::flash_attention(&c.q.0, &c.k.0, &c.v.0, false, c.scale).unwrap();
    let g = Grads::like(&c.q.0, &k3.0, &k3.0).unwrap();
    let e = attention::launch_backward(
        &c.q.0,
        &k3.0,
        &k3.0,
        &o,
        &lse,
        &c.d_o.0,
        &g,
        false,
        c.scale,
        BackwardVariants::default(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    gpu().check().unwrap();
    println!("grouped backward: {n} runs; dK/dV {dkdv:?}, dQ {dq:?}, one pass {fused:?}");
}

/// Q [2, 4, Nq, 64] (×10), K and V [2, Hkv, Nk, 64], dO like Q.
fn grouped_case(seed: u64, kv_heads: usize, nq: usize, nk: usize, dtype: DType) -> Case {
    Case {
        q: input(seed, &[2, 4, nq, 64], 10.0, dtype),
        k: input(seed + 1, &[2, kv_heads, nk, 64], 1.0, dtype),
        v: input(seed + 2, &[2, kv_heads, nk, 64], 1.0, dtype),
        d_o: input(seed + 3, &[2, 4, nq, 64], 1.0, dtype),
        scale: 0.125,
    }
}

/// The grouped CPU backward equals the ungrouped one on K and V repeated per query head, with
/// dK and dV summed over each group (to rounding: the sums run in another order).
fn check_grouped_reference(c: &Case, kv_heads: usize, causal: bool) {
    let grouped =
        cpu::attention_backward(&c.q.1, &c.k.1, &c.v.1, &c.d_o.1, causal, c.scale).unwrap();
    let (k, v) = (repeat_heads(&c.k.1, 4), repeat_heads(&c.v.1, 4));
    let full = cpu::attention_backward(&c.q.1, &k, &v, &c.d_o.1, causal, c.scale).unwrap();
    assert_eq!(grouped.dq, full.dq, "the grouped reference's dQ");
    for (what, got, want) in [
        ("dK", &grouped.dk, sum_groups(&full.dk, kv_heads)),
        ("dV", &grouped.dv, sum_groups(&full.dv, kv_heads)),
    ] {
        assert_close(
            &format!("the grouped reference's {what}"),
            &got.data,
            &want.data,
            1e-6,
        );
    }
}

#[test]
fn outer_route_every_offered_variant() {
    forward_route_every_offered_variant("outer", 700, &[64], &[128]);
}

#[test]
fn stream_route_every_offered_variant() {
    forward_route_every_offered_variant("stream", 2300, &[64], &[128]);
}

/// A forward route the selector's rule does not pick, named: every variant this adapter offers,
/// on every length of [`OUTER_LENGTHS`] (1 and 17 leave most of a block empty, 100 and 257 end
/// in a partial block, unequal lengths where causal rows see no key), causal and not, logits
/// ×10; offered at head dims `dims` (and `wide` with 48 KiB of workgroup storage, as on the
/// H200; lavapipe's 32 KiB holds d16, d32 and d64 blocks only).
fn forward_route_every_offered_variant(route: &str, seed: u64, dims: &[i64], wide: &[i64]) {
    let outer = route_variants("flash_fwd", route);
    let mut n = 0;
    for (i, v) in outer.iter().enumerate() {
        let d = v.int("head_dim").unwrap() as usize;
        let causal = v.flag("causal").unwrap();
        for (j, &(nq, nk)) in OUTER_LENGTHS.iter().enumerate() {
            let c = case(seed + 10 * i as u64 + j as u64, 2, nq, nk, d, DType::F32);
            check_forward(&format!("{} nq{nq} nk{nk}", v.name), &c, causal, &v.name);
            n += 1;
        }
    }
    let offered: std::collections::BTreeSet<_> =
        outer.iter().map(|v| v.int("head_dim").unwrap()).collect();
    let large = gpu().profile().limits.max_compute_workgroup_storage_size >= 48 * 1024;
    for d in dims.iter().chain(if large { wide } else { &[] }) {
        assert!(
            offered.contains(d),
            "no {route} variant at d{d}: {offered:?}"
        );
    }
    // The selector's rule and table still pick another route.
    for &d in &attention::HEAD_DIMS {
        for causal in [false, true] {
            let c = case(seed + 99, 1, 64, 64, d, DType::F32);
            let o = poisoned_like(&c.q.0);
            let lse = Tensor::full(gpu(), &[1, 1, 64], f32::NAN, DType::F32).unwrap();
            let choice = attention::flash_attention_into(
                &c.q.0, &c.k.0, &c.v.0, &o, &lse, causal, c.scale, None,
            )
            .unwrap();
            assert_ne!(
                choice.variant.text("route").unwrap(),
                route,
                "{}",
                choice.variant.name
            );
        }
    }
    println!(
        "flash_fwd {route} route: {} variants, {n} runs",
        outer.len()
    );
}

/// The variants of one route of a family this adapter offers (for the outer and stream routes,
/// ones the selector's rule never picks).
fn route_variants(family: &str, route: &str) -> Vec<kiln::Variant> {
    gpu()
        .registry()
        .supported(family, gpu().profile())
        .unwrap()
        .filter(|v| v.text("route").unwrap() == route)
        .cloned()
        .collect()
}

/// The lengths every outer-route variant runs on: 1 and 17 leave most of a block empty, 100 and
/// 257 end in a partial block, and unequal lengths where causal rows see no key (Nq = 20, Nk =
/// 7) or some keys are never seen (Nq = 7, Nk = 20).
const OUTER_LENGTHS: [(usize, usize); 8] = [
    (1, 1),
    (17, 17),
    (64, 64),
    (100, 100),
    (257, 257),
    (20, 7),
    (7, 20),
    (33, 64),
];

/// Every offered variant of a backward family's route, named (the selector's rule does not pick
/// the outer and stream routes), with the selector's forward and other backward kernel, on every
/// length of [`OUTER_LENGTHS`], causal and not, logits ×10, outputs poisoned; the head dims it is
/// offered at (`dims` with 32 KiB of workgroup storage, as on lavapipe; `wide` too with 48 KiB);
/// and a check that the selector's rule never picks it.
fn routed_backward_every_offered_variant(
    family: &str,
    route: &str,
    seed: u64,
    dims: &[i64],
    wide: &[i64],
) {
    let outer = route_variants(family, route);
    let mut n = 0;
    for (i, v) in outer.iter().enumerate() {
        let d = v.int("head_dim").unwrap() as usize;
        let causal = v.flag("causal").unwrap();
        let bwd = match family {
            "flash_bwd_dq" => BackwardVariants {
                dq: Some(&v.name),
                ..Default::default()
            },
            "flash_bwd_fused" => BackwardVariants {
                fused: Some(&v.name),
                ..Default::default()
            },
            _ => BackwardVariants {
                dkdv: Some(&v.name),
                ..Default::default()
            },
        };
        for (j, &(nq, nk)) in OUTER_LENGTHS.iter().enumerate() {
            let c = case(seed + 10 * i as u64 + j as u64, 2, nq, nk, d, DType::F32);
            let name = format!("{} nq{nq} nk{nk}", v.name);
            check_flash(&name, &c, causal, None, bwd);
            n += 1;
        }
    }
    let offered: std::collections::BTreeSet<_> =
        outer.iter().map(|v| v.int("head_dim").unwrap()).collect();
    let large = gpu().profile().limits.max_compute_workgroup_storage_size >= 48 * 1024;
    for d in dims.iter().chain(if large { wide } else { &[] }) {
        assert!(
            offered.contains(d),
            "{family}: {route} variants at {offered:?}"
        );
    }
    // The selector's rule and table pick another route.
    for &d in &attention::HEAD_DIMS {
        for causal in [false, true] {
            let c = case(seed + 999, 1, 64, 64, d, DType::F32);
            let (o, lse) =
                attention::flash_attention(&c.q.0, &c.k.0, &c.v.0, causal, c.scale).unwrap();
            let plan = attention::launch_backward(
                &c.q.0,
                &c.k.0,
                &c.v.0,
                &o,
                &lse,
                &c.d_o.0,
                &poisoned_grads(&c),
                causal,
                c.scale,
                BackwardVariants::default(),
            )
            .unwrap();
            for choice in &plan.choices {
                let tested = outer
                    .iter()
                    .any(|v| v.family == choice.variant.family && v.name == choice.variant.name);
                assert!(!tested, "the rule picked {}", choice.variant.name);
            }
        }
    }
    println!("{family} {route} route: {} variants, {n} runs", outer.len());
}

#[test]
fn outer_dq_every_offered_variant() {
    routed_backward_every_offered_variant("flash_bwd_dq", "outer", 1100, &[32, 64], &[96]);
}

#[test]
fn outer_dkdv_every_offered_variant() {
    routed_backward_every_offered_variant("flash_bwd_dkdv", "outer", 1400, &[32, 64], &[]);
}

#[test]
fn stream_dq_every_offered_variant() {
    routed_backward_every_offered_variant("flash_bwd_dq", "stream", 2000, &[64, 128], &[]);
}

#[test]
fn fused_backward_every_offered_variant() {
    // The one-pass backward (dQ added with f32 atomics into a poisoned dQ, which the plan zeroes
    // first) where the adapter has f32 atomics; lavapipe and the H200 do.
    if !gpu().profile().features.float32_atomic {
        // Without them the family offers nothing, and naming a variant is refused clearly.
        let c = case(2599, 1, 64, 64, 64, DType::F32);
        let (o, lse) = attention::flash_attention(&c.q.0, &c.k.0, &c.v.0, false, c.scale).unwrap();
        let named = BackwardVariants {
            fused: Some("f32_d64_k64_q64_fused"),
            ..Default::default()
        };
        let err = attention::launch_backward(
            &c.q.0,
            &c.k.0,
            &c.v.0,
            &o,
            &lse,
            &c.d_o.0,
            &poisoned_grads(&c),
            false,
            c.scale,
            named,
        )
        .unwrap_err();
        assert!(err.to_string().contains("float32_atomic"), "{err}");
        return;
    }
    routed_backward_every_offered_variant("flash_bwd_fused", "stream", 2600, &[64, 128], &[]);
}

#[test]
fn stream_dkdv_every_offered_variant() {
    routed_backward_every_offered_variant("flash_bwd_dkdv", "stream", 1700, &[64, 128], &[]);
}

#[test]
fn naive_gpu_path_matches_cpu_and_flash() {
    for (dtype, causal) in [(DType::F32, false), (DType::F32, true), (DType::F16, true)] {
        let (tol_f, tol_b) = tolerance(dtype);
        let c = case(31, 3, 45, 45, 32, dtype);
        let name = format!("{} causal={causal}", dtype.wgsl());
        let naive = attention::naive_attention(&c.q.0, &c.k.0, &c.v.0, causal, c.scale).unwrap();
        let want = cpu::attention(&c.q.1, &c.k.1, &c.v.1, causal, c.scale).unwrap();
        assert_close(
            &format!("naive {name} O"),
            &read(&naive.out),
            &want.out.data,
            tol_f,
        );
        let g = attention::naive_attention_backward(
            &c.q.0,
            &c.k.0,
            &c.v.0,
            &naive.probs,
            &c.d_o.0,
            c.scale,
        )
        .unwrap();
        let want_g =
            cpu::attention_backward(&c.q.1, &c.k.1, &c.v.1, &c.d_o.1, causal, c.scale).unwrap();
        assert_close(
            &format!("naive {name} dQ"),
            &read(&g.dq),
            &want_g.dq.data,
            tol_b,
        );
        assert_close(
            &format!("naive {name} dK"),
            &read(&g.dk),
            &want_g.dk.data,
            tol_b,
        );
        assert_close(
            &format!("naive {name} dV"),
            &read(&g.dv),
            &want_g.dv.data,
            tol_b,
        );

        // The two GPU paths against each other.
        let (o, lse) = attention::flash_attention(&c.q.0, &c.k.0, &c.v.0, causal, c.scale).unwrap();
        let fg = attention::flash_attention_backward(
            &c.q.0, &c.k.0, &c.v.0, &o, &lse, &c.d_o.0, causal, c.scale,
        )
        .unwrap();
        assert_close(
            &format!("flash vs naive {name} O"),
            &read(&o),
            &read(&naive.out),
            tol_f,
        );
        assert_close(
            &format!("flash vs naive {name} dQ"),
            &read(&fg.dq),
            &read(&g.dq),
            tol_b,
        );
        assert_close(
            &format!("flash vs naive {name} dK"),
            &read(&fg.dk),
            &read(&g.dk),
            tol_b,
        );
        assert_close(
            &format!("flash vs naive {name} dV"),
            &read(&fg.dv),
            &read(&g.dv),
            tol_b,
        );
    }
}

#[test]
fn transpose_and_softmax_backward_match_cpu() {
    let (x, x_cpu) = input(41, &[3, 17, 35], 1.0, DType::F32);
    let y = Tensor::full(gpu(), &[3, 35, 17], f32::NAN, DType::F32).unwrap();
    kiln::ops::transpose_into(&x, &y, None).unwrap();
    assert_eq!(read(&y), cpu::transpose(&x_cpu).unwrap().data);

    let (s, s_cpu) = input(42, &[5, 70], 3.0, DType::F32);
    let p = kiln::ops::softmax(&s, true, 0.5).unwrap();
    let p_cpu = cpu::softmax(&s_cpu, true, 0.5).unwrap();
    let (dp, dp_cpu) = input(43, &[5, 70], 1.0, DType::F32);
    let dx = Tensor::full(gpu(), &[5, 70], f32::NAN, DType::F32).unwrap();
    kiln::ops::softmax_backward_into(&p, &dp, &dx, 0.5, None).unwrap();
    let want = cpu::softmax_backward(&p_cpu, &dp_cpu, 0.5).unwrap();
    assert_close("softmax backward", &read(&dx), &want.data, 1e-5);
}

#[test]
fn bad_calls_are_refused() {
    let c = case(51, 1, 8, 8, 48, DType::F32);
    let err = attention::flash_attention(&c.q.0, &c.k.0, &c.v.0, false, c.scale).unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("head dimension 48"), "{err}");

    let c = case(52, 2, 8, 9, 32, DType::F32);
    let (k_short, _) = input(53, &[1, 2, 8, 32], 1.0, DType::F32);
    let err = attention::flash_attention(&c.q.0, &c.k.0, &k_short, false, 1.0).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }), "{err}");
    let err = attention::flash_attention(&c.q.0, &c.k.0, &c.v.0, false, f32::NAN).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    let (o, lse) = attention::flash_attention(&c.q.0, &c.k.0, &c.v.0, false, 1.0).unwrap();
    // The output may not alias an input.
    let err =
        attention::flash_attention_into(&c.q.0, &c.k.0, &c.v.0, &c.q.0, &lse, false, 1.0, None)
            .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    // dQ, dK, dV must be separate.
    let g = Grads {
        dq: poisoned_like(&c.q.0),
        dk: poisoned_like(&c.k.0),
        dv: poisoned_like(&c.k.0),
    };
    let same = Grads {
        dv: g.dk.clone(),
        ..g
    };
    let err = attention::launch_backward(
        &c.q.0,
        &c.k.0,
        &c.v.0,
        &o,
        &lse,
        &c.d_o.0,
        &same,
        false,
        1.0,
        BackwardVariants::default(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
}
