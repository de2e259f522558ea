//! The speed page in a native window under Xvfb on the adapter in hand (lavapipe in CI): the
//! charts are drawn, and the picture moves as the sweep and the training run a step per frame.
//! And presenter mode (`--talk`) at 1280×720: Right (xdotool) walks through the five stages,
//! each stage's live visual has contrast, moves, and is another picture than the stage before;
//! `--stage 3` opens at the third.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kiln_testing::x11;

use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::{Duration, Instant};

use x11::{crop, differing_pixels, screenshot, start, stat, wait_for_picture, xvfb};

/// Presses `name` in the flash window, focusing it first.
fn key(display: &str, name: &str) {
    x11::focus(display, "flash");
    x11::key(display, name);
}

#[test]
fn window_draws_the_charts_and_trains() {
    let dir = std::env::temp_dir().join(format!("kiln-flash-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = xvfb("1600x900x24");
    let display = server.display();
    let mut demo = start(display, env!("CARGO_BIN_EXE_flash"), &["--preset", "small"]);
    let (first, second) = (dir.join("first.png"), dir.join("second.png"));
    wait_for_picture(&mut demo, display, &first);
    assert!(screenshot(display, &first));
    // The sweep, then the training steps: the curves and the progress bar grow.
    let began = Instant::now();
    let changed = loop {
        sleep(Duration::from_secs(2));
        assert!(screenshot(display, &second));
        let changed = differing_pixels(&first, &second);
        if changed > 20_000 || began.elapsed() > Duration::from_secs(120) {
            break changed;
        }
    };
    let spread = stat(&second, "%[fx:standard_deviation]");
    println!(
        "flash window: standard deviation {spread:.3}, {changed} pixels changed while running"
    );
    assert!(spread > 0.05, "no contrast: standard deviation {spread}");
    assert!(
        changed > 20_000,
        "the page did not move: {changed} pixels changed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const FLASH: &str = env!("CARGO_BIN_EXE_flash");
/// The live visual: the window's left 44 % (564 of 1280 pixels), drawn at one pixel per pixel.
const VISUAL: &str = x11::TALK_VISUAL;
/// The visual's title band: fixed text while a stage animates, another title on every stage.
const TITLE: &str = "564x26+0+8";

/// Screenshots until `done(shot)` holds, at most `limit` (a software adapter holds frames
/// while a sweep point runs); returns the last one.
fn wait_until(
    display: &str,
    path: &Path,
    limit: Duration,
    mut done: impl FnMut(&Path) -> bool,
) -> bool {
    let began = Instant::now();
    loop {
        assert!(screenshot(display, path));
        if done(path) {
            return true;
        }
        if began.elapsed() > limit {
            return false;
        }
        sleep(Duration::from_millis(700));
    }
}

#[test]
fn talk_walks_through_five_live_stages() {
    let dir = std::env::temp_dir().join(format!("kiln-flash-talk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = xvfb("1280x720x24");
    let display = server.display();
    let mut talk = start(display, FLASH, &["--talk"]);
    let file = |name: &str| dir.join(format!("{name}.png"));
    wait_for_picture(&mut talk, display, &file("first"));
    let mut titles: Vec<PathBuf> = Vec::new();
    for stage in 1..=5 {
        if stage > 1 {
            key(display, "Right");
        }
        // The stage is shown once the visual's title is another than the last stage's.
        let shot = file(&format!("stage{stage}"));
        let title = file(&format!("title{stage}"));
        let shown = wait_until(display, &shot, Duration::from_secs(120), |p| {
            crop(p, TITLE, &title);
            titles
                .last()
                .is_none_or(|before| differing_pixels(before, &title) > 300)
        });
        assert!(shown, "stage {stage}: the visual's title did not change");
        let visual = crop(&shot, VISUAL, &file(&format!("visual{stage}")));
        let spread = stat(&visual, "%[fx:standard_deviation]");
        println!("stage {stage}: visual standard deviation {spread:.3}");
        assert!(spread > 0.05, "stage {stage}: no contrast ({spread})");
        if let Some(before) = titles.last() {
            let previous = dir.join(format!("visual{}.png", stage - 1));
            let changed = differing_pixels(&previous, &visual);
            println!(
                "stage {} -> {stage}: {changed} pixels of the visual differ, {} of the title",
                stage - 1,
                differing_pixels(before, &title)
            );
            assert!(
                changed > 20_000,
                "stage {stage} looks like stage {}",
                stage - 1
            );
        }
        // Every stage but the charts (4) is animated: the visual moves while its title stays.
        if stage != 4 {
            let later = file(&format!("later{stage}"));
            let later_visual = file(&format!("later-visual{stage}"));
            let moved = wait_until(display, &later, Duration::from_secs(90), |p| {
                crop(p, VISUAL, &later_visual);
                differing_pixels(&visual, &later_visual) > 1_000
            });
            assert!(moved, "stage {stage}: the visual did not move");
            let later_title = crop(&later, TITLE, &file(&format!("later-title{stage}")));
            assert!(
                differing_pixels(&title, &later_title) < 50,
                "stage {stage}: the title changed while the stage animated"
            );
        }
        titles.push(title);
    }
    drop(talk);

    // `--stage 3` opens at the third stage: its title is the one the keys reached.
    let mut direct = start(display, FLASH, &["--stage", "3"]);
    wait_for_picture(&mut direct, display, &file("direct"));
    let direct_title = file("direct-title");
    let at_three = wait_until(display, &file("direct"), Duration::from_secs(60), |p| {
        crop(p, TITLE, &direct_title);
        differing_pixels(&titles[2], &direct_title) < 50
    });
    let from_one = differing_pixels(&titles[0], &direct_title);
    println!("--stage 3: {from_one} pixels of the title differ from stage 1's");
    assert!(at_three, "--stage 3 did not open at the third stage");
    assert!(from_one > 300, "stage 1's and stage 3's titles look alike");
    drop(direct);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Generation in the window: nothing is drawn under the training until it ends, then the
/// prompt hint; `g`, a typed prompt and Enter run the GPU path a token per frame and then the
/// CPU path, each path's line drawn in turn and the verdict (tokens/s ratio, texts compared)
/// last.
#[test]
fn window_generates_from_the_trained_model() {
    let dir = std::env::temp_dir().join(format!("kiln-flash-write-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = xvfb("1600x900x24");
    let display = server.display();
    let mut demo = start(display, FLASH, &["--preset", "small"]);
    let file = |name: &str| dir.join(format!("{name}.png"));
    wait_for_picture(&mut demo, display, &file("first"));
    // The generation column: its prompt line, the two paths' lines and the verdict.
    let drawn = |shot: &Path, geometry: &str, name: &str| {
        let part = crop(shot, geometry, &file(name));
        stat(&part, "%[fx:standard_deviation]") > 0.02
    };
    let (prompt, gpu, cpu, verdict) = (
        "760x14+820+663",
        "760x14+820+681",
        "760x14+820+697",
        "760x14+820+717",
    );
    assert!(
        !drawn(&file("first"), prompt, "prompt0"),
        "the generation column is drawn before training ends"
    );
    let trained = wait_until(display, &file("trained"), Duration::from_secs(400), |p| {
        drawn(p, prompt, "prompt1")
    });
    assert!(
        trained,
        "training did not end (no prompt hint) within 400 s"
    );
    key(display, "g");
    for k in ["t", "h", "e", "space"] {
        key(display, k);
    }
    key(display, "Return");
    let done = wait_until(display, &file("done"), Duration::from_secs(120), |p| {
        drawn(p, verdict, "verdict")
    });
    assert!(done, "no verdict after generating");
    let shot = file("done");
    assert!(drawn(&shot, gpu, "gpu"), "the GPU path's line is missing");
    assert!(drawn(&shot, cpu, "cpu"), "the CPU path's line is missing");
    println!("flash window: generated on both paths after training");
    let _ = std::fs::remove_dir_all(&dir);
}
