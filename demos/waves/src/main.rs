//! The waves demo: every pixel's RGBA comes out of one matrix multiplication per frame
//! (see `model` for the factorisation), on the GPU through kiln's kernels or on the CPU path
//! (`frame`). Presenter mode walks through it in five stages (`stages`), each with its own live
//! picture (`visual`). This file is the demo as the app runs it: its state, keys, HUD, pictures,
//! measurement and benchmark.

mod frame;
mod model;
mod readback;
mod stages;
mod visual;
#[cfg(target_arch = "wasm32")]
mod web;

use std::rc::Rc;

use frame::{GpuFrame, cpu_frame};
use kiln_app::kiln::cpu::Array;
use kiln_app::kiln::{self, Choice, DType, Gpu, Tensor, bench};
use kiln_app::talk::{Stage, Target};
use kiln_app::{BenchReport, Demo, Image, Options, Rates, RatesSource};
use model::Model;
use readback::Readback;
use stages::{COLOUR, FACTORS, PARAMETERS, PRODUCT, RATES, walkthrough};

const RESOLUTIONS: [usize; 3] = [256, 512, 1024];
const WAVES: [usize; 5] = [8, 16, 32, 64, 128];

fn main() {
    kiln_app::run::<Waves>();
}

struct Waves {
    gpu: Gpu,
    model: Model,
    gpu_frame: Rc<GpuFrame>,
    left: Rc<Array>,
    /// The CPU path's pixels, uploaded for display.
    cpu_pixels: Tensor,
    t: f32,
    paused: bool,
    on_gpu: bool,
    /// Presenter mode's stage (0-based); `None` outside presenter mode.
    stage: Option<usize>,
    /// A stage's picture, drawn on the CPU and uploaded as the frame.
    picture: Tensor,
    readback: Readback,
    /// The uncapped rates for these settings and where they come from (the last stage's bars):
    /// the same measurement the page's HUD shows.
    rates: Option<(Rates, RatesSource)>,
}

impl Waves {
    fn build(gpu: &Gpu, count: usize, res: usize, seed: u64) -> kiln::Result<Waves> {
        let model = Model::new(count, res, seed);
        let left = Array::new(&[4 * res, 2 * count], model.left())?;
        Ok(Waves {
            gpu: gpu.clone(),
            gpu_frame: Rc::new(GpuFrame::new(gpu, &model)?),
            left: Rc::new(left),
            cpu_pixels: Tensor::uninit(gpu, &[res, res], DType::U32)?,
            model,
            t: 0.0,
            paused: false,
            on_gpu: true,
            stage: None,
            picture: Tensor::uninit(gpu, &[visual::SIZE, visual::SIZE], DType::U32)?,
            readback: Readback::default(),
            rates: None,
        })
    }

    fn rebuild(&mut self, count: usize, res: usize, seed: u64) -> bool {
        match Waves::build(&self.gpu, count, res, seed) {
            Ok(next) => {
                *self = Waves {
                    t: self.t,
                    paused: self.paused,
                    on_gpu: self.on_gpu,
                    stage: self.stage,
                    ..next
                };
                true
            }
            Err(e) => {
                log::error!("waves: cannot switch to {res}×{res}, {count} waves: {e}");
                false
            }
        }
    }

    fn settings_words(m: &Model) -> String {
        format!("{0}×{0}, {1} waves, seed {2}", m.res, m.count(), m.seed)
    }

    /// The frame the demo normally shows, on the current path.
    fn colour_frame(&mut self) -> kiln::Result<Tensor> {
        if self.on_gpu {
            self.gpu_frame.compute(&self.gpu, &self.model, self.t)?;
            Ok(self.gpu_frame.pixels.clone())
        } else {
            let pixels = cpu_frame(&self.model, &self.left, self.t)?;
            self.cpu_pixels.write_u32(&pixels)?;
            Ok(self.cpu_pixels.clone())
        }
    }

    /// A stage's picture: the GPU frame computed, what the stage shows copied back from the
    /// GPU, and drawn.
    fn stage_picture(&mut self, stage: usize) -> kiln::Result<Tensor> {
        let (m, g) = (&self.model, &self.gpu_frame);
        let waiting = || visual::waiting("copying from the GPU...");
        let picture = match stage {
            PARAMETERS => visual::parameters(m, self.t),
            FACTORS => {
                g.compute(&self.gpu, m, self.t)?;
                self.readback
                    .request(stage, vec![g.left.clone(), g.right.clone()], None);
                self.readback
                    .with(stage, |l| match &l.floats[..] {
                        [left, right] => Some(visual::factors(m, left, right)),
                        _ => None,
                    })
                    .flatten()
                    .unwrap_or_else(waiting)
            }
            PRODUCT => {
                g.compute(&self.gpu, m, self.t)?;
                self.readback.request(stage, vec![g.planes.clone()], None);
                self.readback
                    .with(stage, |l| l.floats.first().map(|p| visual::planes(m, p)))
                    .flatten()
                    .unwrap_or_else(waiting)
            }
            _ => {
                g.compute(&self.gpu, m, self.t)?;
                self.readback
                    .request(stage, Vec::new(), Some(g.pixels.clone()));
                let (rates, software) = (self.rates.as_ref(), self.gpu.profile().is_software());
                self.readback
                    .with(stage, |l| visual::rates(m, &l.pixels, rates, software))
                    .unwrap_or_else(waiting)
            }
        };
        // Each text's box and letter height, for the page's tests (waves.test.mjs).
        kiln_app::publish("texts", &picture.texts_json(Some(stage)));
        self.picture.write_u32(&picture.packed())?;
        Ok(self.picture.clone())
    }
}

/// Max per-channel difference between two RGBA8 frames, in 1/255 steps.
fn max_channel_diff(a: &[u32], b: &[u32]) -> u32 {
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            (0..4).map(move |c| ((x >> (8 * c)) & 255).abs_diff((y >> (8 * c)) & 255))
        })
        .max()
        .unwrap_or(u32::MAX)
}

impl Demo for Waves {
    const NAME: &'static str = "waves";
    const TITLE: &'static str = "Kiln · waves";

    /// 1024×1024 on a GPU; 256×256 on a software adapter, where a 1024² frame takes seconds
    /// (`r` raises it).
    fn new(gpu: &Gpu, _options: &Options) -> kiln::Result<Self> {
        let res = if gpu.profile().is_software() {
            256
        } else {
            1024
        };
        Waves::build(gpu, 128, res, 1)
    }

    fn frame(&mut self, dt: f32) -> kiln::Result<Tensor> {
        if !self.paused {
            self.t += dt;
        }
        match self.stage {
            Some(stage) if stage != COLOUR => self.stage_picture(stage),
            _ => self.colour_frame(),
        }
    }

    fn stages(&self) -> Vec<Stage> {
        walkthrough(
            &self.model,
            Target::Device(&self.gpu),
            &self.gpu_frame.choices,
        )
    }

    fn show_stage(&mut self, stage: usize) {
        self.stage = Some(stage.min(RATES));
    }

    /// The frame's size and the wave count, and whether `+`/`-` can change it: the page's
    /// text and buttons follow (a software adapter starts at 256×256, not 1024×1024).
    fn settings(&self) -> serde_json::Value {
        let m = &self.model;
        serde_json::json!({
            "res": m.res,
            "waves": m.count(),
            "seed": m.seed,
            "fewest": m.count() <= WAVES[0],
            "most": m.count() >= WAVES[WAVES.len() - 1],
            "words": Waves::settings_words(m),
        })
    }

    fn kernels(&self) -> Vec<Choice> {
        self.gpu_frame.choices.clone()
    }

    fn key(&mut self, key: &str) -> bool {
        let (count, res, seed) = (self.model.count(), self.model.res, self.model.seed);
        let next = |list: &[usize], x: usize, up: bool| {
            let i = list.iter().position(|&v| v == x).unwrap_or(0);
            if up {
                list[(i + 1) % list.len()]
            } else {
                list[i.saturating_sub(1)]
            }
        };
        match key {
            "space" => {
                self.paused = !self.paused;
                false
            }
            "g" => {
                self.on_gpu = !self.on_gpu;
                false
            }
            "+" | "=" if count < WAVES[WAVES.len() - 1] => {
                self.rebuild(next(&WAVES, count, true), res, seed)
            }
            "-" if count > WAVES[0] => self.rebuild(next(&WAVES, count, false), res, seed),
            "r" => self.rebuild(count, next(&RESOLUTIONS, res, true), seed),
            "s" => self.rebuild(count, res, seed + 1),
            _ => false,
        }
    }

    fn hud(&self) -> Vec<String> {
        let mut lines = vec![
            format!(
                "drawing: {} path{}",
                if self.on_gpu { "GPU" } else { "CPU" },
                if self.paused { " (paused)" } else { "" }
            ),
            Waves::settings_words(&self.model),
        ];
        lines.extend(
            self.gpu_frame
                .variants()
                .iter()
                .map(|v| format!("kernel {v}")),
        );
        lines.push("keys: space pause, g GPU/CPU, +/- waves,".into());
        lines.push("      r resolution, s new seed".into());
        lines
    }

    fn measure(&self) -> impl Future<Output = kiln::Result<Rates>> + 'static {
        let (gpu, frame, model, left) = (
            self.gpu.clone(),
            self.gpu_frame.clone(),
            self.model.clone(),
            self.left.clone(),
        );
        async move {
            // talk:begin measure
            // The frame's 3 launches, 10 times, uncapped
            let g = bench::time_dispatches(&gpu, &frame.launches(), 1, 10).await?;
            // The CPU path (plain loops), 3 times
            let c = bench::time_cpu(0, 3, 1.0, || {
                let _ = cpu_frame(&model, &left, 0.5);
            })?;
            let rates = Rates {
                gpu_fps: 1e3 / g.median_ms,
                cpu_fps: 1e3 / c.median_ms,
                gpu_clock: g.clock,
            };
            // talk:end measure
            Ok(rates)
        }
    }

    /// The rates the HUD shows, measured here or by the other page for these settings: the
    /// last stage draws the same figures.
    fn rates(&mut self, rates: &Rates, source: &RatesSource) {
        self.rates = Some((rates.clone(), source.clone()));
    }

    fn bench(gpu: &Gpu, options: &Options) -> impl Future<Output = kiln::Result<BenchReport>> {
        let (gpu, frames, size) = (gpu.clone(), options.frames, options.size);
        async move {
            let w = Waves::build(&gpu, 128, size.unwrap_or(1024), 1)?;
            // GPU time per frame (timestamps; the GPU warmed up first), then the frame as the
            // window runs it — phases written, three launches recorded, one submission, waited
            // for — by the wall clock, and what it asks of the device.
            let gpu_t = bench::time_dispatches(&gpu, &w.gpu_frame.launches(), 3, frames).await?;
            bench::warm_up_clocks(&gpu, 300.0).await?;
            let frame = async |t: f32| -> kiln::Result<()> {
                w.gpu_frame.compute(&gpu, &w.model, t)?;
                gpu.idle().await
            };
            let mut wall = Vec::with_capacity(frames);
            for i in 0..frames {
                let start = web_time::Instant::now();
                frame(i as f32 / 60.0).await?;
                wall.push(start.elapsed().as_secs_f64() * 1e3);
            }
            let profile = bench::profile_unit(&gpu, async || frame(0.25).await, 10).await?;
            // Where the host's time goes: writing the phases and recording, then submitting.
            let host = bench::host_runs(
                &gpu,
                frames.max(10),
                || w.gpu_frame.compute(&gpu, &w.model, 0.25),
                async |()| gpu.idle().await,
            )
            .await?;
            let mut step = 0;
            let cpu_t = bench::time_cpu(0, frames, 30.0, || {
                step += 1;
                let _ = cpu_frame(&w.model, &w.left, step as f32 / 60.0);
            })?;
            // Both paths compute the frame at t = 1 s; the pixels must agree.
            w.gpu_frame.compute(&gpu, &w.model, 1.0)?;
            let on_gpu = w.gpu_frame.pixels.read_u32().await?;
            let on_cpu = cpu_frame(&w.model, &w.left, 1.0)?;
            let diff = max_channel_diff(&on_gpu, &on_cpu);
            // The fourth plane is the mean wave; the PNG shows RGB, opaque.
            let rgba = on_gpu
                .iter()
                .flat_map(|p| {
                    let [r, g, b, _] = p.to_le_bytes();
                    [r, g, b, 255]
                })
                .collect();
            let res = w.model.res as u32;
            Ok(BenchReport {
                demo: Self::NAME.into(),
                adapter: gpu.profile().name.clone(),
                backend: gpu.profile().backend.clone(),
                settings: Waves::settings_words(&w.model),
                gpu: gpu_t,
                cpu: cpu_t,
                checks: serde_json::json!({
                    "max_channel_diff_gpu_vs_cpu": diff,
                    "max_channel_diff_allowed": 2,
                    "agree": diff <= 2,
                    "kernels": w.gpu_frame.variants(),
                    "cpu_path": "plain single-threaded loops (kiln::cpu)",
                    "wall_ms_per_frame": bench::median(&wall),
                    "per_frame": profile.counts,
                    "host_per_frame": host.cost(),
                    "host_us_per_launch": host.cost().map(|h| h.us_per_launch),
                    "gpu_timestamp_ms_per_frame": profile.gpu_ms,
                }),
                image: Some(Image {
                    width: res,
                    height: res,
                    rgba,
                }),
            })
        }
    }
}
