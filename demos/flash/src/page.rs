//! The speed page in a native window (kiln-app's harness): the kernel-level sweep (flash, naive
//! GPU, CPU path over sequence lengths, time and bytes moved) and the end-to-end training
//! comparison, run a step per frame so the progress shows, then generation from the trained
//! model on both paths (`writing`). The harness's HUD sits over the top left, so the left column
//! starts below it. Keys: `t` trains again, `1`–`5` pick the preset, `s` sweeps again, `g`
//! types a prompt after training. In presenter mode (`--talk`) the frame is the
//! walkthrough stage's live visual instead, and only the sweep runs (stage 4 shows it).

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use kiln_app::kiln::{self, Choice, DType, Gpu, Tensor, bench};
use kiln_app::talk::Stage;
use kiln_app::{BenchReport, Demo, Options, Rates};

use crate::backend::{CpuBackend, GpuBackend};
use crate::chart::{self, Canvas, Series};
use crate::error::Result;
use crate::preset::Preset;
use crate::run::Setup;
use crate::sweep::{self, FlashChoices, Point, Shape};
use crate::train::{Comparison, PathRun, Trainer};
use crate::visual::{self, Measured, Scene, Timed};
use crate::writing::{self, Run, Trained, Writing};

const WIDTH: usize = 1600;
const HEIGHT: usize = 900;
/// Training steps per path on the page.
const PAGE_STEPS: usize = 30;
/// The shape the page and `flash --bench` sweep.
pub const SHAPE: Shape = Shape {
    batch: 1,
    heads: 8,
    head_dim: 64,
};

/// The sequence lengths swept: shorter on a software adapter.
pub fn sweep_lengths(gpu: &Gpu) -> Vec<usize> {
    if gpu.profile().is_software() {
        vec![64, 128, 256]
    } else {
        vec![128, 256, 512, 1024, 2048]
    }
}

/// The lengths presenter mode sweeps: on a software adapter only the two shortest, as every
/// point holds the window's frames while it runs.
fn talk_lengths(gpu: &Gpu) -> Vec<usize> {
    let mut lengths = sweep_lengths(gpu);
    if gpu.profile().is_software() {
        lengths.truncate(2);
    }
    lengths
}

enum Phase {
    Idle,
    Gpu(Trainer<GpuBackend>),
    /// The CPU path training, the GPU path's trainer kept for generation.
    Cpu(Trainer<CpuBackend>, Trainer<GpuBackend>),
    Done(Comparison),
}

/// What a finished background job hands back.
enum Returned {
    Point(Result<sweep::Sweep>),
    Gpu(Trainer<GpuBackend>, Result<f64>),
    Cpu(Trainer<CpuBackend>, Trainer<GpuBackend>, Result<f64>),
    Wrote(Box<Trained>, Result<Run>),
}

pub struct FlashPage {
    gpu: Gpu,
    preset: Preset,
    setup: Rc<Setup>,
    lengths: Vec<usize>,
    points: Vec<Point>,
    variants: Vec<String>,
    phase: Phase,
    slot: Rc<RefCell<Option<Returned>>>,
    busy: bool,
    error: Option<String>,
    pixels: Tensor,
    /// Presenter mode: the walkthrough's visuals instead of the page, and no training.
    talk: Option<Talk>,
    /// The flash path's variants at the sweep's longest length (the kernel-source view).
    choices: Option<FlashChoices>,
    /// The last training run's model (out while a piece of generation runs), and generation.
    trained: Option<Box<Trained>>,
    writing: Writing,
}

/// Presenter mode's state.
struct Talk {
    scene: Scene,
    /// The stage shown (0-based) and the seconds since it was.
    stage: usize,
    clock: f64,
    pixels: Tensor,
}

impl std::fmt::Debug for FlashPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlashPage")
            .field("preset", &self.preset)
            .finish()
    }
}

impl FlashPage {
    fn start_training(&mut self) -> Result<()> {
        let s = &self.setup;
        let t = Trainer::new(
            GpuBackend {
                gpu: self.gpu.clone(),
            },
            s.config,
            s.hyper,
            &s.start,
        )?;
        self.phase = Phase::Gpu(t);
        // A new run: the last one's model and its generation go.
        self.trained = None;
        self.writing = Writing::default();
        Ok(())
    }

    fn set_preset(&mut self, preset: Preset) -> Result<()> {
        self.preset = preset;
        self.setup = Rc::new(Setup::new(preset, None, None)?);
        self.start_training()
    }

    /// Starts the next piece of work in the background (at once natively).
    fn advance(&mut self) {
        if self.busy {
            return;
        }
        let sweeping = self.points.len() < self.lengths.len();
        if self.talk.is_some() && !sweeping {
            return; // the walkthrough shows the sweep, not the training
        }
        let slot = self.slot.clone();
        let setup = self.setup.clone();
        if sweeping {
            let (gpu, n) = (self.gpu.clone(), self.lengths[self.points.len()]);
            self.busy = true;
            kiln_app::spawn(async move {
                let r = sweep::run(&gpu, SHAPE, &[n], 3, 20_000.0).await;
                *slot.borrow_mut() = Some(Returned::Point(r));
            });
            return;
        }
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Gpu(mut t) if t.run.losses.len() < PAGE_STEPS => {
                self.busy = true;
                kiln_app::spawn(async move {
                    let r = t.step(&setup.corpus).await;
                    *slot.borrow_mut() = Some(Returned::Gpu(t, r));
                });
            }
            Phase::Gpu(t) => {
                let cpu = CpuBackend::all_cores();
                match Trainer::new(cpu, setup.config, setup.hyper, &setup.start) {
                    Ok(c) => self.phase = Phase::Cpu(c, t),
                    Err(e) => self.error = Some(e.to_string()),
                }
            }
            Phase::Cpu(mut t, gpu) if t.run.losses.len() < PAGE_STEPS => {
                self.busy = true;
                kiln_app::spawn(async move {
                    let r = t.step(&setup.corpus).await;
                    *slot.borrow_mut() = Some(Returned::Cpu(t, gpu, r));
                });
            }
            Phase::Cpu(t, gpu) => {
                self.phase = Phase::Done(Comparison::new(
                    self.preset.name(),
                    setup.config,
                    &setup.corpus.source,
                    0,
                    gpu.run.clone(),
                    t.run.clone(),
                ));
                self.trained = Some(Box::new(Trained { gpu, cpu: t }));
                self.writing = Writing::default();
            }
            other => self.phase = other,
        }
        if self.busy {
            return;
        }
        // Generation: a piece of work per frame, the model handed to it and back.
        if let Some(trained) = self.trained.take() {
            match self.writing.job() {
                Some((run, ids)) => {
                    self.busy = true;
                    let slot = self.slot.clone();
                    kiln_app::spawn(async move {
                        let r = writing::step(&trained, run, &ids).await;
                        *slot.borrow_mut() = Some(Returned::Wrote(trained, r));
                    });
                }
                None => self.trained = Some(trained),
            }
        }
    }

    fn collect(&mut self) -> bool {
        let Some(r) = self.slot.borrow_mut().take() else {
            return false;
        };
        self.busy = false;
        let fail = |e: crate::Error, error: &mut Option<String>| *error = Some(e.to_string());
        match r {
            Returned::Point(Ok(s)) => {
                self.points.extend(s.points);
                self.variants = s.flash_variants;
            }
            Returned::Point(Err(e)) => {
                fail(e, &mut self.error);
                // Stop sweeping; the training still runs.
                self.lengths.truncate(self.points.len());
            }
            Returned::Gpu(t, r) => match r {
                Ok(_) => self.phase = Phase::Gpu(t),
                Err(e) => fail(e, &mut self.error),
            },
            Returned::Cpu(t, g, r) => match r {
                Ok(_) => self.phase = Phase::Cpu(t, g),
                Err(e) => fail(e, &mut self.error),
            },
            Returned::Wrote(t, r) => {
                self.trained = Some(t);
                self.writing.finish(r);
            }
        }
        true
    }

    /// The walkthrough stage's visual, at the presenter window's size.
    fn draw_stage(&self, talk: &Talk) -> Canvas {
        let timed: Vec<Timed> = self.points.iter().map(Timed::from).collect();
        let status = match self.lengths.get(self.points.len()) {
            Some(n) => format!("measuring N = {n}..."),
            None => "measured".to_string(),
        };
        let clock = self.points.first().map_or(String::new(), |p| {
            format!(", GPU times from {}", p.gpu_clock)
        });
        let note = format!(
            "{}{} on {}{clock}; CPU path: kiln's standard attention, one thread",
            visual::software_caveat(self.gpu.profile()),
            status,
            self.gpu.profile().name
        );
        talk.scene.draw(
            talk.stage,
            talk.clock,
            visual::SIZE,
            &Measured {
                shape: SHAPE,
                lengths: &self.lengths,
                points: &timed,
                note: &self.error.clone().unwrap_or(note),
                pending: None,
            },
        )
    }

    fn draw(&self) -> Canvas {
        let mut c = Canvas::new(WIDTH, HEIGHT);
        let half = WIDTH / 2;
        let series = |label, colour, f: &dyn Fn(&Point) -> Option<f64>| Series {
            label,
            colour,
            points: self
                .points
                .iter()
                .filter_map(|p| f(p).map(|v| (p.seq as f64, v)))
                .collect(),
        };
        c.lines(
            (20, 210, half - 40, 330),
            &format!(
                "Attention fwd+bwd, causal, B{} H{} d{}",
                SHAPE.batch, SHAPE.heads, SHAPE.head_dim
            ),
            "sequence length T",
            "ms",
            &[
                series("flash (GPU)", chart::GPU, &|p| Some(p.flash_ms)),
                series("naive (GPU)", chart::NAIVE, &|p| Some(p.naive_ms)),
                series("CPU path", chart::CPU, &|p| p.cpu_ms),
            ],
            true,
        );
        c.lines(
            (20, 560, half - 40, 230),
            "Global memory moved (byte model)",
            "sequence length T",
            "MB",
            &[
                series("flash", chart::GPU, &|p| Some(p.flash_mb)),
                series("naive", chart::NAIVE, &|p| Some(p.naive_mb)),
            ],
            true,
        );
        c.text(20, 796, "variants chosen for this device:", chart::TEXT, 1);
        for (i, v) in self.variants.iter().take(4).enumerate() {
            // "family variant — why": the why shortened to its source (rule or tuned table).
            let (name, why) = v.split_once(" — ").unwrap_or((v, ""));
            let why = why.split(':').next().unwrap_or("");
            c.text(20, 810 + i * 12, &format!("{name}  [{why}]"), chart::DIM, 1);
        }
        if self.points.len() < self.lengths.len() {
            c.text(
                20,
                840,
                &format!("sweeping T = {}…", self.lengths[self.points.len()]),
                chart::TEXT,
                2,
            );
        }

        let cfg = &self.setup.config;
        let (gpu_run, cpu_run, done): (Option<&PathRun>, Option<&PathRun>, Option<&Comparison>) =
            match &self.phase {
                Phase::Idle => (None, None, None),
                Phase::Gpu(t) => (Some(&t.run), None, None),
                Phase::Cpu(t, g) => (Some(&g.run), Some(&t.run), None),
                Phase::Done(r) => (Some(&r.gpu), Some(&r.cpu), Some(r)),
            };
        let curve = |run: Option<&PathRun>| {
            run.map(|r| {
                r.losses
                    .iter()
                    .enumerate()
                    .map(|(i, &l)| (i as f64 + 1.0, l))
                    .collect()
            })
            .unwrap_or_default()
        };
        c.lines(
            (half + 20, 20, half - 40, 400),
            &format!(
                "Training: {}, {} parameters",
                self.preset.name(),
                cfg.parameters()
            ),
            "step",
            "loss",
            &[
                Series {
                    label: "GPU (kiln kernels)",
                    colour: chart::GPU,
                    points: curve(gpu_run),
                },
                Series {
                    label: "CPU path",
                    colour: chart::CPU,
                    points: curve(cpu_run),
                },
            ],
            false,
        );
        c.text(
            half + 20,
            38,
            &format!(
                "d_model {}, {} heads, {} layers, T {}, B {}; the curves overlap where the paths agree",
                cfg.d_model, cfg.heads, cfg.layers, cfg.seq, cfg.batch
            ),
            chart::DIM,
            1,
        );
        let done_steps =
            gpu_run.map_or(0, |r| r.losses.len()) + cpu_run.map_or(0, |r| r.losses.len());
        let (bx, by) = (half + 20, 440);
        c.text(
            bx,
            by,
            &format!("progress {done_steps}/{}", 2 * PAGE_STEPS),
            chart::TEXT,
            2,
        );
        c.rect(bx, by + 24, half - 60, 14, [40, 44, 56]);
        c.rect(
            bx,
            by + 24,
            (half - 60) * done_steps / (2 * PAGE_STEPS),
            14,
            chart::GPU,
        );
        let mut bars = Vec::new();
        if let Some(g) = gpu_run.filter(|r| !r.step_ms.is_empty()) {
            bars.push(("GPU".to_string(), g.median_ms(), chart::GPU));
        }
        if let Some(cr) = cpu_run.filter(|r| !r.step_ms.is_empty()) {
            bars.push((
                // The path's own name ("CPU (16 threads)"): no system query per frame.
                cr.path.clone(),
                cr.median_ms(),
                chart::CPU,
            ));
        }
        c.bars(
            (bx, by + 60, half - 40, 120),
            "ms per step (median)",
            &bars,
            "ms",
        );
        let t = crate::train::Traffic::of(cfg);
        c.text(
            bx,
            by + 200,
            &format!(
                "attention traffic per layer per step (byte model): flash {:.1} MB, naive {:.1} MB",
                t.flash_mb, t.naive_mb
            ),
            chart::DIM,
            1,
        );
        if done.is_some() {
            self.writing
                .draw(&mut c, (bx, by + 225, half - 40), &self.setup.corpus);
        }
        if let Some(r) = done {
            c.text(
                bx,
                by + 160,
                &format!(
                    "speed-up {:.1}x   loss drift {:.3} %",
                    r.speedup,
                    100.0 * r.drift
                ),
                chart::TEXT,
                2,
            );
        }
        c.text(
            bx,
            840,
            "keys: t train, 1-5 preset, s sweep, g prompt",
            chart::DIM,
            2,
        );
        if let Some(e) = &self.error {
            c.text(20, 870, &format!("error: {e}"), [250, 110, 110], 1);
        }
        c
    }
}

impl Demo for FlashPage {
    const NAME: &'static str = "flash";
    const TITLE: &'static str = "Kiln · flash attention";
    const WINDOW: (u32, u32) = (1600, 900);

    fn new(gpu: &Gpu, options: &Options) -> kiln::Result<Self> {
        let preset = Preset::parse(options.preset.as_deref().unwrap_or("small"))?;
        let setup = Setup::new(preset, None, None)?;
        let longest = sweep_lengths(gpu).last().copied().unwrap_or(256);
        let choices = FlashChoices::plan(gpu, SHAPE, longest)
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
