//! The plots the tensor stages are made of: matrices of coloured cells with token labels, a
//! row's values as bars, each row's spread, and the palette they share.

use crate::heatmap::{DIM, Image, TEXT, colour, label};

pub(super) const ACCENT: [u8; 3] = [255, 180, 84];
pub(super) const HIGHLIGHT: [u8; 3] = [80, 220, 255];
const PANEL: [u8; 3] = [26, 26, 36];

/// The tensor's name and shape, and a line under it.
pub(super) fn heading(img: &mut Image, name: &str, shape: &[usize], note: &str) {
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
pub(super) struct Area {
    pub(super) x: usize,
    pub(super) y: usize,
    pub(super) w: usize,
    pub(super) h: usize,
}

/// An [N, D] matrix with the lit row outlined, each row's spread beside it, and the lit row's
/// values as bars below.
pub(super) fn matrix_with_row(
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
pub(super) fn matrix(
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
pub(super) fn spread_column(
    img: &mut Image,
    a: &Area,
    data: &[f32],
    rows: usize,
    cols: usize,
    lit: usize,
) {
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
pub(super) fn row_bars(
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
pub(super) fn bars(img: &mut Image, a: &Area, values: &[f32], signed: bool, lit: Option<usize>) {
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
pub(super) fn spread(data: &[f32]) -> f32 {
    let ms = data.iter().map(|v| v * v).sum::<f32>() / data.len().max(1) as f32;
    if ms > 0.0 { ms.sqrt() } else { 1.0 }
}

/// A signed value in about [-1, 1]: blue below zero, orange above, dark at zero.
pub(super) fn signed_colour(t: f32) -> [u8; 3] {
    const ZERO: [f32; 3] = [22.0, 22.0, 30.0];
    const NEG: [f32; 3] = [70.0, 150.0, 255.0];
    const POS: [f32; 3] = [255.0, 160.0, 60.0];
    let f = t.abs().clamp(0.0, 1.0).powf(0.7);
    let end = if t < 0.0 { NEG } else { POS };
    let mix = |c: usize| (ZERO[c] + (end[c] - ZERO[c]) * f) as u8;
    [mix(0), mix(1), mix(2)]
}

pub(super) fn outline(img: &mut Image, x: usize, y: usize, w: usize, h: usize, c: [u8; 3]) {
    img.rect(x, y, w, 2, c);
    img.rect(x, (y + h).saturating_sub(2), w, 2, c);
    img.rect(x, y, 2, h, c);
    img.rect((x + w).saturating_sub(2), y, 2, h, c);
}

/// One head's [N, N] matrix large with the tokens on both axes; `lit` row outlined.
#[allow(clippy::too_many_arguments)]
pub(super) fn square(
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
