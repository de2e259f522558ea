//! Recording: a chain of ops is one submission, read back where a value is asked for; work
//! that repeats its shapes creates no buffers or bind groups; writes land in program order;
//! timestamps per submission and per launch. On the test adapter (lavapipe in CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{assert_close, families, random, read};
use kiln::cpu::{self, Array};
use kiln::gpu::PassTiming;
use kiln::{DType, Gpu, GpuOptions, Tensor, ops};

/// A device of the test's own: the counters see only this test's work (tests run in parallel).
fn fresh() -> Gpu {
    common::gpu();
    pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap()
}

fn input(gpu: &Gpu, seed: u64, shape: &[usize]) -> (Tensor, Array) {
    let data = random(seed, shape.iter().product());
    let t = Tensor::from_slice(gpu, shape, &data, DType::F32).unwrap();
    (t, Array::new(shape, data).unwrap())
}

/// A small chain: (A · B + bias) → softmax, with its CPU reference.
fn chain(a: &Tensor, b: &Tensor, bias: &Tensor) -> Tensor {
    a.matmul(b)
        .unwrap()
        .add(bias)
        .unwrap()
        .softmax(false, 0.5)
        .unwrap()
}

#[test]
fn a_chain_of_ops_is_one_submission_and_repeats_allocate_nothing() {
    let gpu = &fresh();
    let (a, a_cpu) = input(gpu, 1, &[9, 20]);
    let (b, b_cpu) = input(gpu, 2, &[20, 13]);
    let (bias, bias_cpu) = input(gpu, 3, &[13]);
    let want = cpu::softmax(
        &cpu::add(&cpu::matmul(&a_cpu, &b_cpu).unwrap(), &bias_cpu).unwrap(),
        false,
        0.5,
    )
    .unwrap();
    gpu.finish().unwrap();
    // First run: pipelines, buffers and bind groups are made.
    let y = chain(&a, &b, &bias);
    assert_close("first run", &read(&y), &want.data, 1e-5);
    drop(y);
    // Second run of the same shapes: one submission (the readback's), three launches, nothing
    // created.
    let before = gpu.counters();
    let y = chain(&a, &b, &bias);
    let got = read(&y);
    let used = gpu.counters() - before;
    assert_close("second run", &got, &want.data, 1e-5);
    assert_eq!(used.dispatches, 3, "{used:?}");
    assert_eq!(used.submissions, 1, "{used:?}");
    assert_eq!(used.buffers_created, 0, "{used:?}");
    assert_eq!(used.bind_groups_created, 0, "{used:?}");
    assert_eq!(used.pipelines_created, 0, "{used:?}");
    assert_eq!(used.readbacks, 1, "{used:?}");
}

#[test]
fn writes_land_after_the_work_recorded_before_them() {
    let gpu = &fresh();
    let x = Tensor::from_slice(gpu, &[4], &[1.0, 2.0, 3.0, 4.0], DType::F32).unwrap();
    let one = Tensor::from_slice(gpu, &[4], &[1.0; 4], DType::F32).unwrap();
    gpu.finish().unwrap();
    // Recorded, not yet submitted, when x is overwritten: it must still see the old x.
    let before = ops::add(&x, &one).unwrap();
    x.write(&[10.0, 20.0, 30.0, 40.0]).unwrap();
    let after = ops::add(&x, &one).unwrap();
    assert_eq!(read(&before), vec![2.0, 3.0, 4.0, 5.0]);
    assert_eq!(read(&after), vec![11.0, 21.0, 31.0, 41.0]);
}

#[test]
fn a_buffer_given_back_is_reused_not_recreated() {
    let gpu = &fresh();
    let t = Tensor::uninit(gpu, &[1000], DType::F32).unwrap();
    drop(t);
    let before = gpu.counters();
    let t = Tensor::full(gpu, &[1000], 3.0, DType::F32).unwrap();
    assert_eq!((gpu.counters() - before).buffers_created, 0);
    assert_eq!(read(&t), vec![3.0; 1000]);
}

#[test]
fn a_long_chain_is_submitted_in_pieces_and_stays_right() {
    let gpu = &fresh();
    let (x, x_cpu) = input(gpu, 4, &[64]);
    let mut acc = x.clone();
    for _ in 0..5000 {
        acc = ops::add(&acc, &x).unwrap();
    }
    // The same additions in the same order on the CPU: f32 rounding as the GPU rounds.
    let mut want = x_cpu.data.clone();
    for _ in 0..5000 {
        for (w, x) in want.iter_mut().zip(&x_cpu.data) {
            *w += x;
        }
    }
    assert_close("5000 adds", &read(&acc), &want, 1e-7);
}

#[test]
fn pass_timing_per_submission_and_per_launch() {
    let gpu = &fresh();
    if !gpu.profile().features.timestamp_query {
        panic!("the test adapter has no timestamp queries (lavapipe and the H200 do)");
    }
    let (a, _) = input(gpu, 5, &[16, 16]);
    let (b, _) = input(gpu, 6, &[16, 16]);
    let (bias, _) = input(gpu, 7, &[16]);
    gpu.set_pass_timing(PassTiming::PerSubmission).unwrap();
    read(&chain(&a, &b, &bias));
    read(&chain(&a, &b, &bias));
    let whole = pollster::block_on(gpu.take_pass_times()).unwrap();
    gpu.set_pass_timing(PassTiming::PerDispatch).unwrap();
    read(&chain(&a, &b, &bias));
    let each = pollster::block_on(gpu.take_pass_times()).unwrap();
    gpu.set_pass_timing(PassTiming::Off).unwrap();
    assert_eq!(whole.len(), 2, "{whole:?}");
    assert!(whole.iter().all(|t| t.what == "submission" && t.ms >= 0.0));
    // On the queue's one clock, from the first: the second submission, recorded after the
    // first was read back, began after it ended.
    assert_eq!(whole[0].start_ms, 0.0, "{whole:?}");
    assert!(whole[1].start_ms >= whole[0].ms, "{whole:?}");
    let families: Vec<&str> = each
        .iter()
        .map(|t| t.what.split('/').next().unwrap_or(""))
        .collect();
    assert_eq!(families, ["matmul", "add", "softmax"], "{each:?}");
}

/// Samples of work timed before timing was set again are not read with the next unit's: a
/// unit's reading holds its own submissions alone, and its GPU time is within its wall clock
/// (`bench::profile_unit` measures both on the same runs and refuses a GPU time above it).
#[test]
fn a_units_gpu_time_is_its_own_and_within_its_wall_clock() {
    let gpu = &fresh();
    let (a, _) = input(gpu, 5, &[64, 64]);
    let (b, _) = input(gpu, 6, &[64, 64]);
    let (bias, _) = input(gpu, 7, &[64]);
    gpu.set_pass_timing(PassTiming::PerSubmission).unwrap();
    for _ in 0..3 {
        read(&chain(&a, &b, &bias));
    }
    // Not taken: dropped when timing is set again.
    gpu.set_pass_timing(PassTiming::PerSubmission).unwrap();
    read(&chain(&a, &b, &bias));
    let one = pollster::block_on(gpu.take_pass_times()).unwrap();
    gpu.set_pass_timing(PassTiming::Off).unwrap();
    assert_eq!(one.len(), 1, "{one:?}");

    let profile = pollster::block_on(kiln::bench::profile_unit(
        gpu,
        async || -> kiln::Result<()> {
            chain(&a, &b, &bias).read().await?;
            Ok(())
        },
        3,
    ))
    .unwrap();
    let (busy, wall) = (profile.gpu_ms.unwrap(), profile.wall_ms.unwrap());
    assert!(
        busy > 0.0 && busy <= wall,
        "GPU {busy} ms against a wall of {wall} ms"
    );
    // A reading over its wall clock is refused, one within it (or a timestamp grid over) is not.
    assert!(kiln::bench::check_within_wall(2.0, 1.0).is_err());
    assert!(kiln::bench::check_within_wall(1.0, 1.0).is_ok());
    assert!(kiln::bench::check_within_wall(0.13, 0.066).is_ok());
}

/// The CPU reference of `chain` with the stack of its result twice.
fn chain_cpu(a: &Array, b: &Array, bias: &Array) -> Vec<f32> {
    let y = cpu::softmax(
        &cpu::add(&cpu::matmul(a, b).unwrap(), bias).unwrap(),
        false,
        0.5,
    )
    .unwrap();
    [y.data.clone(), y.data].concat()
}

#[test]
fn a_plan_replays_its_chain_on_new_inputs_and_creates_nothing() {
    let gpu = &fresh();
    let (a, _) = input(gpu, 11, &[9, 20]);
    let (b, _) = input(gpu, 12, &[20, 13]);
    let (bias, bias_cpu) = input(gpu, 13, &[13]);
    gpu.finish().unwrap();
    // Capturing runs nothing: the launches (and the stack's copies) wait for a replay.
    let before = gpu.counters();
    let (plan, stacked) = gpu
        .capture(|| {
            let y = chain(&a, &b, &bias);
            Tensor::stack(&[&y, &y])
        })
        .unwrap();
    let captured = gpu.counters() - before;
    assert_eq!((captured.dispatches, captured.submissions), (0, 0));
    let families: Vec<&str> = plan
        .kernels()
        .iter()
        .map(|k| k.split('/').next().unwrap_or(""))
        .collect();
    assert_eq!(families, ["matmul", "add", "softmax"]);
    assert_eq!(plan.launches(), 3);
    for round in 0..3u64 {
        let a_data = random(100 + round, 9 * 20);
        let b_data = random(200 + round, 20 * 13);
        a.write(&a_data).unwrap();
        b.write(&b_data).unwrap();
        // Poisoned, so a replay that wrote nothing cannot pass.
        stacked.write(&vec![f32::NAN; 2 * 9 * 13]).unwrap();
        let before = gpu.counters();
        plan.replay().unwrap();
        let got = read(&stacked);
        let used = gpu.counters() - before;
        let a_cpu = Array::new(&[9, 20], a_data).unwrap();
        let b_cpu = Array::new(&[20, 13], b_data).unwrap();
        let case = format!("replay {round}");
        assert_close(&case, &got, &chain_cpu(&a_cpu, &b_cpu, &bias_cpu), 1e-5);
        // The same kernels on the same data as a lazy run: the same bits.
        let lazy = read(&chain(&a, &b, &bias));
        assert_eq!(
            got[..9 * 13],
            lazy[..],
            "{case}: replay and lazy run differ"
        );
        assert_eq!(used.dispatches, 3, "{case}: {used:?}");
        assert_eq!(used.submissions, 1, "{case}: {used:?}");
        assert_eq!(used.writes, 0, "{case}: no parameter upload: {used:?}");
        // The first readback of this size makes its staging buffer; nothing else is made.
        assert_eq!(
            used.buffers_created,
            u64::from(round == 0),
            "{case}: {used:?}"
        );
        assert_eq!(used.bind_groups_created, 0, "{case}: {used:?}");
    }
}

#[test]
fn a_capture_refuses_readbacks_nesting_and_replays_inside_it() {
    let gpu = &fresh();
    let (a, a_cpu) = input(gpu, 21, &[5, 7]);
    let (b, b_cpu) = input(gpu, 22, &[7, 3]);
    let (bias, bias_cpu) = input(gpu, 23, &[3]);
    let refused = |r: kiln::Result<()>, what: &str| {
        let e = r.expect_err(what).to_string();
        assert!(e.contains("capture"), "{what}: {e}");
    };
    refused(
        gpu.capture(|| {
            let y = chain(&a, &b, &bias);
            pollster::block_on(y.read()).map(|_| ())
        })
        .map(|_| ()),
        "a readback inside a capture",
    );
    // An error swallowed inside still refuses the plan.
    refused(
        gpu.capture(|| {
            let _ = gpu.flush();
            Ok(())
        })
        .map(|_| ()),
        "a flush inside a capture",
    );
    refused(
        gpu.capture(|| gpu.capture(|| Ok(())).map(|_| ()))
            .map(|_| ()),
        "a capture inside a capture",
    );
    let (plan, _) = gpu.capture(|| Ok(chain(&a, &b, &bias))).unwrap();
    refused(
        gpu.capture(|| plan.replay()).map(|_| ()),
        "a replay inside a capture",
    );
    // The device goes on as before: a lazy chain, then the plan.
    let want = &chain_cpu(&a_cpu, &b_cpu, &bias_cpu)[..15];
    assert_close(
        "lazy after refusals",
        &read(&chain(&a, &b, &bias)),
        want,
        1e-5,
    );
}

#[test]
fn a_long_recording_goes_in_growing_pieces_lazy_or_replayed() {
    let gpu = &fresh();
    let (x, x_cpu) = input(gpu, 31, &[37]);
    let adds = |x: &Tensor| {
        let mut acc = x.clone();
        for _ in 0..30 {
            acc = ops::add(&acc, x).unwrap();
        }
        acc
    };
    let want: Vec<f32> = x_cpu
        .data
        .iter()
        .map(|&v| (0..30).fold(v, |acc, _| acc + v))
        .collect();
    // 8, then 16, then the 6 left.
    assert_eq!(kiln::gpu::submissions_for(30), 3);
    assert_eq!(kiln::gpu::submissions_for(8), 1);
    assert_eq!(kiln::gpu::submissions_for(9), 2);
    gpu.finish().unwrap();
    let before = gpu.counters();
    let lazy = read(&adds(&x));
    assert_eq!((gpu.counters() - before).submissions, 3);
    assert_close("30 adds", &lazy, &want, 1e-7);
    let (plan, out) = gpu.capture(|| Ok(adds(&x))).unwrap();
    out.write(&[f32::NAN; 37]).unwrap();
    let before = gpu.counters();
    plan.replay().unwrap();
    let replayed = read(&out);
    assert_eq!((gpu.counters() - before).submissions, 3);
    assert_eq!(replayed, lazy);
}

/// The attention chain as a model writes it (scores, softmax, weighted values, then an op that
/// reads the result), on either path: the sum, and the weights.
fn attend<B: kiln::Backend>(
    b: &B,
    [q, k, v, r]: [&B::T; 4],
    causal: bool,
) -> kiln::Result<(B::T, B::T)> {
    let s = b.matmul_bt(q, k)?;
    let p = b.softmax(&s, causal, 0.3)?;
    let o = b.matmul(&p, v)?;
    Ok((b.add(&o, r)?, p))
}

/// Both of the rewrite's branches, the causal mask and none: fused, the result is the CPU
/// path's (a wrong mask in the flash launch, or the mask left out, fails here).
#[test]
fn a_plan_that_reads_only_the_result_runs_attention_as_one_flash_launch() {
    let gpu = &fresh();
    let (h, n, d) = (3, 13, 32);
    let (q, qa) = input(gpu, 41, &[h, n, d]);
    let (k, ka) = input(gpu, 42, &[h, n, d]);
    let (v, va) = input(gpu, 43, &[h, n, d]);
    let (r, ra) = input(gpu, 44, &[h, n, d]);
    for causal in [false, true] {
        let cpu = kiln::CpuBackend::plain();
        let (want, want_p) = attend(&cpu, [&qa, &ka, &va, &ra], causal).unwrap();
        let path = kiln::GpuBackend { gpu: gpu.clone() };
        // Only the sum is read: scores, softmax and weighted values are one flash launch.
        let (plan, (out, _), fused) = kiln::fusion::capture_reading(
            gpu,
            || attend(&path, [&q, &k, &v, &r], causal),
            |(out, _)| vec![out.clone()],
        )
        .unwrap();
        assert_eq!(fused.attention, 1, "causal {causal}");
        assert_eq!(families(&plan), ["flash_fwd", "add"]);
        let flash = &plan.kernels()[0];
        assert_eq!(flash.ends_with("_causal"), causal, "{flash}");
        out.write(&vec![f32::NAN; out.numel()]).unwrap();
        plan.replay().unwrap();
        assert_close("fused attention", &read(&out), &want.data, 5e-7);

        // The weights read too (a heatmap): nothing is fused, and both are right.
        let (plan, (out, p), fused) = kiln::fusion::capture_reading(
            gpu,
            || attend(&path, [&q, &k, &v, &r], causal),
            |(out, p)| vec![out.clone(), p.clone()],
        )
        .unwrap();
        assert_eq!(fused.attention, 0);
        assert_eq!(families(&plan), ["matmul", "softmax", "matmul", "add"]);
        plan.replay().unwrap();
        assert_close("attention", &read(&out), &want.data, 5e-7);
        assert_close("weights", &read(&p), &want_p.data, 1e-6);
    }
}

/// The chain followed by the heads merged into rows (`merge_heads`, a swap of axes), as a
/// transformer's attention before its output projection: the flash launch writes the merged
/// rows itself, one launch for four. Where O is read too, the swap stays.
#[test]
fn a_fused_attention_chain_writes_the_merged_heads_itself() {
    let gpu = &fresh();
    let (h, n, d) = (3, 13, 32);
    let (q, qa) = input(gpu, 51, &[h, n, d]);
    let (k, ka) = input(gpu, 52, &[h, n, d]);
    let (v, va) = input(gpu, 53, &[h, n, d]);
    fn merged<B: kiln::Backend>(b: &B, [q, k, v]: [&B::T; 3]) -> kiln::Result<(B::T, B::T)> {
        let s = b.matmul_bt(q, k)?;
        let p = b.softmax(&s, false, 0.3)?;
        let o = b.matmul(&p, v)?;
        Ok((b.merge_heads(&o)?, o))
    }
    let (want, want_o) = merged(&kiln::CpuBackend::plain(), [&qa, &ka, &va]).unwrap();
    let path = kiln::GpuBackend { gpu: gpu.clone() };
    for read_o in [false, true] {
        let (plan, (rows, o), fused) = kiln::fusion::capture_reading(
            gpu,
            || merged(&path, [&q, &k, &v]),
            |(rows, o)| match read_o {
                false => vec![rows.clone()],
                true => vec![rows.clone(), o.clone()],
            },
        )
        .unwrap();
        assert_eq!(fused.attention, 1);
        let want_families: &[&str] = match read_o {
            false => &["flash_fwd"],
            true => &["flash_fwd", "swap_axes"],
        };
        assert_eq!(families(&plan), want_families, "O read: {read_o}");
        // Poisoned first: the merged rows must come from this replay.
        rows.write(&vec![f32::NAN; rows.numel()]).unwrap();
        plan.replay().unwrap();
        assert_close("merged heads", &read(&rows), &want.data, 5e-7);
        if read_o {
            assert_close("O", &read(&o), &want_o.data, 5e-7);
        }
    }
}

/// The first seven of `v`, borrowed: a block's operands.
fn all<T>(v: &[T]) -> [&T; 7] {
    std::array::from_fn(|i| &v[i])
}

/// A transformer's feed-forward block and the residual norm after it, as a layer calls them.
fn feed_forward<B: kiln::Backend>(
    b: &B,
    [x, w1, b1, w2, b2, g, beta]: [&B::T; 7],
) -> kiln::Result<(B::T, B::T)> {
    let h = b.linear_gelu(x, w1, b1)?;
    let ff = b.linear(&h, w2, b2)?;
    let (_, out) = b.add_layernorm(&ff, x, g, beta, 1e-5)?;
    Ok((out, h))
}

/// A plan that reads only the block's normed output runs the block as two launches when asked
/// to: the slices with the hidden layer kept in workgroup memory (`mlp`), and their sum folded
/// into the norm. Where the hidden layer is read too, or the rewrite is not asked for, the calls
/// stay as they were.
#[test]
fn a_plan_that_reads_only_the_norm_runs_the_feed_forward_block_as_two_launches() {
    let gpu = &fresh();
    // 13 rows of 40, 150 hidden units: no tile, chunk or workgroup multiple.
    let (rows, d, hidden) = (13, 40, 150);
    let shapes: [&[usize]; 7] = [
        &[rows, d],
        &[d, hidden],
        &[hidden],
        &[hidden, d],
        &[d],
        &[d],
        &[d],
    ];
    let (mut gpu_in, mut cpu_in) = (Vec::new(), Vec::new());
    for (i, shape) in shapes.into_iter().enumerate() {
        let (t, a) = input(gpu, 61 + i as u64, shape);
        gpu_in.push(t);
        cpu_in.push(a);
    }
    let (want, want_h) = feed_forward(&kiln::CpuBackend::plain(), all(&cpu_in)).unwrap();
    let path = kiln::GpuBackend { gpu: gpu.clone() };
    for read_h in [false, true] {
        let (plan, (out, h), fused) = kiln::fusion::capture_reading_with(
            gpu,
            kiln::fusion::Rewrites { feed_forward: true },
            || feed_forward(&path, all(&gpu_in)),
            |(out, h)| match read_h {
                false => vec![out.clone()],
                true => vec![out.clone(), h.clone()],
            },
        )
        .unwrap();
        let two = families(&plan) == ["mlp", "reduce_layernorm"];
        assert_eq!(
            two,
            !read_h,
            "{:?}, hidden layer read: {read_h}",
            families(&plan)
        );
        assert_eq!(fused.feed_forward, usize::from(!read_h));
        out.write(&vec![f32::NAN; out.numel()]).unwrap();
        plan.replay().unwrap();
        assert_close("the block's norm", &read(&out), &want.data, 1e-6);
        if read_h {
            assert_close("the hidden layer", &read(&h), &want_h.data, 1e-6);
        }
    }
    let (plan, out, fused) = kiln::fusion::capture_reading(
        gpu,
        || feed_forward(&path, all(&gpu_in)),
        |(out, _)| vec![out.clone()],
    )
    .unwrap();
    assert_eq!(fused.feed_forward, 0);
    assert!(
        !families(&plan).iter().any(|f| f == "mlp"),
        "{:?}",
        families(&plan)
    );
    let (out, _) = out;
    out.write(&vec![f32::NAN; out.numel()]).unwrap();
    plan.replay().unwrap();
    assert_close("the block's norm, unfused", &read(&out), &want.data, 1e-6);
}

/// `ops::mlp`, the block as an op: the slices and their sum with the bias, against the CPU path,
/// rows in a batch.
#[test]
fn the_feed_forward_op_matches_the_cpu_path() {
    let gpu = &fresh();
    let (x, xa) = input(gpu, 71, &[2, 9, 33]);
    let (w1, w1a) = input(gpu, 72, &[33, 200]);
    let (b1, b1a) = input(gpu, 73, &[200]);
    let (w2, w2a) = input(gpu, 74, &[200, 70]);
    let (b2, b2a) = input(gpu, 75, &[70]);
    let want = cpu::mlp(&xa, &w1a, &b1a, &w2a, &b2a).unwrap();
    let y = ops::mlp(&x, &w1, &b1, &w2, &b2).unwrap();
    assert_eq!(y.shape(), [2, 9, 70]);
    assert_close("mlp", &read(&y), &want.data, 1e-6);
}
