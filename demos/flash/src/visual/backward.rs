//! Visual 3: the backward pass recomputing P tile by tile from the saved LSE, dK and dV
//! accumulating per key tile (pass 1) and dQ per query tile (pass 2), checked against kiln's
//! standard CPU backward.

use kiln_app::kiln::cpu::rel_l2;

use super::colour::{FUTURE, MASKED, WARM, prob_colour};
use super::pen::{LINE, Pen, SMALL};
use super::problem::{BLOCK, D, N, Problem, TILES, dot, row, visible};
use crate::chart;

/// The backward pass after one tile: which tile, in which pass, and the size (Frobenius norm)
/// of every tile's gradient accumulated so far.
#[derive(Clone, Debug)]
pub(super) struct BackStep {
    /// 1: dK and dV, each key tile walking the query tiles; 2: dQ, each query tile walking the
    /// key tiles.
    pub pass: u8,
    q_tile: usize,
    k_tile: usize,
    dq: [f32; TILES],
    dk: [f32; TILES],
    dv: [f32; TILES],
}

/// The backward's numbers: P, every step, and the check.
#[derive(Clone, Debug)]
pub(super) struct Backward {
    /// P recomputed from the saved LSE (0 where masked).
    probs: Vec<f32>,
    pub steps: Vec<BackStep>,
    /// Relative L2 errors of dQ, dK, dV against the standard backward.
    pub error: [f64; 3],
    /// The largest tile norm of each gradient, to scale the bars.
    max: [f32; 3],
}

impl Backward {
    /// The backward from the flash forward's O and LSE, tile by tile.
    pub fn new(problem: &Problem) -> Backward {
        let Problem {
            q,
            k,
            v,
            d_o,
            scale,
            scores,
            ..
        } = problem;
        let scale = *scale;
        let lse = &problem.flash.lse;
        let out = &problem.flash.out.data;
        let delta: Vec<f32> = (0..N).map(|i| dot(row(d_o, i), row(out, i))).collect();
        // Not kiln's flash_backward: it gives only the final gradients, the visual each step.
        // talk:begin recompute
        // Entry (i, j) of P, recomputed from Q, K and the saved LSE, and of dS = P * (dP - D).
        let p_ds = |i: usize, j: usize| -> (f32, f32) {
            if !visible(i, j) {
                return (0.0, 0.0);
            }
            let p = (scores[i * N + j] - lse[i]).exp();
            let dp = dot(row(d_o, i), row(v, j));
            (p, p * (dp - delta[i]))
        };
        let (mut dq, mut dk, mut dv) = (vec![0.0f32; N * D], vec![0.0f32; N * D], vec![0.0; N * D]);
        let mut steps = Vec::new();
        // Pass 1: each key tile walks the query tiles that see it; dK and dV are its own.
        for kt in 0..TILES {
            for qt in kt..TILES {
                for j in kt * BLOCK..(kt + 1) * BLOCK {
                    for i in qt * BLOCK..(qt + 1) * BLOCK {
                        let (p, ds) = p_ds(i, j);
                        for c in 0..D {
                            dv[j * D + c] += p * d_o[i * D + c];
                            dk[j * D + c] += scale * ds * q[i * D + c];
                        }
                    }
                }
                steps.push((1, qt, kt, tiles(&dq), tiles(&dk), tiles(&dv)));
            }
        }
        // Pass 2: each query tile walks the key tiles it sees; dQ is its own.
        for qt in 0..TILES {
            for kt in 0..=qt {
                for i in qt * BLOCK..(qt + 1) * BLOCK {
                    for j in kt * BLOCK..(kt + 1) * BLOCK {
                        let (_, ds) = p_ds(i, j);
                        for c in 0..D {
                            dq[i * D + c] += scale * ds * k[j * D + c];
                        }
                    }
                }
                steps.push((2, qt, kt, tiles(&dq), tiles(&dk), tiles(&dv)));
            }
        }
        // talk:end recompute
        let probs: Vec<f32> = (0..N * N).map(|ij| p_ds(ij / N, ij % N).0).collect();
        let steps: Vec<BackStep> = steps
            .into_iter()
            .map(|(pass, q_tile, k_tile, dq, dk, dv)| BackStep {
                pass,
                q_tile,
                k_tile,
                dq,
                dk,
                dv,
            })
            .collect();
        let grads = &problem.grads;
        let error = [
            rel_l2(&dq, &grads.dq.data),
            rel_l2(&dk, &grads.dk.data),
            rel_l2(&dv, &grads.dv.data),
        ];
        let max = |x: &[f32]| tiles(x).into_iter().fold(1e-6f32, f32::max);
        Backward {
            probs,
            steps,
            error,
            max: [max(&dq), max(&dk), max(&dv)],
        }
    }

    /// P's tiles lighting up in each pass's order and the gradients' bars growing, at `t`
    /// seconds.
    pub fn draw(&self, pen: &mut Pen, t: f64) {
        let Some(last) = self.steps.len().checked_sub(1) else {
            return;
        };
        // A tile every 0.3 s, then 3 s on the result, again.
        let step = 0.3;
        let tc = t % (self.steps.len() as f64 * step + 3.0);
        let cur = ((tc / step) as usize).min(last);
        let done = tc >= self.steps.len() as f64 * step;
        let now = &self.steps[cur];
        pen.text(20.0, 14.0, "Backward: recompute P", chart::TEXT, 2.0);
        let top = pen.para(
            20.0,
            40.0,
            "P = exp(S - LSE) from Q, K and the saved LSE, tile by tile",
            chart::DIM,
        );
        let (x0, y0, cell, gap) = (40.0, top + 6.0, 7.0, 2.0);
        let tile_px = BLOCK as f64 * cell + gap;
        let lit: Vec<(usize, usize)> = self.steps[..=cur]
            .iter()
            .filter(|s| s.pass == now.pass)
            .map(|s| (s.q_tile, s.k_tile))
            .collect();
        for i in 0..N {
            for j in 0..N {
                let (qt, kt) = (i / BLOCK, j / BLOCK);
                let colour = if j > i {
                    MASKED
                } else if lit.contains(&(qt, kt)) {
                    prob_colour(self.probs[i * N + j])
                } else {
                    FUTURE
                };
                pen.rect(
                    x0 + j as f64 * cell + kt as f64 * gap,
                    y0 + i as f64 * cell + qt as f64 * gap,
                    cell - 1.0,
                    cell - 1.0,
                    colour,
                );
            }
        }
        if !done {
            pen.outline(
                x0 + now.k_tile as f64 * tile_px - 2.0,
                y0 + now.q_tile as f64 * tile_px - 2.0,
                tile_px + 2.0,
                tile_px + 2.0,
            );
        }
        let grid = TILES as f64 * tile_px;
        // dQ per query tile, to the right; dK and dV per key tile, below.
        for qt in 0..TILES {
            let len = 140.0 * f64::from(now.dq[qt] / self.max[0]);
            let y = y0 + qt as f64 * tile_px + 14.0;
            pen.rect(396.0, y, 140.0, 28.0, FUTURE);
            pen.rect(396.0, y, len.max(1.0), 28.0, chart::GPU);
        }
        let by = y0 + grid + 8.0;
        pen.text(396.0, by, "dQ per", chart::GPU, SMALL);
        pen.text(396.0, by + LINE, "query tile", chart::GPU, SMALL);
        for kt in 0..TILES {
            let x = x0 + kt as f64 * tile_px + 6.0;
            for (n, (v, max, colour)) in [
                (now.dk[kt], self.max[1], chart::NAIVE),
                (now.dv[kt], self.max[2], chart::CPU),
            ]
            .into_iter()
            .enumerate()
            {
                let xx = x + n as f64 * 24.0;
                pen.rect(xx, by, 20.0, 56.0, FUTURE);
                pen.rect(xx, by, 20.0, (56.0 * f64::from(v / max)).max(1.0), colour);
            }
        }
        pen.text(x0, by + 62.0, "dK", chart::NAIVE, SMALL);
        pen.text(x0 + 36.0, by + 62.0, "dV", chart::CPU, SMALL);
        pen.text(x0 + 72.0, by + 62.0, "per key tile", chart::DIM, SMALL);
        let y = by + 86.0;
        let (title, what, sum) = if now.pass == 1 {
            (
                "pass 1: dK and dV".to_string(),
                format!(
                    "key tile {} walks query tiles {}-{}:",
                    now.k_tile + 1,
                    now.k_tile + 1,
                    TILES
                ),
                "dV += P^T·dO,  dK += scale·dS^T·Q",
            )
        } else {
            (
                "pass 2: dQ".to_string(),
                format!(
                    "query tile {} walks key tiles 1-{}:",
                    now.q_tile + 1,
                    now.q_tile + 1
                ),
                "dQ += scale·dS·K,  dS = P * (dP - D)",
            )
        };
        pen.text(20.0, y, &title, WARM, 2.0);
        let y = pen.para(20.0, y + 24.0, &what, chart::TEXT);
        let y = pen.para(20.0, y, sum, chart::TEXT);
        let y = pen.para(
            20.0,
            y + 4.0,
            "each gradient has one writer: no atomics, and the same sums on every run",
            chart::DIM,
        );
        if done {
            let [q, k, v] = self.error;
            let y = pen.para(
                20.0,
                y + 6.0,
                "checked against the standard backward:",
                WARM,
            );
            pen.para(
                20.0,
                y,
                &format!("relative error dQ {q:.0e}, dK {k:.0e}, dV {v:.0e}"),
                chart::TEXT,
            );
        }
    }
}

/// The norms of the TILES row tiles of an N×D gradient.
fn tiles(x: &[f32]) -> [f32; TILES] {
    std::array::from_fn(|t| tile_norm(x, t))
}

/// Frobenius norm of the rows of `tile` (no kiln reference measures a block of rows).
fn tile_norm(x: &[f32], tile: usize) -> f32 {
    x[tile * BLOCK * D..][..BLOCK * D]
        .iter()
        .map(|v| v * v)
        .sum::<f32>()
        .sqrt()
}
