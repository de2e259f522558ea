//! The native window under Xvfb on the adapter in hand (lavapipe in CI): the heatmap is drawn,
//! and typing a word changes it; presenter mode steps through the walkthrough. Screenshots from
//! ImageMagick's `import`, keys from xdotool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kiln_testing::x11;

use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

use x11::{crop, differing_pixels, focus, key, screenshot, start, stat, wait_for_picture, xvfb};

#[test]
fn window_draws_the_heatmap_and_follows_typing() {
    let dir = std::env::temp_dir().join(format!("kiln-attention-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = xvfb("1600x900x24");
    let display = server.display();
    let mut demo = start(
        display,
        env!("CARGO_BIN_EXE_attention"),
        &["--model", "synthetic", "--text", "the cat sat"],
    );
    let (first, second) = (dir.join("first.png"), dir.join("second.png"));
    wait_for_picture(&mut demo, display, &first);
    sleep(Duration::from_secs(2));
    assert!(screenshot(display, &first));
    // Type a word into the window: the text gains tokens, the heatmap grows.
    let typed = Command::new("xdotool")
        .args([
            "search",
            "--sync",
            "--name",
            "attention",
            "windowfocus",
            "type",
            "--delay",
            "50",
            " on the mat",
        ])
        .env("DISPLAY", display)
        .status()
        .expect("xdotool is needed for the window test (scripts/test.sh installs it)");
    assert!(typed.success(), "xdotool could not type into the window");
    // The text grows by four tokens: wait (a software adapter under load can be slow) until
    // the picture has changed beyond the HUD's ticking numbers.
    let typed_at = Instant::now();
    let changed = loop {
        sleep(Duration::from_secs(1));
        assert!(screenshot(display, &second));
        let changed = differing_pixels(&first, &second);
        if changed > 5_000 || typed_at.elapsed() > Duration::from_secs(60) {
            break changed;
        }
    };
    let spread = stat(&second, "%[fx:standard_deviation]");
    println!("window: standard deviation {spread:.3}, {changed} pixels changed after typing");
    assert!(spread > 0.05, "no contrast: standard deviation {spread}");
    assert!(
        changed > 5_000,
        "typing did not change the heatmap: {changed} pixels changed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `attention --talk` presents the walkthrough: the live visual on the left 44 %, the stage's
/// panel on the right. Right steps through the ten stages (each visual has contrast and differs
/// from the one before), Home returns to the first, and `--stage 5` starts at the fifth.
#[test]
fn talk_mode_steps_through_the_walkthrough() {
    const STAGES: usize = 10;
    let dir = std::env::temp_dir().join(format!("kiln-attention-talk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = xvfb("1280x720x24");
    let display = server.display();
    // No key auto-repeat: on a loaded machine a press held past the repeat delay would step
    // two stages at once.
    let repeat_off = Command::new("xset")
        .args(["r", "off"])
        .env("DISPLAY", display)
        .status()
        .is_ok_and(|s| s.success());
    if !repeat_off {
        println!("xset could not turn key auto-repeat off: a slow key press may skip a stage");
    }
    let args = [
        "--model",
        "synthetic",
        "--text",
        "the cat sat on the mat",
        "--talk",
    ];
    let mut demo = start(display, env!("CARGO_BIN_EXE_attention"), &args);
    let shot = |name: &str| dir.join(format!("{name}.png"));
    wait_for_picture(&mut demo, display, &shot("start"));
    focus(display, "attention");
    sleep(Duration::from_secs(2));

    // The visual is the left 44 % of the 1280-pixel window; the panel's top holds the counter,
    // title, text and code (its foot shows the measured rates, which change on their own).
    let capture = |name: &str| -> (std::path::PathBuf, std::path::PathBuf) {
        let full = shot(name);
        assert!(screenshot(display, &full));
        let visual = crop(&full, "563x720+0+0", &shot(&format!("{name}-visual")));
        let panel = crop(&full, "716x560+564+0", &shot(&format!("{name}-panel")));
        (visual, panel)
    };
    let mut stages = vec![capture("stage1")];
    for k in 2..=STAGES {
        key(display, "Right");
        // Wait until the panel shows the next stage (a software adapter under load is slow).
        let pressed = Instant::now();
        let (visual, panel) = loop {
            sleep(Duration::from_millis(700));
            let (visual, panel) = capture(&format!("stage{k}"));
            let moved = differing_pixels(&panel, &stages[k - 2].1) > 2_000;
            if moved || pressed.elapsed() > Duration::from_secs(30) {
                break (visual, panel);
            }
        };
        let panel_changed = differing_pixels(&panel, &stages[k - 2].1);
        let visual_changed = differing_pixels(&visual, &stages[k - 2].0);
        let spread = stat(&visual, "%[fx:standard_deviation]");
        println!(
            "stage {k}: visual σ {spread:.3}, {visual_changed} visual and {panel_changed} panel pixels changed"
        );
        assert!(
            panel_changed > 2_000,
            "stage {k}: the panel did not move on"
        );
        assert!(
            spread > 0.05,
            "stage {k}: the visual has no contrast (σ {spread})"
        );
        assert!(
            visual_changed > 5_000,
            "stage {k}: the visual is the previous stage's ({visual_changed} pixels changed)"
        );
        stages.push((visual, panel));
    }
    let first_spread = stat(&stages[0].0, "%[fx:standard_deviation]");
    assert!(first_spread > 0.05, "stage 1: no contrast ({first_spread})");

    // Home returns to the first stage: the same panel as at the start.
    key(display, "Home");
    sleep(Duration::from_secs(2));
    let (_, home) = capture("home");
    let off = differing_pixels(&home, &stages[0].1);
    assert!(
        off < 500,
        "Home did not return to stage 1: {off} panel pixels differ"
    );
    drop(demo);

    // --stage 5 starts at the fifth stage: its panel is the one Right reached.
    let args = [
        "--model",
        "synthetic",
        "--text",
        "the cat sat on the mat",
        "--stage",
        "5",
    ];
    let mut demo = start(display, env!("CARGO_BIN_EXE_attention"), &args);
    wait_for_picture(&mut demo, display, &shot("fifth-start"));
    sleep(Duration::from_secs(2));
    let (visual, panel) = capture("fifth");
    let off = differing_pixels(&panel, &stages[4].1);
    let spread = stat(&visual, "%[fx:standard_deviation]");
    println!("--stage 5: {off} panel pixels differ from stage 5's, visual σ {spread:.3}");
    assert!(
        off < 500,
        "--stage 5 did not start at stage 5: {off} pixels differ"
    );
    assert!(spread > 0.05, "--stage 5: the visual has no contrast");
    drop(demo);
    if std::env::var_os("KILN_KEEP_SHOTS").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        println!("screenshots kept in {}", dir.display());
    }
}
