//! Decoding on the GPU against the CPU references: a key/value cache filled by a causal prefill
//! and then one row at a time, grouped query heads attending through flash-decoding after every
//! step; logits scaled ×10 so that maxima move between chunks; the refusals. Runs on lavapipe in
//! CI; every variant of the three families is proven by `every_variant.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{assert_close, gpu, input, read, scaled_input};
use kiln::cpu::{self, Array};
use kiln::ops::{KvCache, flash_decode};
use kiln::{DType, Error, Tensor};

/// Relative L2 tolerance against the CPU: about 10× the worst measured on lavapipe with logits
/// ×10 (f32 1.1e-6; f16 2.0e-4, its 11 significant bits).
/// The LSE's relative L2 tolerance, both dtypes (accumulated in f32 from inputs the CPU also
/// sees rounded): about 10× the worst measured on lavapipe, 1.1e-7.
const LSE_TOLERANCE: f64 = 1e-6;

fn tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2e-3,
        _ => 1e-5,
    }
}

/// A prefill of 300 rows (Nq 300, causal: every query sees its prefix), then four decoding
/// steps of one row; after each, the GPU's output and LSE against the CPU with its own cache.
#[test]
fn a_cache_filled_by_prefill_and_steps_attends_like_the_cpu() {
    let dtypes: &[DType] = if gpu().profile().features.shader_f16 {
        &[DType::F32, DType::F16]
    } else {
        &[DType::F32]
    };
    for &dtype in dtypes {
        let (b, hq, hkv, d, cap) = (2, 8, 2, 64, 320);
        let scale = 1.0 / (d as f32).sqrt();
        let mut cache = KvCache::new(gpu(), b, hkv, cap, d, dtype).unwrap();
        let mut k_cpu = Array::new(&[b, hkv, cap, d], vec![0.0; b * hkv * cap * d]).unwrap();
        let mut v_cpu = k_cpu.clone();
        let mut seed = 100;
        let mut worst = [0.0f64; 2];
        for n in [300, 1, 1, 1, 1] {
            seed += 10;
            let q = scaled_input(seed, &[b, hq, n, d], 10.0, dtype);
            let k = input(seed + 1, &[b, hkv, n, d], dtype);
            let v = input(seed + 2, &[b, hkv, n, d], dtype);
            cpu::cache_append(&mut k_cpu, &k.1, cache.len()).unwrap();
            cpu::cache_append(&mut v_cpu, &v.1, cache.len()).unwrap();
            cache.append(&k.0, &v.0).unwrap();
            let (o, lse) = cache.attend(&q.0, true, scale).unwrap();
            let want =
                cpu::decode_attention(&q.1, &k_cpu, &v_cpu, cache.len(), true, scale).unwrap();
            let case = format!("{dtype:?} len {} Nq {n}", cache.len());
            let (o, lse) = (read(&o), read(&lse));
            assert_close(&case, &o, &want.out.data, tolerance(dtype));
            assert_close(&format!("{case} LSE"), &lse, &want.lse, LSE_TOLERANCE);
            worst[0] = worst[0].max(cpu::rel_l2(&o, &want.out.data));
            worst[1] = worst[1].max(cpu::rel_l2(&lse, &want.lse));
        }
        println!(
            "decode {dtype:?}: worst relative L2 error O {:.1e}, LSE {:.1e}",
            worst[0], worst[1]
        );
        assert_eq!(cache.len(), 304);
    }
}

/// Without a group (Hkv = Hq) and with the cache full, decoding is the flash forward pass.
#[test]
fn a_full_cache_without_groups_matches_the_flash_forward() {
    let (q, k, v) = (
        input(1, &[1, 4, 3, 128], DType::F32),
        input(2, &[1, 4, 700, 128], DType::F32),
        input(3, &[1, 4, 700, 128], DType::F32),
    );
    for causal in [false, true] {
        let (o, lse) = flash_decode(&q.0, &k.0, &v.0, 700, causal, 0.1).unwrap();
        let (fo, flse) = kiln::ops::flash_attention(&q.0, &k.0, &v.0, causal, 0.1).unwrap();
        let (o, fo, lse, flse) = (read(&o), read(&fo), read(&lse), read(&flse));
        println!(
            "causal {causal}: relative L2 difference O {:.1e}, LSE {:.1e}",
            cpu::rel_l2(&o, &fo),
            cpu::rel_l2(&lse, &flse)
        );
        // About 10× the differences measured on lavapipe (O 5.4e-7, LSE 6.6e-8).
        assert_close("O", &o, &fo, 5e-6);
        assert_close("LSE", &lse, &flse, 6e-7);
    }
}

#[test]
fn bad_calls_are_refused_and_leave_the_cache_as_it_was() {
    let mut cache = KvCache::new(gpu(), 1, 2, 4, 64, DType::F32).unwrap();
    let rows = |n: usize| Tensor::full(gpu(), &[1, 2, n, 64], 0.0, DType::F32).unwrap();
    let q = Tensor::full(gpu(), &[1, 6, 1, 64], 0.0, DType::F32).unwrap();
    // Nothing to attend to yet.
    let e = cache.attend(&q, false, 1.0).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    cache.append(&rows(3), &rows(3)).unwrap();
    let e = cache.append(&rows(2), &rows(2)).unwrap_err();
    assert!(e.to_string().contains("overflow"), "{e}");
    assert_eq!(cache.len(), 3);
    // 6 query heads over 2 K/V heads is a group of 3; 5 over 2 is not a group.
    cache.attend(&q, false, 1.0).unwrap();
    let q5 = Tensor::full(gpu(), &[1, 5, 1, 64], 0.0, DType::F32).unwrap();
    let e = cache.attend(&q5, false, 1.0).unwrap_err();
    assert!(e.to_string().contains("not a multiple of 2"), "{e}");
    // A head dimension the kernels are not rendered for, and a mismatched dtype.
    let mut odd = KvCache::new(gpu(), 1, 1, 4, 80, DType::F32).unwrap();
    let r80 = Tensor::full(gpu(), &[1, 1, 1, 80], 0.0, DType::F32).unwrap();
    odd.append(&r80, &r80).unwrap();
    let e = odd.attend(&r80, false, 1.0).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    let half = Tensor::full(gpu(), &[1, 2, 1, 64], 0.0, DType::F16);
    if let Ok(half) = half {
        assert!(cache.append(&half, &half).is_err());
        assert_eq!(cache.len(), 3);
    }
    assert!(KvCache::new(gpu(), 1, 0, 4, 64, DType::F32).is_err());
}
