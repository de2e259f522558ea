//! Presenter mode: the walkthrough's ten stages (text → tokens → embeddings → layernorm → Q, K,
//! V → scores → softmax → ·V → add → layernorm), each with its words, its code and a live
//! visual of that stage's tensor for the current sentence. The tensors come from one forward
//! pass on the demo's path (a [`Trace`]); the visuals are drawn on the CPU, and a highlighted
//! character, token, row or head moves with time so that a still tensor is still alive on screen.
//!
//! `draw` picks the stage: the text and its tokens (`text`) need no forward pass, the rest
//! (`tensors`) draw the trace with the plots of `plot`.

mod plot;
mod scene;
mod tensors;
mod text;
mod trace;

pub use scene::{HEIGHT, Scene, TITLES, WIDTH};
pub use trace::Trace;

use crate::heatmap::{DIM, Image, TEXT};

/// The visual of `stage` (0-based).
pub fn draw(stage: usize, scene: &Scene<'_>) -> Image {
    let mut img = Image::new(WIDTH, HEIGHT);
    let title = TITLES.get(stage).copied().unwrap_or("");
    img.text(16, 12, &format!("{}. {title}", stage + 1), DIM, 2, false);
    // Where the numbers come from: the path, and from Q, K, V on the layer.
    let place = match scene.trace {
        Some(t) if stage >= 4 => format!("{} · layer {}/{}", scene.path, t.layer + 1, scene.layers),
        _ => format!("{} path", scene.path),
    };
    let width = place.chars().count() * 16;
    img.text(WIDTH.saturating_sub(16 + width), 12, &place, DIM, 2, false);
    match stage {
        0 => text::text_stage(&mut img, scene),
        1 => text::token_stage(&mut img, scene),
        _ => match scene.trace {
            Some(trace) => tensors::tensor_stage(&mut img, stage, trace, scene),
            None => {
                img.text(16, 60, "computing...", TEXT, 2, false);
            }
        },
    }
    img
}

#[cfg(test)]
mod tests {
    use super::scene::ROW_PERIOD;
    use super::*;

    /// The stages drawn before the forward pass ends, with a real vocabulary's five-digit ids and
    /// long words: every text inside the picture (the browser test runs the synthetic weights,
    /// whose ids are short), whichever token is lit.
    #[test]
    fn texts_with_five_digit_ids_stay_inside() {
        let tokens: Vec<String> = [
            "[CLS]",
            "extraordinarily",
            "##able",
            "tokenisation",
            "[SEP]",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        let ids = [101, 30521, 29999, 12345, 102];
        for stage in 0..2 {
            for lit in 0..tokens.len() {
                let scene = Scene {
                    text: "extraordinarily able tokenisation",
                    tokens: &tokens,
                    ids: &ids,
                    trace: None,
                    layers: 6,
                    head: 0,
                    vocab: 30522,
                    hidden: 384,
                    path: "GPU",
                    synthetic: false,
                    time: lit as f32 * ROW_PERIOD + 0.01,
                };
                let img = draw(stage, &scene);
                for &[x, y, w, h, _] in &img.texts {
                    assert!(
                        x + w <= img.width && y + h <= img.height,
                        "stage {}, token {lit} lit: a text at ({x}, {y}) {w} x {h} is cut off",
                        stage + 1
                    );
                }
            }
        }
    }
}
