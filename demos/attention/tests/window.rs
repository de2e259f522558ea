//! The native window under Xvfb on the adapter in hand (lavapipe in CI): the heatmap is drawn,
//! and typing a word changes it. Screenshots from ImageMagick's `import`, keys from xdotool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn screenshot(display: &str, path: &Path) -> bool {
    Command::new("import")
        .args(["-window", "root", path.to_str().unwrap()])
        .env("DISPLAY", display)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// ImageMagick's statistic of an image, in 0..1.
fn stat(path: &Path, expr: &str) -> f64 {
    let out = Command::new("convert")
        .args([path.to_str().unwrap(), "-format", expr, "info:"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0.0)
}

fn differing_pixels(a: &Path, b: &Path) -> u64 {
    let out = Command::new("compare")
        .args([
            "-metric",
            "AE",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "null:",
        ])
        .output()
        .unwrap();
    // `compare` prints the count on stderr (and exits 1 when the images differ).
    String::from_utf8_lossy(&out.stderr)
        .trim()
        .parse::<f64>()
        .unwrap_or(0.0) as u64
}

#[test]
fn window_draws_the_heatmap_and_follows_typing() {
    let display = ":74";
    let dir = std::env::temp_dir().join(format!("kiln-attention-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _xvfb = Killed(
        Command::new("Xvfb")
            .args([display, "-screen", "0", "1400x900x24", "-nolisten", "tcp"])
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb is needed for the window test (scripts/test.sh installs it)"),
    );
    sleep(Duration::from_secs(1));
    let mut demo = Killed(
        Command::new(env!("CARGO_BIN_EXE_attention"))
            .args(["--model", "synthetic", "--text", "the cat sat"])
            .env("DISPLAY", display)
            .env_remove("WAYLAND_DISPLAY")
            .env("NODEVICE_SELECT", "1")
            .spawn()
            .unwrap(),
    );
    let (first, second) = (dir.join("first.png"), dir.join("second.png"));
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = demo.0.try_wait() {
            panic!("the attention window exited early: {status}");
        }
        if screenshot(display, &first) && stat(&first, "%[fx:standard_deviation]") > 0.05 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no picture after 120 s"
        );
        sleep(Duration::from_millis(500));
    }
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
    sleep(Duration::from_secs(3));
    assert!(screenshot(display, &second));
    let spread = stat(&second, "%[fx:standard_deviation]");
    let changed = differing_pixels(&first, &second);
    println!("window: standard deviation {spread:.3}, {changed} pixels changed after typing");
    assert!(spread > 0.05, "no contrast: standard deviation {spread}");
    assert!(
        changed > 5_000,
        "typing did not change the heatmap: {changed} pixels changed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
