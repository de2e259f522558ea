//! The fused forms against their CPU references (compositions of the plain references):
//! matmul with a bias or bias + gelu epilogue and with A read transposed, layer norm of a
//! residual sum, and tensor parts and stacks. Every offered variant, random inputs, NaN-poisoned
//! outputs, shapes that are not tile multiples.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{assert_close, families, gpu, input, poisoned, read, tolerance, variants};
use kiln::cpu::{self, Array};
use kiln::ops::matmul::{Epilogue, Layout, fits};
use kiln::shape::MatmulDims;
use kiln::{DType, Tensor, ops};

#[test]
fn matmul_epilogues_every_variant() {
    let (m, k, n) = (37, 70, 19);
    for dtype in [DType::F32, DType::F16] {
        let (a, a_cpu) = input(21, &[m, k], dtype);
        let (b, b_cpu) = input(22, &[k, n], dtype);
        let (bias, bias_cpu) = input(23, &[n], dtype);
        let dims = MatmulDims::new(&[m, k], &[k, n]).unwrap();
        for (epilogue, name) in [(Epilogue::Bias, "bias"), (Epilogue::BiasGelu, "bias_gelu")] {
            let want = match epilogue {
                Epilogue::Bias => cpu::linear(&a_cpu, &b_cpu, &bias_cpu).unwrap(),
                _ => cpu::linear_gelu(&a_cpu, &b_cpu, &bias_cpu).unwrap(),
            };
            // The epilogue is one store line in every route: each route and register block is
            // covered with K staged 16 deep (the other depths share the store code).
            let vs: Vec<_> = variants("matmul", dtype)
                .into_iter()
                .filter(|v| {
                    v.text("epilogue").unwrap() == name
                        && fits(v, &dims).unwrap()
                        && v.int("tk").unwrap() == 16
                })
                .collect();
            assert!(vs.len() >= 4, "only {} {name} variants", vs.len());
            for v in &vs {
                let c = poisoned(&[m, n], dtype);
                let (d, _) = ops::matmul::launch_with(
                    &a,
                    &b,
                    &c,
                    Layout::default(),
                    Some((&bias, epilogue)),
                    Some(&v.name),
                )
                .unwrap();
                gpu().submit(&[&d]).unwrap();
                assert_close(&v.name, &read(&c), &want.data, tolerance(dtype));
            }
            println!(
                "matmul {name}: {} {} variants checked",
                vs.len(),
                dtype.wgsl()
            );
        }
    }
    // Whole-fragment routes (the H200's coop_global) on multiples of 16, both epilogues (the
    // two-output ones are the fold tests' and every_variant's).
    let (a, a_cpu) = input(28, &[48, 64], DType::F16);
    let (b, b_cpu) = input(29, &[64, 80], DType::F16);
    let (bias, bias_cpu) = input(30, &[80], DType::F16);
    let whole: Vec<_> = variants("matmul", DType::F16)
        .into_iter()
        .filter(|v| {
            v.int("multiple").unwrap() > 1
                && ["bias", "bias_gelu"].contains(&v.text("epilogue").unwrap())
        })
        .collect();
    for v in &whole {
        let epilogue = match v.text("epilogue").unwrap() {
            "bias" => Epilogue::Bias,
            _ => Epilogue::BiasGelu,
        };
        let want = match epilogue {
            Epilogue::Bias => cpu::linear(&a_cpu, &b_cpu, &bias_cpu).unwrap(),
            _ => cpu::linear_gelu(&a_cpu, &b_cpu, &bias_cpu).unwrap(),
        };
        let c = poisoned(&[48, 80], DType::F16);
        let (d, _) = ops::matmul::launch_with(
            &a,
            &b,
            &c,
            Layout::default(),
            Some((&bias, epilogue)),
            Some(&v.name),
        )
        .unwrap();
        gpu().submit(&[&d]).unwrap();
        assert_close(&v.name, &read(&c), &want.data, tolerance(DType::F16));
    }
    println!(
        "matmul epilogues: {} whole-fragment variants checked",
        whole.len()
    );
    // The selector's choice, through the convenience functions, with leading extents.
    let (x, x_cpu) = input(24, &[2, 5, 12], DType::F32);
    let (w, w_cpu) = input(25, &[12, 9], DType::F32);
    let (bias, bias_cpu) = input(26, &[9], DType::F32);
    let y = ops::linear_gelu(&x, &w, &bias).unwrap();
    assert_eq!(y.shape(), &[2, 5, 9]);
    let want = cpu::linear_gelu(&x_cpu, &w_cpu, &bias_cpu).unwrap();
    assert_close("linear_gelu", &read(&y), &want.data, 1e-5);
    // A bias of the wrong length is refused.
    let (short, _) = input(27, &[8], DType::F32);
    assert!(ops::linear(&x, &w, &short).is_err());
    // gelu(x · W) without a bias, one launch, against the CPU path's two ops.
    let rows = Array::new(&[10, 12], x_cpu.data.clone()).unwrap();
    let want = cpu::gelu(&cpu::matmul(&rows, &w_cpu).unwrap()).unwrap();
    let y = ops::matmul_gelu(&x, &w).unwrap();
    assert_eq!(y.shape(), &[2, 5, 9]);
    assert_close("matmul_gelu", &read(&y), &want.data, 1e-5);
    assert!(ops::matmul_gelu(&x, &short.reshape(&[8, 1]).unwrap()).is_err());
}

#[test]
fn matmul_at_every_variant_reads_a_transposed() {
    // C = Aᵀ · B with A stored [K, M], batched, no tile dividing the sizes.
    let (batch, m, k, n) = (2, 29, 41, 23);
    for dtype in [DType::F32, DType::F16] {
        let (a, a_cpu) = input(31, &[batch, k, m], dtype);
        let (b, b_cpu) = input(32, &[batch, k, n], dtype);
        let want = cpu::matmul(&cpu::transpose(&a_cpu).unwrap(), &b_cpu).unwrap();
        let layout = Layout {
            a_trans: true,
            b_trans: false,
        };
        let dims = MatmulDims::transposed(a.shape(), b.shape(), true, false).unwrap();
        // A's loads are one function in the staged routes: each route and register block with K
        // staged 16 deep.
        let vs: Vec<_> = variants("matmul", dtype)
            .into_iter()
            .filter(|v| {
                v.text("epilogue").unwrap() == "none"
                    && fits(v, &dims).unwrap()
                    && v.int("tk").unwrap() == 16
            })
            .collect();
        for v in &vs {
            let c = poisoned(&[batch, m, n], dtype);
            let (d, _) = ops::matmul::launch_with(&a, &b, &c, layout, None, Some(&v.name)).unwrap();
            gpu().submit(&[&d]).unwrap();
            assert_close(&v.name, &read(&c), &want.data, tolerance(dtype));
        }
        println!("matmul_at: {} {} variants checked", vs.len(), dtype.wgsl());
    }
    // Routes that need multiples (16: the H200's cooperative ones; 4: the wide vec4 reads) on
    // multiples of 16, A transposed.
    for dtype in [DType::F32, DType::F16] {
        let (a, a_cpu) = input(33, &[64, 48], dtype);
        let (b, b_cpu) = input(34, &[64, 80], dtype);
        let want = cpu::matmul(&cpu::transpose(&a_cpu).unwrap(), &b_cpu).unwrap();
        let whole: Vec<_> = variants("matmul", dtype)
            .into_iter()
            .filter(|v| v.int("multiple").unwrap() > 1 && v.text("epilogue").unwrap() == "none")
            .collect();
        assert!(!whole.is_empty());
        for v in &whole {
            let c = poisoned(&[48, 80], dtype);
            let layout = Layout {
                a_trans: true,
                b_trans: false,
            };
            let (d, _) = ops::matmul::launch_with(&a, &b, &c, layout, None, Some(&v.name)).unwrap();
            gpu().submit(&[&d]).unwrap();
            assert_close(&v.name, &read(&c), &want.data, tolerance(dtype));
        }
    }
    let c = ops::matmul_at(
        &input(35, &[6, 4], DType::F32).0,
        &input(36, &[6, 3], DType::F32).0,
    );
    assert_eq!(c.unwrap().shape(), &[4, 3]);
}

#[test]
fn layernorm_of_a_residual_sum_every_variant() {
    for dtype in [DType::F32, DType::F16] {
        for (rows, cols) in [(3, 1), (7, 33), (5, 300)] {
            let (x, x_cpu) = input(41, &[rows, cols], dtype);
            let (r, r_cpu) = input(42, &[rows, cols], dtype);
            let (g, g_cpu) = input(43, &[cols], dtype);
            let (b, b_cpu) = input(44, &[cols], dtype);
            let (sum_cpu, y_cpu) =
                cpu::add_layernorm(&x_cpu, &r_cpu, &g_cpu, &b_cpu, 1e-5).unwrap();
            let vs: Vec<_> = variants("layernorm", dtype)
                .into_iter()
                .filter(|v| v.flag("residual").unwrap())
                .collect();
            assert!(!vs.is_empty());
            for v in &vs {
                let (sum, y) = (
                    poisoned(&[rows, cols], dtype),
                    poisoned(&[rows, cols], dtype),
                );
                let (d, _) = ops::layernorm::launch_with(
                    &x,
                    Some((&r, &sum)),
                    &g,
                    &b,
                    &y,
                    1e-5,
                    Some(&v.name),
                )
                .unwrap();
                gpu().submit(&[&d]).unwrap();
                let case = format!("{} {rows}x{cols}", v.name);
                // f16: the fused sum is rounded once, where add then layernorm rounds it
                // before normalising too; the tolerance is f16's either way.
                assert_close(&case, &read(&sum), &sum_cpu.data, tolerance(dtype));
                assert_close(&case, &read(&y), &y_cpu.data, 10.0 * tolerance(dtype));
            }
        }
    }
    // Shapes that do not match are refused.
    let (x, _) = input(45, &[4, 8], DType::F32);
    let (r, _) = input(46, &[4, 9], DType::F32);
    let (g, _) = input(47, &[8], DType::F32);
    assert!(ops::add_layernorm(&x, &r, &g, &g, 1e-5).is_err());
}

#[test]
fn parts_and_stacks_round_trip() {
    let (x, x_cpu) = input(51, &[3, 5, 7], DType::F32);
    let per = 35;
    for i in 0..3 {
        let p = x.part(i).unwrap();
        assert_eq!(p.shape(), &[5, 7]);
        assert_eq!(read(&p), x_cpu.data[i * per..(i + 1) * per].to_vec());
    }
    let parts: Vec<Tensor> = (0..3).map(|i| x.part(i).unwrap()).collect();
    let refs: Vec<&Tensor> = parts.iter().collect();
    let back = ops::stack(&refs).unwrap();
    assert_eq!(back.shape(), &[3, 5, 7]);
    assert_eq!(read(&back), x_cpu.data);
    // A view (when the device's alignment allows one here) is written through.
    let aligned = Tensor::full(gpu(), &[2, 64], f32::NAN, DType::F32).unwrap();
    if let Ok(second) = aligned.part_view(1) {
        second.write(&[2.0; 64]).unwrap();
        let all = read(&aligned);
        assert!(all[..64].iter().all(|v| v.is_nan()) && all[64..].iter().all(|&v| v == 2.0));
    }
    assert!(x.part(3).is_err());
    assert!(ops::stack(&[&x, &parts[0]]).is_err());
}

#[test]
fn split_qkv_matches_three_projections() {
    use kiln::{Backend, CpuBackend, GpuBackend};
    let (n, heads, d) = (9, 2, 8);
    let (x, x_cpu) = input(61, &[n, 3 * heads * d], DType::F32);
    let gpu_path = GpuBackend { gpu: gpu().clone() };
    let gpu_parts = gpu_path.split_heads_qkv(&x, heads).unwrap();
    let cpu_parts = CpuBackend::plain().split_heads_qkv(&x_cpu, heads).unwrap();
    for (g, c) in gpu_parts.iter().zip(&cpu_parts) {
        assert_eq!(g.shape(), &[heads, n, d]);
        assert_eq!(read(g), c.data);
    }
    // Part 1 is K: columns heads·d .. 2·heads·d of each row, head by head.
    let k = &cpu_parts[1].data;
    assert_eq!(k[0], x_cpu.data[heads * d]);
    assert_eq!(k[d], x_cpu.data[3 * heads * d + heads * d]);
}

/// Grouped query heads through the backends: [B·T, (H + 2Hkv)·d] split on the GPU equals the
/// CPU path's split exactly (it moves data), and causal attention's output and its gradient
/// [B·T, (H + 2Hkv)·d] match the CPU path (relative L2), itself equal plain and threaded (the
/// threads take whole groups). Batches of 1 (views) and more (copies), groups of 2 and 4.
#[test]
fn grouped_split_and_attention_gradient_match_the_cpu_path() {
    use kiln::{Backend, CpuBackend, GpuBackend};
    let gpu_path = GpuBackend { gpu: gpu().clone() };
    let (plain, threads) = (CpuBackend::plain(), CpuBackend::all_cores());
    for (i, &(b, t, h, hkv)) in [(1, 9, 4, 2), (3, 7, 4, 1), (2, 5, 2, 2)]
        .iter()
        .enumerate()
    {
        let d = 32;
        let seed = 700 + 10 * i as u64;
        let (qkv, qkv_cpu) = input(seed, &[b * t, (h + 2 * hkv) * d], DType::F32);
        let (d_o, d_o_cpu) = input(seed + 1, &[b, h, t, d], DType::F32);
        let dims = [b, t, h, hkv, d];
        let g = gpu_path.split_qkv(&qkv, dims).unwrap();
        let c = plain.split_qkv(&qkv_cpu, dims).unwrap();
        for (part, (g, c)) in ["Q", "K", "V"].iter().zip(g.iter().zip(&c)) {
            assert_eq!(g.shape(), c.shape.as_slice(), "{part}");
            assert_eq!(read(g), c.data, "{part} of {dims:?}");
        }
        assert_eq!(c[1].shape, [b, hkv, t, d]);
        let scale = 0.2;
        let (o, lse) = gpu_path.attention(&g[0], &g[1], &g[2], scale).unwrap();
        let (o_cpu, lse_cpu) = plain.attention(&c[0], &c[1], &c[2], scale).unwrap();
        assert_close("grouped O", &read(&o), &o_cpu.data, 2e-5);
        let dqkv = gpu_path
            .attention_backward(&g[0], &g[1], &g[2], &o, &lse, &d_o, scale)
            .unwrap();
        let want = plain
            .attention_backward(&c[0], &c[1], &c[2], &o_cpu, &lse_cpu, &d_o_cpu, scale)
            .unwrap();
        assert_eq!(want.shape, [b * t, (h + 2 * hkv) * d]);
        assert_eq!(dqkv.shape(), want.shape.as_slice());
        assert_close("grouped dQKV", &read(&dqkv), &want.data, 1e-4);
        let threaded = threads
            .attention_backward(&c[0], &c[1], &c[2], &o_cpu, &lse_cpu, &d_o_cpu, scale)
            .unwrap();
        assert_eq!(threaded, want, "threaded CPU path, {dims:?}");
    }
    gpu().check().unwrap();
}

/// Rows of the first axis: a view written through where aligned (else a copy), copies between
/// tensors, and ranges or shapes that do not fit refused.
#[test]
fn rows_and_row_copies() {
    let (x, x_cpu) = input(80, &[6, 4, 8], DType::F32);
    let mid = x.rows(2, 3).unwrap();
    assert_eq!(mid.shape(), &[3, 4, 8]);
    assert_eq!(read(&mid), x_cpu.data[2 * 32..5 * 32].to_vec());
    let out = Tensor::full(gpu(), &[4, 4, 8], f32::NAN, DType::F32).unwrap();
    out.copy_rows(1, &x, 3, 2).unwrap();
    let got = read(&out);
    assert!(got[..32].iter().chain(&got[96..]).all(|v| v.is_nan()));
    assert_eq!(got[32..96].to_vec(), x_cpu.data[3 * 32..5 * 32].to_vec());
    assert!(x.rows(5, 2).is_err());
    assert!(x.rows(0, 0).is_err());
    assert!(out.copy_rows(3, &x, 0, 2).is_err());
    let other = Tensor::full(gpu(), &[2, 8, 4], 0.0, DType::F32).unwrap();
    assert!(out.copy_rows(0, &other, 0, 1).is_err());
    gpu().check().unwrap();
}

#[test]
fn split_k_every_route_sums_its_slices() {
    // K cut into slices on every staged f32 route (tiled and vec4), plain and with both
    // epilogues, B plain and transposed, batched: the slices' sum is the product. Sizes no
    // tile divides; for the wide reads, multiples of 4.
    let (batch, k) = (2, 300);
    let shape = |m: usize, n: usize, seed: u64| {
        let (a, a_cpu) = input(seed, &[batch, m, k], DType::F32);
        let (b, b_cpu) = input(seed + 1, &[batch, k, n], DType::F32);
        let (bt, bt_cpu) = input(seed + 2, &[batch, n, k], DType::F32);
        let (bias, bias_cpu) = input(seed + 3, &[n], DType::F32);
        let plain = cpu::matmul(&a_cpu, &b_cpu).unwrap();
        let plain_bt = cpu::matmul(&a_cpu, &cpu::transpose(&bt_cpu).unwrap()).unwrap();
        (m, n, a, b, bt, bias, bias_cpu, plain, plain_bt)
    };
    let (odd, wide) = (shape(9, 21, 71), shape(12, 20, 75));
    let routes: Vec<_> = variants("matmul", DType::F32)
        .into_iter()
        .filter(|v| {
            v.text("epilogue").unwrap() == "none"
                && matches!(v.text("route").unwrap(), "tiled" | "vec4")
                && v.int("tk").unwrap() == 16
                && v.int("reg").unwrap() >= 2
        })
        .collect();
    assert!(!routes.is_empty());
    let mut checked = 0;
    for v in &routes {
        let (m, n, a, b, bt, bias, bias_cpu, plain, plain_bt) =
            if v.flag("wide").unwrap() { &wide } else { &odd };
        let (m, n) = (*m, *n);
        let with = |c: &cpu::Array, e: Epilogue| match e {
            Epilogue::None => c.clone(),
            Epilogue::Bias => cpu::add(c, bias_cpu).unwrap(),
            Epilogue::BiasGelu => cpu::gelu(&cpu::add(c, bias_cpu).unwrap()).unwrap(),
            _ => unreachable!("the two-output epilogues are never cut"),
        };
        for (e, name) in [
            (Epilogue::None, "none"),
            (Epilogue::Bias, "bias"),
            (Epilogue::BiasGelu, "bias_gelu"),
        ] {
            let named = if name == "none" {
                v.name.clone()
            } else {
                format!("{}_{name}", v.name)
            };
            for (b_in, want, b_trans) in [(b, plain, false), (bt, plain_bt, true)] {
                let c = poisoned(&[batch, m, n], DType::F32);
                let layout = Layout {
                    a_trans: false,
                    b_trans,
                };
                let epi = (e != Epilogue::None).then_some((bias, e));
                let plan = ops::matmul::launch_split_named(
                    a,
                    b_in,
                    &c,
                    layout,
                    epi,
                    Some(4),
                    Some(&named),
                )
                .unwrap();
                assert_eq!(plan.split.splits, 4, "{named}: {:?}", plan.split);
                assert_eq!(plan.dispatches.len(), 2);
                let refs: Vec<&kiln::Dispatch> = plan.dispatches.iter().collect();
                gpu().submit(&refs).unwrap();
                assert_close(
                    &format!("{named} split 4 bt={b_trans}"),
                    &read(&c),
                    &with(want, e).data,
                    1e-5,
                );
                checked += 1;
            }
        }
    }
    // A slice count K cannot take is clamped: 300 elements make at most 10 slices of 32.
    let (m, n, a, b) = (odd.0, odd.1, &odd.2, &odd.3);
    let c = poisoned(&[batch, m, n], DType::F32);
    let plan = ops::matmul::launch_split(a, b, &c, Layout::default(), None, Some(99)).unwrap();
    assert!(plan.split.splits <= 10 && plan.split.splits * plan.split.k_split >= k);
    println!("split K: {checked} cases over {} routes", routes.len());
}

#[test]
fn a_split_sum_folds_into_the_residual_norm_that_reads_it() {
    // Rows of 37, and of 200, where lavapipe's tuned table gives the norm another design than
    // the rule's (the fold must take the norm's, for the same bits).
    for n in [37, 200] {
        residual_norm_fold(n);
    }
}

fn residual_norm_fold(n: usize) {
    // A device of the test's own: the fold takes back the newest launch of the recording, and
    // the launches are counted.
    let g = common::own_gpu();
    let (m, k, eps) = (9, 300, 1e-5);
    let up = |seed: u64, shape: &[usize]| common::input_on(&g, seed, shape);
    let (a, a_cpu) = up(81, &[m, k]);
    let (w, w_cpu) = up(82, &[k, n]);
    let (bias, bias_cpu) = up(83, &[n]);
    let (r, r_cpu) = up(84, &[m, n]);
    let (gamma, gamma_cpu) = up(85, &[n]);
    let (beta, beta_cpu) = up(86, &[n]);

    // The product (as a BERT layer's, with a bias, the first operand; as the flash demo's,
    // without, the second) cut in 3 (a software adapter never cuts K itself), then its add +
    // norm.
    let mut fused = None;
    for (with_bias, product_first) in [(true, true), (false, false)] {
        let c_want = match with_bias {
            true => cpu::linear(&a_cpu, &w_cpu, &bias_cpu).unwrap(),
            false => cpu::matmul(&a_cpu, &w_cpu).unwrap(),
        };
        let (s_want, y_want) = match product_first {
            true => cpu::add_layernorm(&c_want, &r_cpu, &gamma_cpu, &beta_cpu, eps),
            false => cpu::add_layernorm(&r_cpu, &c_want, &gamma_cpu, &beta_cpu, eps),
        }
        .unwrap();
        let run = |between: bool| {
            let c = Tensor::full(&g, &[m, n], f32::NAN, DType::F32).unwrap();
            let epi = with_bias.then_some((&bias, Epilogue::Bias));
            let plan =
                ops::matmul::launch_split(&a, &w, &c, Layout::default(), epi, Some(3)).unwrap();
            assert_eq!(plan.dispatches.len(), 2, "{:?}", plan.split);
            let refs: Vec<&kiln::Dispatch> = plan.dispatches.iter().collect();
            g.flush().unwrap();
            let before = g.counters();
            g.record(&refs).unwrap();
            if between {
                // Anything recorded after the sum keeps it: nothing is folded.
                g.flush().unwrap();
            }
            let (s, y) = match product_first {
                true => ops::add_layernorm(&c, &r, &gamma, &beta, eps),
                false => ops::add_layernorm(&r, &c, &gamma, &beta, eps),
            }
            .unwrap();
            let got = [read(&c), read(&s), read(&y)];
            (got, (g.counters() - before).dispatches)
        };
        let (folded, launches) = run(false);
        assert_eq!(launches, 2, "slices, then the sum folded into the norm");
        for (what, got, want) in [
            ("product", &folded[0], &c_want),
            ("sum", &folded[1], &s_want),
            ("norm", &folded[2], &y_want),
        ] {
            assert_close(what, got, &want.data, 1e-6);
        }
        let (apart, launches) = run(true);
        assert_eq!(launches, 3);
        assert_eq!(
            folded, apart,
            "the same sums in the same order: the same bits"
        );
        fused.get_or_insert(folded);
    }
    let folded = fused.unwrap();

    // In a capture too: the plan holds the product's slices and the fused launch.
    let c = Tensor::uninit(&g, &[m, n], DType::F32).unwrap();
    let (plan, (s, y)) = g
        .capture(|| {
            let epi = Some((&bias, Epilogue::Bias));
            let p = ops::matmul::launch_split(&a, &w, &c, Layout::default(), epi, Some(3))?;
            g.record(&p.dispatches.iter().collect::<Vec<_>>())?;
            ops::add_layernorm(&c, &r, &gamma, &beta, eps)
        })
        .unwrap();
    assert_eq!(families(&plan), ["matmul", "reduce_layernorm"]);
    plan.replay().unwrap();
    assert_eq!([read(&c), read(&s), read(&y)], folded);
}

#[test]
fn a_split_sum_folds_into_the_split_into_heads_that_reads_it() {
    use kiln::{Backend, GpuBackend};
    // A device of the test's own: the fold takes back the newest launch of the recording, and
    // the launches are counted.
    let g = common::own_gpu();
    let path = GpuBackend { gpu: g.clone() };
    // Q, K and V of 2 heads of 12 from one product over 300 inputs: 11 tokens, then 2 × 5.
    let (k, heads, d) = (300, 2, 12);
    let up = |seed: u64, shape: &[usize]| common::input_on(&g, seed, shape);
    let (w, w_cpu) = up(92, &[k, 3 * heads * d]);
    let (bias, bias_cpu) = up(93, &[3 * heads * d]);
    for (seed, batch, tokens, with_bias) in [(91, 1, 11, true), (94, 2, 5, false)] {
        let m = batch * tokens;
        let (a, a_cpu) = up(seed, &[m, k]);
        let c_want = match with_bias {
            true => cpu::linear(&a_cpu, &w_cpu, &bias_cpu).unwrap(),
            false => cpu::matmul(&a_cpu, &w_cpu).unwrap(),
        };
        let want = kiln::CpuBackend::plain()
            .split_qkv(&c_want, [batch, tokens, heads, heads, d])
            .unwrap();
        // The product cut in 3 (a software adapter never cuts K itself), then its split.
        let run = |between: bool| {
            let c = Tensor::full(&g, &[m, 3 * heads * d], f32::NAN, DType::F32).unwrap();
            let epi = with_bias.then_some((&bias, Epilogue::Bias));
            let plan =
                ops::matmul::launch_split(&a, &w, &c, Layout::default(), epi, Some(3)).unwrap();
            assert_eq!(plan.dispatches.len(), 2, "{:?}", plan.split);
            g.flush().unwrap();
            let before = g.counters();
            g.record(&plan.dispatches.iter().collect::<Vec<_>>())
                .unwrap();
            if between {
                // Anything recorded after the sum keeps it: nothing is folded.
                g.flush().unwrap();
            }
            let parts = path
                .split_qkv(&c, [batch, tokens, heads, heads, d])
                .unwrap();
            let got: Vec<Vec<f32>> = std::iter::once(&c).chain(&parts).map(read).collect();
            (got, (g.counters() - before).dispatches)
        };
        let (folded, launches) = run(false);
        assert_eq!(launches, 2, "slices, then the sum folded into the split");
        assert_close("product", &folded[0], &c_want.data, 1e-6);
        for (i, part) in want.iter().enumerate() {
            assert_eq!(folded[1 + i].len(), part.data.len());
            assert_close("Q, K or V", &folded[1 + i], &part.data, 1e-6);
        }
        let (apart, launches) = run(true);
        assert_eq!(launches, 3);
        assert_eq!(
            folded, apart,
            "the same sums in the same order: the same bits"
        );
    }

    // In a capture too: the plan holds the product's slices and the fused launch.
    let (a, a_cpu) = up(95, &[7, k]);
    let c = Tensor::uninit(&g, &[7, 3 * heads * d], DType::F32).unwrap();
    let (plan, parts) = g
        .capture(|| {
            let epi = Some((&bias, Epilogue::Bias));
            let p = ops::matmul::launch_split(&a, &w, &c, Layout::default(), epi, Some(3))?;
            g.record(&p.dispatches.iter().collect::<Vec<_>>())?;
            path.split_heads_qkv(&c, heads)
        })
        .unwrap();
    let families: Vec<&str> = plan
        .kernels()
        .iter()
        .map(|k| k.split('/').next().unwrap())
        .collect();
    assert_eq!(families, ["matmul", "reduce_permute"]);
    plan.replay().unwrap();
    let c_got = read(&c);
    let c_want = cpu::linear(&a_cpu, &w_cpu, &bias_cpu).unwrap();
    assert_close("captured product", &c_got, &c_want.data, 1e-6);
    let again = kiln::CpuBackend::plain()
        .split_heads_qkv(&Array::new(&[7, 3 * heads * d], c_got).unwrap(), heads)
        .unwrap();
    for (part, want) in parts.iter().zip(&again) {
        assert_eq!(read(part), want.data);
    }
}

#[test]
fn a_split_sum_folds_into_the_swap_of_axes_that_reads_it() {
    // The flash demo's output gradient: a product [B·T, H·d], cut along K, viewed as [B, T, H,
    // d] and its heads put in front. A device of the test's own, for the counts.
    let g = common::own_gpu();
    let (b, t, h, d, k) = (2, 5, 3, 4, 200);
    let up = |seed: u64, shape: &[usize]| common::input_on(&g, seed, shape);
    let (a, a_cpu) = up(101, &[b * t, k]);
    let (w, w_cpu) = up(102, &[h * d, k]);
    let c_want = cpu::matmul(&a_cpu, &cpu::transpose(&w_cpu).unwrap()).unwrap();
    let want = cpu::swap_axes12(&Array::new(&[b, t, h, d], c_want.data.clone()).unwrap()).unwrap();
    let run = |between: bool| {
        let c = Tensor::full(&g, &[b * t, h * d], f32::NAN, DType::F32).unwrap();
        let layout = Layout {
            b_trans: true,
            ..Layout::default()
        };
        let plan = ops::matmul::launch_split(&a, &w, &c, layout, None, Some(3)).unwrap();
        assert_eq!(plan.dispatches.len(), 2, "{:?}", plan.split);
        g.flush().unwrap();
        let before = g.counters();
        g.record(&plan.dispatches.iter().collect::<Vec<_>>())
            .unwrap();
        if between {
            g.flush().unwrap();
        }
        let y = ops::swap_axes12(&c.reshape(&[b, t, h, d]).unwrap()).unwrap();
        assert_eq!(y.shape(), &[b, h, t, d]);
        ([read(&c), read(&y)], (g.counters() - before).dispatches)
    };
    let (folded, launches) = run(false);
    assert_eq!(launches, 2, "slices, then the sum folded into the swap");
    assert_close("product", &folded[0], &c_want.data, 1e-6);
    assert_close("swapped", &folded[1], &want.data, 1e-6);
    let (apart, launches) = run(true);
    assert_eq!(launches, 3);
    assert_eq!(
        folded, apart,
        "the same sums in the same order: the same bits"
    );
}

#[test]
fn a_gelu_and_its_backward_fold_into_the_products_before_them() {
    // A device of the test's own: the fold takes back the newest launch of the recording, and
    // the launches are counted.
    let g = common::own_gpu();
    let (m, k, n) = (37, 70, 19);
    let up = |seed: u64, shape: &[usize]| common::input_on(&g, seed, shape);
    let (a, a_cpu) = up(91, &[m, k]);
    let (w, w_cpu) = up(92, &[k, n]);
    let (bias, bias_cpu) = up(93, &[n]);
    let (x, x_cpu) = up(94, &[m, n]);
    for (with_bias, backward) in [(false, false), (true, false), (false, true), (true, true)] {
        let c_want = match with_bias {
            true => cpu::linear(&a_cpu, &w_cpu, &bias_cpu).unwrap(),
            false => cpu::matmul(&a_cpu, &w_cpu).unwrap(),
        };
        let y_want = match backward {
            true => cpu::gelu_backward(&x_cpu, &c_want).unwrap(),
            false => cpu::gelu(&c_want).unwrap(),
        };
        let case = format!("bias {with_bias}, backward {backward}");
        // The product, then the op on it: with `between`, a flush keeps the product apart.
        let run = |between: bool| {
            g.flush().unwrap();
            let before = g.counters();
            let c = match with_bias {
                true => ops::linear(&a, &w, &bias),
                false => ops::matmul(&a, &w),
            }
            .unwrap();
            if between {
                g.flush().unwrap();
            }
            let y = match backward {
                true => ops::gelu_backward(&x, &c),
                false => ops::gelu(&c),
            }
            .unwrap();
            let got = [read(&c), read(&y)];
            (got, (g.counters() - before).dispatches)
        };
        let (folded, launches) = run(false);
        assert_eq!(
            launches, 1,
            "{case}: the op written by the product's launch"
        );
        // Measured at most 1.2e-7 on lavapipe.
        assert_close(&case, &folded[0], &c_want.data, 5e-7);
        assert_close(&case, &folded[1], &y_want.data, 5e-7);
        let (apart, launches) = run(true);
        assert_eq!(launches, 2, "{case}");
        assert_eq!(folded, apart, "{case}: the same arithmetic, the same bits");

        // In a capture too: one launch of the product's design with the two-output epilogue.
        let (plan, (c, y)) = g
            .capture(|| {
                let c = match with_bias {
                    true => ops::linear(&a, &w, &bias)?,
                    false => ops::matmul(&a, &w)?,
                };
                let y = match backward {
                    true => ops::gelu_backward(&x, &c)?,
                    false => ops::gelu(&c)?,
                };
                Ok((c, y))
            })
            .unwrap();
        let suffix = if backward {
            "_bias_and_gelu_grad"
        } else {
            "_bias_and_gelu"
        };
        match plan.kernels() {
            [one] => assert!(one.starts_with("matmul/") && one.ends_with(suffix), "{one}"),
            other => panic!("{case}: {other:?}"),
        }
        plan.replay().unwrap();
        assert_eq!([read(&c), read(&y)], folded, "{case}: replayed");
    }

    // A product that is not the newest launch, or whose output is not the op's input, stays
    // apart: two launches, and the gradient reads the x it is given.
    g.flush().unwrap();
    let before = g.counters();
    let c = ops::matmul(&a, &w).unwrap();
    let other = ops::gelu(&x).unwrap();
    let dx = ops::gelu_backward(&x, &c).unwrap();
    assert_eq!((g.counters() - before).dispatches, 3);
    let c_cpu = cpu::matmul(&a_cpu, &w_cpu).unwrap();
    let want = cpu::gelu_backward(&x_cpu, &c_cpu).unwrap();
    assert_close("apart", &read(&dx), &want.data, 1e-6);
    assert_close(
        "apart",
        &read(&other),
        &cpu::gelu(&x_cpu).unwrap().data,
        1e-6,
    );
}

#[test]
fn a_whole_product_writes_its_split_into_heads_and_its_swap_too() {
    use kiln::{Backend, GpuBackend};
    // A device of the test's own: the fold takes back the newest launch of the recording, and
    // the launches are counted.
    let g = common::own_gpu();
    let path = GpuBackend { gpu: g.clone() };
    let cpu_path = kiln::CpuBackend::plain();
    // 3 sequences of 5 tokens, 2 heads of 6 (not tile multiples), from 70 inputs.
    let (batch, tokens, heads, d, k) = (3, 5, 2, 6, 70);
    let m = batch * tokens;
    let up = |seed: u64, shape: &[usize]| common::input_on(&g, seed, shape);
    let (a, a_cpu) = up(101, &[m, k]);
    let (w, w_cpu) = up(102, &[k, 3 * heads * d]);
    let (bias, bias_cpu) = up(103, &[3 * heads * d]);
    let (w1, w1_cpu) = up(104, &[k, heads * d]);
    // Q, K and V split into heads (with a bias: MiniLM's), and a gradient put into heads by a
    // swap (without: the flash demo's dO).
    for split in [true, false] {
        let (c_want, want) = if split {
            let c = cpu::linear(&a_cpu, &w_cpu, &bias_cpu).unwrap();
            let parts = cpu_path
                .split_qkv(&c, [batch, tokens, heads, heads, d])
                .unwrap();
            (c, parts.to_vec())
        } else {
            let c = cpu::matmul(&a_cpu, &w1_cpu).unwrap();
            let x = cpu_path.reshape(&c, &[batch, tokens, heads, d]).unwrap();
            (c, vec![cpu_path.swap12(&x).unwrap()])
        };
        let make = || -> kiln::Result<(Tensor, Vec<Tensor>)> {
            if split {
                let c = ops::linear(&a, &w, &bias)?;
                let parts = path.split_qkv(&c, [batch, tokens, heads, heads, d])?;
                Ok((c, parts.to_vec()))
            } else {
                let c = ops::matmul(&a, &w1)?;
                let y = path.swap12(&c.reshape(&[batch, tokens, heads, d])?)?;
                Ok((c, vec![y]))
            }
        };
        let run = |between: bool| {
            g.flush().unwrap();
            let before = g.counters();
            let (c, parts) = if between {
                // The product alone, then a flush: the op after it records its own launch.
                let c = if split {
                    ops::linear(&a, &w, &bias).unwrap()
                } else {
                    ops::matmul(&a, &w1).unwrap()
                };
                g.flush().unwrap();
                let parts = if split {
                    path.split_qkv(&c, [batch, tokens, heads, heads, d])
                        .unwrap()
                        .to_vec()
                } else {
                    vec![
                        path.swap12(&c.reshape(&[batch, tokens, heads, d]).unwrap())
                            .unwrap(),
                    ]
                };
                (c, parts)
            } else {
                make().unwrap()
            };
            let got: Vec<Vec<f32>> = std::iter::once(&c).chain(&parts).map(read).collect();
            (got, (g.counters() - before).dispatches)
        };
        let (folded, launches) = run(false);
        assert_eq!(
            launches, 1,
            "split {split}: the product writes the heads too"
        );
        assert_close("product", &folded[0], &c_want.data, 1e-6);
        for (got, want) in folded[1..].iter().zip(&want) {
            assert_eq!(got.len(), want.data.len());
            assert_close("heads", got, &want.data, 1e-6);
        }
        let (apart, launches) = run(true);
        assert_eq!(launches, 2, "split {split}");
        assert_eq!(folded, apart, "split {split}: the same values, moved");

        // In a capture too: one launch, the product's design with the heads epilogue.
        let (plan, (c, parts)) = g.capture(make).unwrap();
        match plan.kernels() {
            [one] => assert!(one.ends_with("_bias_and_heads"), "{one}"),
            other => panic!("split {split}: {other:?}"),
        }
        plan.replay().unwrap();
        let got: Vec<Vec<f32>> = std::iter::once(&c).chain(&parts).map(read).collect();
        assert_eq!(got, folded, "split {split}: replayed");
    }

    // A view whose rows are not the product's ([6, 4] as [2, 2, 3, 2]) keeps its own swap.
    let (a6, a6_cpu) = up(105, &[6, k]);
    let (w4, w4_cpu) = up(106, &[k, 4]);
    g.flush().unwrap();
    let before = g.counters();
    let c = ops::matmul(&a6, &w4).unwrap();
    let y = ops::swap_axes12(&c.reshape(&[2, 2, 3, 2]).unwrap()).unwrap();
    assert_eq!((g.counters() - before).dispatches, 2);
    let c_want = cpu::matmul(&a6_cpu, &w4_cpu).unwrap();
    let x = cpu_path.reshape(&c_want, &[2, 2, 3, 2]).unwrap();
    assert_close(
        "a view",
        &read(&y),
        &cpu_path.swap12(&x).unwrap().data,
        1e-6,
    );
}

#[test]
fn a_split_sum_folds_into_the_norm_backward_that_reads_it() {
    // A transformer block's input gradient: a product [rows, C] cut along K (dh = du · W1ᵀ),
    // then the layer norm's backward with it as dY and the residual's gradient added. A device
    // of the test's own, for the counts.
    let g = common::own_gpu();
    let (m, k, n, eps) = (9, 300, 37, 1e-5);
    let up = |seed: u64, shape: &[usize]| common::input_on(&g, seed, shape);
    let (a, a_cpu) = up(111, &[m, k]);
    let (w, w_cpu) = up(112, &[n, k]);
    let (x, x_cpu) = up(113, &[m, n]);
    let (gamma, gamma_cpu) = up(114, &[n]);
    let (acc, acc_cpu) = up(115, &[m, n]);
    let bt = Layout {
        a_trans: false,
        b_trans: true,
    };
    let dy_want = cpu::matmul(&a_cpu, &cpu::transpose(&w_cpu).unwrap()).unwrap();
    for added in [true, false] {
        let (dx_want, dg_want, db_want) = match added {
            true => cpu::layernorm_backward_add(&x_cpu, &gamma_cpu, &dy_want, &acc_cpu, eps),
            false => cpu::layernorm_backward(&x_cpu, &gamma_cpu, &dy_want, eps),
        }
        .unwrap();
        let run = |between: bool| {
            let dy = Tensor::full(&g, &[m, n], f32::NAN, DType::F32).unwrap();
            let plan = ops::matmul::launch_split(&a, &w, &dy, bt, None, Some(3)).unwrap();
            assert_eq!(plan.dispatches.len(), 2, "{:?}", plan.split);
            g.flush().unwrap();
            let before = g.counters();
            g.record(&plan.dispatches.iter().collect::<Vec<_>>())
                .unwrap();
            if between {
                // Anything recorded after the sum keeps it: nothing is folded.
                g.flush().unwrap();
            }
            let nan = |shape: &[usize]| Tensor::full(&g, shape, f32::NAN, DType::F32).unwrap();
            let (dx, dgamma, dbeta) = (nan(&[m, n]), nan(&[n]), nan(&[n]));
            let named = Default::default();
            let choices = match added {
                true => ops::layernorm_backward_add_into(
                    &x, &gamma, &dy, &acc, &dx, &dgamma, &dbeta, eps, named,
                ),
                false => {
                    ops::layernorm_backward_into(&x, &gamma, &dy, &dx, &dgamma, &dbeta, eps, named)
                }
            }
            .unwrap();
            let got = [&dy, &dx, &dgamma, &dbeta].map(read);
            let family = choices[0].variant.family.clone();
            (got, (g.counters() - before).dispatches, family)
        };
        let (folded, launches, family) = run(false);
        assert_eq!(
            launches, 3,
            "added {added}: slices, the folded norm backward, dgamma/dbeta"
        );
        assert_eq!(family, "reduce_layernorm_backward");
        for (what, got, want) in [
            ("dy", &folded[0], &dy_want),
            ("dx", &folded[1], &dx_want),
            ("dgamma", &folded[2], &dg_want),
            ("dbeta", &folded[3], &db_want),
        ] {
            // The family's proof tolerance (layernorm_backward's).
            assert_close(what, got, &want.data, 2e-6);
        }
        let (apart, launches, family) = run(true);
        assert_eq!(launches, 4, "added {added}");
        assert_eq!(family, "layernorm_backward");
        assert_eq!(
            folded, apart,
            "added {added}: the same sums in the same order: the same bits"
        );
    }
}

/// A training step's weight gradients, each a product cut along K (in 3 here: a software adapter
/// never cuts K itself), then one AdamW step over the packed table: captured, the sums go into
/// the optimiser's launch (`reduce_adamw_table`) and the step gives the bits of the launches it
/// replaces, gradients included. A gradient something else reads between its sum and the step
/// keeps its sum.
#[test]
fn weight_gradient_sums_fold_into_the_optimiser_step() {
    use kiln::Backend;
    let g = common::own_gpu();
    let b = kiln::GpuBackend { gpu: g.clone() };
    let k = 100;
    let up = |seed: u64, shape: &[usize]| common::input_on(&g, seed, shape);
    let (x0, x0_cpu) = up(91, &[k, 5]);
    let (dy0, dy0_cpu) = up(92, &[k, 8]);
    let (x2, _) = up(93, &[k, 6]);
    let (dy2, _) = up(94, &[k, 3]);
    // The first 40 elements: a copy reads it between its sum and the step.
    let shapes: [&[usize]; 3] = [&[5, 8], &[4], &[6, 3]];
    let packed = || Tensor::packed(&g, &shapes, DType::F32).unwrap();
    let (mut p, grads, mut m, mut v) = (packed(), packed(), packed(), packed());
    let start: Vec<[Vec<f32>; 4]> = (0..3)
        .map(|i| {
            let n = shapes[i].iter().product();
            let data = |seed: u64| common::random(seed, n);
            let v_start = data(100 + i as u64).iter().map(|x| x.abs()).collect();
            [
                data(95 + i as u64),
                data(98 + i as u64),
                data(110 + i as u64),
                v_start,
            ]
        })
        .collect();
    // Handles of the same buffers, for the resets.
    let (pr, mr, vr) = (p.clone(), m.clone(), v.clone());
    let reset = || {
        for (i, [p0, g0, m0, v0]) in start.iter().enumerate() {
            pr[i].write(p0).unwrap();
            mr[i].write(m0).unwrap();
            vr[i].write(v0).unwrap();
            // The middle gradient is not a product's: the step reads it as it is.
            grads[i].write(g0).unwrap();
        }
    };
    let base = kiln::optim::AdamW {
        lr: 1e-2,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay: 0.01,
        step: 3,
    };
    let h = [(1e-2, 0.01), (2e-2, 0.0), (5e-3, 0.1)].map(|(lr, weight_decay)| kiln::optim::AdamW {
        lr,
        weight_decay,
        ..base
    });
    let corrections = kiln::families::adamw::bias_corrections(&g, &base).unwrap();
    let seen = Tensor::uninit(&g, &[5, 8], DType::F32).unwrap();
    let step = |p: &mut [Tensor], m: &mut [Tensor], v: &mut [Tensor], read_between: bool| {
        let at = Layout {
            a_trans: true,
            b_trans: false,
        };
        for (i, x, dy) in [(0, &x0, &dy0), (2, &x2, &dy2)] {
            let cut = ops::matmul::launch_split(x, dy, &grads[i], at, None, Some(3))?;
            assert_eq!(cut.dispatches.len(), 2, "{:?}", cut.split);
            g.record(&cut.dispatches.iter().collect::<Vec<_>>())?;
        }
        if read_between {
            let (copy, _) = kiln::families::copy::launch(&grads[0], &seen, None)?;
            g.record(&[&copy])?;
        }
        b.adamw_together(p, &grads, m, v, &h, &corrections)
    };
    let all = |p: &[Tensor], m: &[Tensor], v: &[Tensor]| -> Vec<Vec<f32>> {
        [p, &grads[..], m, v]
            .iter()
            .flat_map(|group| group.iter().map(read))
            .collect()
    };

    // Recorded as it comes: two products, two sums, one step.
    reset();
    g.flush().unwrap();
    let before = g.counters();
    step(&mut p, &mut m, &mut v, false).unwrap();
    let want = all(&p, &m, &v);
    assert_eq!((g.counters() - before).dispatches, 5);
    let dw0 = cpu::matmul(&cpu::transpose(&x0_cpu).unwrap(), &dy0_cpu).unwrap();
    assert_close("the first weight gradient", &want[3], &dw0.data, 1e-6);

    for read_between in [false, true] {
        let (mut pc, mut mc, mut vc) = (p.clone(), m.clone(), v.clone());
        let (plan, ()) = b
            .capture(|| step(&mut pc, &mut mc, &mut vc, read_between))
            .unwrap()
            .unwrap();
        let want_families: &[&str] = match read_between {
            false => &["matmul", "matmul", "reduce_adamw_table"],
            true => &[
                "matmul",
                "matmul_reduce",
                "matmul",
                "copy",
                "reduce_adamw_table",
            ],
        };
        assert_eq!(
            families(&plan),
            want_families,
            "read between: {read_between}"
        );
        reset();
        plan.replay().unwrap();
        assert_eq!(all(&p, &m, &v), want, "read between: {read_between}");
        if read_between {
            assert_eq!(read(&seen), want[3]);
        }
    }
}

/// In f16 the same folds hold: the product writes its gelu, or its split into heads, in the
/// launch that writes it, the product's design with the two-output epilogue in f16. Where the
/// adapter has no shader-f16 this is a skip.
#[test]
fn f16_products_fold_their_gelu_and_heads_too() {
    use kiln::{Backend, GpuBackend};
    let g = common::own_gpu();
    if !g.profile().features.shader_f16 {
        kiln_testing::skip(&format!("{} has no shader-f16", g.profile().name));
        return;
    }
    let path = GpuBackend { gpu: g.clone() };
    let cpu_path = kiln::CpuBackend::plain();
    // 3 sequences of 5 tokens, 2 heads of 6, from 70 inputs (no tile multiples).
    let (batch, tokens, heads, d, k) = (3, 5, 2, 6, 70);
    let m = batch * tokens;
    let up = |seed: u64, shape: &[usize]| {
        let data = kiln::tensor::round_to_f16(&common::random(seed, shape.iter().product()));
        let t = Tensor::from_slice(&g, shape, &data, DType::F16).unwrap();
        (t, Array::new(shape, data).unwrap())
    };
    let (a, a_cpu) = up(111, &[m, k]);
    let (w, w_cpu) = up(112, &[k, 3 * heads * d]);
    let (bias, bias_cpu) = up(113, &[3 * heads * d]);
    let c_want = cpu::linear(&a_cpu, &w_cpu, &bias_cpu).unwrap();
    let gelu_want = cpu::gelu(&c_want).unwrap();
    let parts_want = cpu_path
        .split_qkv(&c_want, [batch, tokens, heads, heads, d])
        .unwrap();
    for split in [false, true] {
        let make = || -> kiln::Result<Vec<Tensor>> {
            let c = ops::linear(&a, &w, &bias)?;
            let after = if split {
                path.split_qkv(&c, [batch, tokens, heads, heads, d])?
                    .to_vec()
            } else {
                vec![ops::gelu(&c)?]
            };
            Ok(std::iter::once(c).chain(after).collect())
        };
        g.flush().unwrap();
        let before = g.counters();
        let got: Vec<Vec<f32>> = make().unwrap().iter().map(read).collect();
        assert_eq!(
            (g.counters() - before).dispatches,
            1,
            "split {split}: one launch"
        );
        let want: Vec<&[f32]> = if split {
            std::iter::once(&c_want)
                .chain(&parts_want)
                .map(|x| x.data.as_slice())
                .collect()
        } else {
            vec![&c_want.data, &gelu_want.data]
        };
        // f16's rounding of C and of what is made from it: measured 2.0e-4 to 2.3e-4 on
        // lavapipe, each output.
        for (i, (got, want)) in got.iter().zip(want).enumerate() {
            assert_close(&format!("split {split}, output {i}"), got, want, 2e-3);
        }
        let (plan, outs) = g.capture(make).unwrap();
        let suffix = if split {
            "_bias_and_heads"
        } else {
            "_bias_and_gelu"
        };
        match plan.kernels() {
            [one] => assert!(
                one.starts_with("matmul/f16") && one.ends_with(suffix),
                "{one}"
            ),
            other => panic!("split {split}: {other:?}"),
        }
        plan.replay().unwrap();
        let replayed: Vec<Vec<f32>> = outs.iter().map(read).collect();
        assert_eq!(replayed, got, "split {split}: replayed");
    }
}
