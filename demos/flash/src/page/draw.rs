//! Drawing the page: the sweep's times and bytes on the left, the training's loss curves,
//! progress, step times and generation on the right; in presenter mode the walkthrough stage's
//! visual instead.

use super::state::{FlashPage, HEIGHT, PAGE_STEPS, Phase, SHAPE, Talk, WIDTH};
use crate::chart::{self, Canvas, Series};
use crate::sweep::Point;
use crate::train::{Comparison, PathRun};
use crate::visual::{self, Measured, Timed};

impl FlashPage {
    /// The walkthrough stage's visual, at the presenter window's size.
    pub(super) fn draw_stage(&self, talk: &Talk) -> Canvas {
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

    pub(super) fn draw(&self) -> Canvas {
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
