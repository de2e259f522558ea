//! Generation with a key/value cache against the model without one: on the CPU path each
//! step's logits equal the full forward pass over the context so far (through a refill of a
//! full context too), with plain and grouped heads; on the adapter in hand (lavapipe in CI) the
//! GPU path — flash attention over the prompt, flash-decoding per token — gives the CPU path's
//! logits within a measured tolerance and the same tokens at temperature 0 (or a first
//! difference that their logit difference explains), and its captured one-token pass replayed
//! gives what the pass recorded each time gives. Bad input is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use flash::backend::{CpuBackend, GpuBackend};
use flash::generate;
use flash::model::{self, Inputs, Params};
use flash::preset::Config;
use kiln_app::kiln::cpu::Array;
use kiln_app::kiln::{Gpu, GpuOptions};

/// Head dimension 64 (one flash-decoding is rendered for), 12 learned positions.
fn config(heads: usize, kv_heads: usize) -> Config {
    Config {
        vocab: 13,
        d_model: 64 * heads,
        heads,
        kv_heads,
        layers: 2,
        seq: 12,
        batch: 1,
    }
}

/// Weights ×10 so that the logits spread and a greedy pick is rarely a near-tie.
fn params(c: &Config, seed: u64) -> Params<Array> {
    let mut p = Params::init(c, seed).unwrap();
    for (t, (name, _)) in p.tensors.iter_mut().zip(model::layout(c)) {
        if !(name.ends_with("gamma") || name.ends_with("beta")) {
            t.data.iter_mut().for_each(|x| *x *= 10.0);
        }
    }
    p
}

fn relative_l2(a: &[f32], b: &[f32]) -> f64 {
    let (mut d, mut n) = (0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        d += f64::from(x - y).powi(2);
        n += f64::from(*y).powi(2);
    }
    (d / n.max(f64::MIN_POSITIVE)).sqrt()
}

/// The last row's logits of the full forward pass over `context` (no cache).
fn uncached(b: &CpuBackend, c: &Config, p: &Params<Array>, context: &[u32]) -> Vec<f32> {
    let c = Config {
        seq: context.len(),
        batch: 1,
        ..*c
    };
    let inp = Inputs::new(b, &c, context, context).unwrap();
    let logits = model::logits(b, &c, p, &inp, 1).unwrap();
    logits.data[(context.len() - 1) * c.vocab..].to_vec()
}

#[test]
fn the_cache_gives_the_full_forward_pass_logits() {
    let b = CpuBackend::plain();
    let mut worst = 0.0f64;
    for (heads, kv_heads) in [(2, 2), (4, 2), (4, 1)] {
        let c = config(heads, kv_heads);
        let p = params(&c, 40 + heads as u64 + kv_heads as u64);
        let prompt = [3, 1, 4, 1, 5];
        // 5 + 15 tokens pass the 12 positions: one refill keeps the last 6 and goes on.
        let run = pollster::block_on(generate::generate(&b, &c, &p, &prompt, 15, 0.0, 1)).unwrap();
        assert_eq!(run.tokens.len(), 15);
        assert!(run.refills >= 1, "{run:?}");
        // Replay the context as the generator keeps it and compare every step.
        let mut context = prompt.to_vec();
        for (step, (&token, logits)) in run.tokens.iter().zip(&run.logits).enumerate() {
            let want = uncached(&b, &c, &p, &context);
            let e = relative_l2(logits, &want);
            worst = worst.max(e);
            assert!(
                e < 1e-5,
                "H {heads}/{kv_heads} step {step}: relative L2 {e:.2e}"
            );
            context.push(token);
            if context.len() > c.seq {
                context.drain(..context.len() - c.seq / 2);
            }
        }
    }
    println!("cached against uncached CPU logits: worst relative L2 {worst:.2e}");
}

#[test]
fn gpu_generation_matches_the_cpu_path() {
    let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap();
    let g = GpuBackend { gpu };
    let cpu = CpuBackend::all_cores();
    let mut worst = 0.0f64;
    let mut same = 0;
    for (heads, kv_heads) in [(4, 2), (2, 2)] {
        let c = config(heads, kv_heads);
        let p = params(&c, 70 + heads as u64);
        let p_gpu = model::upload_params(&g, &p).unwrap();
        let prompt = [2, 7, 1, 8, 2, 8, 1];
        let on_gpu =
            pollster::block_on(generate::generate(&g, &c, &p_gpu, &prompt, 14, 0.0, 1)).unwrap();
        let on_cpu =
            pollster::block_on(generate::generate(&cpu, &c, &p, &prompt, 14, 0.0, 1)).unwrap();
        assert_eq!(on_gpu.tokens.len(), 14);
        assert!(on_gpu.refills >= 1, "{on_gpu:?}");
        // Compare the logits while the two contexts are the same.
        let agree = match generate::first_divergence(&on_gpu, &on_cpu) {
            None => on_gpu.tokens.len(),
            Some(d) => {
                assert!(d.explained(), "H {heads}/{kv_heads}: {d:?}");
                d.step + 1
            }
        };
        for step in 0..agree {
            let e = relative_l2(&on_gpu.logits[step], &on_cpu.logits[step]);
            worst = worst.max(e);
            assert!(
                e < 1e-5,
                "H {heads}/{kv_heads} step {step}: relative L2 {e:.2e}"
            );
        }
        same += usize::from(agree == on_gpu.tokens.len());
        // The greedy runs of replays that feed themselves (as above) against one replayed pass
        // per token and against each pass recorded as it comes: the same launches on the same
        // buffers, so the same logits to the bit.
        for way in [generate::Way::OneByOne, generate::Way::Recorded] {
            let other = pollster::block_on(generate::generate_as(
                &g, &c, &p_gpu, &prompt, 14, 0.0, 1, way,
            ))
            .unwrap();
            assert_eq!(other.tokens, on_gpu.tokens, "H {heads}/{kv_heads} {way:?}");
            assert_eq!(other.logits, on_gpu.logits, "H {heads}/{kv_heads} {way:?}");
        }
        // Sampling above 0 is reproducible from its seed.
        let sampled = |seed| {
            pollster::block_on(generate::generate(&g, &c, &p_gpu, &prompt, 6, 0.8, seed)).unwrap()
        };
        assert_eq!(sampled(5).tokens, sampled(5).tokens);
    }
    println!(
        "GPU against CPU generation: worst relative L2 {worst:.2e}; {same} of 2 runs the same tokens"
    );
}

#[test]
fn bad_input_is_refused() {
    let b = CpuBackend::plain();
    let c = config(4, 2);
    let p = params(&c, 9);
    let run = |prompt: &[u32], t: f32| {
        pollster::block_on(generate::generate(&b, &c, &p, prompt, 3, t, 1)).map(|g| g.tokens)
    };
    let e = run(&[1, 13], 0.0).unwrap_err().to_string();
    assert!(e.contains("outside the 13-token vocabulary"), "{e}");
    for t in [-1.0, f32::NAN, f32::INFINITY] {
        let e = run(&[1], t).unwrap_err().to_string();
        assert!(e.contains("temperature"), "{e}");
    }
    // An empty prompt starts from token 0; no tokens asked, none made.
    assert_eq!(run(&[], 0.0).unwrap().len(), 3);
    let none = pollster::block_on(generate::generate(&b, &c, &p, &[1], 0, 0.0, 1)).unwrap();
    assert!(none.tokens.is_empty());
    // Three query heads over two key/value heads is not a model.
    assert!(config(3, 2).check().is_err());
}

/// After the first one-token pass is captured, each sampled token costs the host one replay: no
/// bind group or pipeline made, three words written (the caches' shared length, the token and
/// its position), the same launches as the pass recorded as it comes. At temperature 0 the
/// pass feeds itself: a run of k tokens is k replays (each with the hand-over's launch), three
/// words written before it (the token, its position, the caches' shared length) and one after
/// (the length the run reached), one read-back; the tokens of the run are then taken with
/// nothing done.
#[test]
fn replayed_tokens_make_nothing_new() {
    let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap();
    let g = GpuBackend { gpu: gpu.clone() };
    let c = config(4, 2);
    let p = model::upload_params(&g, &params(&c, 5)).unwrap();
    let sampling = |temperature| generate::Sampling {
        temperature,
        seed: 1,
    };
    let start = |temperature| {
        pollster::block_on(generate::Generator::start(
            &g,
            &c,
            &p,
            &[1, 2],
            sampling(temperature),
        ))
        .unwrap()
    };
    let step = |run: &mut generate::Generator<GpuBackend>| {
        run.pick();
        pollster::block_on(run.advance(&g, &c, &p)).unwrap();
        gpu.counters()
    };
    // One token recorded as it comes, for the launches of a pass.
    let mut each = start(0.0).way(generate::Way::Recorded);
    let before = step(&mut each);
    let recorded = step(&mut each) - before;
    println!("1 token recorded as it comes: {recorded:?}");

    // Sampled: the first token after the prompt is captured and replayed, then one replay each.
    let mut run = start(0.8);
    let before = step(&mut run);
    let mut after = before;
    for _ in 0..3 {
        after = step(&mut run);
    }
    let spent = after - before;
    println!("3 replayed sampled tokens: {spent:?}");
    assert_eq!(spent.bind_groups_created, 0, "{spent:?}");
    assert_eq!(spent.pipelines_created, 0, "{spent:?}");
    assert_eq!(spent.writes, 3 * 3, "{spent:?}");
    assert_eq!(spent.readbacks, 3, "{spent:?}");
    assert_eq!(
        spent.dispatches,
        3 * recorded.dispatches,
        "the same launches"
    );

    // Greedy, 20 advances in 12 positions: the first makes the capture and a run of 10 (to the
    // context's end), the next 9 take them, the 11th refills, the 12th is a run of 6.
    let mut run = start(0.0).advances(20);
    let mut before = step(&mut run);
    for i in 2..=12 {
        let now = step(&mut run);
        let spent = now - before;
        before = now;
        match i {
            2..=10 => assert_eq!(
                (spent.dispatches, spent.readbacks, spent.writes),
                (0, 0, 0),
                "advance {i} takes a pass the run made: {spent:?}"
            ),
            12 => {
                println!("a greedy run of 6 tokens: {spent:?}");
                assert_eq!(spent.bind_groups_created, 0, "{spent:?}");
                assert_eq!(spent.pipelines_created, 0, "{spent:?}");
                assert_eq!(spent.readbacks, 1, "{spent:?}");
                assert_eq!(spent.writes, 3 + 1, "{spent:?}");
                assert_eq!(spent.dispatches, 6 * (recorded.dispatches + 1), "{spent:?}");
            }
            _ => {}
        }
    }
    assert_eq!(run.generation().refills, 1);
}
