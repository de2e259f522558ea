//! Visual 5: flash-decoding. One new row against the cached keys, split into chunks that
//! workgroups take at once, each keeping its own (max, sum, output), which one combine pass
//! merges; checked against kiln's standard CPU attention.

use super::colour::{COOL, FUTURE, HIGHLIGHT, WARM, heat_colour};
use super::pen::{LINE, Pen, SMALL};
use super::problem::{D, N, Problem, row, score_range};
use crate::chart;

/// Keys per chunk (N / 4: four chunks).
const CHUNK: usize = N / 4;
pub(super) const CHUNKS: usize = N / CHUNK;

/// One chunk: the new row's max score over the chunk's keys, the sum of exp(s − m) and the
/// unnormalised output Σ exp(s − m) · v.
#[derive(Clone, Copy, Debug)]
pub(super) struct Part {
    m: f32,
    l: f32,
    acc: [f32; D],
}

// Not kiln's decode_split (base 2, tested equal below): the talk shows this natural-log form.
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

/// The visual's numbers: the last row as the new token, every earlier key cached.
#[derive(Clone, Debug)]
pub(super) struct Decode {
    pub parts: Vec<Part>,
    /// exp(m_c − M) per chunk.
    pub weights: Vec<f32>,
    out: [f32; D],
    /// Kiln's standard CPU attention's output for the row.
    want: [f32; D],
    pub error: f32,
}

impl Decode {
    /// The last row is the new token; it sees every key.
    pub fn new(p: &Problem) -> Decode {
        let last = N - 1;
        let s: Vec<f32> = (0..N).map(|j| p.scores[last * N + j]).collect();
        let vs: Vec<&[f32]> = (0..N).map(|j| row(&p.v, j)).collect();
        let parts = split(&s, &vs);
        let (out, weights) = combine(&parts);
        let want: [f32; D] = std::array::from_fn(|c| row(&p.standard.out.data, last)[c]);
        Decode {
            error: (0..D).map(|c| (out[c] - want[c]).abs()).fold(0.0, f32::max),
            parts,
            weights,
            out,
            want,
        }
    }

    /// The chunks read at once, their states, then the combine, at `t` seconds.
    pub fn draw(&self, pen: &mut Pen, t: f64, scores: &[f32]) {
        // The chunks fill at once (3 s), their states show (3 s), the combine (3 s), a hold (3 s).
        let tc = t % 12.0;
        let fill = (tc / 3.0).min(1.0);
        let (states, combined) = (tc >= 3.0, tc >= 6.0);
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
        let range = score_range(scores);
        // Bars scaled to the largest output shown, partial or final.
        let most = self
            .parts
            .iter()
            .flat_map(|p| p.acc.map(|a| (a / p.l).abs()))
            .chain(self.out.map(f32::abs))
            .fold(1e-6f32, f32::max);
        let bar = |x: f32| f64::from(x / most).clamp(-1.0, 1.0);
        let (cell, gap, x0) = (9.0, 14.0, 30.0);
        let width = CHUNK as f64 * cell;
        let strip = top + 30.0;
        for (c, part) in self.parts.iter().enumerate() {
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
                    heat_colour(scores[(N - 1) * N + j], range)
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
            let big_m = self
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
            for (c, (p, w)) in self.parts.iter().zip(&self.weights).enumerate() {
                pen.text(
                    20.0,
                    y + 26.0 + c as f64 * LINE,
                    &format!("chunk {}: e^(m-M) = {w:.3}, l {:.2}", c + 1, p.l),
                    chart::DIM,
                    SMALL,
                );
            }
            let base = y + 26.0 + CHUNKS as f64 * LINE + 36.0;
            for (c, (&o, &want)) in self.out.iter().zip(&self.want).enumerate() {
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
                    self.error
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
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use kiln_app::kiln::cpu::{self, Array, rel_l2};

    use super::*;

    /// The split's state per chunk is kiln's decode_split's, whose max is in base 2.
    #[test]
    fn the_split_is_kilns() {
        let p = Problem::new().unwrap();
        let d = Decode::new(&p);
        let q = Array::new(&[1, 1, 1, D], row(&p.q, N - 1).to_vec()).unwrap();
        let cache = |x: &[f32]| Array::new(&[1, 1, N, D], x.to_vec()).unwrap();
        let (k, v) = (cache(&p.k), cache(&p.v));
        let want = cpu::decode_split(&q, &k, &v, N, false, p.scale, CHUNK).unwrap();
        assert_eq!(want.chunks, CHUNKS);
        for (c, part) in d.parts.iter().enumerate() {
            let (m, l) = (want.max_sum[2 * c], want.max_sum[2 * c + 1]);
            assert!(
                (part.m - m * std::f32::consts::LN_2).abs() < 1e-5,
                "chunk {c}"
            );
            assert!((part.l - l).abs() < 1e-5 * l, "chunk {c}");
            assert!(
                rel_l2(&part.acc, &want.out[c * D..][..D]) < 1e-5,
                "chunk {c}"
            );
        }
    }
}
