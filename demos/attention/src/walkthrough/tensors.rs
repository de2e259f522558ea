//! The stages drawn from the trace: the embeddings, Q, K and V, one head's scores and softmax,
//! the weighted values, the residual sum and the last layernorm.

use kiln_app::kiln::cpu::Array;

use super::plot::{
    ACCENT, Area, HIGHLIGHT, bars, heading, matrix, matrix_with_row, outline, row_bars,
    signed_colour, spread, spread_column, square,
};
use super::scene::{ROW_PERIOD, Scene, WIDTH, cycle};
use super::trace::Trace;
use crate::heatmap::{DIM, Image, TEXT, label};

/// Seconds a head stays on the scores stage.
const HEAD_PERIOD: f32 = 2.0;

pub(super) fn tensor_stage(img: &mut Image, stage: usize, t: &Trace, scene: &Scene<'_>) {
    let s = &t.acts;
    let n = scene
        .tokens
        .len()
        .min(t.embedded.shape.first().copied().unwrap_or(0));
    let row = cycle(scene.time, ROW_PERIOD, n);
    match stage {
        2 => {
            heading(
                img,
                "embeddings",
                &t.embedded.shape,
                "word + position + type rows",
            );
            matrix_with_row(img, &t.embedded.data, n, scene.tokens, row, true);
        }
        3 => {
            heading(
                img,
                "layernorm(embeddings)",
                &t.embedded_ln.shape,
                "each row: mean 0, spread σ 1",
            );
            matrix_with_row(img, &t.embedded_ln.data, n, scene.tokens, row, true);
        }
        4 => {
            heading(
                img,
                "Q, K, V",
                &s.q.shape,
                &format!(
                    "x·W + b, split into {} heads",
                    s.q.shape.first().copied().unwrap_or(1)
                ),
            );
            let heads = s.q.shape.first().copied().unwrap_or(1);
            let names = ["Q  queries", "K  keys", "V  values"];
            for (k, (name, a)) in names.iter().zip([&s.q, &s.k, &s.v]).enumerate() {
                let y = 92 + k * 232;
                img.text(16, y, name, ACCENT, 2, false);
                let merged = merge_heads(a);
                let cols = merged.len() / n.max(1);
                let area = Area {
                    x: 128,
                    y: y + 22,
                    w: 496,
                    h: 196,
                };
                matrix(img, &area, &merged, n, cols, scene.tokens, Some(row), heads);
            }
        }
        5 => scores_stage(img, t, scene),
        6 => softmax_stage(img, t, scene, row),
        7 => {
            heading(
                img,
                "weights · V",
                &s.mixed.shape,
                "the heads side by side again",
            );
            let heads = s.mixed.shape.first().copied().unwrap_or(1);
            let merged = merge_heads(&s.mixed);
            let cols = merged.len() / n.max(1);
            let area = Area {
                x: 128,
                y: 96,
                w: 420,
                h: 428,
            };
            matrix(img, &area, &merged, n, cols, scene.tokens, Some(row), heads);
            spread_column(img, &area, &merged, n, cols, row);
            row_bars(img, &merged, n, cols, scene.tokens, row, true);
        }
        8 => {
            heading(
                img,
                "attention + input",
                &s.sum.shape,
                "the residual connection",
            );
            let names = ["attention output", "+ the layer's input", "= the sum"];
            for (k, (name, a)) in names.iter().zip([&s.attn, &t.input, &s.sum]).enumerate() {
                let y = 92 + k * 232;
                img.text(16, y, name, ACCENT, 2, false);
                let cols = a.data.len() / n.max(1);
                let area = Area {
                    x: 128,
                    y: y + 22,
                    w: 496,
                    h: 196,
                };
                matrix(img, &area, &a.data, n, cols, scene.tokens, Some(row), 1);
            }
        }
        _ => {
            heading(
                img,
                "layernorm(sum)",
                &s.normed.shape,
                "the feed-forward's input",
            );
            matrix_with_row(img, &s.normed.data, n, scene.tokens, row, true);
        }
    }
}

/// [heads, N, d] → [N, heads · d]: each token's heads side by side.
fn merge_heads(a: &Array) -> Vec<f32> {
    let [h, n, d] = match a.shape[..] {
        [h, n, d] => [h, n, d],
        _ => return a.data.clone(),
    };
    let mut out = vec![0.0; h * n * d];
    for head in 0..h {
        for i in 0..n {
            for c in 0..d {
                out[i * h * d + head * d + c] = a.data[(head * n + i) * d + c];
            }
        }
    }
    out
}

fn scores_stage(img: &mut Image, t: &Trace, scene: &Scene<'_>) {
    let s = &t.acts.scores;
    let [heads, n] = match s.shape[..] {
        [h, n, _] => [h, n],
        _ => return,
    };
    let d = t.acts.q.shape.get(2).copied().unwrap_or(1).max(1);
    let scale = 1.0 / (d as f32).sqrt();
    let head = cycle(scene.time, HEAD_PERIOD, heads);
    heading(
        img,
        "scores Q·K^T/sqrt(d)",
        &s.shape,
        &format!("head {} of {heads}: queries × keys", head + 1),
    );
    // One colour scale for every head, so that the heads compare.
    let all: Vec<f32> = s.data.iter().map(|v| v * scale).collect();
    let norm = 1.0 / (spread(&all) * 2.5);
    let one = all.get(head * n * n..(head + 1) * n * n).unwrap_or(&[]);
    head_square(img, one, n, scene.tokens, None, false, norm);
    // Every head small, the one shown above outlined.
    let thumb = (600usize.saturating_sub(8 * heads) / heads.max(1)).min(110);
    let y = 600;
    img.text(16, y - 20, "every head:", DIM, 2, false);
    for h in 0..heads {
        let x = 16 + h * (thumb + 8);
        let cell = (thumb / n.max(1)).max(1);
        for i in 0..n {
            for j in 0..n {
                let v = all.get((h * n + i) * n + j).copied().unwrap_or(0.0) * norm;
                img.rect(x + j * cell, y + 8 + i * cell, cell, cell, signed_colour(v));
            }
        }
        if h == head {
            outline(
                img,
                x.saturating_sub(3),
                y + 5,
                cell * n + 6,
                cell * n + 6,
                HIGHLIGHT,
            );
        }
        img.text(
            x,
            y + 16 + cell * n,
            &format!("{}", h + 1),
            if h == head { HIGHLIGHT } else { DIM },
            2,
            false,
        );
    }
}

/// One head's [n, n] matrix, large, tokens on both axes: where the scores and the softmax
/// stages draw it (`row` lit, `probs` for weights in 0..1, `norm` scaling signed values).
fn head_square(
    img: &mut Image,
    one: &[f32],
    n: usize,
    tokens: &[String],
    row: Option<usize>,
    probs: bool,
    norm: f32,
) {
    // Room above for the key labels (96 pixels) under the heading, and below for the lines
    // and bars of the softmax and scores stages.
    let size = 384 / n.max(1) * n;
    let area = Area {
        x: 136,
        y: 196,
        w: size,
        h: size,
    };
    square(img, &area, one, n, tokens, row, probs, norm);
}

fn softmax_stage(img: &mut Image, t: &Trace, scene: &Scene<'_>, row: usize) {
    let p = &t.acts.probs;
    let [heads, n] = match p.shape[..] {
        [h, n, _] => [h, n],
        _ => return,
    };
    let head = scene.head.min(heads.saturating_sub(1));
    heading(
        img,
        "softmax(scores)",
        &p.shape,
        &format!("head {} of {heads}; each row sums to 1", head + 1),
    );
    let one = p.data.get(head * n * n..(head + 1) * n * n).unwrap_or(&[]);
    head_square(img, one, n, scene.tokens, Some(row), true, 1.0);
    let weights = one.get(row * n..(row + 1) * n).unwrap_or(&[]);
    let (best, w) =
        weights.iter().enumerate().fold(
            (0, 0.0),
            |(bi, bw), (i, &w)| if w > bw { (i, w) } else { (bi, bw) },
        );
    let name = |i: usize| scene.tokens.get(i).map_or(String::new(), |t| label(t, 10));
    // Only a trained model's weights say what a token attends to; the longest line that fits.
    let (a, b) = (name(row), name(best));
    let lines = if scene.synthetic {
        [
            format!("'{a}' -> '{b}' {w:.2} (random)"),
            format!("'{a}' -> '{b}' (random)"),
        ]
    } else {
        [
            format!("'{a}' attends most to '{b}': {w:.2}"),
            format!("'{a}' attends most to '{b}'"),
        ]
    };
    let fits = |l: &&String| 16 + l.chars().count() * 16 <= WIDTH - 16;
    let line = lines
        .iter()
        .find(fits)
        .map_or_else(|| format!("'{a}' -> '{b}'"), String::clone);
    img.text(16, 596, &line, TEXT, 2, false);
    bars(
        img,
        &Area {
            x: 16,
            y: 624,
            w: 608,
            h: 156,
        },
        weights,
        false,
        Some(best),
    );
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn heads_merge_side_by_side() {
        // [2 heads, 2 tokens, 1]: token 0 has (h0, h1) = (1, 3), token 1 has (2, 4).
        let a = Array::new(&[2, 2, 1], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(merge_heads(&a), vec![1.0, 3.0, 2.0, 4.0]);
    }
}
