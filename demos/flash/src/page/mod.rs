//! The speed page in a native window (kiln-app's harness): the kernel-level sweep (flash, naive
//! GPU, CPU path over sequence lengths, time and bytes moved) and the end-to-end training
//! comparison, run a step per frame so the progress shows, then generation from the trained
//! model on both paths (`writing`). The harness's HUD sits over the top left, so the left column
//! starts below it. Keys: `t` trains again, `1`–`5` pick the preset, `s` sweeps again, `g`
//! types a prompt after training. In presenter mode (`--talk`) the frame is the
//! walkthrough stage's live visual instead, and only the sweep runs (stage 4 shows it).
//!
//! This file wires the page into the app (`Demo`); what it holds is in `state.rs`, its
//! background work in `work.rs`, drawing in `draw.rs`.

mod draw;
mod state;
mod work;

pub use state::{FlashPage, SHAPE, page_shape, sweep_lengths};

use std::future::Future;
use std::rc::Rc;

use kiln_app::kiln::{self, Choice, DType, Gpu, Tensor, bench};
use kiln_app::talk::Stage;
use kiln_app::{BenchReport, Demo, Options, Rates};

use crate::backend::CpuBackend;
use crate::preset::Preset;
use crate::run::Setup;
use crate::sweep::{self, FlashChoices};
use crate::train::PathRun;
use crate::visual::{self, Scene};
use crate::writing::Writing;
use state::{HEIGHT, Phase, Talk, WIDTH, talk_lengths};

impl Demo for FlashPage {
    const NAME: &'static str = "flash";
    const TITLE: &'static str = "Kiln · flash attention";
    const WINDOW: (u32, u32) = (1600, 900);

    fn new(gpu: &Gpu, options: &Options) -> kiln::Result<Self> {
        let preset = Preset::parse(options.preset.as_deref().unwrap_or("small"))?;
        let setup = Setup::new(preset, None, None)?;
        let longest = sweep_lengths(gpu).last().copied().unwrap_or(256);
        let choices = FlashChoices::for_shape(gpu, SHAPE, longest)
            .inspect_err(|e| log::warn!("planning the flash kernels for the kernel view: {e}"))
            .ok();
        let talk = if options.talk {
            let (w, h) = visual::SIZE;
            Some(Talk {
                scene: Scene::new(SHAPE)?,
                stage: options.stage.unwrap_or(1).saturating_sub(1),
                clock: 0.0,
                pixels: Tensor::uninit(gpu, &[h, w], DType::U32)?,
            })
        } else {
            None
        };
        let mut page = FlashPage {
            gpu: gpu.clone(),
            preset,
            setup: Rc::new(setup),
            lengths: if talk.is_some() {
                talk_lengths(gpu)
            } else {
                sweep_lengths(gpu)
            },
            points: Vec::new(),
            variants: Vec::new(),
            phase: Phase::Idle,
            slot: Rc::default(),
            busy: false,
            error: None,
            pixels: Tensor::uninit(gpu, &[HEIGHT, WIDTH], DType::U32)?,
            talk,
            choices,
            trained: None,
            writing: Writing::default(),
        };
        if page.talk.is_none() {
            page.start_training()?;
        }
        Ok(page)
    }

    fn frame(&mut self, dt: f32) -> kiln::Result<Tensor> {
        self.collect();
        self.advance();
        self.collect();
        if let Some(talk) = &self.talk {
            let canvas = self.draw_stage(talk);
            talk.pixels.write_u32(canvas.rgba_u32())?;
            let pixels = talk.pixels.clone();
            if let Some(talk) = &mut self.talk {
                talk.clock += f64::from(dt);
            }
            return Ok(pixels);
        }
        self.pixels.write_u32(self.draw().rgba_u32())?;
        Ok(self.pixels.clone())
    }

    fn stages(&self) -> Vec<Stage> {
        crate::walkthrough::stages(self.choices.as_ref().map(|c| (&self.gpu, c)))
    }

    fn show_stage(&mut self, stage: usize) {
        if let Some(talk) = &mut self.talk {
            talk.stage = stage;
            // Each stage's animation starts from its beginning.
            talk.clock = 0.0;
        }
    }

    fn kernels(&self) -> Vec<Choice> {
        self.choices
            .as_ref()
            .map(FlashChoices::all)
            .unwrap_or_default()
    }

    fn key(&mut self, key: &str) -> bool {
        let trained = self.trained.is_some() && matches!(self.phase, Phase::Done(_));
        if self.writing.key(key, trained, &self.setup.corpus) {
            // Typing changes no setting: the rates need no new measurement.
            return false;
        }
        let result = match key {
            "t" if !self.busy => self.start_training(),
            "s" if !self.busy => {
                self.points.clear();
                self.lengths = sweep_lengths(&self.gpu);
                Ok(())
            }
            "1" | "2" | "3" | "4" | "5" if !self.busy => {
                let i = key.parse::<usize>().unwrap_or(1) - 1;
                self.set_preset(Preset::ALL[i.min(Preset::ALL.len() - 1)])
            }
            _ => return false,
        };
        if let Err(e) = result {
            self.error = Some(e.to_string());
        }
        true
    }

    fn hud(&self) -> Vec<String> {
        vec![
            format!("preset {}", self.preset.name()),
            "uncapped rates: a frame = causal attention".into(),
            "  fwd+bwd, B1 H8 T256 d64".into(),
        ]
    }

    fn measure(&self) -> impl Future<Output = kiln::Result<Rates>> + 'static {
        let gpu = self.gpu.clone();
        async move {
            let s = sweep::run(&gpu, SHAPE, &[256], 5, 60_000.0).await?;
            let p = s
                .points
                .first()
                .ok_or_else(|| kiln::Error::InvalidArgument {
                    op: "flash",
                    detail: "the sweep measured nothing".into(),
                })?;
            Ok(Rates {
                gpu_fps: 1e3 / p.flash_ms,
                cpu_fps: p.cpu_ms.map_or(f64::NAN, |c| 1e3 / c),
                gpu_clock: p.gpu_clock,
            })
        }
    }

    /// `--bench` through the shared harness: `frames` training steps of the page's preset on
    /// each path (the `flash` binary's own `--bench` prints the full comparison).
    fn bench(gpu: &Gpu, options: &Options) -> impl Future<Output = kiln::Result<BenchReport>> {
        let (gpu, options) = (gpu.clone(), options.clone());
        async move {
            let preset = Preset::parse(options.preset.as_deref().unwrap_or("small"))?;
            let setup = Setup::new(preset, None, None)?;
            let r = crate::run::compare(
                &gpu,
                &setup,
                options.frames,
                CpuBackend::all_cores(),
                None,
                false,
            )
            .await?;
            let timing = |run: &PathRun| {
                bench::Timing::from_samples(bench::Clock::WallClock, 0, run.step_ms.clone())
            };
            Ok(BenchReport {
                demo: "flash".into(),
                adapter: gpu.profile().name.clone(),
                backend: gpu.profile().backend.clone(),
                settings: format!("preset {}, {} steps", preset.name(), r.steps),
                gpu: timing(&r.gpu)?,
                cpu: timing(&r.cpu)?,
                checks: serde_json::json!({"drift": r.drift, "speedup": r.speedup}),
                image: None,
            })
        }
    }
}
