//! The native window under Xvfb on the adapter in hand (lavapipe in CI): the waves are drawn and
//! move, and presenter mode steps through its stages on keys sent with xdotool. Screenshots of
//! the X screen come from ImageMagick's `import`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kiln_testing::x11;

use std::path::PathBuf;
use std::thread::sleep;
use std::time::Duration;

use x11::{crop, differing_pixels, focus, key, screenshot, start, stat, wait_for_picture, xvfb};

#[test]
fn window_draws_moving_waves_under_xvfb() {
    let dir = std::env::temp_dir().join(format!("kiln-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = xvfb("1024x1024x24");
    let display = server.display();
    let mut demo = start(display, env!("CARGO_BIN_EXE_waves"), &[]);

    // Wait until the window shows a picture with contrast (the first frames and the
    // uncapped-rate measurement take a while on a software adapter).
    let (first, second) = (dir.join("first.png"), dir.join("second.png"));
    wait_for_picture(&mut demo, display, &first);
    sleep(Duration::from_secs(2));
    assert!(screenshot(display, &second));
    let mean = stat(&second, "%[fx:mean]");
    let spread = stat(&second, "%[fx:standard_deviation]");
    let moved = differing_pixels(&first, &second);
    println!(
        "window: mean {mean:.3}, standard deviation {spread:.3}, {moved} pixels changed in 2 s"
    );
    assert!(
        mean > 0.05 && mean < 0.95,
        "the screen is nearly uniform: mean {mean}"
    );
    assert!(spread > 0.05, "no contrast: standard deviation {spread}");
    assert!(
        moved > 10_000,
        "the waves did not move: {moved} pixels changed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const VISUAL: &str = x11::TALK_VISUAL;
const PANEL_TOP: &str = "716x220+564+0";

#[test]
fn talk_mode_steps_through_five_live_stages_under_xvfb() {
    let dir = std::env::temp_dir().join(format!("kiln-talk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = xvfb("1280x720x24");
    let display = server.display();
    let mut demo = start(display, env!("CARGO_BIN_EXE_waves"), &["--talk"]);
    wait_for_picture(&mut demo, display, &dir.join("start.png"));
    focus(display, "waves");

    let mut previous: Option<PathBuf> = None;
    let mut panels = Vec::new();
    for stage in 1..=5 {
        if stage > 1 {
            key(display, "Right");
        }
        // The new stage's picture (on lavapipe a frame takes a while, and the first copy back
        // from the GPU too).
        sleep(Duration::from_secs(2));
        let (shot, later) = (
            dir.join(format!("stage{stage}.png")),
            dir.join(format!("stage{stage}-later.png")),
        );
        assert!(screenshot(display, &shot));
        sleep(Duration::from_secs(1));
        assert!(screenshot(display, &later));
        let visual = crop(&shot, VISUAL, &dir.join(format!("visual{stage}.png")));
        let visual_later = crop(
            &later,
            VISUAL,
            &dir.join(format!("visual{stage}-later.png")),
        );
        panels.push(crop(
            &shot,
            PANEL_TOP,
            &dir.join(format!("panel{stage}.png")),
        ));
        let spread = stat(&visual, "%[fx:standard_deviation]");
        let moved = differing_pixels(&visual, &visual_later);
        let changed = previous.as_ref().map(|p| differing_pixels(p, &visual));
        println!(
            "stage {stage}: standard deviation {spread:.3}, {moved} pixels moved in 1 s, \
             {changed:?} pixels differ from the previous stage"
        );
        assert!(spread > 0.05, "stage {stage}: no contrast ({spread})");
        assert!(moved > 200, "stage {stage}: the picture is not live");
        assert!(
            changed.is_none_or(|c| c > 20_000),
            "stage {stage}: the picture hardly differs from the previous stage's"
        );
        previous = Some(visual);
    }

    // A digit jumps to its stage: the panel headings match the walk's, so each → moved one
    // stage, no more.
    for stage in [3, 1, 5] {
        key(display, &stage.to_string());
        sleep(Duration::from_millis(1500));
        let shot = dir.join(format!("jump{stage}.png"));
        assert!(screenshot(display, &shot));
        let panel = crop(
            &shot,
            PANEL_TOP,
            &dir.join(format!("jump-panel{stage}.png")),
        );
        assert_eq!(
            differing_pixels(&panels[stage - 1], &panel),
            0,
            "the key {stage} does not show the walk's stage {stage}"
        );
    }
    drop(demo);

    // `--stage 5` opens at the last stage: its panel heading is the one the walk ended on.
    let mut last = start(
        display,
        env!("CARGO_BIN_EXE_waves"),
        &["--talk", "--stage", "5"],
    );
    wait_for_picture(&mut last, display, &dir.join("last.png"));
    sleep(Duration::from_secs(2));
    let shot = dir.join("last-stage.png");
    assert!(screenshot(display, &shot));
    let panel = crop(&shot, PANEL_TOP, &dir.join("last-panel.png"));
    assert_eq!(
        differing_pixels(&panels[4], &panel),
        0,
        "--stage 5 does not show stage 5's panel"
    );
    assert!(differing_pixels(&panels[3], &panel) > 1000);
    let _ = std::fs::remove_dir_all(&dir);
}
