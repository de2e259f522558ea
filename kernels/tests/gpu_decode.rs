//! Decoding on the GPU against the CPU references: a key/value cache filled by a causal prefill
//! and then one row at a time, grouped query heads attending through flash-decoding after every
//! step; logits scaled ×10 so that maxima move between chunks; the refusals. Runs on lavapipe in
//! CI; every variant of the three families is proven by `every_variant.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{assert_close, gpu, input, random, read, scaled_input, variants};
use kiln::cpu::{self, Array};
use kiln::ops::{KvCache, flash_decode};
use kiln::{DType, Error, Gpu, GpuOptions, Tensor};

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

/// A one-row step captured once (append, then attend) and replayed as the cache grows past a
/// chunk's end, with new rows written into its inputs before each replay: like the CPU at every
/// length. The kernels read the length when they run; the split covers the capacity.
#[test]
fn a_captured_step_replays_as_the_cache_grows() {
    // A device of its own: a capture takes whatever its device records meanwhile, and the
    // other tests of this file record on the shared one from other threads.
    let gpu = &pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap();
    let (b, hq, hkv, d, cap) = (1, 4, 2, 64, 600);
    let scale = 1.0 / (d as f32).sqrt();
    let dtype = DType::F32;
    let rows = |seed: u64, heads: usize, n: usize, gain: f32| {
        let data: Vec<f32> = random(seed, b * heads * n * d)
            .into_iter()
            .map(|x| gain * x)
            .collect();
        Array::new(&[b, heads, n, d], data).unwrap()
    };
    let on_gpu = |a: &Array| Tensor::from_slice(gpu, &a.shape, &a.data, dtype).unwrap();
    let mut cache = KvCache::new(gpu, b, hkv, cap, d, dtype).unwrap();
    let mut k_cpu = Array::new(&[b, hkv, cap, d], vec![0.0; b * hkv * cap * d]).unwrap();
    let mut v_cpu = k_cpu.clone();
    let (k, v) = (rows(1, hkv, 254, 1.0), rows(2, hkv, 254, 1.0));
    cpu::cache_append(&mut k_cpu, &k, 0).unwrap();
    cpu::cache_append(&mut v_cpu, &v, 0).unwrap();
    cache.append(&on_gpu(&k), &on_gpu(&v)).unwrap();
    let (q, k, v) = (
        Tensor::uninit(gpu, &[b, hq, 1, d], dtype).unwrap(),
        Tensor::uninit(gpu, &[b, hkv, 1, d], dtype).unwrap(),
        Tensor::uninit(gpu, &[b, hkv, 1, d], dtype).unwrap(),
    );
    let (plan, (o, lse)) = gpu
        .capture(|| {
            cache.append(&k, &v)?;
            cache.attend(&q, true, scale)
        })
        .unwrap();
    assert_eq!(plan.launches(), 3, "{:?}", plan.kernels());
    let mut worst = 0.0f64;
    for step in 0..5u64 {
        if step > 0 {
            cache.grow(1).unwrap();
        }
        let len = cache.len();
        let new = [
            rows(30 + step, hq, 1, 10.0),
            rows(40 + step, hkv, 1, 1.0),
            rows(50 + step, hkv, 1, 1.0),
        ];
        for (t, a) in [&q, &k, &v].into_iter().zip(&new) {
            t.write(&a.data).unwrap();
        }
        // Poisoned, so that a replay that wrote nothing fails.
        o.write(&vec![f32::NAN; o.numel()]).unwrap();
        plan.replay().unwrap();
        cpu::cache_append(&mut k_cpu, &new[1], len - 1).unwrap();
        cpu::cache_append(&mut v_cpu, &new[2], len - 1).unwrap();
        let want = cpu::decode_attention(&new[0], &k_cpu, &v_cpu, len, true, scale).unwrap();
        let case = format!("replay at length {len}");
        let got = read(&o);
        assert_close(&case, &got, &want.out.data, tolerance(dtype));
        assert_close(
            &format!("{case} LSE"),
            &read(&lse),
            &want.lse,
            LSE_TOLERANCE,
        );
        worst = worst.max(cpu::rel_l2(&got, &want.out.data));
    }
    println!("captured decode step, lengths 255 to 259: worst relative L2 error {worst:.1e}");
    // The replayed appends wrote the rows the CPU's cache holds, the earlier rows untouched.
    let held = |a: &[f32]| -> Vec<f32> {
        (0..b * hkv)
            .flat_map(|h| a[h * cap * d..][..259 * d].to_vec())
            .collect()
    };
    assert_eq!(held(&read(cache.keys())), held(&k_cpu.data));
    assert!(cache.grow(cap).is_err());
    assert_eq!(cache.len(), 259);
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
    // The length the kernels read must be one u32.
    let (k, v) = (rows(1), rows(1));
    let f32_length = Tensor::full(gpu(), &[1], 1.0, DType::F32).unwrap();
    let e = kiln::ops::kv_append_into(&k, &v, cache.keys(), cache.values(), &f32_length, 3, None)
        .unwrap_err();
    assert!(e.to_string().contains("one u32"), "{e}");
}

/// Greedy decoding's hand-over picks what the CPU's rule picks where a plain comparison would
/// not: NaNs (above every number, the positive over the negative), infinities, −0 against +0,
/// and equals (the last one). Every f32 variant (the f16 ones read f32 the same way once the
/// value is widened; their ties are proven by every_variant.rs), against `cpu::greedy_pick`.
#[test]
fn the_hand_over_picks_as_the_cpu_does_on_special_values() {
    let nan = f32::NAN;
    let rows: [&[f32]; 6] = [
        &[1.0, nan, 3.0, -nan, 2.0],
        &[-nan, -1.0, f32::NEG_INFINITY, -2.0],
        &[f32::INFINITY, 0.5, f32::INFINITY, -3.0, 1.0],
        &[0.0, -0.0, -0.0, -1.0],
        &[-0.0, 0.0, -0.0],
        &[7.0; 70],
    ];
    let words = |v: u32| Tensor::from_u32(gpu(), &[1], &[v]).unwrap();
    for variant in variants("greedy_next", DType::F32) {
        for row in rows {
            let logits = Tensor::from_slice(gpu(), &[1, row.len()], row, DType::F32).unwrap();
            let (token, position, length) = (words(99), words(40), words(41));
            let log = Tensor::from_slice(
                gpu(),
                &[3, row.len() + 1],
                &vec![0.0; 3 * (row.len() + 1)],
                DType::F32,
            )
            .unwrap();
            kiln::ops::greedy_next_into(
                &logits,
                &token,
                &position,
                &length,
                &log,
                Some(&variant.name),
            )
            .unwrap();
            let want = cpu::greedy_pick(row).unwrap();
            let got = pollster::block_on(token.read_u32()).unwrap()[0];
            assert_eq!(got, want, "{} on {row:?}", variant.name);
            assert_eq!(pollster::block_on(position.read_u32()).unwrap(), [41]);
            assert_eq!(pollster::block_on(length.read_u32()).unwrap(), [42]);
            // Row 40 % 3 = 1 of the log: the row's bits, then the id.
            let logged = pollster::block_on(log.read()).unwrap();
            let logged = &logged[row.len() + 1..2 * (row.len() + 1)];
            let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&logged[..row.len()]), bits(row), "{}", variant.name);
            assert_eq!(logged[row.len()], want as f32);
        }
    }
}

#[test]
fn bad_hand_overs_are_refused() {
    let words = |v: u32| Tensor::from_u32(gpu(), &[1], &[v]).unwrap();
    let logits = Tensor::from_slice(gpu(), &[2, 5], &[0.0; 10], DType::F32).unwrap();
    let log = Tensor::from_slice(gpu(), &[4, 6], &[0.0; 24], DType::F32).unwrap();
    let (token, position, length) = (words(0), words(0), words(0));
    let call =
        |logits: &Tensor, token: &Tensor, position: &Tensor, length: &Tensor, log: &Tensor| {
            kiln::ops::greedy_next_into(logits, token, position, length, log, None)
                .unwrap_err()
                .to_string()
        };
    let narrow = Tensor::from_slice(gpu(), &[4, 5], &[0.0; 20], DType::F32).unwrap();
    assert!(call(&logits, &token, &position, &length, &narrow).contains("[cap ≥ 1, V + 1]"));
    let two = Tensor::from_u32(gpu(), &[2], &[0, 0]).unwrap();
    assert!(call(&logits, &token, &two, &length, &log).contains("the position must be one u32"));
    assert!(call(&logits, &token, &position, &position, &log).contains("separate buffers"));
    let f32_word = Tensor::from_slice(gpu(), &[1], &[0.0], DType::F32).unwrap();
    assert!(
        call(&logits, &f32_word, &position, &length, &log).contains("the token must be one u32")
    );
}

/// A group's caches count in one word, written once per step however many of them append the
/// same rows (a write per cache would submit the work recorded since the first); greedy
/// decoding's hand-over moves that word, and refuses caches that count apart.
#[test]
fn a_group_of_caches_shares_one_length_word() {
    use kiln::{Backend, GpuBackend};
    // A device of its own: the counters below are device-wide.
    let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap();
    let shape = [1, 2, 16, 8];
    assert!(
        KvCache::group(&gpu, 0, shape, DType::F32)
            .unwrap()
            .is_empty()
    );
    let mut group = KvCache::group(&gpu, 3, shape, DType::F32).unwrap();
    let apart = KvCache::new(&gpu, 1, 2, 16, 8, DType::F32).unwrap();
    assert!(group[0].shares_length(&group[2]) && !group[1].shares_length(&apart));
    let rows = |seed| {
        let data = random(seed, 2 * 3 * 8);
        Tensor::from_slice(&gpu, &[1, 2, 3, 8], &data, DType::F32).unwrap()
    };
    let (k, v) = (rows(1), rows(2));
    gpu.flush().unwrap();
    let before = gpu.counters();
    for cache in &mut group {
        cache.append(&k, &v).unwrap();
    }
    let spent = gpu.counters() - before;
    assert_eq!((spent.writes, spent.submissions), (1, 0), "{spent:?}");
    assert!(group.iter().all(|c| c.len() == 3));
    assert_eq!(
        pollster::block_on(group[2].length().read_u32()).unwrap(),
        [3]
    );

    let b = GpuBackend { gpu: gpu.clone() };
    let words = |x: u32| Tensor::from_u32(&gpu, &[1], &[x]).unwrap();
    let row = [0.5, 2.0, -1.0, 2.0];
    let logits = Tensor::from_slice(&gpu, &[1, 4], &row, DType::F32).unwrap();
    let log = Tensor::from_slice(&gpu, &[2, 5], &[0.0; 10], DType::F32).unwrap();
    let (token, position) = (words(0), words(2));
    b.feed_greedy(&logits, &token, &position, &group, &log)
        .unwrap();
    let want = cpu::greedy_pick(&row).unwrap();
    assert_eq!(pollster::block_on(token.read_u32()).unwrap(), [want]);
    assert_eq!(pollster::block_on(position.read_u32()).unwrap(), [3]);
    assert_eq!(
        pollster::block_on(group[1].length().read_u32()).unwrap(),
        [4]
    );
    let refused = |caches: &[KvCache]| {
        b.feed_greedy(&logits, &token, &position, caches, &log)
            .unwrap_err()
            .to_string()
    };
    assert!(refused(&[group[0].clone(), apart]).contains("count apart"));
    assert!(refused(&[]).contains("no cache"));
}
