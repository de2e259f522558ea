//! Helpers for the demos' window tests, included by each with
//! `#[path = "../../../shared/testing/x11.rs"] mod x11;`: an Xvfb server and a child process
//! killed when dropped, screenshots of the X screen (ImageMagick `import`), their statistics
//! and their differences.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// A child process killed (and reaped) when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn screenshot(display: &str, path: &Path) -> bool {
    Command::new("import")
        .args(["-window", "root", path.to_str().unwrap()])
        .env("DISPLAY", display)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// ImageMagick's statistic of an image, in 0..1.
pub fn stat(path: &Path, expr: &str) -> f64 {
    let out = Command::new("convert")
        .args([path.to_str().unwrap(), "-format", expr, "info:"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0.0)
}

pub fn differing_pixels(a: &Path, b: &Path) -> u64 {
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

/// Starts Xvfb on `display` with a `size` screen ("1024x1024x24").
pub fn xvfb(display: &str, size: &str) -> Killed {
    let server = Killed(
        Command::new("Xvfb")
            .args([display, "-screen", "0", size, "-nolisten", "tcp"])
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb is needed for the window tests (scripts/test.sh installs it)"),
    );
    sleep(Duration::from_secs(1));
    server
}

/// Starts `binary` with `args` on `display` (no Wayland, the adapter in hand).
pub fn start(display: &str, binary: &str, args: &[&str]) -> Killed {
    Killed(
        Command::new(binary)
            .args(args)
            .env("DISPLAY", display)
            .env_remove("WAYLAND_DISPLAY")
            .env("NODEVICE_SELECT", "1")
            .spawn()
            .unwrap(),
    )
}

/// Waits (up to 120 s: the first frames are slow on a software adapter) until a screenshot of
/// `display`, written to `path`, shows a picture with contrast; fails if `demo` exits first.
pub fn wait_for_picture(demo: &mut Killed, display: &str, path: &Path) {
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = demo.0.try_wait() {
            panic!("the window exited early: {status}");
        }
        if screenshot(display, path) && stat(path, "%[fx:standard_deviation]") > 0.05 {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no picture after 120 s"
        );
        sleep(Duration::from_millis(500));
    }
}
