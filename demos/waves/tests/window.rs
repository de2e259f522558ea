//! The native window under Xvfb on the adapter in hand (lavapipe in CI): the waves are drawn and
//! move. Screenshots of the X screen come from ImageMagick's `import`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../shared/testing/x11.rs"]
mod x11;

use std::thread::sleep;
use std::time::Duration;

use x11::{differing_pixels, screenshot, start, stat, wait_for_picture, xvfb};

#[test]
fn window_draws_moving_waves_under_xvfb() {
    let display = ":73";
    let dir = std::env::temp_dir().join(format!("kiln-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _xvfb = xvfb(display, "1024x1024x24");
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
