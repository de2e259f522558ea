//! Helpers for the window tests (`use kiln_testing::x11;`): an Xvfb server and a child process
//! killed when dropped, screenshots of the X screen (ImageMagick `import`), their statistics
//! and their differences.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// A child process killed (and reaped) when dropped.
#[derive(Debug)]
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
    let text = String::from_utf8_lossy(&out.stdout);
    // A statistic that does not parse would pass any bound: fail instead.
    text.trim().parse().unwrap_or_else(|_| {
        panic!(
            "convert {expr} on {}: {:?} {}",
            path.display(),
            text,
            String::from_utf8_lossy(&out.stderr)
        )
    })
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
    // `compare` prints the count on stderr (and exits 1 when the images differ); ImageMagick 7
    // adds the fraction in brackets. Output that does not parse (images of different sizes)
    // must not read as "no difference".
    let text = String::from_utf8_lossy(&out.stderr);
    let count = text
        .split_whitespace()
        .next()
        .and_then(|t| t.parse::<f64>().ok());
    count.unwrap_or_else(|| panic!("compare {} {}: {text:?}", a.display(), b.display())) as u64
}

/// An Xvfb server on a display it chose itself, killed when dropped.
#[derive(Debug)]
pub struct Xvfb {
    _server: Killed,
    display: String,
}

impl Xvfb {
    /// The display (":N") to hand to clients.
    pub fn display(&self) -> &str {
        &self.display
    }
}

/// Starts Xvfb with a `size` screen ("1024x1024x24") and waits until it takes connections.
///
/// Xvfb picks a free display and writes its number once it is ready (`-displayfd`): a fixed
/// number can be held by another server on a shared machine, whose socket then answers our
/// clients with a refusal.
pub fn xvfb(size: &str) -> Xvfb {
    let mut child = Command::new("Xvfb")
        .args(["-displayfd", "1", "-screen", "0", size, "-nolisten", "tcp"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("Xvfb is needed for the window tests (scripts/test.sh installs it)");
    let stdout = child.stdout.take().unwrap();
    let server = Killed(child);
    let (tx, rx) = mpsc::channel();
    // Read on a thread so that a server which never gets ready fails the test, not hangs it.
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("Xvfb: not ready after 60 s");
    let number: u32 = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("Xvfb exited before it was ready (it wrote {line:?})"));
    Xvfb {
        _server: server,
        display: format!(":{number}"),
    }
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

/// Presenter mode's window (`--talk`, 1280×720, kiln-app's layout): the live visual is the left
/// 564 pixels, the panel the rest; its counter and title are at the panel's top.
pub const TALK_VISUAL: &str = "564x720+0+0";
pub const TALK_HEADING: &str = "700x160+570+0";

/// A region (ImageMagick geometry `WxH+X+Y`) of an image, written to `to`.
pub fn crop(from: &Path, geometry: &str, to: &Path) -> std::path::PathBuf {
    let ok = Command::new("convert")
        .args([
            from.to_str().unwrap(),
            "-crop",
            geometry,
            "+repage",
            to.to_str().unwrap(),
        ])
        .status()
        .unwrap()
        .success();
    assert!(ok, "convert could not crop {}", from.display());
    to.to_path_buf()
}

fn xdotool(display: &str, args: &[&str]) {
    let ok = Command::new("xdotool")
        .args(args)
        .env("DISPLAY", display)
        .status()
        .expect("xdotool is needed for the window tests (scripts/test.sh installs it)")
        .success();
    assert!(ok, "xdotool {args:?} failed");
}

/// Gives the window whose title contains `name` the keyboard (Xvfb has no window manager to do
/// it). Once, before the first key.
pub fn focus(display: &str, name: &str) {
    xdotool(
        display,
        &["search", "--sync", "--name", name, "windowfocus", "--sync"],
    );
    sleep(Duration::from_millis(400));
}

/// Presses `key` (an X key name: Right, Home, 3) in the focused window.
pub fn key(display: &str, key: &str) {
    xdotool(display, &["key", key]);
}
