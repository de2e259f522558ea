//! The walkthrough's live visuals, computed and drawn on the CPU into an RGBA canvas so that the
//! native window and the page show the same pictures: (1) the naive path's N×N score matrix
//! filling in, with the bytes it costs beside the flash path's; (2) one query tile walking the
//! key blocks, its rows' running max, running sum and output updating as each block arrives;
//! (3) the backward pass recomputing P tile by tile, dK/dV accumulating per key tile and dQ per
//! query tile; (4) the measured times and the byte model; (5) flash-decoding: one new row against
//! the cached keys, split into chunks whose (max, sum, output) one combine pass merges. The
//! numbers in (1)–(3) and (5) are real: small random inputs run through the online softmax's
//! arithmetic (kiln's CPU flash reference does the same), checked against kiln's standard CPU
//! attention.

use kiln_app::kiln::DType;
use kiln_app::kiln::cpu::{self, Array};
use kiln_app::kiln::ops::attention::traffic;
use kiln_app::kiln::shape::AttentionDims;
use kiln_app::raster::wrap;
use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::chart::{self, Canvas, Series};
use crate::error::Result;
use crate::sweep::{Bytes, Point, Shape};

/// The design size: the native presenter window's left column at 1280×720. Other sizes scale
/// the design and centre it.
pub const SIZE: (usize, usize) = (564, 720);
/// Small text's font pixels per design pixel: its letters are 13.2 design pixels tall, 18 pixels
/// of the picture at 1920×1080 (12 at 1280×720) in presenter mode.
const SMALL: f64 = 1.65;
/// Small text's line height and the right margin, in design pixels.
const LINE: f64 = 17.0;
const MARGIN: f64 = 14.0;
/// How many stages have a visual.
pub const STAGES: usize = 5;

/// The small problem behind visuals 1–3: one head, N queries and keys, head dimension D, square
/// tiles of BLOCK.
const N: usize = 48;
const D: usize = 8;
const BLOCK: usize = 8;
const TILES: usize = N / BLOCK;
/// Visual 2 follows the last query tile: under the causal mask it is the one that sees every
/// key block.
const TILE: usize = TILES - 1;
/// The rows of that tile whose state visual 2 prints.
const SHOWN_ROWS: [usize; 4] = [0, 2, 5, 7];
/// The length visual 1 counts bytes for, at the sweep's batch, heads and head dimension.
const BYTES_N: usize = 4096;

const FUTURE: [u8; 3] = [40, 44, 56];
const MASKED: [u8; 3] = [24, 26, 33];
const HIGHLIGHT: [u8; 3] = [250, 250, 255];
const WARM: [u8; 3] = [255, 180, 84];
const COOL: [u8; 3] = [90, 150, 255];

/// One query row's online-softmax state.
#[derive(Clone, Copy, Debug)]
struct RowState {
    /// Running max of the scores seen.
    m: f32,
    /// Running sum of exp(s − m).
    l: f32,
    /// Unnormalised output: Σ exp(s − m) · v.
    acc: [f32; D],
    /// The factor the last block rescaled l and acc by (1: the max did not grow).
    alpha: f32,
}

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

/// The backward pass after one tile: which tile, in which pass, and the size (Frobenius norm)
/// of every tile's gradient accumulated so far.
#[derive(Clone, Debug)]
struct BackStep {
    /// 1: dK and dV, each key tile walking the query tiles; 2: dQ, each query tile walking the
    /// key tiles.
    pass: u8,
    q_tile: usize,
    k_tile: usize,
    dq: [f32; TILES],
    dk: [f32; TILES],
    dv: [f32; TILES],
}

/// Keys per chunk in visual 5 (N / 4: four chunks).
const CHUNK: usize = N / 4;
const CHUNKS: usize = N / CHUNK;

/// One chunk of visual 5: the new row's max score over the chunk's keys, the sum of
/// exp(s − m) and the unnormalised output Σ exp(s − m) · v.
#[derive(Clone, Copy, Debug)]
struct Part {
    m: f32,
    l: f32,
    acc: [f32; D],
}

// talk:begin decode
/// Flash-decoding of one new row (its scores `s` against every cached key, the keys' values
/// `v`): the split pass's state per chunk of keys — each chunk a workgroup of its own — and
/// the combine pass, which rescales every chunk to the common max M and adds them up. The
/// arithmetic of kiln's flash_decode and flash_decode_combine kernels.
fn split(s: &[f32], v: &[&[f32]]) -> Vec<Part> {
    s.chunks(CHUNK)
        .zip(v.chunks(CHUNK))
        .map(|(s, v)| {
            let m = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut part = Part {
                m,
                l: 0.0,
                acc: [0.0; D],
            };
            for (sj, vj) in s.iter().zip(v) {
                let p = (sj - m).exp();
                part.l += p;
                for (o, x) in part.acc.iter_mut().zip(vj.iter()) {
                    *o += p * x;
                }
            }
            part
        })
        .collect()
}

/// The combine: O = Σ e^(m_c − M) · acc_c / Σ e^(m_c − M) · l_c, with each chunk's weight.
fn combine(parts: &[Part]) -> ([f32; D], Vec<f32>) {
    let big_m = parts.iter().map(|p| p.m).fold(f32::NEG_INFINITY, f32::max);
    let weights: Vec<f32> = parts.iter().map(|p| (p.m - big_m).exp()).collect();
    let l: f32 = parts.iter().zip(&weights).map(|(p, w)| w * p.l).sum();
    let mut out = [0.0f32; D];
    for (p, w) in parts.iter().zip(&weights) {
        for (o, a) in out.iter_mut().zip(p.acc) {
            *o += w * a / l;
        }
    }
    (out, weights)
}
// talk:end decode

/// Visual 5's numbers: the last row as the new token, every earlier key cached.
#[derive(Clone, Debug)]
struct Decode {
    parts: Vec<Part>,
    /// exp(m_c − M) per chunk.
    weights: Vec<f32>,
    out: [f32; D],
    /// Kiln's standard CPU attention's output for the row.
    want: [f32; D],
    error: f32,
}

/// The visuals' data, computed once.
#[derive(Clone, Debug)]
pub struct Scene {
    /// scale · q_i·k_j for every (i, j), row-major; the causal mask hides j > i.
    scores: Vec<f32>,
    /// P recomputed from the saved LSE (0 where masked).
    probs: Vec<f32>,
    /// The followed tile's rows after 0, 1, … TILES key blocks.
    walk: Vec<[RowState; BLOCK]>,
    /// The followed tile's final output, for the ticks the bars converge to.
    walk_final: [[f32; D]; BLOCK],
    /// max |O_online − O_standard| over the followed tile.
    walk_error: f32,
    steps: Vec<BackStep>,
    decode: Decode,
    /// Relative L2 errors of dQ, dK, dV against the standard backward.
    grad_error: [f64; 3],
    /// The largest tile norm of each gradient, to scale the bars.
    grad_max: [f32; 3],
    /// Visual 1's byte counts (MB) at B1 H8 d64, N = BYTES_N: one N×N pass, the flash forward,
    /// and forward + backward of both paths.
    pass_mb: f64,
    flash_fwd_mb: f64,
    totals: Bytes,
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn row(x: &[f32], i: usize) -> &[f32] {
    &x[i * D..][..D]
}

/// Frobenius norm of the rows of `tile`.
fn tile_norm(x: &[f32], tile: usize) -> f32 {
    x[tile * BLOCK * D..][..BLOCK * D]
        .iter()
        .map(|v| v * v)
        .sum::<f32>()
        .sqrt()
}

fn rel_l2(a: &[f32], b: &[f32]) -> f64 {
    let diff: f64 = a.iter().zip(b).map(|(x, y)| f64::from(x - y).powi(2)).sum();
    let norm: f64 = b.iter().map(|y| f64::from(*y).powi(2)).sum();
    (diff / norm.max(1e-30)).sqrt()
}

impl Scene {
    /// Draws the inputs from a fixed seed and runs forward and backward on them.
    pub fn new(shape: Shape) -> Result<Scene> {
        let mut rng = StdRng::seed_from_u64(7);
        // Q and K spread wider than V and dO, so the scores span a few units and the running
        // max visibly moves.
        let mut draw = |spread: f32| -> Vec<f32> {
            (0..N * D)
                .map(|_| rng.random_range(-spread..spread))
                .collect()
        };
        let (q, k, v, d_o) = (draw(2.0), draw(2.0), draw(1.0), draw(1.0));
        let scale = 1.0 / (D as f32).sqrt();
        let dims = [1, N, D];
        let arr = |x: &[f32]| Array::new(&dims, x.to_vec());
        let (qa, ka, va, doa) = (arr(&q)?, arr(&k)?, arr(&v)?, arr(&d_o)?);
        let (standard, grads) = cpu::attention_forward_backward(&qa, &ka, &va, &doa, true, scale)?;
        let flash = cpu::flash_forward(&qa, &ka, &va, true, scale, BLOCK, BLOCK)?;

        let scores: Vec<f32> = (0..N * N)
            .map(|ij| scale * dot(row(&q, ij / N), row(&k, ij % N)))
            .collect();
        let visible = |i: usize, j: usize| j <= i;

        // Visual 2: the followed tile's rows, block by block.
        let mut state = [RowState::START; BLOCK];
        let mut walk = vec![state];
        for b in 0..TILES {
            for (r, st) in state.iter_mut().enumerate() {
                let i = TILE * BLOCK + r;
                let keys = b * BLOCK..(b + 1) * BLOCK;
                let s: Vec<Option<f32>> = keys
                    .clone()
                    .map(|j| visible(i, j).then(|| scores[i * N + j]))
                    .collect();
                let vs: Vec<&[f32]> = keys.map(|j| row(&v, j)).collect();
                st.update(&s, &vs);
            }
            walk.push(state);
        }
        let walk_final = state.map(|st| st.out());
        let walk_error = (0..BLOCK)
            .flat_map(|r| {
                let o = row(&standard.out.data, TILE * BLOCK + r);
                (0..D).map(move |c| (walk_final[r][c] - o[c]).abs())
            })
            .fold(0.0f32, f32::max);

        // Visual 3: the backward from the flash forward's O and LSE.
        let lse = &flash.lse;
        let out = &flash.out.data;
        let delta: Vec<f32> = (0..N).map(|i| dot(row(&d_o, i), row(out, i))).collect();
        // talk:begin recompute
        // Entry (i, j) of P, recomputed from Q, K and the saved LSE, and of dS = P * (dP - D).
        let p_ds = |i: usize, j: usize| -> (f32, f32) {
            if !visible(i, j) {
                return (0.0, 0.0);
            }
            let p = (scores[i * N + j] - lse[i]).exp();
            let dp = dot(row(&d_o, i), row(&v, j));
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
        let grad_error = [
            rel_l2(&dq, &grads.dq.data),
            rel_l2(&dk, &grads.dk.data),
            rel_l2(&dv, &grads.dv.data),
        ];
        let max = |x: &[f32]| tiles(x).into_iter().fold(1e-6f32, f32::max);
        let grad_max = [max(&dq), max(&dk), max(&dv)];

        // Visual 5: the last row is the new token; it sees every key.
        let last = N - 1;
        let s: Vec<f32> = (0..N).map(|j| scores[last * N + j]).collect();
        let vs: Vec<&[f32]> = (0..N).map(|j| row(&v, j)).collect();
        let parts = split(&s, &vs);
        let (dec_out, weights) = combine(&parts);
        let want: [f32; D] = std::array::from_fn(|c| row(&standard.out.data, last)[c]);
        let decode = Decode {
            error: (0..D)
                .map(|c| (dec_out[c] - want[c]).abs())
                .fold(0.0, f32::max),
            parts,
            weights,
            out: dec_out,
            want,
        };

        // Kiln's byte model at the sweep's shape and BYTES_N.
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
        Ok(Scene {
            scores,
            probs,
            walk,
            walk_final,
            walk_error,
            steps,
            decode,
            grad_error,
            grad_max,
            pass_mb,
            flash_fwd_mb,
            totals: Bytes::of(shape, BYTES_N)?,
        })
    }

    /// Stage `stage`'s visual (0-based; past the last, the last) at `t` seconds into the stage,
    /// on a `w` × `h` canvas.
    pub fn draw(&self, stage: usize, t: f64, (w, h): (usize, usize), m: &Measured<'_>) -> Canvas {
        let mut pen = Pen::new(w, h);
        let t = t.max(0.0);
        match stage {
            0 => self.naive(&mut pen, t),
            1 => self.walk(&mut pen, t),
            2 => self.backward(&mut pen, t),
            3 => charts(&mut pen, m),
            _ => self.decode(&mut pen, t),
        }
        pen.c
    }

    fn naive(&self, pen: &mut Pen, t: f64) {
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
        let range = self.score_range();
        for (ij, &s) in self.scores.iter().enumerate() {
            let (i, j) = (ij / N, ij % N);
            let colour = if ij >= filled {
                FUTURE
            } else if j > i {
                // The matmul writes masked entries too; softmax ignores them.
                mix(MASKED, heat(s, range), 0.3)
            } else {
                heat(s, range)
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

    fn walk(&self, pen: &mut Pen, t: f64) {
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
        let range = self.score_range();
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
                    heat(self.scores[i * N + j], range)
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
        let states = &self.walk[seen];
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
            for (c, (&o, &fin)) in out.iter().zip(&self.walk_final[r]).enumerate() {
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
                    self.walk_error
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

    fn backward(&self, pen: &mut Pen, t: f64) {
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
                    prob(self.probs[i * N + j])
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
            let len = 140.0 * f64::from(now.dq[qt] / self.grad_max[0]);
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
                (now.dk[kt], self.grad_max[1], chart::NAIVE),
                (now.dv[kt], self.grad_max[2], chart::CPU),
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
            let [q, k, v] = self.grad_error;
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

    /// The largest |score|, for the colour scale.
    fn decode(&self, pen: &mut Pen, t: f64) {
        // The chunks fill at once (3 s), their states show (3 s), the combine (3 s), a hold (3 s).
        let tc = t % 12.0;
        let fill = (tc / 3.0).min(1.0);
        let (states, combined) = (tc >= 3.0, tc >= 6.0);
        let d = &self.decode;
        pen.text(20.0, 14.0, "Flash-decoding: one new row", chart::TEXT, 2.0);
        let top = pen.para(
            20.0,
            40.0,
            &format!(
                "Generating, the new token's query meets every cached key. The {N} keys are cut \
                 into {CHUNKS} chunks that {CHUNKS} workgroups take at once; each keeps its own \
                 max m, sum l and output."
            ),
            chart::DIM,
        );
        let range = self.score_range();
        // Bars scaled to the largest output shown, partial or final.
        let most = d
            .parts
            .iter()
            .flat_map(|p| p.acc.map(|a| (a / p.l).abs()))
            .chain(d.out.map(f32::abs))
            .fold(1e-6f32, f32::max);
        let bar = |x: f32| f64::from(x / most).clamp(-1.0, 1.0);
        let (cell, gap, x0) = (9.0, 14.0, 30.0);
        let width = CHUNK as f64 * cell;
        let strip = top + 30.0;
        for (c, part) in d.parts.iter().enumerate() {
            let x = x0 + c as f64 * (width + gap);
            pen.text(
                x,
                top + 6.0,
                &format!("chunk {}", c + 1),
                chart::TEXT,
                SMALL,
            );
            for k in 0..CHUNK {
                let j = c * CHUNK + k;
                let colour = if (k as f64) < fill * CHUNK as f64 {
                    heat(self.scores[(N - 1) * N + j], range)
                } else {
                    FUTURE
                };
                pen.rect(x + k as f64 * cell, strip, cell - 1.0, 26.0, colour);
            }
            if fill < 1.0 {
                // The row being read in each chunk, all at the same time.
                let k = (fill * CHUNK as f64).floor();
                pen.outline(x + k * cell - 2.0, strip - 2.0, cell + 3.0, 30.0);
            }
            if !states {
                continue;
            }
            pen.text(
                x,
                strip + 36.0,
                &format!("m {:.2}", part.m),
                chart::TEXT,
                SMALL,
            );
            pen.text(
                x,
                strip + 53.0,
                &format!("l {:.2}", part.l),
                chart::TEXT,
                SMALL,
            );
            // The chunk's own output acc / l, as small bars about a baseline.
            let base = strip + 100.0;
            for (k, a) in part.acc.iter().enumerate() {
                let v = bar(a / part.l);
                let len = (v.abs() * 18.0).max(1.0);
                let y = if v >= 0.0 { base - len } else { base };
                let colour = if v >= 0.0 { WARM } else { COOL };
                pen.rect(x + k as f64 * 13.5, y, 11.0, len, colour);
            }
            pen.rect(x, base, width, 1.0, chart::DIM);
        }
        let y = strip + 132.0;
        if !combined {
            let label = if states {
                "each chunk's m, l, output"
            } else {
                "4 workgroups, one chunk each"
            };
            pen.text(20.0, y, label, chart::TEXT, 2.0);
        } else {
            let big_m = d
                .parts
                .iter()
                .map(|p| p.m)
                .fold(f32::NEG_INFINITY, f32::max);
            pen.text(
                20.0,
                y,
                &format!("combine: M = max m = {big_m:.2}"),
                WARM,
                2.0,
            );
            for (c, (p, w)) in d.parts.iter().zip(&d.weights).enumerate() {
                pen.text(
                    20.0,
                    y + 26.0 + c as f64 * LINE,
                    &format!("chunk {}: e^(m-M) = {w:.3}, l {:.2}", c + 1, p.l),
                    chart::DIM,
                    SMALL,
                );
            }
            let base = y + 26.0 + CHUNKS as f64 * LINE + 36.0;
            for (c, (&o, &want)) in d.out.iter().zip(&d.want).enumerate() {
                let x = 20.0 + c as f64 * 36.0;
                let v = bar(o);
                let len = (v.abs() * 22.0).max(1.0);
                let top = if v >= 0.0 { base - len } else { base };
                let colour = if v >= 0.0 { WARM } else { COOL };
                pen.rect(x, top, 28.0, len, colour);
                pen.rect(x - 2.0, base - bar(want) * 22.0 - 1.0, 32.0, 2.0, HIGHLIGHT);
            }
            pen.rect(16.0, base, 8.0 * 36.0, 1.0, chart::DIM);
            for (k, line) in ["O (bars)", "softmax(S)·V", "(ticks)"].iter().enumerate() {
                pen.text(
                    320.0,
                    base - 24.0 + k as f64 * LINE,
                    line,
                    chart::DIM,
                    SMALL,
                );
            }
            pen.para(
                20.0,
                base + 30.0,
                &format!(
                    "O = sum e^(m-M)·acc / sum e^(m-M)·l; max |O - softmax(S)·V| = {:.1e} \
                     (kiln's standard CPU attention)",
                    d.error
                ),
                chart::TEXT,
            );
        }
        pen.para(
            20.0,
            600.0,
            "With grouped-query heads the query rows of a group share each chunk: the cache is \
             read once per group, not once per head. The chunk size is chosen per adapter.",
            chart::DIM,
        );
    }

    fn score_range(&self) -> f32 {
        self.scores.iter().fold(1e-6f32, |a, s| a.max(s.abs()))
    }
}

/// The norms of the TILES row tiles of an N×D gradient.
fn tiles(x: &[f32]) -> [f32; TILES] {
    std::array::from_fn(|t| tile_norm(x, t))
}

/// One sequence length's measured times (None: not measured, or left out).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Timed {
    pub seq: usize,
    pub flash_ms: Option<f64>,
    pub naive_ms: Option<f64>,
    pub cpu_ms: Option<f64>,
}

impl From<&Point> for Timed {
    fn from(p: &Point) -> Timed {
        Timed {
            seq: p.seq,
            flash_ms: Some(p.flash_ms),
            naive_ms: Some(p.naive_ms),
            cpu_ms: p.cpu_ms,
        }
    }
}

/// What visual 4 shows: the lengths swept, the times measured so far and a line on where they
/// come from.
#[derive(Clone, Copy, Debug)]
pub struct Measured<'a> {
    pub shape: Shape,
    pub lengths: &'a [usize],
    pub points: &'a [Timed],
    pub note: &'a str,
    /// While nothing is measured yet: how far the sweep is, which the empty chart says instead
    /// of "no data yet" (the first length can take minutes on a software adapter).
    pub pending: Option<&'a str>,
}

fn charts(pen: &mut Pen, m: &Measured<'_>) {
    let u = pen.u;
    let (w, x0, y0) = (SIZE.0 as f64 * u, pen.ox, pen.oy);
    let px = |v: f64| v.max(0.0).round() as usize;
    let s = m.shape;
    let timed = |f: &dyn Fn(&Timed) -> Option<f64>| -> Vec<(f64, f64)> {
        m.points
            .iter()
            .filter_map(|p| f(p).map(|v| (p.seq as f64, v)))
            .collect()
    };
    if let Some(p) = m.pending {
        pen.c.empty = p.to_string();
    }
    pen.c.label = SMALL * u;
    pen.c.title = 2.0 * u;
    pen.c.lines(
        (
            px(x0 + 12.0 * u),
            px(y0 + 12.0 * u),
            px(w - 12.0 * u),
            px(300.0 * u),
        ),
        &format!(
            "Time (ms), fwd+bwd, B{} H{} d{}",
            s.batch, s.heads, s.head_dim
        ),
        "sequence length N",
        "ms",
        &[
            Series {
                label: "flash GPU",
                colour: chart::GPU,
                points: timed(&|p| p.flash_ms),
            },
            Series {
                label: "naive GPU",
                colour: chart::NAIVE,
                points: timed(&|p| p.naive_ms),
            },
            Series {
                label: "CPU",
                colour: chart::CPU,
                points: timed(&|p| p.cpu_ms),
            },
        ],
        true,
    );
    // The byte model needs no measurement: every length at once.
    let bytes: Vec<(usize, Bytes)> = m
        .lengths
        .iter()
        .filter_map(|&n| Bytes::of(s, n).ok().map(|b| (n, b)))
        .collect();
    let line = |f: &dyn Fn(&Bytes) -> f64| bytes.iter().map(|(n, b)| (*n as f64, f(b))).collect();
    pen.c.lines(
        (
            px(x0 + 12.0 * u),
            px(y0 + 320.0 * u),
            px(w - 12.0 * u),
            px(260.0 * u),
        ),
        "MB moved (byte model)",
        "sequence length N",
        "MB",
        &[
            Series {
                label: "flash",
                colour: chart::GPU,
                points: line(&|b| b.flash_mb),
            },
            Series {
                label: "naive",
                colour: chart::NAIVE,
                points: line(&|b| b.naive_mb),
            },
        ],
        true,
    );
    let summary = m
        .points
        .iter()
        .rev()
        .find_map(|p| Some((p.seq, p.flash_ms?, p.naive_ms?)))
        .and_then(|(n, f, nv)| {
            let (_, b) = bytes.iter().find(|(len, _)| *len == n)?;
            Some(format!(
                "N = {n}: flash {f:.2} ms, naive {nv:.2} ms; {:.1}x fewer bytes",
                b.naive_mb / b.flash_mb
            ))
        });
    let mut y = 588.0;
    if let Some(text) = summary {
        y = pen.para(20.0, y, &text, chart::TEXT);
    }
    for (y, line) in note_lines(m.note, y) {
        pen.text(20.0, y + 4.0, &line, chart::DIM, SMALL);
    }
}

/// The sweep's note from `y` down: as many of its lines as fit, each with its height.
fn note_lines(note: &str, mut y: f64) -> Vec<(f64, String)> {
    let cols = ((SIZE.0 as f64 - MARGIN - 20.0) / (8.0 * SMALL))
        .floor()
        .max(1.0) as usize;
    let mut out = Vec::new();
    for line in wrap(note, cols) {
        if y + 8.0 * SMALL > SIZE.1 as f64 - 4.0 {
            break;
        }
        out.push((y, line));
        y += LINE;
    }
    out
}

/// The first words of stage 4's note on a software adapter (empty elsewhere): why the CPU path
/// can beat the "GPU" there, said first so that it is never among the lines left out.
pub fn software_caveat(profile: &kiln_app::kiln::DeviceProfile) -> &'static str {
    if profile.is_software() {
        "A software adapter: its GPU path runs on the CPU, so the CPU path can win. "
    } else {
        ""
    }
}

/// Draws the design (SIZE) scaled by `u` and centred on the canvas.
struct Pen {
    c: Canvas,
    u: f64,
    ox: f64,
    oy: f64,
}

impl Pen {
    fn new(w: usize, h: usize) -> Pen {
        let u = (w as f64 / SIZE.0 as f64).min(h as f64 / SIZE.1 as f64);
        Pen {
            c: Canvas::new(w, h),
            u,
            ox: (w as f64 - SIZE.0 as f64 * u) / 2.0,
            oy: (h as f64 - SIZE.1 as f64 * u) / 2.0,
        }
    }

    fn at(&self, x: f64, y: f64) -> (usize, usize) {
        (
            (self.ox + x * self.u).max(0.0).round() as usize,
            (self.oy + y * self.u).max(0.0).round() as usize,
        )
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, colour: [u8; 3]) {
        let (x0, y0) = self.at(x, y);
        let (x1, y1) = self.at(x + w, y + h);
        let (w, h) = (x1.saturating_sub(x0).max(1), y1.saturating_sub(y0).max(1));
        self.c.rect(x0, y0, w, h, colour);
    }

    /// A 2-pixel frame around (x, y, w, h).
    fn outline(&mut self, x: f64, y: f64, w: f64, h: f64) {
        self.rect(x, y, w, 2.0, HIGHLIGHT);
        self.rect(x, y + h - 2.0, w, 2.0, HIGHLIGHT);
        self.rect(x, y, 2.0, h, HIGHLIGHT);
        self.rect(x + w - 2.0, y, 2.0, h, HIGHLIGHT);
    }

    /// Text at `size` font pixels per design pixel (SMALL or 2).
    fn text(&mut self, x: f64, y: f64, s: &str, colour: [u8; 3], size: f64) {
        let (x, y) = (self.ox + x * self.u, self.oy + y * self.u);
        self.c.text_at(x, y, s, colour, size * self.u);
    }

    /// Small text from (x, y), wrapped between words to the design's right margin; returns the
    /// y under its last line.
    fn para(&mut self, x: f64, y: f64, s: &str, colour: [u8; 3]) -> f64 {
        let cols = ((SIZE.0 as f64 - MARGIN - x) / (8.0 * SMALL))
            .floor()
            .max(1.0) as usize;
        let mut y = y;
        for line in wrap(s, cols) {
            self.text(x, y, &line, colour, SMALL);
            y += LINE;
        }
        y
    }
}

fn mix(a: [u8; 3], b: [u8; 3], t: f64) -> [u8; 3] {
    let t = t.clamp(0.0, 1.0);
    std::array::from_fn(|k| (f64::from(a[k]) * (1.0 - t) + f64::from(b[k]) * t).round() as u8)
}

/// A score: warm above 0, cool below, by its size against `range`.
fn heat(s: f32, range: f32) -> [u8; 3] {
    let t = f64::from(s / range);
    if t >= 0.0 {
        mix(FUTURE, WARM, t.sqrt())
    } else {
        mix(FUTURE, COOL, (-t).sqrt())
    }
}

/// A probability, on a dark-to-bright scale (a power below 1/2: most are small).
fn prob(p: f32) -> [u8; 3] {
    mix(
        [34, 36, 48],
        [255, 236, 150],
        f64::from(p.max(0.0)).powf(0.4),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
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
        assert_eq!(scene.walk.len(), TILES + 1);
        assert!(
            scene.walk_error < 1e-5,
            "online vs standard {}",
            scene.walk_error
        );
        // The max grew at least once after the first block in some shown row: the rescale the
        // visual explains happens on these inputs.
        let rescaled = (2..=TILES).any(|b| scene.walk[b].iter().any(|r| r.alpha < 1.0));
        assert!(rescaled, "no block raised a row's max");
        for e in scene.grad_error {
            assert!(e < 1e-5, "gradient error {e}");
        }
        // Pass 1 then pass 2, each over the causal tiles.
        let causal = TILES * (TILES + 1) / 2;
        assert_eq!(scene.steps.len(), 2 * causal);
        assert!(scene.steps[..causal].iter().all(|s| s.pass == 1));
        assert!(scene.steps[causal..].iter().all(|s| s.pass == 2));
    }

    /// On a software adapter stage 4's note starts with why the CPU path can win, and the
    /// lines that fit under a two-line summary hold all of it.
    #[test]
    fn the_software_caveat_is_never_left_out() {
        let profiles = kiln_app::kiln::device::stored_profiles().unwrap();
        for (name, profile) in &profiles {
            let caveat = software_caveat(profile);
            assert_eq!(caveat.is_empty(), !profile.is_software(), "{name}");
            let note = format!(
                "{caveat}measured on {}, GPU times from the adapter's timestamps; CPU path: \
                 this page's wasm build, one thread",
                profile.name
            );
            let shown: Vec<String> = note_lines(&note, 588.0 + 2.0 * LINE)
                .into_iter()
                .map(|(_, l)| l)
                .collect();
            let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
            let shown = words(&shown.join(" "));
            assert!(
                shown.len() >= words(caveat).len()
                    && shown[..words(caveat).len()] == words(caveat)[..],
                "{name}: {shown:?}"
            );
        }
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
