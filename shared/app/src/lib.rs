//! The harness every Kiln demo shares. A demo implements [`Demo`]; its `main` is
//! `kiln_app::run::<ThisDemo>()`. This crate is the only place that knows the platform: a winit
//! window natively, a canvas in the browser, and a headless benchmark mode (`--bench`). It also
//! runs presenter mode (`--talk`, `?talk`) from the demo's stage list, and hands the page the
//! kernel-source view.

mod display;
mod headless;
mod hud;
mod panel;
mod platform;
pub mod raster;
pub mod talk;
#[cfg(target_arch = "wasm32")]
pub mod web;
mod window;

use std::future::Future;

pub use kiln;
use kiln::bench::Timing;
use kiln::{Gpu, Tensor};

/// What a demo gives the harness.
pub trait Demo: Sized + 'static {
    /// Short name: the binary, the page, the PNG file.
    const NAME: &'static str;
    /// Window and page title.
    const TITLE: &'static str;
    /// The native window's initial size in logical pixels (width, height).
    const WINDOW: (u32, u32) = (900, 900);

    /// Builds the demo on a device, with the command-line (or URL) options.
    fn new(gpu: &Gpu, options: &Options) -> kiln::Result<Self>;

    /// Advances the animation by `dt` seconds and computes the frame on the current path.
    /// Returns the pixels to show: a u32 RGBA8 tensor [H, W] on the GPU.
    fn frame(&mut self, dt: f32) -> kiln::Result<Tensor>;

    /// A key press — a character (lower-cased) or `space`, `left`, `right`, `up`, `down`,
    /// `tab`, `enter`, `backspace` — returns whether the settings changed (the uncapped rates
    /// are then measured again).
    fn key(&mut self, _key: &str) -> bool {
        false
    }

    /// The page's text field changed (in the browser; natively, text arrives as keys).
    /// Returns whether the settings changed.
    fn set_text(&mut self, _text: &str) -> bool {
        false
    }

    /// The pointer is over pixel (x, y) of the last frame, or has left it (`None`).
    fn pointer(&mut self, _at: Option<(f32, f32)>) {}

    /// Lines for the heads-up display.
    fn hud(&self) -> Vec<String>;

    /// The current settings for the page, as JSON (`null`: none to tell): published to it as
    /// `settings` whenever they change, so that its text and buttons can follow (site/src/talk.js
    /// dispatches a `kiln:settings` event).
    fn settings(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// The walkthrough for presenter mode (`--talk`, `?talk&stage=N`): the stages in order.
    fn stages(&self) -> Vec<talk::Stage> {
        Vec::new()
    }

    /// Presenter mode moved to stage `stage` (0-based): the following frames show its visual.
    fn show_stage(&mut self, _stage: usize) {}

    /// The kernels the GPU path runs with the current settings, for the kernel-source view.
    fn kernels(&self) -> Vec<kiln::Choice> {
        Vec::new()
    }

    /// Measures the uncapped rates of both paths for the current settings (the HUD shows them).
    fn measure(&self) -> impl Future<Output = kiln::Result<Rates>> + 'static;

    /// The uncapped rates for the current settings arrived: measured on this page, or the one
    /// measurement another page of the site made for the same demo, adapter and settings
    /// (`source` says which), so that a page and its walkthrough show one figure.
    fn rates(&mut self, _rates: &Rates, _source: &RatesSource) {}

    /// Headless benchmark: `options.frames` frames on each path, timed, compared, the last GPU
    /// frame kept. `options.size` overrides the demo's default problem size (a smaller frame
    /// for slow devices).
    fn bench(gpu: &Gpu, options: &Options) -> impl Future<Output = kiln::Result<BenchReport>>;
}

/// Uncapped frame rates of the two paths.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Rates {
    /// Frames per second of the GPU frame computation alone (no display).
    pub gpu_fps: f64,
    /// Frames per second of the CPU path.
    pub cpu_fps: f64,
    /// The clock the GPU figure came from.
    pub gpu_clock: kiln::bench::Clock,
}

/// Where a page's uncapped rates come from: its own measurement, or the one another page of the
/// site (the demo's page or its walkthrough) made for the same demo, adapter and settings a
/// little earlier, which it shows rather than a second measurement of the same work.
#[derive(Clone, Debug, PartialEq)]
pub struct RatesSource {
    /// Measured here, by this page.
    pub here: bool,
    /// The page that measured them, in words (`waves.html`, `the walkthrough`).
    pub page: String,
    /// How long ago, in seconds.
    pub age_s: f64,
}

impl RatesSource {
    /// Measured by this page, now.
    pub fn here() -> RatesSource {
        RatesSource {
            here: true,
            page: "this page".into(),
            age_s: 0.0,
        }
    }

    /// For the HUD: which measurement the figures are, and why a recalled one is shown.
    pub fn words(&self) -> String {
        if self.here {
            "one measurement, taken on this page".into()
        } else {
            format!(
                "the measurement {} took {} ago, for these settings: the page and its \
                 walkthrough show one figure",
                self.page,
                ago(self.age_s)
            )
        }
    }

    /// For a picture (at most 35 characters): `measured on this page`, `from waves.html, 2 min ago`.
    pub fn short(&self) -> String {
        if self.here {
            "measured on this page".into()
        } else {
            format!("from {}, {} ago", self.page, ago(self.age_s))
        }
    }
}

/// A past duration in a few characters: `40 s`, `3 min`.
fn ago(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{:.0} s", seconds.max(1.0))
    } else {
        format!("{:.0} min", seconds / 60.0)
    }
}

/// What a headless benchmark measured.
#[derive(Debug, serde::Serialize)]
pub struct BenchReport {
    pub demo: String,
    pub adapter: String,
    pub backend: String,
    /// The demo's settings, in words (`1024×1024, 128 waves`).
    pub settings: String,
    /// Per-frame times of the GPU frame computation.
    pub gpu: Timing,
    /// Per-frame times of the CPU path (wall clock).
    pub cpu: Timing,
    /// Demo-specific results (agreement between the paths, …).
    pub checks: serde_json::Value,
    /// The last GPU frame, RGBA8, for `--png`.
    #[serde(skip)]
    pub image: Option<Image>,
}

/// An RGBA8 image.
#[derive(Debug)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

/// Runs the demo: headless with `--bench`, else in a window (natively) or the page's canvas.
pub fn run<D: Demo>() {
    run_with::<D>(platform::options());
}

/// [`run`] with options the demo parsed itself (a demo with its own command line).
pub fn run_with<D: Demo>(options: Options) {
    platform::init_logging();
    // A browser without WebGPU gets no window: the page explains, and shows the CPU path where
    // the demo offers one (site/src/loader.js).
    if !platform::has_webgpu() {
        return;
    }
    if options.bench {
        headless::run::<D>(&options);
    } else {
        window::run::<D>(options);
    }
}

/// Command-line (native) or URL (web) options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Headless benchmark instead of a window.
    pub bench: bool,
    /// Frames per path in the benchmark.
    pub frames: usize,
    /// Print the benchmark as JSON.
    pub json: bool,
    /// Write the last GPU frame here.
    pub png: Option<String>,
    /// Problem size for the benchmark (the demo's default when absent).
    pub size: Option<usize>,
    /// Close the window after this many displayed frames (window tests).
    pub exit_after: Option<u64>,
    /// Input text, for demos that take text.
    pub text: Option<String>,
    /// A model directory in the Hugging Face layout, for demos that load weights.
    pub model: Option<String>,
    /// The number format of a model's tensors on the GPU (`f32`, `f16`), for demos that run
    /// one (the attention demo); absent, f32.
    pub dtype: Option<String>,
    /// Write the demo's intermediate results here (JSON), for comparison with a reference.
    pub dump: Option<String>,
    /// A named problem size, for demos that have presets.
    pub preset: Option<String>,
    /// Presenter mode: the demo's walkthrough, a stage at a time.
    pub talk: bool,
    /// The walkthrough stage to start at, 1-based.
    pub stage: Option<usize>,
}

/// The files of a model in the Hugging Face layout, as bytes, and where they came from.
#[derive(Clone, Debug)]
pub struct ModelFiles {
    pub source: String,
    pub config: Vec<u8>,
    pub weights: Vec<u8>,
    pub vocab: Vec<u8>,
}

/// Hands the page JSON (`window.kiln.publish`; a name other than `stages` or `kernels` arrives
/// as a `kiln:<what>` event): what a demo drew, for the page and its tests. Natively nothing.
pub fn publish(what: &str, json: &str) {
    platform::publish(what, json);
}

/// Runs a future to completion: natively at once (blocking), in the browser in the background.
pub fn spawn(f: impl Future<Output = ()> + 'static) {
    platform::spawn(f);
}

/// Writes a file (natively; the browser has no files and says so).
pub fn write_file(path: &str, bytes: &[u8]) -> kiln::Result<()> {
    platform::write_file(path, bytes)
}

/// The model files: natively from `dir`, else from `default_dir` when it exists (`Ok(None)`
/// when it does not); in the browser, those the page fetched before starting (`Ok(None)` when
/// the site was built without them).
pub fn model_files(dir: Option<&str>, default_dir: &str) -> Result<Option<ModelFiles>, String> {
    platform::model_files(dir, default_dir)
}
