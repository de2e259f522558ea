//! The speed page in a native window under Xvfb on the adapter in hand (lavapipe in CI): the
//! charts are drawn, and the picture moves as the sweep and the training run a step per frame.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../shared/testing/x11.rs"]
mod x11;

use std::thread::sleep;
use std::time::{Duration, Instant};

use x11::{differing_pixels, screenshot, start, stat, wait_for_picture, xvfb};

#[test]
fn window_draws_the_charts_and_trains() {
    let display = ":76";
    let dir = std::env::temp_dir().join(format!("kiln-flash-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _xvfb = xvfb(display, "1600x900x24");
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
