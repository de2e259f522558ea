//! What every stage's visual shares: the picture's size, the stages' titles, the scene it shows
//! and the clock that moves its highlight.

use super::trace::Trace;

/// The visual's size: portrait, to fill the left 44 % of a 16:9 presenter screen.
pub const WIDTH: usize = 640;
pub const HEIGHT: usize = 800;

/// The titles of the stages, in order (the words and the code are in `stages.rs`).
pub const TITLES: [&str; 10] = [
    "Text",
    "Tokens",
    "Embeddings",
    "Layer norm",
    "Q, K, V",
    "Scores",
    "Softmax",
    "Weights · V",
    "Add: the residual",
    "Layer norm again",
];

/// Seconds a highlighted row (or token) stays before the next one lights up.
pub(super) const ROW_PERIOD: f32 = 0.9;

/// What a stage's visual shows: the sentence, its tokens, the trace, and the time.
#[derive(Debug)]
pub struct Scene<'a> {
    pub text: &'a str,
    pub tokens: &'a [String],
    pub ids: &'a [u32],
    /// `None` while the forward pass is still running.
    pub trace: Option<&'a Trace>,
    pub layers: usize,
    /// The head the softmax stage shows (the demo's current head).
    pub head: usize,
    pub vocab: usize,
    pub hidden: usize,
    /// `GPU` or `CPU`.
    pub path: &'a str,
    /// The weights are the built-in synthetic ones: what the visuals read from them means
    /// nothing, and they say so.
    pub synthetic: bool,
    /// Seconds since the demo started: the highlights move with it.
    pub time: f32,
}

/// The index that is lit at `time`, cycling through `n` every `period` seconds.
pub(super) fn cycle(time: f32, period: f32, n: usize) -> usize {
    ((time.max(0.0) / period) as usize) % n.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lit_index_cycles() {
        assert_eq!(cycle(0.0, 1.0, 3), 0);
        assert_eq!(cycle(1.5, 1.0, 3), 1);
        assert_eq!(cycle(3.2, 1.0, 3), 0);
        assert_eq!(cycle(5.0, 1.0, 0), 0, "no rows: index 0, no panic");
    }
}
