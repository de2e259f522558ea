//! The GPU trainer captures its first step and replays it after (the batch and the AdamW bias
//! corrections rewritten in place): on the adapter in hand (lavapipe in CI) the replayed steps
//! give the losses and the weights that recording every step as it comes gives, to the bit, and
//! a replayed step makes no bind group or pipeline. The CPU path, which captures nothing, trains
//! the same steps. Read a step late (the page's loop), each step's loss is still its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use flash::backend::{CpuBackend, GpuBackend};
use flash::preset::Preset;
use flash::run::Setup;
use flash::train::Trainer;
use kiln_app::kiln::{Gpu, GpuOptions};

#[test]
fn replayed_steps_train_like_steps_recorded_as_they_come() {
    let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap();
    let setup = Setup::new(Preset::Small, None, None).unwrap();
    let trainer = || {
        let b = GpuBackend { gpu: gpu.clone() };
        Trainer::new(b, setup.config, setup.hyper, &setup.start).unwrap()
    };
    let (mut replayed, mut recorded) = (trainer(), trainer().each_call());
    let mut cpu = Trainer::new(
        CpuBackend::all_cores(),
        setup.config,
        setup.hyper,
        &setup.start,
    )
    .unwrap();
    let steps = 4;
    let mut spent = None;
    for s in 0..steps {
        let before = gpu.counters();
        pollster::block_on(replayed.step(&setup.corpus)).unwrap();
        if s == steps - 1 {
            spent = Some(gpu.counters() - before);
        }
        pollster::block_on(recorded.step(&setup.corpus)).unwrap();
        pollster::block_on(cpu.step(&setup.corpus)).unwrap();
    }
    println!(
        "losses: replayed {:?}, recorded {:?}, CPU {:?}",
        replayed.run.losses, recorded.run.losses, cpu.run.losses
    );
    assert_eq!(replayed.run.losses, recorded.run.losses);
    let (a, b) = (
        pollster::block_on(replayed.download()).unwrap(),
        pollster::block_on(recorded.download()).unwrap(),
    );
    assert_eq!(a.step, steps as u32);
    assert_eq!((a.step, &a.params.tensors), (b.step, &b.params.tensors));
    assert_eq!(a.m.tensors, b.m.tensors);
    assert_eq!(a.v.tensors, b.v.tensors);
    // The paths' drift after 4 steps: about 10× the 6.9e-8 measured on lavapipe.
    let (g, c) = (replayed.run.losses[3], cpu.run.losses[3]);
    assert!((g - c).abs() / c < 7e-7, "GPU {g}, CPU {c}");
    let spent = spent.unwrap();
    println!("one replayed step: {spent:?}");
    assert_eq!(spent.bind_groups_created, 0, "{spent:?}");
    assert_eq!(spent.pipelines_created, 0, "{spent:?}");
    // The tokens, the targets and the bias corrections.
    assert_eq!(spent.writes, 3, "{spent:?}");
}

/// Steps whose losses are read a step late (the page's loop) train exactly as steps read at
/// once: each loss is the one its own step computed, though the next step has rewritten the
/// losses' buffer by the time it is awaited (the read was submitted before that step).
#[test]
fn losses_read_a_step_late_are_each_steps_own() {
    let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap();
    let setup = Setup::new(Preset::Small, None, None).unwrap();
    let trainer = || {
        let b = GpuBackend { gpu: gpu.clone() };
        Trainer::new(b, setup.config, setup.hyper, &setup.start).unwrap()
    };
    let (mut now, mut late) = (trainer(), trainer());
    let steps = 4;
    let mut arrived = Vec::new();
    for _ in 0..steps {
        pollster::block_on(now.step(&setup.corpus)).unwrap();
        arrived.push(pollster::block_on(late.step_ahead(&setup.corpus)).unwrap());
    }
    assert!(late.in_flight());
    let last = pollster::block_on(late.finish()).unwrap();
    assert!(!late.in_flight());
    println!(
        "losses: read at once {:?}, a step late {:?}",
        now.run.losses, late.run.losses
    );
    // Nothing at the first call, then each step's loss one call later, the last from finish.
    assert_eq!(arrived[0], None);
    let late_ones: Vec<f64> = arrived[1..].iter().map(|l| l.unwrap()).collect();
    assert_eq!(late_ones, now.run.losses[..steps - 1]);
    assert_eq!(last, Some(now.run.losses[steps - 1]));
    assert_eq!(late.run.losses, now.run.losses);
    assert_eq!(late.run.step_ms.len(), steps);
    assert_eq!(pollster::block_on(late.finish()).unwrap(), None);
    let (a, b) = (
        pollster::block_on(now.download()).unwrap(),
        pollster::block_on(late.download()).unwrap(),
    );
    assert_eq!((a.step, &a.params.tensors), (b.step, &b.params.tensors));
}
