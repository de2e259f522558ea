//! Visual 1: the naive path's N×N score matrix filling in, with the bytes one N×N pass costs
//! beside the whole flash forward's, from kiln's byte model.

use kiln_app::kiln::DType;
use kiln_app::kiln::ops::attention::traffic;
use kiln_app::kiln::shape::AttentionDims;

use super::colour::{FUTURE, MASKED, heat_colour, mix};
use super::pen::Pen;
use super::problem::{N, score_range};
use crate::chart;
use crate::error::Result;
use crate::sweep::{Bytes, Shape};

/// The length visual 1 counts bytes for, at the sweep's batch, heads and head dimension.
const BYTES_N: usize = 4096;

/// Visual 1's byte counts (MB) at B1 H8 d64, N = BYTES_N: one N×N pass, the flash forward, and
/// forward + backward of both paths.
#[derive(Clone, Debug)]
pub(super) struct Traffic {
    pass_mb: f64,
    flash_fwd_mb: f64,
    totals: Bytes,
}

impl Traffic {
    /// Kiln's byte model at the sweep's shape and BYTES_N.
    pub fn new(shape: Shape) -> Result<Traffic> {
        let dims = [shape.batch, shape.heads, BYTES_N, shape.head_dim];
        let ad = AttentionDims::new("walkthrough", &dims, &dims, &dims)?;
        let pass_mb = traffic::score_matrix_bytes(&ad, DType::F32) as f64 / 1e6;
        let flash_fwd_mb = traffic::total(&traffic::traffic(
            &ad,
            DType::F32,
            traffic::Path::Flash,
            false,
        )) as f64
            / 1e6;
        Ok(Traffic {
            pass_mb,
            flash_fwd_mb,
            totals: Bytes::of(shape, BYTES_N)?,
        })
    }

    /// The scores filling in row by row, and the bytes counting up with them, at `t` seconds.
    pub fn draw(&self, pen: &mut Pen, t: f64, scores: &[f32]) {
        // Fill for 5 s, hold for 3, again.
        let f = ((t % 8.0) / 5.0).min(1.0);
        pen.text(20.0, 14.0, "Naive: S = Q·K^T, N × N", chart::TEXT, 2.0);
        let top = pen.para(
            20.0,
            40.0,
            "every query against every key (one head, N = 48 here)",
            chart::DIM,
        );
        let (x0, y0, cell) = (66.0, top + 6.0, 7.0);
        let filled = (f * (N * N) as f64) as usize;
        let range = score_range(scores);
        for (ij, &s) in scores.iter().enumerate() {
            let (i, j) = (ij / N, ij % N);
            let colour = if ij >= filled {
                FUTURE
            } else if j > i {
                // The matmul writes masked entries too; softmax ignores them.
                mix(MASKED, heat_colour(s, range), 0.3)
            } else {
                heat_colour(s, range)
            };
            pen.rect(
                x0 + j as f64 * cell,
                y0 + i as f64 * cell,
                cell - 1.0,
                cell - 1.0,
                colour,
            );
        }
        if f < 1.0 {
            let i = (filled / N) as f64;
            pen.outline(
                x0 - 2.0,
                y0 + i * cell - 2.0,
                N as f64 * cell + 3.0,
                cell + 3.0,
            );
        }
        let y = pen.para(
            20.0,
            y0 + N as f64 * cell + 8.0,
            "orange: high score, blue: low; faded: masked, written anyway",
            chart::DIM,
        );
        let y = pen.para(
            20.0,
            y,
            &format!("traffic at B1 H8 d64, N = {BYTES_N} (f32):"),
            chart::DIM,
        );
        let bar = 524.0;
        let naive = f * self.pass_mb;
        let label = format!("naive, S: {naive:>7.1} MB");
        pen.text(20.0, y + 2.0, &label, chart::NAIVE, 2.0);
        pen.rect(20.0, y + 22.0, bar, 10.0, FUTURE);
        pen.rect(20.0, y + 22.0, (bar * f).max(1.0), 10.0, chart::NAIVE);
        let y = pen.para(
            20.0,
            y + 38.0,
            &format!(
                "one N×N pass = 4·B·H·N^2 bytes = {:.0} MB; the forward makes 4: S written, \
                 read by softmax; P written, read",
                self.pass_mb
            ),
            chart::DIM,
        );
        let flash = f * self.flash_fwd_mb;
        let label = format!("flash, all: {flash:>6.1} MB");
        pen.text(20.0, y + 2.0, &label, chart::GPU, 2.0);
        pen.rect(20.0, y + 22.0, bar, 10.0, FUTURE);
        pen.rect(
            20.0,
            y + 22.0,
            (bar * flash / self.pass_mb).max(1.0),
            10.0,
            chart::GPU,
        );
        let y = pen.para(
            20.0,
            y + 38.0,
            "the whole flash forward: Q, K, V read, O and LSE written",
            chart::DIM,
        );
        let b = &self.totals;
        pen.para(
            20.0,
            y + 4.0,
            &format!(
                "forward + backward: naive {:.0} MB, flash {:.0} MB ({:.0}x less)",
                b.naive_mb,
                b.flash_mb,
                b.naive_mb / b.flash_mb
            ),
            chart::TEXT,
        );
    }
}
