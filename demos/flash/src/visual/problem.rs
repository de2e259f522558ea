//! The small attention problem behind the visuals: one head of random Q, K, V and dO from a
//! fixed seed, its scores, and what kiln's CPU references answer for it (the standard forward
//! and backward, the flash forward's O and LSE), which the visuals' own arithmetic is checked
//! against.

use kiln_app::kiln::cpu::{self, Array, Forward, Grads};
use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::error::Result;

/// One head, N queries and keys, head dimension D, square tiles of BLOCK.
pub(super) const N: usize = 48;
pub(super) const D: usize = 8;
pub(super) const BLOCK: usize = 8;
pub(super) const TILES: usize = N / BLOCK;

/// The inputs, row-major [N, D], and kiln's answers for them under the causal mask.
#[derive(Clone, Debug)]
pub(super) struct Problem {
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub d_o: Vec<f32>,
    pub scale: f32,
    /// scale · q_i·k_j for every (i, j), row-major; the causal mask hides j > i.
    pub scores: Vec<f32>,
    /// Kiln's standard CPU attention and its gradients.
    pub standard: Forward,
    pub grads: Grads,
    /// Kiln's CPU flash forward: the O and LSE the backward starts from.
    pub flash: Forward,
}

impl Problem {
    /// Draws the inputs from a fixed seed and runs kiln's references on them.
    pub fn new() -> Result<Problem> {
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
        let scores = cpu::matmul(&qa, &cpu::transpose(&ka)?)?
            .data
            .into_iter()
            .map(|s| scale * s)
            .collect();
        Ok(Problem {
            q,
            k,
            v,
            d_o,
            scale,
            scores,
            standard,
            grads,
            flash,
        })
    }
}

/// Whether query i sees key j under the causal mask.
pub(super) fn visible(i: usize, j: usize) -> bool {
    j <= i
}

/// Row `i` of an [N, D] array.
pub(super) fn row(x: &[f32], i: usize) -> &[f32] {
    &x[i * D..][..D]
}

// Kiln's own row·row product is private to the kernel crate; the recompute excerpt needs one.
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The largest |score|, for the colour scale.
pub(super) fn score_range(scores: &[f32]) -> f32 {
    scores.iter().fold(1e-6f32, |a, s| a.max(s.abs()))
}
