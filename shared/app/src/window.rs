//! The interactive demo: a winit window natively, the page's canvas in the browser. The device
//! arrives asynchronously (in the browser it must), through the event loop.

use std::sync::Arc;

use kiln::Gpu;
use web_time::Instant;
use winit::application::ApplicationHandler;
use winit::event::{ElementState, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop, EventLoopProxy};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Fullscreen, Window, WindowId};

use crate::display::{Display, Layout};
use crate::talk::{self, KernelSource, Nav, Stage, Talk};
use crate::{Demo, Options, Rates, RatesSource, hud, panel, platform};

/// Events from async work back to the loop.
enum Event<D> {
    Ready(Result<Box<State<D>>, String>),
    /// Rates measured (or recalled) for the settings of generation `.0`.
    Rates(u64, Result<(Rates, RatesSource), String>),
}

struct State<D> {
    gpu: Gpu,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    display: Display,
    demo: D,
    /// The last frame's [height, width], to map the pointer onto its pixels.
    frame_size: [usize; 2],
    /// The page's text field as last given to the demo.
    text: Option<String>,
    /// The demo's walkthrough.
    stages: Vec<Stage>,
    /// Presenter mode in the native window: where the presenter is.
    talk: Option<Talk>,
    /// The stage the page's presenter mode last asked for (the page keeps it, in the browser).
    page_stage: Option<usize>,
}

impl<D: Demo> State<D> {
    /// Where the frame and the text go: the presenter panel takes the right 56 % of the window.
    fn layout(&self) -> Layout {
        let size = [self.config.width, self.config.height];
        match self.talk {
            Some(_) => Layout::presenter(size, size[0] * 56 / 100),
            None => Layout::full(size),
        }
    }

    /// Gives the page the kernel sources and the demo's settings for the current settings
    /// (natively, nothing to do).
    fn publish_kernels(&self) {
        if !platform::has_page() {
            return;
        }
        let settings = self.demo.settings();
        if !settings.is_null() {
            platform::publish("settings", &settings.to_string());
        }
        match KernelSource::list(&self.gpu, &self.demo.kernels()) {
            Ok(list) => {
                platform::publish("kernels", &serde_json::to_string(&list).unwrap_or_default())
            }
            Err(e) => log::error!("rendering the kernel sources failed: {e}"),
        }
    }
}

struct App<D: Demo> {
    options: Options,
    proxy: EventLoopProxy<Event<D>>,
    window: Option<Arc<Window>>,
    state: Option<Box<State<D>>>,
    rates: Option<(Rates, RatesSource)>,
    /// Bumped when the settings change, so a late measurement of old settings is dropped.
    generation: u64,
    /// Frame timing: last frame, and the displayed rate over the last HUD period.
    last: Instant,
    period_start: Instant,
    period_frames: u32,
    displayed_fps: f64,
    frames: u64,
}

pub fn run<D: Demo>(options: Options) {
    let event_loop = match EventLoop::<Event<D>>::with_user_event().build() {
        Ok(l) => l,
        Err(e) => platform::fatal(&format!(
            "cannot open a window ({e}); without a display, run headless with --bench"
        )),
    };
    let app = App::<D> {
        options,
        proxy: event_loop.create_proxy(),
        window: None,
        state: None,
        rates: None,
        generation: 0,
        last: Instant::now(),
        period_start: Instant::now(),
        period_frames: 0,
        displayed_fps: 0.0,
        frames: 0,
    };
    platform::run_app(event_loop, app);
}

/// Gives the page the walkthrough (natively, nothing to do).
fn publish_stages(stages: &[Stage]) {
    platform::publish("stages", &serde_json::to_string(stages).unwrap_or_default());
}

/// Opens the device on an adapter that can present to the window's surface.
async fn connect<D: Demo>(
    window: Arc<Window>,
    demo_options: Options,
) -> Result<Box<State<D>>, String> {
    #[cfg(target_arch = "wasm32")]
    let options = crate::web::page_options()?;
    #[cfg(not(target_arch = "wasm32"))]
    let options = kiln::GpuOptions::default();
    let mut desc =
        wgpu::InstanceDescriptor::new_with_display_handle(Box::new(window.clone())).with_env();
    desc.backends = options.backends();
    let instance = wgpu::Instance::new(desc);
    let surface = instance
        .create_surface(window.clone())
        .map_err(|e| format!("cannot draw to the window: {e}"))?;
    let adapter = match wgpu::util::initialize_adapter_from_env(&instance, Some(&surface)).await {
        Ok(a) => a,
        Err(_) => instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                compatible_surface: Some(&surface),
                ..Default::default()
            })
            .await
            .map_err(|e| format!("no GPU adapter can draw to this window: {e}"))?,
    };
    let gpu = Gpu::from_adapter(&adapter, &options)
        .await
        .map_err(|e| e.to_string())?;
    let size = window.inner_size();
    let caps = surface.get_capabilities(&adapter);
    // The pixels are already sRGB-encoded bytes: a non-sRGB target shows them unchanged.
    let format = caps
        .formats
        .iter()
        .copied()
        .find(|f| !f.is_srgb())
        .or_else(|| caps.formats.first().copied())
        .ok_or("the window surface offers no format")?;
    let config = wgpu::SurfaceConfiguration {
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
        format,
        color_space: wgpu::SurfaceColorSpace::Auto,
        width: size.width.max(1),
        height: size.height.max(1),
        present_mode: wgpu::PresentMode::AutoVsync,
        desired_maximum_frame_latency: 2,
        alpha_mode: caps
            .alpha_modes
            .first()
            .copied()
            .unwrap_or(wgpu::CompositeAlphaMode::Auto),
        view_formats: vec![],
    };
    surface.configure(gpu.device(), &config);
    let display = Display::new(gpu.device(), format);
    let mut demo = D::new(&gpu, &demo_options).map_err(|e| e.to_string())?;
    // The stages render their kernels' WGSL: only for presenter mode or a page that shows them.
    let stages = if demo_options.talk || platform::has_page() {
        demo.stages()
    } else {
        Vec::new()
    };
    publish_stages(&stages);
    // Natively the window runs presenter mode; in the browser the page does (talk.js).
    let talk = match (demo_options.talk, platform::talk_stage()) {
        (true, None) => {
            talk::check(&stages).map_err(|e| format!("{} --talk: {e}", D::NAME))?;
            if let Some(s) = demo_options.stage.filter(|&s| s > stages.len()) {
                return Err(format!(
                    "--stage {s}: the walkthrough has {} stages",
                    stages.len()
                ));
            }
            Some(Talk::new(stages.len(), demo_options.stage))
        }
        _ => None,
    };
    if let Some(t) = &talk {
        demo.show_stage(t.stage());
        platform::note(&format!(
            "walkthrough: {} stages, starting at {}",
            t.count(),
            t.stage() + 1
        ));
    }
    let state = State {
        gpu,
        surface,
        config,
        display,
        demo,
        frame_size: [1, 1],
        text: None,
        stages,
        talk,
        page_stage: None,
    };
    state.publish_kernels();
    Ok(Box::new(state))
}

/// How long a page's measurement stands in for another page's own (the demo's page and its
/// walkthrough, opened one after the other): half an hour.
const SHARED_FOR_S: f64 = 1800.0;

/// The key the rates of the current settings are shared under between the site's pages: the
/// demo, the adapter and the settings (`None` for a demo that publishes no settings: its rates
/// depend on more than it tells, and each page measures its own).
fn rates_key<D: Demo>(state: &State<D>) -> Option<String> {
    let settings = state.demo.settings();
    (!settings.is_null()).then(|| {
        format!(
            "kiln-rates:{}:{}:{settings}",
            D::NAME,
            state.gpu.profile().name
        )
    })
}

/// The rates another page stored under `key`, with where and how long ago, if recent.
fn recall_rates(key: &str) -> Option<(Rates, RatesSource)> {
    let v: serde_json::Value = serde_json::from_str(&platform::recall(key)?).ok()?;
    let age_s = (platform::now_ms() - v["at"].as_f64()?) / 1e3;
    if !(0.0..SHARED_FOR_S).contains(&age_s) {
        return None;
    }
    let gpu_clock = match v["gpu_clock"].as_str()? {
        "gpu_timestamps" => kiln::bench::Clock::GpuTimestamps,
        _ => kiln::bench::Clock::WallClock,
    };
    let rates = Rates {
        gpu_fps: v["gpu_fps"].as_f64()?,
        cpu_fps: v["cpu_fps"].as_f64()?,
        gpu_clock,
    };
    let page = v["page"].as_str()?.to_string();
    // This page's own earlier measurement (a reload) is still this page's.
    let here = page == platform::page_words();
    Some((rates, RatesSource { here, page, age_s }))
}

fn remember_rates(key: &str, r: &Rates) {
    let value = serde_json::json!({
        "gpu_fps": r.gpu_fps, "cpu_fps": r.cpu_fps, "gpu_clock": r.gpu_clock.as_str(),
        "at": platform::now_ms(), "page": platform::page_words(),
    });
    platform::remember(key, &value.to_string());
}

impl<D: Demo> App<D> {
    /// Measures the rates for the current settings, or takes the one measurement another page
    /// of the site made for them (`rates_key`), and hands them to the loop.
    fn measure(&self) {
        let (Some(state), proxy) = (&self.state, self.proxy.clone()) else {
            return;
        };
        let key = rates_key(state);
        if let Some(recalled) = key.as_deref().and_then(recall_rates) {
            let _ = proxy.send_event(Event::Rates(self.generation, Ok(recalled)));
            return;
        }
        let (future, generation) = (state.demo.measure(), self.generation);
        platform::spawn(async move {
            let rates = future.await.map_err(|e| e.to_string());
            if let (Ok(r), Some(key)) = (&rates, &key)
                && r.gpu_fps.is_finite()
                && r.cpu_fps.is_finite()
            {
                remember_rates(key, r);
            }
            let _ = proxy.send_event(Event::Rates(
                generation,
                rates.map(|r| (r, RatesSource::here())),
            ));
        });
    }

    /// The demo's settings changed: old rates are void, measure again.
    fn settings_changed(&mut self) {
        self.generation += 1;
        self.rates = None;
        // The stages may name the settings and the kernels chosen for them.
        if let Some(state) = &mut self.state
            && (state.talk.is_some() || platform::has_page())
        {
            state.stages = state.demo.stages();
            if let Some(t) = &mut state.talk {
                *t = Talk::new(state.stages.len(), Some(t.stage() + 1));
            }
            publish_stages(&state.stages);
            state.publish_kernels();
        }
        self.update_hud();
        self.measure();
    }

    fn update_hud(&mut self) {
        let Some(state) = &mut self.state else {
            return;
        };
        if let Some(talk) = state.talk {
            let Some(stage) = state.stages.get(talk.stage()) else {
                return;
            };
            let footer = match &self.rates {
                Some((r, _)) => vec![format!(
                    "{} on {}: GPU {:.1} frames/s ({}), CPU {:.2} frames/s, {:.1}x",
                    D::NAME,
                    state.gpu.profile().name,
                    r.gpu_fps,
                    r.gpu_clock,
                    r.cpu_fps,
                    r.gpu_fps / r.cpu_fps
                )],
                None => vec![format!(
                    "{} on {}: measuring…",
                    D::NAME,
                    state.gpu.profile().name
                )],
            };
            let layout = state.layout();
            let (w, h) = (
                state.config.width.saturating_sub(layout.text_origin[0]),
                state.config.height,
            );
            let bitmap = panel::draw(stage, &talk, w as usize, h as usize, &footer);
            state.display.set_hud(
                state.gpu.device(),
                state.gpu.queue(),
                bitmap.w as u32,
                bitmap.h as u32,
                &bitmap.rgba,
            );
            return;
        }
        let mut lines = vec![
            D::TITLE.to_string(),
            format!(
                "adapter: {} ({})",
                state.gpu.profile().name,
                state.gpu.profile().backend
            ),
        ];
        lines.extend(state.demo.hud());
        let refresh_hz = self
            .window
            .as_ref()
            .and_then(|w| w.current_monitor())
            .and_then(|m| m.refresh_rate_millihertz())
            .map(|mhz| f64::from(mhz) / 1e3);
        lines.push(hud::displayed(self.displayed_fps, refresh_hz));
        match &self.rates {
            Some((r, source)) => {
                lines.extend(hud::uncapped(r, state.gpu.profile().is_software()));
                lines.push(format!("  ({})", source.words()));
            }
            None => lines.push("uncapped: measuring…".into()),
        }
        if !platform::show_text(&lines) {
            let (w, h, rgba) = hud::rasterize(&lines);
            state
                .display
                .set_hud(state.gpu.device(), state.gpu.queue(), w, h, &rgba);
        }
    }

    fn redraw(&mut self, event_loop: &ActiveEventLoop) {
        let Some(state) = &mut self.state else {
            return;
        };
        let field = platform::text_field();
        if field.is_some() && field != state.text {
            state.text = field;
            let text = state.text.clone().unwrap_or_default();
            if state.demo.set_text(&text) {
                self.settings_changed();
            }
        }
        let Some(state) = &mut self.state else {
            return;
        };
        let asked = platform::talk_stage();
        if asked.is_some() && asked != state.page_stage {
            state.page_stage = asked;
            if let Some(stage) = asked {
                state.demo.show_stage(stage);
            }
        }
        let now = Instant::now();
        let dt = (now - self.last).as_secs_f32().min(0.1);
        self.last = now;
        let pixels = match state
            .demo
            .frame(dt)
            .and_then(|p| state.gpu.check().map(|()| p))
        {
            Ok(p) => p,
            Err(e) => platform::fatal(&format!("{}: {e}", D::NAME)),
        };
        if let [h, w] = pixels.shape() {
            state.frame_size = [*h, *w];
        }
        let frame = match state.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(f)
            | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                state.surface.configure(state.gpu.device(), &state.config);
                return;
            }
            _ => return,
        };
        let target = frame
            .texture
            .create_view(&wgpu::TextureViewDescriptor::default());
        // The frame's recorded compute and the display pass go in one submission.
        let layout = state.layout();
        let (gpu, display) = (&state.gpu, &state.display);
        let submitted = gpu.flush_with(Some(&mut |encoder: &mut wgpu::CommandEncoder| {
            display.draw(gpu.device(), gpu.queue(), encoder, &target, layout, &pixels);
        }));
        if let Err(e) = submitted {
            platform::fatal(&format!("{}: {e}", D::NAME));
        }
        state.gpu.queue().present(frame);

        self.frames += 1;
        self.period_frames += 1;
        let period = (now - self.period_start).as_secs_f64();
        if period >= 0.5 {
            self.displayed_fps = f64::from(self.period_frames) / period;
            self.period_frames = 0;
            self.period_start = now;
            self.update_hud();
        }
        if self.options.exit_after.is_some_and(|n| self.frames >= n) {
            event_loop.exit();
        }
    }
}

impl<D: Demo> ApplicationHandler<Event<D>> for App<D> {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_some() {
            return;
        }
        // Presenter mode opens at 1280×720, the smaller projector resolution.
        let size = if self.options.talk {
            (1280, 720)
        } else {
            D::WINDOW
        };
        let window = match event_loop.create_window(platform::window_attributes(D::TITLE, size)) {
            Ok(w) => Arc::new(w),
            Err(e) => platform::fatal(&format!("cannot open a window: {e}")),
        };
        self.window = Some(window.clone());
        let (proxy, options) = (self.proxy.clone(), self.options.clone());
        platform::spawn(async move {
            let state = connect::<D>(window, options).await;
            let _ = proxy.send_event(Event::Ready(state));
        });
    }

    fn user_event(&mut self, _event_loop: &ActiveEventLoop, event: Event<D>) {
        match event {
            Event::Ready(Ok(state)) => {
                self.state = Some(state);
                self.update_hud();
                self.measure();
                if let Some(w) = &self.window {
                    w.request_redraw();
                }
            }
            Event::Ready(Err(e)) => platform::fatal(&format!("{}: {e}", D::NAME)),
            Event::Rates(generation, _) if generation != self.generation => {}
            Event::Rates(_, Ok((r, source))) => {
                if let Some(state) = &mut self.state {
                    state.demo.rates(&r, &source);
                }
                self.rates = Some((r, source));
                self.update_hud();
            }
            Event::Rates(_, Err(e)) => log::warn!("measuring the uncapped rates failed: {e}"),
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if let Some(state) = &mut self.state {
                    state.config.width = size.width.max(1);
                    state.config.height = size.height.max(1);
                    state.surface.configure(state.gpu.device(), &state.config);
                }
                self.update_hud();
            }
            // A synthetic press is winit replaying a key held while the window gained focus:
            // counting it would press the key twice.
            WindowEvent::KeyboardInput {
                event,
                is_synthetic: false,
                ..
            } if event.state == ElementState::Pressed => {
                let key = match &event.logical_key {
                    Key::Named(NamedKey::Space) => "space".to_string(),
                    Key::Named(NamedKey::ArrowLeft) => "left".to_string(),
                    Key::Named(NamedKey::ArrowRight) => "right".to_string(),
                    Key::Named(NamedKey::ArrowUp) => "up".to_string(),
                    Key::Named(NamedKey::ArrowDown) => "down".to_string(),
                    Key::Named(NamedKey::Tab) => "tab".to_string(),
                    Key::Named(NamedKey::Enter) => "enter".to_string(),
                    Key::Named(NamedKey::Backspace) => "backspace".to_string(),
                    Key::Named(NamedKey::Home) => "home".to_string(),
                    Key::Named(NamedKey::End) => "end".to_string(),
                    Key::Named(NamedKey::PageUp) => "pageup".to_string(),
                    Key::Named(NamedKey::PageDown) => "pagedown".to_string(),
                    Key::Named(NamedKey::Escape) => {
                        event_loop.exit();
                        return;
                    }
                    Key::Character(c) => c.to_lowercase(),
                    _ => return,
                };
                if let Some(state) = &mut self.state
                    && let Some(talk) = &mut state.talk
                {
                    // A held key steps through one stage, not many.
                    if event.repeat {
                        return;
                    }
                    match talk.key(&key) {
                        Nav::Moved => {
                            state.demo.show_stage(talk.stage());
                            platform::note(&format!("walkthrough: stage {}", talk.stage() + 1));
                            self.update_hud();
                            return;
                        }
                        // A presenter key, even one that goes nowhere, is not the demo's.
                        Nav::Stayed => return,
                        Nav::Fullscreen => {
                            if let Some(w) = &self.window {
                                let on = w.fullscreen().is_none();
                                w.set_fullscreen(on.then_some(Fullscreen::Borderless(None)));
                            }
                            return;
                        }
                        Nav::Ignored => {}
                    }
                }
                let used = self.state.as_mut().is_some_and(|s| s.demo.key(&key));
                if used {
                    self.settings_changed();
                } else {
                    self.update_hud();
                }
            }
            WindowEvent::CursorMoved { position, .. } => {
                if let Some(state) = &mut self.state {
                    // The frame is letterboxed into its rectangle (see display.rs).
                    let [h, w] = state.frame_size.map(|v| v as f64);
                    let (origin, size) = state.layout().frame;
                    let (sw, sh) = (f64::from(size[0]), f64::from(size[1]));
                    let scale = (sw / w).min(sh / h);
                    let x = (position.x - f64::from(origin[0]) - (sw - w * scale) / 2.0) / scale;
                    let y = (position.y - f64::from(origin[1]) - (sh - h * scale) / 2.0) / scale;
                    let inside = (0.0..w).contains(&x) && (0.0..h).contains(&y);
                    state.demo.pointer(inside.then_some((x as f32, y as f32)));
                    self.update_hud();
                }
            }
            WindowEvent::CursorLeft { .. } => {
                if let Some(state) = &mut self.state {
                    state.demo.pointer(None);
                    self.update_hud();
                }
            }
            WindowEvent::RedrawRequested => {
                self.redraw(event_loop);
                if let Some(w) = &self.window {
                    w.request_redraw();
                }
            }
            _ => {}
        }
    }
}
