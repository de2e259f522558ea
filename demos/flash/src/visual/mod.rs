//! The walkthrough's live visuals, computed and drawn on the CPU into an RGBA canvas so that the
//! native window and the page show the same pictures, one file each: (1) `naive`: the naive
//! path's N×N score matrix filling in, with the bytes it costs beside the flash path's;
//! (2) `online`: one query tile walking the key blocks, its rows' running max, running sum and
//! output updating as each block arrives; (3) `backward`: the backward pass recomputing P tile
//! by tile, dK/dV accumulating per key tile and dQ per query tile; (4) `charts`: the measured
//! times and the byte model; (5) `decode`: flash-decoding, one new row against the cached keys,
//! split into chunks whose (max, sum, output) one combine pass merges. The numbers in (1)–(3)
//! and (5) are real: the small random inputs of `problem` run through the online softmax's
//! arithmetic (kiln's CPU flash reference does the same), checked against kiln's standard CPU
//! attention. `pen` draws the design at any size, `colour` holds the palette.
//!
//! This file holds the `Scene` that computes every visual's data once and draws the one asked
//! for.

mod backward;
mod charts;
mod colour;
mod decode;
mod naive;
mod online;
mod pen;
mod problem;

pub use charts::{Measured, Timed, software_caveat};
pub use pen::SIZE;

use backward::Backward;
use decode::Decode;
use naive::Traffic;
use online::Walk;
use pen::Pen;
use problem::Problem;

use crate::chart::Canvas;
use crate::error::Result;
use crate::sweep::Shape;

/// How many stages have a visual.
pub const STAGES: usize = 5;

/// The visuals' data, computed once.
#[derive(Clone, Debug)]
pub struct Scene {
    /// scale · q_i·k_j for every (i, j), row-major; the causal mask hides j > i.
    scores: Vec<f32>,
    /// Visual 1's byte counts.
    traffic: Traffic,
    walk: Walk,
    backward: Backward,
    decode: Decode,
}

impl Scene {
    /// Draws the inputs from a fixed seed and runs forward and backward on them.
    pub fn new(shape: Shape) -> Result<Scene> {
        let problem = Problem::new()?;
        Ok(Scene {
            traffic: Traffic::new(shape)?,
            walk: Walk::new(&problem),
            backward: Backward::new(&problem),
            decode: Decode::new(&problem),
            scores: problem.scores,
        })
    }

    /// Stage `stage`'s visual (0-based; past the last, the last) at `t` seconds into the stage,
    /// on a `w` × `h` canvas.
    pub fn draw(&self, stage: usize, t: f64, (w, h): (usize, usize), m: &Measured<'_>) -> Canvas {
        let mut pen = Pen::new(w, h);
        let t = t.max(0.0);
        match stage {
            0 => self.traffic.draw(&mut pen, t, &self.scores),
            1 => self.walk.draw(&mut pen, t, &self.scores),
            2 => self.backward.draw(&mut pen, t),
            3 => charts::draw(&mut pen, m),
            _ => self.decode.draw(&mut pen, t, &self.scores),
        }
        pen.c
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::decode::CHUNKS;
    use super::problem::TILES;
    use super::*;
    use crate::page::SHAPE;

    #[test]
    fn the_walk_and_the_backward_match_standard_attention() {
        let scene = Scene::new(SHAPE).unwrap();
        // Visual 5's split and combine give the standard output of the new row (1.2e-7
        // measured), and no chunk dominates so completely that the combine shows nothing.
        assert!(
            scene.decode.error < 1.2e-6,
            "decode error {}",
            scene.decode.error
        );
        assert_eq!(scene.decode.parts.len(), CHUNKS);
        assert!(scene.decode.weights.iter().filter(|&&w| w > 0.01).count() >= 2);
        assert_eq!(scene.walk.states.len(), TILES + 1);
        assert!(
            scene.walk.error < 1e-5,
            "online vs standard {}",
            scene.walk.error
        );
        // The max grew at least once after the first block in some shown row: the rescale the
        // visual explains happens on these inputs.
        let rescaled = (2..=TILES).any(|b| scene.walk.states[b].iter().any(|r| r.alpha < 1.0));
        assert!(rescaled, "no block raised a row's max");
        for e in scene.backward.error {
            assert!(e < 1e-5, "gradient error {e}");
        }
        // Pass 1 then pass 2, each over the causal tiles.
        let causal = TILES * (TILES + 1) / 2;
        assert_eq!(scene.backward.steps.len(), 2 * causal);
        assert!(scene.backward.steps[..causal].iter().all(|s| s.pass == 1));
        assert!(scene.backward.steps[causal..].iter().all(|s| s.pass == 2));
    }

    /// In presenter mode at 1920×1080 the visual's canvas is 813×1032 pixels, at 1280×720
    /// 532×672: every text of every stage, at any moment of its animation and with a long
    /// progress line or note, is at least 18 (12) pixels tall and inside the picture, and no two
    /// overlap.
    #[test]
    fn every_text_is_readable_and_inside() {
        let scene = Scene::new(SHAPE).unwrap();
        let points = [Timed {
            seq: 4096,
            flash_ms: Some(1234.5),
            naive_ms: Some(23456.7),
            cpu_ms: None,
        }];
        let note = "GPU path on a software adapter: 6 lengths, 3 runs each, the median \
                    of each; the CPU column stops at N = 512";
        let full = Measured {
            shape: SHAPE,
            lengths: &[128, 256, 512, 1024, 2048, 4096],
            pending: None,
            points: &points,
            note,
        };
        let pending = Measured {
            points: &[],
            pending: Some("measuring N = 1024 (4 of 6): 128 s"),
            ..full
        };
        for ((w, h), least) in [((813, 1032), 18.0), ((532, 672), 12.0)] {
            for stage in 0..STAGES {
                for t in [0.5, 2.0, 4.0, 7.0, 11.0, 30.0] {
                    for m in [&full, &pending] {
                        let c = scene.draw(stage, t, (w, h), m);
                        assert!(c.texts.len() >= 5, "stage {stage}: {} texts", c.texts.len());
                        for (n, &[x, y, tw, th, letter]) in c.texts.iter().enumerate() {
                            assert!(letter >= least, "stage {stage} t {t}: {letter} px");
                            assert!(
                                x + tw <= w as f64 && y + th <= h as f64,
                                "stage {stage} t {t}: text {n} at {x},{y} {tw}×{th} outside"
                            );
                            for &[x2, y2, w2, h2, _] in &c.texts[n + 1..] {
                                let apart =
                                    x + tw <= x2 || x2 + w2 <= x || y + th <= y2 || y2 + h2 <= y;
                                assert!(
                                    apart,
                                    "stage {stage} t {t}: texts overlap at {x},{y} and {x2},{y2}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_stage_draws_and_moves() {
        let scene = Scene::new(SHAPE).unwrap();
        let points = [Timed {
            seq: 64,
            flash_ms: Some(1.0),
            naive_ms: Some(2.0),
            cpu_ms: Some(30.0),
        }];
        let m = Measured {
            shape: SHAPE,
            lengths: &[64, 128],
            pending: None,
            points: &points,
            note: "test",
        };
        let spread = |c: &Canvas| {
            let first = c.pixels[0];
            c.pixels.iter().filter(|&&p| p != first).count()
        };
        let mut last: Option<Vec<u32>> = None;
        for stage in 0..STAGES {
            let a = scene.draw(stage, 1.0, SIZE, &m);
            assert!(
                spread(&a) > 5_000,
                "stage {stage}: {} drawn pixels",
                spread(&a)
            );
            if let Some(prev) = &last {
                assert_ne!(prev, &a.pixels, "stage {stage} looks like the one before");
            }
            // Every stage but the charts is animated.
            if stage != 3 {
                let b = scene.draw(stage, 4.0, SIZE, &m);
                let moved = a
                    .pixels
                    .iter()
                    .zip(&b.pixels)
                    .filter(|(x, y)| x != y)
                    .count();
                assert!(moved > 500, "stage {stage} did not move: {moved} pixels");
            }
            last = Some(a.pixels);
        }
        // Any size draws (scaled), a tiny one too.
        for size in [(1280, 1440), (200, 120), (1, 1)] {
            let c = scene.draw(1, 2.0, size, &m);
            assert_eq!(c.pixels.len(), size.0 * size.1);
        }
    }
}
