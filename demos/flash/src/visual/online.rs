//! Visual 2: one query tile walking the key blocks, its rows' running max, running sum and
//! output updating as each block arrives (the online softmax), checked against kiln's standard
//! CPU attention.

use super::colour::{COOL, FUTURE, HIGHLIGHT, MASKED, WARM, heat_colour};
use super::pen::{LINE, Pen, SMALL};
use super::problem::{BLOCK, D, N, Problem, TILES, row, score_range, visible};
use crate::chart;

/// The followed tile, the last: under the causal mask it is the one that sees every key block.
const TILE: usize = TILES - 1;
/// The rows of that tile whose state the visual prints.
const SHOWN_ROWS: [usize; 4] = [0, 2, 5, 7];

/// One query row's online-softmax state.
#[derive(Clone, Copy, Debug)]
pub(super) struct RowState {
    /// Running max of the scores seen.
    m: f32,
    /// Running sum of exp(s − m).
    l: f32,
    /// Unnormalised output: Σ exp(s − m) · v.
    acc: [f32; D],
    /// The factor the last block rescaled l and acc by (1: the max did not grow).
    pub alpha: f32,
}

// Not kiln's flash_forward: that keeps no per-block state to draw, and the talk shows these lines.
impl RowState {
    const START: RowState = RowState {
        m: f32::NEG_INFINITY,
        l: 0.0,
        acc: [0.0; D],
        alpha: 1.0,
    };

    // talk:begin online-softmax
    /// One block of keys arriving at this row: `s` its scores (None where masked), `v` its rows
    /// of V. The same arithmetic as kiln's CPU flash forward and the flash_fwd kernel.
    fn update(&mut self, s: &[Option<f32>], v: &[&[f32]]) {
        let m_new = s.iter().flatten().copied().fold(self.m, f32::max);
        if m_new == f32::NEG_INFINITY {
            return; // nothing visible yet
        }
        // exp(-inf) = 0 on the first visible block; below 1 whenever the max grew.
        let alpha = (self.m - m_new).exp();
        self.acc.iter_mut().for_each(|x| *x *= alpha);
        self.l *= alpha;
        for (sj, vj) in s.iter().zip(v) {
            let Some(sj) = sj else { continue };
            let p = (sj - m_new).exp();
            self.l += p;
            for (o, x) in self.acc.iter_mut().zip(vj.iter()) {
                *o += p * x;
            }
        }
        self.m = m_new;
        self.alpha = alpha;
    }
    // talk:end online-softmax

    /// The output so far, acc / l.
    fn out(&self) -> [f32; D] {
        let l = if self.l > 0.0 { self.l } else { 1.0 };
        self.acc.map(|a| a / l)
    }
}

/// The followed tile's walk over the key blocks.
#[derive(Clone, Debug)]
pub(super) struct Walk {
    /// The tile's rows after 0, 1, … TILES key blocks.
    pub states: Vec<[RowState; BLOCK]>,
    /// The tile's final output, for the ticks the bars converge to.
    out: [[f32; D]; BLOCK],
    /// max |O_online − O_standard| over the tile.
    pub error: f32,
}

impl Walk {
    /// The followed tile's rows, block by block.
    pub fn new(p: &Problem) -> Walk {
        let mut state = [RowState::START; BLOCK];
        let mut states = vec![state];
        for b in 0..TILES {
            for (r, st) in state.iter_mut().enumerate() {
                let i = TILE * BLOCK + r;
                let keys = b * BLOCK..(b + 1) * BLOCK;
                let s: Vec<Option<f32>> = keys
                    .clone()
                    .map(|j| visible(i, j).then(|| p.scores[i * N + j]))
                    .collect();
                let vs: Vec<&[f32]> = keys.map(|j| row(&p.v, j)).collect();
                st.update(&s, &vs);
            }
            states.push(state);
        }
        let out = state.map(|st| st.out());
        let error = (0..BLOCK)
            .flat_map(|r| {
                let o = row(&p.standard.out.data, TILE * BLOCK + r);
                (0..D).map(move |c| (out[r][c] - o[c]).abs())
            })
            .fold(0.0f32, f32::max);
        Walk { states, out, error }
    }

    /// The tile's scores arriving a block at a time and the shown rows' state after each, at
    /// `t` seconds.
    pub fn draw(&self, pen: &mut Pen, t: f64, scores: &[f32]) {
        // A block every 1.5 s, then 3 s on the result, again.
        let step = 1.5;
        let tc = t % (TILES as f64 * step + 3.0);
        let b = ((tc / step) as usize).min(TILES);
        let frac = tc / step - b as f64;
        // The block's columns sweep in over the first 40 % of its time; then its state shows.
        let reveal = (frac / 0.4).min(1.0);
        let seen = if b < TILES && reveal < 1.0 {
            b
        } else {
            (b + 1).min(TILES)
        };
        let first = TILE * BLOCK;
        pen.text(20.0, 14.0, "Online softmax, one tile", chart::TEXT, 2.0);
        let top = pen.para(
            20.0,
            40.0,
            &format!(
                "query rows {first}-{} walk the key blocks, {BLOCK} keys each",
                first + BLOCK - 1
            ),
            chart::DIM,
        );
        let (x0, y0, cell) = (48.0, top + 20.0, 10.0);
        let range = score_range(scores);
        for kb in 0..TILES {
            let x = x0 + (kb * BLOCK) as f64 * cell + 24.0;
            let colour = if kb == b { chart::TEXT } else { chart::DIM };
            pen.text(x, top + 2.0, &format!("k{}", kb + 1), colour, SMALL);
        }
        for r in 0..BLOCK {
            let i = first + r;
            let y = y0 + r as f64 * cell;
            // The first and last rows' numbers: every row's would not fit at this size.
            if r == 0 || r == BLOCK - 1 {
                let ly = if r == 0 { y } else { y + cell - 8.0 * SMALL };
                pen.text(14.0, ly, &format!("{i}"), chart::DIM, SMALL);
            }
            for j in 0..N {
                let kb = j / BLOCK;
                let arrived = kb < b
                    || b >= TILES
                    || (kb == b && ((j % BLOCK) as f64) < reveal * BLOCK as f64);
                let colour = if j > i {
                    MASKED
                } else if arrived {
                    heat_colour(scores[i * N + j], range)
                } else {
                    FUTURE
                };
                pen.rect(x0 + j as f64 * cell, y, cell - 1.0, cell - 1.0, colour);
            }
        }
        if b < TILES {
            let x = x0 + (b * BLOCK) as f64 * cell;
            pen.outline(
                x - 2.0,
                y0 - 2.0,
                BLOCK as f64 * cell + 3.0,
                BLOCK as f64 * cell + 3.0,
            );
        }
        let states = &self.states[seen];
        let first_y = y0 + BLOCK as f64 * cell + 14.0;
        for (n, &r) in SHOWN_ROWS.iter().enumerate() {
            let st = &states[r];
            let y = first_y + n as f64 * 92.0;
            let m = if st.m == f32::NEG_INFINITY {
                "  -inf".to_string()
            } else {
                format!("{:6.3}", st.m)
            };
            pen.text(
                20.0,
                y,
                &format!("row {}  m {m}  l {:6.3}", first + r, st.l),
                chart::TEXT,
                2.0,
            );
            let note = if seen == 0 {
                "no key block yet".to_string()
            } else if st.alpha < 1.0 && seen > 1 {
                format!("block {seen}: new max; l, acc × {:.3}", st.alpha)
            } else if seen == 1 {
                "block 1: the first max".to_string()
            } else {
                format!("block {seen}: max unchanged")
            };
            let colour = if st.alpha < 1.0 && seen > 1 {
                WARM
            } else {
                chart::DIM
            };
            pen.text(20.0, y + 22.0, &note, colour, SMALL);
            // The output so far (acc / l) as bars about a baseline, the final value as a tick.
            let base = y + 68.0;
            let out = st.out();
            for (c, (&o, &fin)) in out.iter().zip(&self.out[r]).enumerate() {
                let x = 20.0 + c as f64 * 36.0;
                let v = f64::from(if seen == 0 { 0.0 } else { o }).clamp(-1.0, 1.0);
                let len = (v.abs() * 22.0).max(1.0);
                let top = if v >= 0.0 { base - len } else { base };
                let colour = if v >= 0.0 { WARM } else { COOL };
                pen.rect(x, top, 28.0, len, colour);
                let fin = f64::from(fin).clamp(-1.0, 1.0);
                pen.rect(x - 2.0, base - fin * 22.0 - 1.0, 32.0, 2.0, HIGHLIGHT);
            }
            pen.rect(16.0, base, 8.0 * 36.0, 1.0, chart::DIM);
            // What the bars are, once, beside the first row's.
            if n == 0 {
                for (k, line) in ["output so far:", "acc / l (bars)", "final (ticks)"]
                    .iter()
                    .enumerate()
                {
                    let ly = base - 24.0 + k as f64 * LINE;
                    pen.text(320.0, ly, line, chart::DIM, SMALL);
                }
            }
        }
        let y = first_y + SHOWN_ROWS.len() as f64 * 92.0;
        let y = if seen == TILES {
            pen.text(20.0, y, "O = acc / l,  LSE = m + ln l", WARM, 2.0);
            pen.para(
                20.0,
                y + 22.0,
                &format!(
                    "max |O - softmax(S)·V| = {:.1e} (kiln's standard CPU attention)",
                    self.error
                ),
                chart::TEXT,
            )
        } else {
            let label = format!("key blocks seen: {seen} of {TILES}");
            pen.text(20.0, y, &label, chart::TEXT, 2.0);
            y + 22.0 + 2.0 * LINE
        };
        pen.para(
            20.0,
            y + 6.0,
            "S and P of this tile stay in workgroup memory: only O and one LSE per row are \
             ever written",
            chart::DIM,
        );
    }
}
