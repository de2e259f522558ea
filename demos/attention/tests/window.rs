//! The native window under Xvfb on the adapter in hand (lavapipe in CI): the heatmap is drawn,
//! and typing a word changes it. Screenshots from ImageMagick's `import`, keys from xdotool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../shared/testing/x11.rs"]
mod x11;

use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

use x11::{differing_pixels, screenshot, start, stat, wait_for_picture, xvfb};

#[test]
fn window_draws_the_heatmap_and_follows_typing() {
    let display = ":74";
    let dir = std::env::temp_dir().join(format!("kiln-attention-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _xvfb = xvfb(display, "1600x900x24");
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
