//! Presenter mode: the walkthrough's ten stages (text → tokens → embeddings → layernorm → Q, K,
//! V → scores → softmax → ·V → add → layernorm), each with its words, its code and a live
//! visual of that stage's tensor for the current sentence. The tensors come from one forward
//! pass on the demo's path (a [`Trace`]); the visuals are drawn on the CPU, and a highlighted
//! character, token, row or head moves with time so that a still tensor is still alive on screen.

use kiln_app::kiln::cpu::Array;
use kiln_app::kiln::{self, Tensor};
use kiln_app::raster::wrap;

use crate::encoder::{Acts, Forward};
use crate::heatmap::{DIM, Image, TEXT, colour, label};

/// The visual's size: portrait, to fill the left 44 % of a 16:9 presenter screen.
pub const WIDTH: usize = 640;
pub const HEIGHT: usize = 800;

const ACCENT: [u8; 3] = [255, 180, 84];
const HIGHLIGHT: [u8; 3] = [80, 220, 255];
const PANEL: [u8; 3] = [26, 26, 36];
const SPECIAL: [u8; 3] = [60, 60, 76];
const WORD: [u8; 3] = [40, 72, 120];
const PIECE: [u8; 3] = [92, 52, 120];

/// The titles of the stages, in order (the words and the code are in `demo.rs`).
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
const ROW_PERIOD: f32 = 0.9;
/// Seconds a head stays on the scores stage.
const HEAD_PERIOD: f32 = 2.0;
/// Characters per second on the text stage.
const CHAR_RATE: f32 = 6.0;

/// The tensors of one forward pass the walkthrough draws, on the CPU, for one layer.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The layer the activations are from (0-based).
    pub layer: usize,
    /// Word + position + type rows, [N, D].
    pub embedded: Array,
    /// Their layernorm, [N, D]: the first layer's input.
    pub embedded_ln: Array,
    /// The layer's input, [N, D].
    pub input: Array,
    pub acts: Acts<Array>,
}

impl Trace {
    /// The trace of `layer` from a CPU forward pass (`None` past the last layer).
    pub fn from_cpu(f: &Forward<Array>, layer: usize) -> Option<Trace> {
        Some(Trace {
            layer,
            embedded: f.embedded.clone(),
            embedded_ln: f.hidden.first()?.clone(),
            input: f.hidden.get(layer)?.clone(),
            acts: f.acts.get(layer)?.clone(),
        })
    }

    /// The trace of `layer` read back from a GPU forward pass.
    pub async fn read(f: &Forward<Tensor>, layer: usize) -> kiln::Result<Trace> {
        let missing = || kiln::Error::InvalidArgument {
            op: "walkthrough",
            detail: format!("layer {layer} is past the model's {} layers", f.acts.len()),
        };
        let s = f.acts.get(layer).ok_or_else(missing)?;
        Ok(Trace {
            layer,
            embedded: fetch(&f.embedded).await?,
            embedded_ln: fetch(f.hidden.first().ok_or_else(missing)?).await?,
            input: fetch(f.hidden.get(layer).ok_or_else(missing)?).await?,
            acts: Acts {
                q: fetch(&s.q).await?,
                k: fetch(&s.k).await?,
                v: fetch(&s.v).await?,
                scores: fetch(&s.scores).await?,
                probs: fetch(&s.probs).await?,
                mixed: fetch(&s.mixed).await?,
                attn: fetch(&s.attn).await?,
                sum: fetch(&s.sum).await?,
                normed: fetch(&s.normed).await?,
                out: fetch(&s.out).await?,
            },
        })
    }
}

async fn fetch(t: &Tensor) -> kiln::Result<Array> {
    Array::new(t.shape(), t.read().await?)
}

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
        0 => text_stage(&mut img, scene),
        1 => token_stage(&mut img, scene),
        _ => match scene.trace {
            Some(trace) => tensor_stage(&mut img, stage, trace, scene),
            None => {
                img.text(16, 60, "computing...", TEXT, 2, false);
            }
        },
    }
    img
}

/// The index that is lit at `time`, cycling through `n` every `period` seconds.
fn cycle(time: f32, period: f32, n: usize) -> usize {
    ((time.max(0.0) / period) as usize) % n.max(1)
}

fn tensor_stage(img: &mut Image, stage: usize, t: &Trace, scene: &Scene<'_>) {
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

/// The tensor's name and shape, and a line under it.
fn heading(img: &mut Image, name: &str, shape: &[usize], note: &str) {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    img.text(
        16,
        40,
        &format!("{name} [{}]", dims.join(", ")),
        ACCENT,
        2,
        false,
    );
    img.text(16, 64, note, DIM, 2, false);
}

/// A rectangle of the visual.
#[derive(Clone, Copy, Debug)]
struct Area {
    x: usize,
    y: usize,
    w: usize,
    h: usize,
}

/// An [N, D] matrix with the lit row outlined, each row's spread beside it, and the lit row's
/// values as bars below.
fn matrix_with_row(
    img: &mut Image,
    data: &[f32],
    n: usize,
    tokens: &[String],
    row: usize,
    signed: bool,
) {
    let cols = data.len() / n.max(1);
    let area = Area {
        x: 128,
        y: 96,
        w: 420,
        h: 428,
    };
    matrix(img, &area, data, n, cols, tokens, Some(row), 1);
    spread_column(img, &area, data, n, cols, row);
    row_bars(img, data, n, cols, tokens, row, signed);
}

/// Rows × cols values as coloured cells (blue negative, orange positive, scaled to the
/// matrix's own spread), token labels on the left, `groups` column groups (heads) separated.
#[allow(clippy::too_many_arguments)]
fn matrix(
    img: &mut Image,
    a: &Area,
    data: &[f32],
    rows: usize,
    cols: usize,
    tokens: &[String],
    lit: Option<usize>,
    groups: usize,
) {
    if rows == 0 || cols == 0 {
        return;
    }
    let scale = spread(data) * 2.5;
    let gap = usize::from(a.h / rows >= 6);
    for i in 0..rows {
        let (y0, y1) = (a.y + i * a.h / rows, a.y + (i + 1) * a.h / rows);
        for j in 0..cols {
            let (x0, x1) = (a.x + j * a.w / cols, a.x + (j + 1) * a.w / cols);
            let v = data.get(i * cols + j).copied().unwrap_or(0.0);
            img.rect(
                x0,
                y0,
                x1 - x0,
                (y1 - y0).saturating_sub(gap).max(1),
                signed_colour(v / scale),
            );
        }
        let rh = y1 - y0;
        // Labels never below 16 pixels (readable on a projector): where the rows are thinner,
        // one row in every few is labelled, and always the lit one.
        let stride = (a.h / rows).max(1);
        let stride = 18usize.div_ceil(stride);
        if let Some(t) = tokens.get(i)
            && (i % stride == 0 || lit == Some(i))
        {
            let s = 2;
            let t = label(t, 7);
            let w = t.chars().count() * 8 * s;
            let c = if lit == Some(i) { HIGHLIGHT } else { TEXT };
            img.text(
                a.x.saturating_sub(w + 6),
                y0 + rh.saturating_sub(8 * s) / 2,
                &t,
                c,
                s,
                false,
            );
        }
    }
    // Head boundaries: thin dark lines between column groups.
    for g in 1..groups.max(1) {
        let x = a.x + g * cols / groups * a.w / cols;
        img.rect(x, a.y, 1, a.h, [0, 0, 0]);
    }
    if let Some(i) = lit.filter(|&i| i < rows) {
        let (y0, y1) = (a.y + i * a.h / rows, a.y + (i + 1) * a.h / rows);
        outline(
            img,
            a.x.saturating_sub(2),
            y0.saturating_sub(2),
            a.w + 4,
            y1 - y0 + 3,
            HIGHLIGHT,
        );
    }
}

/// Each row's standard deviation as a bar right of the matrix (layernorm makes them equal).
fn spread_column(img: &mut Image, a: &Area, data: &[f32], rows: usize, cols: usize, lit: usize) {
    let x = a.x + a.w + 12;
    img.text(x, a.y.saturating_sub(18), "σ", DIM, 2, false);
    let sds: Vec<f32> = (0..rows).map(|i| row_stats(data, cols, i).1).collect();
    let max = sds.iter().copied().fold(f32::MIN_POSITIVE, f32::max);
    for (i, sd) in sds.iter().enumerate() {
        let (y0, y1) = (a.y + i * a.h / rows, a.y + (i + 1) * a.h / rows);
        let w = ((sd / max) * 60.0).round() as usize;
        let c = if i == lit { HIGHLIGHT } else { DIM };
        img.rect(x, y0, w.max(1), (y1 - y0).saturating_sub(1).max(1), c);
    }
}

/// The lit row's values as bars (zero in the middle when signed), with its mean and σ.
fn row_bars(
    img: &mut Image,
    data: &[f32],
    rows: usize,
    cols: usize,
    tokens: &[String],
    row: usize,
    signed: bool,
) {
    if rows == 0 || cols == 0 {
        return;
    }
    let (mean, sd) = row_stats(data, cols, row);
    let name = tokens.get(row).map_or(String::new(), |t| label(t, 8));
    img.text(
        16,
        552,
        &format!("row {} '{name}': mean {mean:+.2}, σ {sd:.2}", row + 1),
        TEXT,
        2,
        false,
    );
    let values = data.get(row * cols..(row + 1) * cols).unwrap_or(&[]);
    bars(
        img,
        &Area {
            x: 16,
            y: 584,
            w: 608,
            h: 196,
        },
        values,
        signed,
        None,
    );
}

/// Values as vertical bars filling the area: around a zero line when signed, else from the
/// bottom, scaled to the largest magnitude; `lit` bar highlighted.
fn bars(img: &mut Image, a: &Area, values: &[f32], signed: bool, lit: Option<usize>) {
    img.rect(a.x, a.y, a.w, a.h, PANEL);
    let n = values.len();
    if n == 0 {
        return;
    }
    let max = values.iter().fold(f32::MIN_POSITIVE, |m, v| m.max(v.abs()));
    let zero = if signed { a.y + a.h / 2 } else { a.y + a.h - 1 };
    let room = if signed { a.h / 2 - 2 } else { a.h - 4 } as f32;
    for (j, v) in values.iter().enumerate() {
        let (x0, x1) = (a.x + j * a.w / n, a.x + (j + 1) * a.w / n);
        let h = ((v.abs() / max) * room).round() as usize;
        let top = if *v >= 0.0 {
            zero.saturating_sub(h)
        } else {
            zero
        };
        let c = match (lit == Some(j), signed) {
            (true, _) => HIGHLIGHT,
            (false, true) => signed_colour(v / max),
            (false, false) => colour(v / max),
        };
        let w = (x1 - x0).saturating_sub(usize::from(x1 - x0 > 3)).max(1);
        img.rect(x0, top, w, h.max(1), c);
    }
    img.rect(a.x, zero, a.w, 1, DIM);
}

/// Mean and standard deviation of row `i` of a [rows, cols] matrix.
fn row_stats(data: &[f32], cols: usize, i: usize) -> (f32, f32) {
    let r = data.get(i * cols..(i + 1) * cols).unwrap_or(&[]);
    if r.is_empty() {
        return (0.0, 0.0);
    }
    let mean = r.iter().sum::<f32>() / r.len() as f32;
    let var = r.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / r.len() as f32;
    (mean, var.sqrt())
}

/// The root mean square of the values (1 for an empty or all-zero tensor).
fn spread(data: &[f32]) -> f32 {
    let ms = data.iter().map(|v| v * v).sum::<f32>() / data.len().max(1) as f32;
    if ms > 0.0 { ms.sqrt() } else { 1.0 }
}

/// A signed value in about [-1, 1]: blue below zero, orange above, dark at zero.
fn signed_colour(t: f32) -> [u8; 3] {
    const ZERO: [f32; 3] = [22.0, 22.0, 30.0];
    const NEG: [f32; 3] = [70.0, 150.0, 255.0];
    const POS: [f32; 3] = [255.0, 160.0, 60.0];
    let f = t.abs().clamp(0.0, 1.0).powf(0.7);
    let end = if t < 0.0 { NEG } else { POS };
    let mix = |c: usize| (ZERO[c] + (end[c] - ZERO[c]) * f) as u8;
    [mix(0), mix(1), mix(2)]
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

fn outline(img: &mut Image, x: usize, y: usize, w: usize, h: usize, c: [u8; 3]) {
    img.rect(x, y, w, 2, c);
    img.rect(x, (y + h).saturating_sub(2), w, 2, c);
    img.rect(x, y, 2, h, c);
    img.rect((x + w).saturating_sub(2), y, 2, h, c);
}

/// One head's [N, N] matrix large with the tokens on both axes; `lit` row outlined.
#[allow(clippy::too_many_arguments)]
fn square(
    img: &mut Image,
    a: &Area,
    data: &[f32],
    n: usize,
    tokens: &[String],
    lit: Option<usize>,
    weights: bool,
    scale: f32,
) {
    if n == 0 {
        return;
    }
    let cell = (a.w / n).max(1);
    for i in 0..n {
        for j in 0..n {
            let v = data.get(i * n + j).copied().unwrap_or(0.0) * scale;
            let c = if weights { colour(v) } else { signed_colour(v) };
            let g = usize::from(cell >= 6);
            img.rect(a.x + j * cell, a.y + i * cell, cell - g, cell - g, c);
        }
        // Labels at 16 pixels at least; where the cells are thinner, every few tokens.
        let stride = 18usize.div_ceil(cell);
        if let Some(t) = tokens.get(i) {
            let s = 2;
            let t = label(t, 7);
            let w = t.chars().count() * 8 * s;
            let c = if lit == Some(i) { HIGHLIGHT } else { TEXT };
            if i % stride == 0 || lit == Some(i) {
                img.text(
                    a.x.saturating_sub(w + 6),
                    a.y + i * cell + cell.saturating_sub(8 * s) / 2,
                    &t,
                    c,
                    s,
                    false,
                );
            }
            // Keys above the columns, read upwards.
            if i % stride == 0 {
                let t = label(tokens.get(i).map_or("", String::as_str), 6);
                img.text_up(
                    (a.x + i * cell + cell / 2).saturating_sub(8),
                    a.y.saturating_sub(6),
                    &t,
                    DIM,
                    2,
                );
            }
        }
    }
    if let Some(i) = lit {
        outline(
            img,
            a.x.saturating_sub(2),
            (a.y + i * cell).saturating_sub(2),
            cell * n + 3,
            cell + 3,
            HIGHLIGHT,
        );
    }
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

fn text_stage(img: &mut Image, scene: &Scene<'_>) {
    let chars: Vec<char> = scene.text.chars().collect();
    img.text(
        16,
        40,
        &format!("text: {} characters", chars.len()),
        ACCENT,
        2,
        false,
    );
    img.text(16, 64, "what the person typed", DIM, 2, false);
    if chars.is_empty() {
        img.text(16, 100, "(empty: type a sentence)", DIM, 2, false);
        return;
    }
    let lit = cycle(scene.time, 1.0 / CHAR_RATE, chars.len());
    // The sentence large, wrapped at 24 characters; the lit character on a box.
    let (scale, cols) = (3, 24);
    let mut k = 0;
    let mut y: usize = 100;
    for line in wrap(scene.text, cols) {
        for (c, ch) in line.chars().enumerate() {
            // `wrap` drops the spaces it breaks at: keep the index on the original text.
            while k < chars.len() && chars[k] != ch {
                k += 1;
            }
            let x = 16 + c * 8 * scale;
            if k == lit {
                img.rect(
                    x.saturating_sub(2),
                    y.saturating_sub(3),
                    8 * scale + 4,
                    8 * scale + 6,
                    HIGHLIGHT,
                );
                img.text(x, y, &ch.to_string(), [10, 10, 14], scale, false);
            } else {
                img.text(x, y, &ch.to_string(), TEXT, scale, false);
            }
            k += 1;
        }
        y += 40;
    }
    let ch = chars[lit];
    y += 20;
    img.text(
        16,
        y,
        &format!("character {} of {}: '{ch}'", lit + 1, chars.len()),
        TEXT,
        2,
        false,
    );
    img.text(
        16,
        y + 28,
        &format!("code point U+{:04X}", u32::from(ch)),
        DIM,
        2,
        false,
    );
    // The bytes a computer holds: UTF-8, the lit character's bytes highlighted.
    y += 76;
    img.text(16, y, "as UTF-8 bytes:", DIM, 2, false);
    y += 28;
    let mut at = 0;
    for (i, c) in chars.iter().enumerate() {
        let mut buf = [0u8; 4];
        for b in c.encode_utf8(&mut buf).bytes() {
            let (x, yy) = (16 + (at % 16) * 38, y + (at / 16) * 24);
            if yy + 16 > 580 {
                break;
            }
            let colour = if i == lit { HIGHLIGHT } else { DIM };
            img.text(x, yy, &format!("{b:02x}"), colour, 2, false);
            at += 1;
        }
    }
    // The same numbers as bars: the text is already a vector of numbers.
    let codes: Vec<f32> = chars.iter().map(|&c| u32::from(c) as f32).collect();
    img.text(16, 594, "each character's number:", DIM, 2, false);
    let area = Area {
        x: 16,
        y: 620,
        w: 608,
        h: 160,
    };
    bars(img, &area, &codes, false, Some(lit));
}

fn token_stage(img: &mut Image, scene: &Scene<'_>) {
    let n = scene.tokens.len();
    img.text(
        16,
        40,
        &format!("tokens: {n} WordPiece pieces"),
        ACCENT,
        2,
        false,
    );
    img.text(16, 64, "## marks a piece of a word", DIM, 2, false);
    if n == 0 {
        return;
    }
    let lit = cycle(scene.time, ROW_PERIOD, n);
    let (mut x, mut y) = (16, 96);
    for (i, (t, id)) in scene.tokens.iter().zip(scene.ids).enumerate() {
        let t = label(t, 16);
        let w = (t.chars().count().max(3) * 16 + 16).max(id.to_string().len() * 16 + 16);
        if x + w > WIDTH - 16 {
            x = 16;
            y += 62;
        }
        if y + 52 > 470 {
            break;
        }
        let fill = if i == lit {
            HIGHLIGHT
        } else if t.starts_with('[') {
            SPECIAL
        } else if t.starts_with("##") {
            PIECE
        } else {
            WORD
        };
        img.rect(x, y, w, 52, fill);
        let ink = if i == lit { [10, 10, 14] } else { TEXT };
        img.text(x + 8, y + 8, &t, ink, 2, false);
        img.text(x + 8, y + 30, &id.to_string(), ink, 2, false);
        x += w + 8;
    }
    let (t, id) = (&scene.tokens[lit], scene.ids.get(lit).copied().unwrap_or(0));
    img.text(
        16,
        486,
        &format!("token {} of {n}: '{}'", lit + 1, label(t, 14)),
        TEXT,
        2,
        false,
    );
    img.text(
        16,
        514,
        &format!("id {id}: row {id} of the table"),
        TEXT,
        2,
        false,
    );
    img.text(
        16,
        542,
        &format!("(the embedding table: {} rows)", scene.vocab),
        DIM,
        2,
        false,
    );
    // What the model receives: a vector of numbers.
    let ids: Vec<f32> = scene.ids.iter().map(|&i| i as f32).collect();
    img.text(16, 594, "the ids, the model's input:", DIM, 2, false);
    let area = Area {
        x: 16,
        y: 620,
        w: 608,
        h: 160,
    };
    bars(img, &area, &ids, false, Some(lit));
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

    #[test]
    fn the_lit_index_cycles() {
        assert_eq!(cycle(0.0, 1.0, 3), 0);
        assert_eq!(cycle(1.5, 1.0, 3), 1);
        assert_eq!(cycle(3.2, 1.0, 3), 0);
        assert_eq!(cycle(5.0, 1.0, 0), 0, "no rows: index 0, no panic");
    }
}
