//! Everything that differs between native and the browser, in one place: logging and panics,
//! options, running futures, where the HUD text goes, and how the event loop starts.

use std::future::Future;

use crate::Options;

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    #[command(about = "A Kiln demo: a window, or a headless benchmark with --bench")]
    struct Cli {
        /// Run headless: time the GPU and CPU paths, print the result, exit.
        #[arg(long)]
        bench: bool,
        /// Frames per path in the benchmark.
        #[arg(long, default_value_t = 30)]
        frames: usize,
        /// Print the benchmark as JSON.
        #[arg(long)]
        json: bool,
        /// Write the last GPU frame as PNG.
        #[arg(long)]
        png: Option<String>,
        /// Problem size for the benchmark (the demo's default when absent).
        #[arg(long)]
        size: Option<usize>,
        /// Close the window after this many displayed frames.
        #[arg(long)]
        exit_after: Option<u64>,
        /// Input text, for demos that take text.
        #[arg(long)]
        text: Option<String>,
        /// A model directory (Hugging Face layout: config.json, model.safetensors, vocab.txt),
        /// or `synthetic` for the built-in weights.
        #[arg(long)]
        model: Option<String>,
        /// The model's number format on the GPU (f16 needs the adapter's shader-f16): weights,
        /// inputs and activations; products, softmax and layer norms accumulate in f32.
        #[arg(long, value_parser = ["f32", "f16"])]
        dtype: Option<String>,
        /// Write the demo's intermediate results to this JSON file.
        #[arg(long)]
        dump: Option<String>,
        /// Presenter mode: step through the demo's walkthrough (→/space next, ← back, Home,
        /// F fullscreen, a number jumps).
        #[arg(long)]
        talk: bool,
        /// The walkthrough stage to start at (1-based; implies --talk).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        stage: Option<u32>,
    }

    pub fn init_logging() {
        let _ = env_logger::try_init();
    }

    pub fn options() -> Options {
        let cli = Cli::parse();
        Options {
            bench: cli.bench,
            frames: cli.frames,
            json: cli.json,
            png: cli.png,
            size: cli.size,
            exit_after: cli.exit_after,
            text: cli.text,
            model: cli.model,
            dtype: cli.dtype,
            dump: cli.dump,
            preset: None,
            talk: cli.talk || cli.stage.is_some(),
            stage: cli.stage.map(|s| s as usize),
        }
    }

    /// Reads config.json, model.safetensors and vocab.txt from the directory.
    pub fn model_files(
        dir: Option<&str>,
        default_dir: &str,
    ) -> Result<Option<crate::ModelFiles>, String> {
        let dir = match dir {
            Some(d) => d,
            None if std::path::Path::new(default_dir).is_dir() => default_dir,
            None => return Ok(None),
        };
        let read = |name: &str| {
            let path = std::path::Path::new(dir).join(name);
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        };
        Ok(Some(crate::ModelFiles {
            source: dir.to_string(),
            config: read("config.json")?,
            weights: read("model.safetensors")?,
            vocab: read("vocab.txt")?,
        }))
    }

    /// Natively there is no page text field: text arrives as key presses.
    pub fn text_field() -> Option<String> {
        None
    }

    /// Natively the adapter request decides (and says why when none fits).
    pub fn has_webgpu() -> bool {
        true
    }

    /// Natively the window itself keeps the presenter's stage.
    pub fn talk_stage() -> Option<usize> {
        None
    }

    /// A line for whoever runs the window (the window tests and scripts/screenshots.sh read
    /// the walkthrough's progress from it).
    pub fn note(text: &str) {
        println!("{text}");
    }

    /// Natively there is no page to show the walkthrough or the kernel sources.
    pub fn has_page() -> bool {
        false
    }

    /// Natively there is no page to hand the walkthrough or the kernel sources to.
    pub fn publish(_what: &str, _json: &str) {}

    /// Natively a window keeps nothing between runs: every run measures its own rates.
    pub fn recall(_key: &str) -> Option<String> {
        None
    }

    /// See [`recall`].
    pub fn remember(_key: &str, _value: &str) {}

    /// The page, in words (natively: the window).
    pub fn page_words() -> String {
        "this window".into()
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms() -> f64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    }

    /// Natively a future runs to completion at once (the GPU is polled while it waits).
    pub fn spawn(f: impl Future<Output = ()> + 'static) {
        pollster::block_on(f);
    }

    /// Natively the page has no HUD: the window draws it (returns false).
    pub fn show_text(_lines: &[String]) -> bool {
        false
    }

    /// The benchmark's report goes to standard output.
    pub fn emit_report(text: &str) {
        println!("{text}");
    }

    /// A fatal message: printed, and the process ends with a failure status.
    pub fn fatal(message: &str) -> ! {
        eprintln!("error: {message}");
        std::process::exit(1)
    }

    pub fn run_app<A: winit::application::ApplicationHandler<E>, E: 'static>(
        event_loop: winit::event_loop::EventLoop<E>,
        mut app: A,
    ) {
        if let Err(e) = event_loop.run_app(&mut app) {
            fatal(&format!("event loop: {e}"));
        }
    }

    pub fn window_attributes(title: &str, (w, h): (u32, u32)) -> winit::window::WindowAttributes {
        winit::window::Window::default_attributes()
            .with_title(title)
            .with_inner_size(winit::dpi::LogicalSize::new(w, h))
    }

    pub fn write_file(path: &str, bytes: &[u8]) -> kiln::Result<()> {
        std::fs::write(path, bytes).map_err(|e| kiln::Error::InvalidArgument {
            op: "write",
            detail: format!("cannot write {path}: {e}"),
        })
    }

    /// Writes an RGBA8 image as PNG.
    pub fn write_png(path: &str, image: &crate::Image) -> kiln::Result<()> {
        let fail = |e: &dyn std::fmt::Display| kiln::Error::InvalidArgument {
            op: "png",
            detail: format!("cannot write {path}: {e}"),
        };
        let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
        let mut encoder =
            png::Encoder::new(std::io::BufWriter::new(file), image.width, image.height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| fail(&e))?;
        writer.write_image_data(&image.rgba).map_err(|e| fail(&e))?;
        writer.finish().map_err(|e| fail(&e))
    }
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::*;
    use wasm_bindgen::{JsCast, JsValue};

    pub fn init_logging() {
        console_error_panic_hook::set_once();
        let _ = console_log::init_with_level(log::Level::Info);
    }

    /// Options from the page URL: `?bench&frames=N&size=N&json` runs the benchmark in the
    /// page and writes its report into `#report`; `exit_after=N` stops after N frames.
    pub fn options() -> Options {
        let query = web_sys::window()
            .and_then(|w| w.location().search().ok())
            .and_then(|s| web_sys::UrlSearchParams::new_with_str(&s).ok());
        let get = |k: &str| query.as_ref().and_then(|q| q.get(k));
        let number = |k: &str| get(k).and_then(|v| v.parse().ok());
        Options {
            bench: get("bench").is_some(),
            frames: number("frames").unwrap_or(3),
            json: get("json").is_some(),
            png: None,
            size: number("size"),
            exit_after: number("exit_after").map(|n: usize| n as u64),
            text: get("text"),
            model: get("model"),
            dtype: get("dtype"),
            dump: None,
            preset: get("preset"),
            talk: get("talk").is_some(),
            stage: number("stage"),
        }
    }

    /// Whether the browser has WebGPU (`navigator.gpu`) and the page found an adapter (else
    /// site/src/talk.js marked the page `body[data-webgpu="missing"]`).
    pub fn has_webgpu() -> bool {
        let has_gpu = js_sys::Reflect::get(&js_sys::global(), &"navigator".into())
            .and_then(|navigator| js_sys::Reflect::get(&navigator, &"gpu".into()))
            .is_ok_and(|gpu| !gpu.is_undefined() && !gpu.is_null());
        let marked_missing = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.body())
            .and_then(|b| b.get_attribute("data-webgpu"))
            .is_some_and(|v| v == "missing");
        has_gpu && !marked_missing
    }

    /// The stage the page's presenter mode shows (site/src/talk.js keeps it in
    /// `body[data-talk-stage]`, 0-based).
    pub fn talk_stage() -> Option<usize> {
        web_sys::window()?
            .document()?
            .body()?
            .get_attribute("data-talk-stage")?
            .parse()
            .ok()
    }

    /// The page shows the walkthrough and the kernel sources.
    pub fn has_page() -> bool {
        true
    }

    /// In the browser the page shows the walkthrough's progress itself.
    pub fn note(_text: &str) {}

    /// Hands the page JSON through `window.kiln.publish(what, json)` (site/src/talk.js): the
    /// walkthrough's stages, the kernel sources.
    pub fn publish(what: &str, json: &str) {
        let Some(window) = web_sys::window() else {
            return;
        };
        let Ok(kiln) = js_sys::Reflect::get(&window, &"kiln".into()) else {
            return;
        };
        let Ok(publish) = js_sys::Reflect::get(&kiln, &"publish".into()) else {
            return;
        };
        if let Some(f) = publish.dyn_ref::<js_sys::Function>()
            && let Err(e) = f.call2(&kiln, &what.into(), &json.into())
        {
            log::error!("publishing {what} to the page failed: {e:?}");
        }
    }

    /// The browser's localStorage, where the site can reach it (a page may be refused it).
    fn storage() -> Option<JsValue> {
        let window = web_sys::window()?;
        let storage = js_sys::Reflect::get(&window, &"localStorage".into()).ok()?;
        (!storage.is_null() && !storage.is_undefined()).then_some(storage)
    }

    /// Calls `storage.method(args…)`.
    fn storage_call(method: &str, args: &[&str]) -> Option<JsValue> {
        let storage = storage()?;
        let f = js_sys::Reflect::get(&storage, &method.into())
            .ok()?
            .dyn_into::<js_sys::Function>()
            .ok()?;
        let args: js_sys::Array = args.iter().map(|a| JsValue::from_str(a)).collect();
        f.apply(&storage, &args).ok()
    }

    /// A value this site stored under `key` in the browser (shared by its pages).
    pub fn recall(key: &str) -> Option<String> {
        storage_call("getItem", &[key])?.as_string()
    }

    /// Stores `value` under `key` for the site's other pages (nothing where storage is refused).
    pub fn remember(key: &str, value: &str) {
        let _ = storage_call("setItem", &[key, value]);
    }

    /// The page, in words: `the walkthrough` in presenter mode, else its file (`waves.html`).
    pub fn page_words() -> String {
        let location = web_sys::window().map(|w| w.location());
        let search = location
            .as_ref()
            .and_then(|l| l.search().ok())
            .unwrap_or_default();
        let query = web_sys::UrlSearchParams::new_with_str(&search).ok();
        if query.is_some_and(|q| q.has("talk")) {
            return "the walkthrough".into();
        }
        location
            .and_then(|l| l.pathname().ok())
            .and_then(|p| p.rsplit('/').next().map(str::to_string))
            .filter(|f| !f.is_empty())
            .unwrap_or_else(|| "the page".into())
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms() -> f64 {
        js_sys::Date::now()
    }

    /// The model files the page's loader fetched into `window.kilnModel` (an object of
    /// Uint8Arrays keyed by file name), if the site was built with them.
    pub fn model_files(
        _dir: Option<&str>,
        _default_dir: &str,
    ) -> Result<Option<crate::ModelFiles>, String> {
        let Some(window) = web_sys::window() else {
            return Ok(None);
        };
        let model = js_sys::Reflect::get(&window, &"kilnModel".into()).unwrap_or_default();
        if model.is_undefined() || model.is_null() {
            return Ok(None);
        }
        let file = |name: &str| -> Result<Vec<u8>, String> {
            let v = js_sys::Reflect::get(&model, &name.into())
                .map_err(|_| format!("the page's model has no {name}"))?;
            v.dyn_into::<js_sys::Uint8Array>()
                .map(|a| a.to_vec())
                .map_err(|_| format!("the page's model file {name} is not bytes"))
        };
        let source = js_sys::Reflect::get(&model, &"source".into())
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_else(|| "the site's model".into());
        Ok(Some(crate::ModelFiles {
            source,
            config: file("config.json")?,
            weights: file("model.safetensors")?,
            vocab: file("vocab.txt")?,
        }))
    }

    /// The page's `#text` input, if it has one.
    pub fn text_field() -> Option<String> {
        element("text")?
            .dyn_into::<web_sys::HtmlInputElement>()
            .ok()
            .map(|input| input.value())
    }

    /// The benchmark's report goes into the page's `#report` element.
    pub fn emit_report(text: &str) {
        if let Some(el) = element("report") {
            el.set_text_content(Some(text));
            let _ = el.set_attribute("data-done", "true");
        }
    }

    pub fn spawn(f: impl Future<Output = ()> + 'static) {
        wasm_bindgen_futures::spawn_local(f);
    }

    fn element(id: &str) -> Option<web_sys::Element> {
        web_sys::window()?.document()?.get_element_by_id(id)
    }

    /// The page's `#hud` element holds the HUD text (returns whether the page showed it).
    pub fn show_text(lines: &[String]) -> bool {
        element("hud")
            .map(|hud| hud.set_text_content(Some(&lines.join("\n"))))
            .is_some()
    }

    /// A fatal message: shown on the page (never a blank canvas) and in the console.
    pub fn fatal(message: &str) -> ! {
        log::error!("{message}");
        if let Some(el) = element("error") {
            el.set_text_content(Some(message));
            let _ = el.set_attribute("style", "display:block");
        }
        // Unwind out of the event loop: the page keeps the message.
        wasm_bindgen::throw_str(message)
    }

    pub fn run_app<A: winit::application::ApplicationHandler<E> + 'static, E: 'static>(
        event_loop: winit::event_loop::EventLoop<E>,
        app: A,
    ) {
        use winit::platform::web::EventLoopExtWebSys;
        event_loop.spawn_app(app);
    }

    pub fn write_file(path: &str, _bytes: &[u8]) -> kiln::Result<()> {
        Err(kiln::Error::InvalidArgument {
            op: "write",
            detail: format!("cannot write {path} from the browser"),
        })
    }

    /// The benchmark is a native mode: there is no file to write in the browser.
    pub fn write_png(path: &str, _image: &crate::Image) -> kiln::Result<()> {
        Err(kiln::Error::InvalidArgument {
            op: "png",
            detail: format!("cannot write {path} from the browser"),
        })
    }

    /// In the browser the page's canvas decides the size.
    pub fn window_attributes(title: &str, _size: (u32, u32)) -> winit::window::WindowAttributes {
        use winit::platform::web::WindowAttributesExtWebSys;
        let canvas =
            element("canvas").and_then(|e| e.dyn_into::<web_sys::HtmlCanvasElement>().ok());
        // Not active: an active window's canvas takes the focus as it is made, which scrolls the
        // page to it (and, in the index's thumbnails, pulls the focus into an iframe).
        winit::window::Window::default_attributes()
            .with_title(title)
            .with_canvas(canvas)
            .with_active(false)
    }
}

pub use imp::*;
