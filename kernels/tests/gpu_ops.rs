//! Every op on the GPU against its CPU reference: random inputs from a seeded generator,
//! outputs poisoned with NaN first, shapes that are not tile multiples, several variants.
//! Runs on lavapipe in CI; no adapter is a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{assert_close, gpu, input, poisoned, random, read, tolerance, variants};
use kiln::contract::Param;
use kiln::cpu::{self, Array};
use kiln::ops::matmul::{Layout, fits};
use kiln::tensor::round_to_f16;
use kiln::{DType, Tensor, ops};

/// The variants without a fused epilogue or residual (those are tested in gpu_fused.rs).
fn plain(family: &str, dtype: DType) -> Vec<kiln::Variant> {
    let none = Param::Str("none".into());
    variants(family, dtype)
        .into_iter()
        .filter(|v| {
            let epilogue = v.get("epilogue").is_some_and(|e| *e != none);
            !epilogue && v.get("residual") != Some(&Param::Bool(true))
        })
        .collect()
}

/// Both dtypes, always: the test adapters (lavapipe, the H200) offer SHADER_F16, and an
/// adapter without it fails these tests rather than skipping f16 silently.
fn dtypes() -> [DType; 2] {
    [DType::F32, DType::F16]
}

#[test]
fn poisoned_output_fails_when_nothing_writes_it() {
    // The guard every other test relies on: an unwritten output cannot pass.
    let out = poisoned(&[7, 3], DType::F32);
    let err = kiln::cpu::rel_l2(&read(&out), &[0.0; 21]);
    assert!(err.is_infinite());
}

#[test]
fn kernels_built_with_wgpu_runtime_checks_match_the_cpu() {
    // The default build drops wgpu's runtime checks (GpuOptions::runtime_checks); the checked
    // build is the way to debug a kernel, so it has to work too: a second device with the
    // checks on, the selector's matmul and flash forward on shapes that are not tile multiples.
    let checked = pollster::block_on(kiln::Gpu::new(&kiln::GpuOptions {
        runtime_checks: true,
        ..Default::default()
    }))
    .unwrap();
    assert!(checked.runtime_checks() && !gpu().runtime_checks());
    let on = |seed, shape: &[usize]| {
        let data = random(seed, shape.iter().product());
        let t = Tensor::from_slice(&checked, shape, &data, DType::F32).unwrap();
        (t, Array::new(shape, data).unwrap())
    };
    // Measured on lavapipe: matmul 0 (the CPU's summation order), flash forward 1.4e-7.
    let tol = 1e-6;
    let (m, k, n) = (37, 70, 19);
    let ((a, a_cpu), (b, b_cpu)) = (on(21, &[m, k]), on(22, &[k, n]));
    let c = Tensor::full(&checked, &[m, n], f32::NAN, DType::F32).unwrap();
    ops::matmul_into(&a, &b, &c, None).unwrap();
    let want = cpu::matmul(&a_cpu, &b_cpu).unwrap();
    assert_close("checked matmul", &read(&c), &want.data, tol);

    let shape = [1, 2, 45, 32];
    let ((q, q_cpu), (kk, k_cpu), (v, v_cpu)) = (on(23, &shape), on(24, &shape), on(25, &shape));
    let scale = 1.0 / (32f32).sqrt();
    let (o, _) = ops::attention::flash_attention(&q, &kk, &v, true, scale).unwrap();
    let want = cpu::attention(&q_cpu, &k_cpu, &v_cpu, true, scale).unwrap();
    assert_close("checked flash forward", &read(&o), &want.out.data, tol);
}

#[test]
fn matmul_every_variant_on_an_odd_shape() {
    let (m, k, n) = (33, 130, 7);
    for dtype in dtypes() {
        let (a, a_cpu) = input(1, &[m, k], dtype);
        let (b, b_cpu) = input(2, &[k, n], dtype);
        let want = cpu::matmul(&a_cpu, &b_cpu).unwrap();
        let vs = plain("matmul", dtype);
        assert!(vs.len() >= 9, "only {} matmul {dtype:?} variants", vs.len());
        let dims = kiln::shape::MatmulDims::new(&[m, k], &[k, n]).unwrap();
        let vs: Vec<_> = vs.into_iter().filter(|v| fits(v, &dims).unwrap()).collect();
        for v in &vs {
            let c = poisoned(&[m, n], dtype);
            ops::matmul_into(&a, &b, &c, Some(&v.name)).unwrap();
            assert_close(
                &format!("matmul {} {m}x{k}x{n}", v.name),
                &read(&c),
                &want.data,
                tolerance(dtype),
            );
        }
        println!("matmul: {} {} variants checked", vs.len(), dtype.wgsl());
    }
}

#[test]
fn matmul_whole_vector_variants_on_tiles_that_overhang() {
    // Variants that need sizes to be multiples (16: the cooperative-matrix routes, on GPUs that
    // have them; 4: the vec4 route's wide reads, everywhere): M, N, K multiples of 16 but not
    // of the 64 or 128 tiles, batched, with B plain and transposed. Every other variant is
    // covered by the odd shapes above.
    let (batch, m, k, n) = (2, 80, 48, 144);
    let mut coop = 0;
    for dtype in dtypes() {
        let (a, a_cpu) = input(11, &[batch, m, k], dtype);
        let (b, b_cpu) = input(12, &[batch, k, n], dtype);
        let (bt, bt_cpu) = input(13, &[batch, n, k], dtype);
        let want = cpu::matmul(&a_cpu, &b_cpu).unwrap();
        let want_bt = cpu::matmul(&a_cpu, &cpu::transpose(&bt_cpu).unwrap()).unwrap();
        let whole: Vec<_> = plain("matmul", dtype)
            .into_iter()
            .filter(|v| v.int("multiple").unwrap() > 1)
            .collect();
        assert!(!whole.is_empty(), "{} wide variants", dtype.wgsl());
        for v in &whole {
            for (b_in, want, b_trans) in [(&b, &want, false), (&bt, &want_bt, true)] {
                let c = poisoned(&[batch, m, n], dtype);
                let layout = Layout {
                    a_trans: false,
                    b_trans,
                };
                let (d, _) =
                    ops::matmul::launch_with(&a, b_in, &c, layout, None, Some(&v.name)).unwrap();
                gpu().submit(&[&d]).unwrap();
                let what = format!("matmul {} b_trans={b_trans}", v.name);
                assert_close(&what, &read(&c), &want.data, tolerance(dtype));
            }
            // A shape they cannot take is refused, not computed wrongly.
            let odd = poisoned(&[batch, m, n - 1], dtype);
            let (b_odd, _) = input(14, &[batch, k, n - 1], dtype);
            assert!(ops::matmul_into(&a, &b_odd, &odd, Some(&v.name)).is_err());
            coop += usize::from(v.int("multiple").unwrap() == 16);
        }
        println!(
            "matmul: {} {} whole-vector variants checked",
            whole.len(),
            dtype.wgsl()
        );
    }
    // The cooperative routes are offered exactly where the adapter has cooperative matrices: on
    // lavapipe this checks that they are withheld, on the H200 that every one of them ran above.
    let has_coop = gpu().profile().features.cooperative_matrix;
    assert_eq!(coop > 0, has_coop, "{coop} cooperative-matrix variants");
}

#[test]
fn matmul_bt_every_variant_reads_b_transposed() {
    // C = A · Bᵀ with B stored [N, K], batched with a broadcast A, on a shape no tile divides.
    let (batch, m, k, n) = (2, 37, 45, 19);
    for dtype in dtypes() {
        let (a, a_cpu) = input(3, &[m, k], dtype);
        let (b, b_cpu) = input(4, &[batch, n, k], dtype);
        let bt = cpu::transpose(&b_cpu).unwrap();
        let want = cpu::matmul(&a_cpu, &bt).unwrap();
        let dims = kiln::shape::MatmulDims::new_bt(&[m, k], &[batch, n, k]).unwrap();
        for v in plain("matmul", dtype)
            .iter()
            .filter(|v| fits(v, &dims).unwrap())
        {
            let c = poisoned(&[batch, m, n], dtype);
            let (dispatch, _) = ops::matmul::launch_bt(&a, &b, &c, Some(&v.name)).unwrap();
            gpu().submit(&[&dispatch]).unwrap();
            assert_close(
                &format!("matmul_bt {} {batch}x{m}x{k}x{n}", v.name),
                &read(&c),
                &want.data,
                tolerance(dtype),
            );
        }
    }
    let c = ops::matmul_bt(
        &input(5, &[4, 3], DType::F32).0,
        &input(6, &[5, 3], DType::F32).0,
    );
    assert_eq!(c.unwrap().shape(), &[4, 5]);
}

#[test]
fn matmul_selected_variant_on_many_shapes() {
    let shapes = [
        (1, 1, 1),
        (1, 7, 1),
        (7, 1, 33),
        (33, 7, 130),
        (130, 33, 7),
        (64, 64, 64),
        (130, 130, 130),
        (256, 17, 256),
    ];
    for dtype in dtypes() {
        for (i, &(m, k, n)) in shapes.iter().enumerate() {
            let (a, a_cpu) = input(10 + i as u64, &[m, k], dtype);
            let (b, b_cpu) = input(50 + i as u64, &[k, n], dtype);
            let c = poisoned(&[m, n], dtype);
            let choice = ops::matmul_into(&a, &b, &c, None).unwrap();
            let want = cpu::matmul(&a_cpu, &b_cpu).unwrap();
            assert_close(
                &format!("matmul {} {m}x{k}x{n}", choice.variant.name),
                &read(&c),
                &want.data,
                tolerance(dtype),
            );
        }
    }
}

#[test]
fn matmul_batched_and_broadcast_batches() {
    for (a_shape, b_shape) in [
        (vec![3, 7, 33], vec![3, 33, 5]),
        (vec![4, 9, 17], vec![17, 6]),
        (vec![5, 8], vec![2, 8, 3]),
        (vec![1, 13, 4], vec![3, 4, 13]),
    ] {
        let (a, a_cpu) = input(7, &a_shape, DType::F32);
        let (b, b_cpu) = input(8, &b_shape, DType::F32);
        let want = cpu::matmul(&a_cpu, &b_cpu).unwrap();
        let c = ops::matmul(&a, &b).unwrap();
        assert_eq!(c.shape(), want.shape.as_slice());
        assert_close(
            &format!("matmul {a_shape:?}·{b_shape:?}"),
            &read(&c),
            &want.data,
            1e-5,
        );
    }
}

#[test]
fn add_every_variant_same_shape_and_broadcast() {
    for dtype in dtypes() {
        for v in variants("add", dtype) {
            let cases: Vec<(Vec<usize>, Vec<usize>)> = match v.text("form").unwrap() {
                "vec4" => vec![(vec![4, 33], vec![4, 33]), (vec![1028], vec![1028])],
                "contiguous" => vec![
                    (vec![7, 33], vec![7, 33]),
                    (vec![1], vec![1]),
                    (vec![130, 3], vec![130, 3]),
                ],
                _ => vec![
                    (vec![7, 33], vec![7, 33]),
                    (vec![2, 3, 4], vec![3, 1]),
                    (vec![1], vec![5, 7]),
                    (vec![130], vec![7, 1]),
                    (vec![2, 1, 3, 1], vec![1, 4, 1, 5]),
                ],
            };
            for (i, (sa, sb)) in cases.iter().enumerate() {
                let (a, a_cpu) = input(100 + i as u64, sa, dtype);
                let (b, b_cpu) = input(200 + i as u64, sb, dtype);
                let want = cpu::add(&a_cpu, &b_cpu).unwrap();
                let c = poisoned(&want.shape, dtype);
                ops::add_into(&a, &b, &c, Some(&v.name)).unwrap();
                assert_close(
                    &format!("add {} {sa:?}+{sb:?}", v.name),
                    &read(&c),
                    &want.data,
                    tolerance(dtype),
                );
            }
        }
    }
}

#[test]
fn softmax_every_variant_with_scale_and_causal_mask() {
    // [5, 3] causal: the first two queries see no key and must come out as zeros, not NaN.
    let shapes: [&[usize]; 4] = [&[3, 130], &[2, 7, 33], &[5, 3], &[1, 1]];
    for dtype in dtypes() {
        for v in variants("softmax", dtype) {
            let causal = v.flag("causal").unwrap();
            for (i, shape) in shapes.iter().enumerate() {
                let (x, x_cpu) = input(300 + i as u64, shape, dtype);
                let want = cpu::softmax(&x_cpu, causal, 1.7).unwrap();
                let y = poisoned(shape, dtype);
                ops::softmax_into(&x, &y, causal, 1.7, Some(&v.name)).unwrap();
                assert_close(
                    &format!("softmax {} {shape:?}", v.name),
                    &read(&y),
                    &want.data,
                    tolerance(dtype),
                );
            }
        }
    }
}

#[test]
fn layernorm_every_variant() {
    let shapes: [&[usize]; 4] = [&[7, 130], &[33, 7], &[2, 3, 300], &[1, 1]];
    for dtype in dtypes() {
        for v in plain("layernorm", dtype) {
            for (i, shape) in shapes.iter().enumerate() {
                let cols = shape[shape.len() - 1];
                let (x, x_cpu) = input(400 + i as u64, shape, dtype);
                let (g, g_cpu) = input(500 + i as u64, &[cols], dtype);
                let (b, b_cpu) = input(600 + i as u64, &[cols], dtype);
                let want = cpu::layernorm(&x_cpu, &g_cpu, &b_cpu, 1e-5).unwrap();
                let y = poisoned(shape, dtype);
                ops::layernorm_into(&x, &g, &b, &y, 1e-5, Some(&v.name)).unwrap();
                assert_close(
                    &format!("layernorm {} {shape:?}", v.name),
                    &read(&y),
                    &want.data,
                    tolerance(dtype),
                );
            }
        }
    }
}

#[test]
fn sinusoid_every_variant() {
    // Angles up to about 60 rad: f32 sin/cos on both sides.
    let (rows, n) = (13, 130);
    let freq: Vec<f32> = random(1000, rows).iter().map(|v| v * 0.4).collect();
    let phase: Vec<f32> = random(1001, rows).iter().map(|v| v * 3.0).collect();
    let f = Tensor::from_slice(gpu(), &[rows], &freq, DType::F32).unwrap();
    let p = Tensor::from_slice(gpu(), &[rows], &phase, DType::F32).unwrap();
    let want = cpu::sinusoid(&freq, &phase, n, -7.0, 1.1).unwrap();
    for dtype in dtypes() {
        for v in variants("sinusoid", dtype) {
            let out = poisoned(&[2 * rows, n], dtype);
            ops::sinusoid_into(&f, &p, &out, -7.0, 1.1, Some(&v.name)).unwrap();
            let tol = if dtype == DType::F32 {
                1e-4
            } else {
                tolerance(dtype)
            };
            assert_close(
                &format!("sinusoid {}", v.name),
                &read(&out),
                &want.data,
                tol,
            );
        }
    }
}

#[test]
fn rgba8_every_variant_within_one_step() {
    for dtype in dtypes() {
        let (planes, planes_cpu) = input(1100, &[4, 33, 7], dtype);
        // scale 0.6 pushes some values out of [0, 1]: clamping is exercised too.
        let want = cpu::rgba8(&planes_cpu, 0.6, 0.5).unwrap();
        for v in variants("rgba8", dtype) {
            let pixels = Tensor::from_u32(gpu(), &[33, 7], &vec![0xdead_beef; 33 * 7]).unwrap();
            ops::rgba8_into(&planes, &pixels, 0.6, 0.5, Some(&v.name)).unwrap();
            let got = pollster::block_on(pixels.read_u32()).unwrap();
            let worst = got
                .iter()
                .zip(&want)
                .flat_map(|(g, w)| {
                    (0..4).map(move |c| ((g >> (8 * c)) & 255).abs_diff((w >> (8 * c)) & 255))
                })
                .max()
                .unwrap();
            assert!(
                worst <= 1,
                "rgba8 {}: a channel differs by {worst}/255",
                v.name
            );
        }
    }
}

#[test]
fn rows_beyond_one_grid_dimension_fold_into_y() {
    // 70,000 rows: more workgroups than one dimension allows (65,535).
    let shape = [70_000, 2];
    let (x, x_cpu) = input(700, &shape, DType::F32);
    let want = cpu::softmax(&x_cpu, false, 1.0).unwrap();
    let y = poisoned(&shape, DType::F32);
    ops::softmax_into(&x, &y, false, 1.0, None).unwrap();
    assert_close("softmax [70000, 2]", &read(&y), &want.data, 1e-5);
}

#[test]
fn ops_chain_on_the_gpu_without_readback() {
    // layernorm(softmax(x·w + bias)) with every intermediate left on the GPU.
    let (x, x_cpu) = input(800, &[2, 9, 33], DType::F32);
    let (w, w_cpu) = input(801, &[33, 20], DType::F32);
    let (bias, bias_cpu) = input(802, &[20], DType::F32);
    let (g, g_cpu) = input(803, &[20], DType::F32);
    let (b, b_cpu) = input(804, &[20], DType::F32);
    let y = x
        .matmul(&w)
        .unwrap()
        .add(&bias)
        .unwrap()
        .softmax(true, 0.5)
        .unwrap()
        .layernorm(&g, &b, 1e-5)
        .unwrap();
    let want = cpu::matmul(&x_cpu, &w_cpu)
        .and_then(|t| cpu::add(&t, &bias_cpu))
        .and_then(|t| cpu::softmax(&t, true, 0.5))
        .and_then(|t| cpu::layernorm(&t, &g_cpu, &b_cpu, 1e-5))
        .unwrap();
    assert_eq!(y.shape(), want.shape.as_slice());
    assert_close("chain", &read(&y), &want.data, 1e-4);
}

#[test]
fn benchmark_timing_reports_the_clock_and_sane_numbers() {
    let (a, _) = input(900, &[64, 64], DType::F32);
    let (b, _) = input(901, &[64, 64], DType::F32);
    let c = poisoned(&[64, 64], DType::F32);
    let (dispatch, _) = ops::matmul::launch(&a, &b, &c, None).unwrap();
    let t = pollster::block_on(kiln::bench::time_dispatches(gpu(), &[&dispatch], 1, 5)).unwrap();
    let expected = if gpu().profile().features.timestamp_query {
        kiln::bench::Clock::GpuTimestamps
    } else {
        kiln::bench::Clock::WallClock
    };
    assert_eq!(t.clock, expected);
    assert_eq!(t.samples_ms.len(), 5);
    assert!(t.min_ms <= t.median_ms && t.median_ms <= t.max_ms);
    assert!(t.min_ms > 0.0, "a 64³ matmul cannot take zero time: {t:?}");
}

#[test]
fn gelu_and_swap_axes_match_cpu() {
    for dtype in dtypes() {
        let (x, x_cpu) = input(61, &[7, 129], dtype);
        // gelu over a wider range than [-1, 1): the erf approximation's tails.
        let wide: Vec<f32> = x_cpu.data.iter().map(|v| v * 6.0).collect();
        let wide = if dtype == DType::F16 {
            round_to_f16(&wide)
        } else {
            wide
        };
        x.write(&wide).unwrap();
        let y = poisoned(&[7, 129], dtype);
        ops::gelu_into(&x, &y, None).unwrap();
        let want = cpu::gelu(&Array::new(&[7, 129], wide).unwrap()).unwrap();
        assert_close(
            &format!("gelu {dtype:?}"),
            &read(&y),
            &want.data,
            tolerance(dtype),
        );

        let (a, a_cpu) = input(62, &[5, 3, 33], dtype);
        let b = poisoned(&[3, 5, 33], dtype);
        ops::swap_axes01_into(&a, &b, None).unwrap();
        assert_eq!(read(&b), cpu::swap_axes01(&a_cpu).unwrap().data);
    }
}

#[test]
fn one_function_runs_on_both_paths() {
    // A generic function over `Backend`, run on the GPU path and on the CPU path (plain and
    // threaded).
    use kiln::{Backend, CpuBackend, GpuBackend};
    fn block<B: Backend>(
        p: &B,
        x: &B::T,
        w: &B::T,
        b: &B::T,
        g: &B::T,
        beta: &B::T,
    ) -> kiln::Result<B::T> {
        let h = p.split_heads(&p.add(&p.matmul(x, w)?, b)?, 3)?; // [3, N, 4]
        let s = p.softmax(&p.matmul(&h, &p.transpose(&h)?)?, false, 0.5)?; // [3, N, N]
        let merged = p.merge_heads(&p.matmul(&s, &h)?)?;
        p.layernorm(&p.gelu(&merged)?, g, beta, 1e-5)
    }
    let (x, xc) = input(71, &[9, 8], DType::F32);
    let (w, wc) = input(72, &[8, 12], DType::F32);
    let (b, bc) = input(73, &[12], DType::F32);
    let (g, gc) = input(74, &[12], DType::F32);
    let (be, bec) = input(75, &[12], DType::F32);
    let path = GpuBackend { gpu: gpu().clone() };
    let gpu_out = block(&path, &x, &w, &b, &g, &be).unwrap();
    let cpu_out = block(&CpuBackend::plain(), &xc, &wc, &bc, &gc, &bec).unwrap();
    let threaded = block(&CpuBackend { threads: 3 }, &xc, &wc, &bc, &gc, &bec).unwrap();
    assert_eq!(gpu_out.shape(), &[9, 12]);
    assert_close("generic block", &read(&gpu_out), &cpu_out.data, 1e-5);
    assert_eq!(
        threaded, cpu_out,
        "the threaded CPU path adds in the same order"
    );
    let err = path.split_heads(&x, 5).unwrap_err();
    assert!(err.to_string().contains("5 heads"), "{err}");
}

#[test]
fn ceiling_kernels_every_variant() {
    // The fleet's copy and FMA-chain kernels against their references; a length that is not a
    // multiple of their vector width is refused.
    let n = 4096 + 16;
    let (x, xa) = input(31, &[n], DType::F32);
    let want = cpu::fma_chain(&xa, 37, 0.999, 0.001).unwrap();
    for v in variants("copy", DType::F32) {
        let y = poisoned(&[n], DType::F32);
        let (d, _) = ops::copy::launch(&x, &y, Some(&v.name)).unwrap();
        gpu().submit(&[&d]).unwrap();
        assert_close(&format!("copy {}", v.name), &read(&y), &xa.data, 0.0);
    }
    for v in variants("fma_chain", DType::F32) {
        let y = poisoned(&[n], DType::F32);
        let (d, _) = ops::fma_chain::launch(&x, &y, 37, 0.999, 0.001, Some(&v.name)).unwrap();
        gpu().submit(&[&d]).unwrap();
        assert_close(
            &format!("fma_chain {}", v.name),
            &read(&y),
            &want.data,
            1e-6,
        );
    }
    let (odd, _) = input(32, &[n - 2], DType::F32);
    let y = poisoned(&[n - 2], DType::F32);
    assert!(ops::copy::launch(&odd, &y, None).is_err());
    assert!(ops::fma_chain::launch(&odd, &y, 1, 1.0, 0.0, None).is_err());
}
