//! `fleet talk` under Xvfb at 1280×720 on the adapter in hand (lavapipe in CI): every stage's
//! live visual has contrast and differs from the one before, Right (xdotool) moves through all
//! four, the race's bars grow while it runs, `--stage 4` opens at the last stage; and `--bench`
//! times the raced matmul against the CPU reference. Screenshots from ImageMagick.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kiln_testing::x11;

use std::path::PathBuf;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

use x11::{crop, differing_pixels, focus, key, screenshot, start, stat, wait_for_picture, xvfb};

const FLEET: &str = env!("CARGO_BIN_EXE_fleet");

const VISUAL: &str = x11::TALK_VISUAL;
/// The panel's counter and title (the rates footer changes on its own).
const HEADING: &str = x11::TALK_HEADING;

#[test]
fn talk_window_walks_through_four_live_stages() {
    let dir = std::env::temp_dir().join(format!("kiln-fleet-talk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = xvfb("1280x720x24");
    let display = server.display();
    let mut talk = start(display, FLEET, &["talk"]);
    let shot = |name: &str| -> PathBuf {
        let path = dir.join(format!("{name}.png"));
        assert!(screenshot(display, &path), "no screenshot {name}");
        path
    };
    wait_for_picture(&mut talk, display, &dir.join("first.png"));
    focus(display, "fleet");
    // Let the census's bars grow in.
    sleep(Duration::from_secs(2));
    let mut stages = vec![shot("stage1")];
    for n in 2..=4 {
        key(display, "Right");
        if n == 3 {
            // The race runs one measurement per frame: its bars grow while we watch.
            sleep(Duration::from_millis(300));
            let early = crop(
                &shot("race-early"),
                VISUAL,
                &dir.join("race-early-visual.png"),
            );
            let began = Instant::now();
            let late = loop {
                sleep(Duration::from_secs(2));
                let late = crop(
                    &shot("race-late"),
                    VISUAL,
                    &dir.join("race-late-visual.png"),
                );
                if differing_pixels(&early, &late) > 2_000 || began.elapsed().as_secs() > 60 {
                    break late;
                }
            };
            let grew = differing_pixels(&early, &late);
            println!("race: {grew} pixels of the visual changed while it ran");
            assert!(
                grew > 2_000,
                "the race's visual did not change: {grew} pixels"
            );
        } else {
            sleep(Duration::from_secs(3));
        }
        stages.push(shot(&format!("stage{n}")));
    }
    // The last stage's verdict needs the whole race: wait until the visual settles.
    sleep(Duration::from_secs(3));
    let last = shot("stage4-final");
    stages[3] = last;
    for (i, s) in stages.iter().enumerate() {
        let visual = crop(s, VISUAL, &dir.join(format!("visual{}.png", i + 1)));
        let spread = stat(&visual, "%[fx:standard_deviation]");
        let mean = stat(&visual, "%[fx:mean]");
        println!(
            "stage {}: visual mean {mean:.3}, standard deviation {spread:.3}",
            i + 1
        );
        assert!(spread > 0.05, "stage {}: no contrast ({spread})", i + 1);
        if i > 0 {
            let before = dir.join(format!("visual{i}.png"));
            let changed = differing_pixels(&before, &visual);
            println!(
                "stage {} → {}: {changed} pixels of the visual differ",
                i,
                i + 1
            );
            assert!(changed > 5_000, "stage {} looks like stage {i}", i + 1);
        }
    }
    // Right at the last stage stays there.
    key(display, "Right");
    sleep(Duration::from_secs(1));
    let after = crop(&shot("after"), HEADING, &dir.join("after-heading.png"));
    let last_heading = crop(&stages[3], HEADING, &dir.join("last-heading.png"));
    assert!(
        differing_pixels(&after, &last_heading) < 50,
        "Right moved past the last stage"
    );
    drop(talk);

    // `--stage 4` opens at the last stage: the panel's heading matches the one reached by keys,
    // and differs from the first stage's.
    let mut direct = start(display, FLEET, &["talk", "--stage", "4"]);
    wait_for_picture(&mut direct, display, &dir.join("direct.png"));
    sleep(Duration::from_secs(2));
    let direct_heading = crop(&shot("direct"), HEADING, &dir.join("direct-heading.png"));
    let first_heading = crop(&stages[0], HEADING, &dir.join("first-heading.png"));
    let same = differing_pixels(&direct_heading, &last_heading);
    let other = differing_pixels(&direct_heading, &first_heading);
    println!("--stage 4: {same} pixels differ from stage 4's heading, {other} from stage 1's");
    assert!(same < 50, "--stage 4 did not open at the last stage");
    assert!(other > 1_000, "stage 1's and stage 4's headings look alike");
    drop(direct);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn talk_bench_times_the_raced_matmul_against_the_cpu() {
    let out = Command::new(FLEET)
        .args(["talk", "--bench", "--frames", "3", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["demo"], "fleet");
    assert_eq!(report["checks"]["agree"], true, "{text}");
    assert!(report["gpu"]["median_ms"].as_f64().unwrap() > 0.0);
    assert!(report["cpu"]["median_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(report["gpu"]["samples_ms"].as_array().unwrap().len(), 3);
}

/// The walkthrough's measurements for real on the test adapter: the ceilings fill in to
/// positive rates, every racer is checked and timed, the verdict follows the medians, and the
/// stage list and kernel picks are this device's.
#[test]
fn ceilings_and_race_measure_and_the_stages_name_this_device() {
    use kiln_fleet::talk::{self, CeilingMeter, Race};

    let gpu = pollster::block_on(kiln::Gpu::new(&kiln::GpuOptions::default())).unwrap();
    let mut meter = CeilingMeter::new(&gpu).unwrap();
    let mut steps = 0;
    while pollster::block_on(meter.step()).unwrap() {
        steps += 1;
        assert!(steps < 100, "the ceilings never finish");
    }
    let c = meter.view();
    println!("ceilings: {c:?}");
    assert!(c.done && c.samples.iter().all(|&n| n == c.of));
    for x in [c.copy_gb_per_s, c.fma_gflop_per_s, c.dispatch_latency_us] {
        assert!(x.is_some_and(|x| x.is_finite() && x > 0.0), "{c:?}");
    }

    let mut race = Race::new(&gpu).unwrap();
    let before = race.view();
    assert!(before.racers.iter().all(|r| r.status == "waiting"));
    assert_eq!(before.racers.iter().filter(|r| r.picked).count(), 1);
    assert!(before.racers.len() >= 3, "{} racers", before.racers.len());
    let mut timed_seen = Vec::new();
    while pollster::block_on(race.step()).unwrap() {
        timed_seen.push(race.view().racers.iter().map(|r| r.samples).sum::<usize>());
    }
    let v = race.view();
    for r in &v.racers {
        println!(
            "{:<28} {:<7} {:?} GFLOP/s",
            r.variant, r.status, r.gflop_per_s
        );
    }
    assert!(v.done);
    // One measurement per step: the samples arrive one at a time.
    assert!(
        timed_seen.windows(2).all(|w| w[1] <= w[0] + 1),
        "{timed_seen:?}"
    );
    let ok: Vec<_> = v.racers.iter().filter(|r| r.status == "done").collect();
    assert!(ok.len() >= 3, "only {} racers were correct", ok.len());
    assert!(
        ok.iter()
            .all(|r| r.samples == v.of && r.rel_l2.unwrap() <= 1e-4)
    );
    let fastest = ok
        .iter()
        .min_by(|a, b| a.median_ms.unwrap().total_cmp(&b.median_ms.unwrap()))
        .unwrap();
    assert_eq!(v.fastest.as_deref(), Some(fastest.variant.as_str()));
    assert_eq!(v.agree, Some(fastest.variant == v.picked));
    assert!(v.picked_over_fastest.unwrap() >= 1.0);

    let stages = talk::stages(&gpu, &race, meter.choices()).unwrap();
    let titles: Vec<&str> = stages.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Device census",
            "Ceilings",
            "Variants racing",
            "The tuned choice"
        ]
    );
    let name = &gpu.profile().name;
    assert!(stages[0].text.contains(name.as_str()));
    let census = stages[0].code.as_ref().unwrap().text();
    assert!(census.contains("pub struct DeviceProfile {") && census.trim_end().ends_with('}'));
    for (i, family) in [(1, "fma_chain"), (2, "matmul"), (3, "matmul")] {
        let code = stages[i].code.as_ref().unwrap();
        assert_eq!(code.language, "wgsl");
        assert!(code.caption.starts_with(family) && code.caption.ends_with(name.as_str()));
        assert!(
            code.pieces.iter().any(|p| p.marked),
            "stage {}: nothing marked",
            i + 1
        );
    }
    assert!(stages[3].code.as_ref().unwrap().caption.contains(&v.picked));
    let families: Vec<String> = talk::selector_picks(&gpu, &race, meter.choices())
        .unwrap()
        .iter()
        .map(|c| c.variant.family.clone())
        .collect();
    assert_eq!(
        families,
        ["matmul", "softmax", "layernorm", "add", "copy", "fma_chain"]
    ); // What a page without an adapter asks for is what the device's plans chose.
    let device = kiln_app::talk::Target::Device(&gpu);
    let names = |list: &[kiln::Choice]| -> Vec<String> {
        list.iter().map(|c| c.variant.name.clone()).collect()
    };
    assert_eq!(
        names(&talk::ceiling_choices(device).unwrap()),
        names(meter.choices())
    );
    let setup = talk::RaceSetup::new(device).unwrap();
    assert_eq!(names(&setup.racers), names(&race.setup().racers));
    assert_eq!(setup.case, race.case);
}

/// A page without a WebGPU adapter still has the whole walkthrough: the four stages for a
/// stored profile, their kernels rendered for it, the words saying nothing is measured here,
/// and the race's contenders waiting.
#[test]
fn the_walkthrough_needs_no_device() {
    use kiln_app::talk::{Stored, Target, check};
    use kiln_fleet::talk;

    let stored = Stored::webgpu_defaults().unwrap();
    let target = Target::Stored(&stored);
    let setup = talk::RaceSetup::new(target).unwrap();
    let ceilings = talk::ceiling_choices(target).unwrap();
    let stages = talk::stages_for(target, &setup, &ceilings).unwrap();
    check(&stages).unwrap();
    assert_eq!(stages.len(), 4);
    assert!(
        stages[0].text.contains("WebGPU cannot run on this page"),
        "{}",
        stages[0].text
    );
    assert!(
        stages[2].text.contains("cannot run here"),
        "{}",
        stages[2].text
    );
    for s in &stages[1..] {
        let code = s.code.as_ref().unwrap();
        assert_eq!(code.language, "wgsl");
        assert!(code.caption.contains("stored profile"), "{}", code.caption);
    }
    let view = setup.view(target);
    assert!(view.racers.len() >= 3 && view.racers.iter().all(|r| r.status == "waiting"));
    assert_eq!(view.racers.iter().filter(|r| r.picked).count(), 1);
    assert!(!view.done && view.fastest.is_none());
    let offered = talk::offered_for(target).unwrap();
    assert!(offered.iter().all(|o| o.here <= o.all) && offered.iter().any(|o| o.here > 0));
}
