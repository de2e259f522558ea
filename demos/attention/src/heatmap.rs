//! Drawing on the CPU: attention weights as heatmaps with the tokens on both axes, the code
//! panel, and the grid of every layer and head for the PNG. Pixels are RGBA8 packed in u32
//! (red in the low byte), as the display pass reads them.

/// The view's size and layout: the heatmap fills the right of the view, its key labels above
/// it and its query labels to its left; the left column holds the title, the colour scale, the
/// weight under the pointer and the head's strongest links (natively the HUD covers its top).
pub const WIDTH: usize = 1600;
pub const HEIGHT: usize = 900;
/// The heatmap's top-left corner and its largest side, in pixels of the view.
const MAP_X: usize = 926;
const MAP_Y: usize = 232;
const MAP_SIZE: usize = 652;
/// The left column's margin.
const LEFT: usize = 24;
/// Labels are never drawn smaller than this (font pixels of 2 view pixels: 16 pixels tall), so
/// that they stay readable when the view is shown at about 1100 pixels wide; where the cells
/// are smaller, only every `stride`-th token is labelled.
const LABEL_SCALE: usize = 2;
/// Room between two labels, in view pixels.
const LABEL_GAP: usize = 2;

pub const BACKGROUND: [u8; 3] = [14, 14, 20];
pub const TEXT: [u8; 3] = [225, 225, 232];
pub const DIM: [u8; 3] = [140, 140, 155];

#[derive(Debug)]
pub struct Image {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u32>,
    /// Every text drawn: its box (x, y, width, height) and its letters' height, in pixels of
    /// the image: the page's tests check that each is readable and inside the picture.
    pub texts: Vec<[usize; 5]>,
}

/// The 8×8 bitmap of `ch` (blank for a character the fonts lack).
fn glyph(ch: char) -> [u8; 8] {
    kiln_app::raster::font_glyph(ch).unwrap_or([0; 8])
}

fn pack([r, g, b]: [u8; 3]) -> u32 {
    u32::from_le_bytes([r, g, b, 255])
}

impl Image {
    pub fn new(width: usize, height: usize) -> Image {
        Image {
            width,
            height,
            pixels: vec![pack(BACKGROUND); width * height],
            texts: Vec::new(),
        }
    }

    pub fn rect(&mut self, x: usize, y: usize, w: usize, h: usize, colour: [u8; 3]) {
        let c = pack(colour);
        for yy in y.min(self.height)..(y + h).min(self.height) {
            for xx in x.min(self.width)..(x + w).min(self.width) {
                self.pixels[yy * self.width + xx] = c;
            }
        }
    }

    /// Text from the 8×8 font, `scale` pixels per font pixel; `vertical` stacks the characters.
    pub fn text(
        &mut self,
        x: usize,
        y: usize,
        s: &str,
        colour: [u8; 3],
        scale: usize,
        vertical: bool,
    ) {
        let c = pack(colour);
        let count = s.chars().count();
        if count > 0 {
            let (w, h) = if vertical {
                (8 * scale, count * 9 * scale)
            } else {
                (count * 8 * scale, 8 * scale)
            };
            self.texts.push([x, y, w, h, 8 * scale]);
        }
        for (k, ch) in s.chars().enumerate() {
            let glyph = glyph(ch);
            let (ox, oy) = if vertical {
                (x, y + k * 9 * scale)
            } else {
                (x + k * 8 * scale, y)
            };
            for (gy, bits) in glyph.iter().enumerate() {
                for gx in 0..8 {
                    if bits >> gx & 1 == 1 {
                        for sy in 0..scale {
                            for sx in 0..scale {
                                let (px, py) = (ox + gx * scale + sx, oy + gy * scale + sy);
                                if px < self.width && py < self.height {
                                    self.pixels[py * self.width + px] = c;
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Text turned a quarter turn anticlockwise (read from the bottom up), its first character
    /// at `bottom`: the column labels of a heatmap.
    pub fn text_up(&mut self, x: usize, bottom: usize, s: &str, colour: [u8; 3], scale: usize) {
        let c = pack(colour);
        let long = s.chars().count() * 8 * scale;
        if long > 0 {
            // A box that starts above the picture is recorded as such (its y wraps past the
            // height), so that a check sees it is clipped.
            let top = bottom.checked_sub(long).unwrap_or(usize::MAX / 2);
            self.texts.push([x, top, 8 * scale, long, 8 * scale]);
        }
        for (k, ch) in s.chars().enumerate() {
            let glyph = glyph(ch);
            for (gy, bits) in glyph.iter().enumerate() {
                for gx in 0..8 {
                    if bits >> gx & 1 == 0 {
                        continue;
                    }
                    for sy in 0..scale {
                        for sx in 0..scale {
                            // Along the text is up the view; the glyph's top faces left.
                            let along = (k * 8 + gx) * scale + sx;
                            let (px, py) = (x + gy * scale + sy, bottom.checked_sub(along + 1));
                            if let Some(py) = py
                                && px < self.width
                                && py < self.height
                            {
                                self.pixels[py * self.width + px] = c;
                            }
                        }
                    }
                }
            }
        }
    }

    /// What the page's tests read: the picture's size and every text's box and letter height
    /// (`stage`: the walkthrough stage drawn, if it is one).
    pub fn texts_json(&self, stage: Option<usize>) -> String {
        kiln_app::raster::texts_json(self.width, self.height, stage, &self.texts)
    }

    /// Bytes for a PNG.
    pub fn rgba(&self) -> Vec<u8> {
        self.pixels.iter().flat_map(|p| p.to_le_bytes()).collect()
    }
}

/// A weight in [0, 1] as a colour: the magma ramp on √w, so small weights still show.
pub fn colour(w: f32) -> [u8; 3] {
    const STOPS: [[f32; 3]; 5] = [
        [0.0, 0.0, 4.0],
        [80.0, 18.0, 123.0],
        [182.0, 54.0, 121.0],
        [251.0, 136.0, 97.0],
        [252.0, 253.0, 191.0],
    ];
    let t = w.clamp(0.0, 1.0).sqrt() * 4.0;
    let i = (t.floor() as usize).min(3);
    let f = t - i as f32;
    let mix = |c: usize| (STOPS[i][c] + (STOPS[i + 1][c] - STOPS[i][c]) * f) as u8;
    [mix(0), mix(1), mix(2)]
}

/// A token shortened to fit a label.
pub fn label(t: &str, max: usize) -> String {
    if t.chars().count() <= max {
        t.to_string()
    } else {
        t.chars().take(max - 1).chain(['…']).collect()
    }
}

/// The side of one cell for `n` tokens.
fn cell_size(n: usize) -> usize {
    (MAP_SIZE / n.max(1)).max(1)
}

/// Where a heatmap cell is: the cell (query row, key column) under pixel (x, y), if any.
pub fn cell_at(n: usize, x: f32, y: f32) -> Option<(usize, usize)> {
    let cell = cell_size(n) as f32;
    let (cx, cy) = ((x - MAP_X as f32) / cell, (y - MAP_Y as f32) / cell);
    (cx >= 0.0 && cy >= 0.0 && (cx as usize) < n && (cy as usize) < n)
        .then_some((cy as usize, cx as usize))
}

/// The centre of cell (row, column) in view pixels: where a pointer reads it.
pub fn cell_centre(n: usize, row: usize, column: usize) -> (usize, usize) {
    let cell = cell_size(n);
    (
        MAP_X + column * cell + cell / 2,
        MAP_Y + row * cell + cell / 2,
    )
}

/// What the main view shows: one head's weights [N, N] (row = query, column = key) over the
/// tokens, a title, lines under it, and the selected cell.
#[derive(Debug)]
pub struct View<'a> {
    pub tokens: &'a [String],
    pub weights: &'a [f32],
    pub title: &'a str,
    /// Under the title: the path, the token count, a cut, synthetic weights.
    pub notes: &'a [String],
    pub selected: Option<(usize, usize)>,
}

/// How the labels were drawn: their height in view pixels, every how many tokens one is drawn,
/// and the box holding them all (x, y, width, height) — what the page's test checks.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Labels {
    pub px: usize,
    pub stride: usize,
    pub tokens: usize,
    pub bounds: [usize; 4],
}

/// The main view: the heatmap with its labels and the left column (see [`WIDTH`]).
pub fn view(v: &View<'_>) -> (Image, Labels) {
    let mut img = Image::new(WIDTH, HEIGHT);
    let n = v.tokens.len();
    let cell = cell_size(n);
    // The title and notes, large.
    img.text(LEFT, 24, v.title, TEXT, 3, false);
    for (k, note) in v.notes.iter().enumerate() {
        img.text(LEFT, 64 + k * 26, note, DIM, 2, false);
    }
    // The colour scale, across.
    let (sx, sy, sw) = (LEFT, 150, 400);
    for k in 0..sw {
        img.rect(sx + k, sy, 1, 18, colour(k as f32 / (sw - 1) as f32));
    }
    img.text(sx, sy + 26, "0", DIM, 2, false);
    img.text(sx + sw - 16, sy + 26, "1", DIM, 2, false);
    img.text(sx + 60, sy + 26, "attention weight", DIM, 2, false);
    // The weight under the pointer.
    if let Some((i, j)) = v.selected
        && let (Some(q), Some(k)) = (v.tokens.get(i), v.tokens.get(j))
    {
        let w = v.weights.get(i * n + j).copied().unwrap_or(0.0);
        img.text(LEFT, 236, "under the pointer:", DIM, 2, false);
        img.text(
            LEFT,
            264,
            &format!("{} -> {}  {w:.3}", label(q, 8), label(k, 8)),
            [80, 220, 255],
            3,
            false,
        );
    }
    links(&mut img, v.tokens, v.weights);

    // Labels: large where the cells allow, never below LABEL_SCALE; every stride-th token
    // where even that does not fit one label per cell.
    let scale = if cell >= 8 * 3 + LABEL_GAP {
        3
    } else {
        LABEL_SCALE
    };
    let stride = (8 * scale + LABEL_GAP).div_ceil(cell).max(1);
    let chars = if scale == 3 { 8 } else { 10 };
    let mut bounds = [MAP_X, MAP_Y, MAP_SIZE.min(cell * n), MAP_SIZE.min(cell * n)];
    let mut grow = |x: usize, y: usize, w: usize, h: usize| {
        let (x1, y1) = (
            (bounds[0] + bounds[2]).max(x + w),
            (bounds[1] + bounds[3]).max(y + h),
        );
        bounds[0] = bounds[0].min(x);
        bounds[1] = bounds[1].min(y);
        bounds[2] = x1 - bounds[0];
        bounds[3] = y1 - bounds[1];
    };
    for (i, t) in v.tokens.iter().enumerate() {
        for j in 0..n {
            let w = v.weights.get(i * n + j).copied().unwrap_or(0.0);
            img.rect(
                MAP_X + j * cell,
                MAP_Y + i * cell,
                cell.saturating_sub(usize::from(cell >= 4)).max(1),
                cell.saturating_sub(usize::from(cell >= 4)).max(1),
                colour(w),
            );
        }
        let lit = v.selected.is_some_and(|(r, c)| r == i || c == i);
        if i % stride != 0 && !lit {
            continue;
        }
        let t = label(t, chars);
        let (w, h) = (t.chars().count() * 8 * scale, 8 * scale);
        let centre = i * cell + cell / 2;
        let ink = if lit { [80, 220, 255] } else { TEXT };
        // Query labels on the left, right-aligned on their row; key labels above, read upwards.
        let (qx, qy) = (MAP_X - 8 - w, (MAP_Y + centre).saturating_sub(h / 2));
        img.text(qx, qy, &t, ink, scale, false);
        grow(qx, qy, w, h);
        let kx = (MAP_X + centre).saturating_sub(h / 2);
        img.text_up(kx, MAP_Y - 8, &t, ink, scale);
        grow(kx, MAP_Y - 8 - w, h, w);
    }
    if let Some((i, j)) = v.selected {
        let (x, y) = (MAP_X + j * cell, MAP_Y + i * cell);
        let c = cell.max(3);
        for (xx, yy, w, h) in [
            (x, y, c, 1),
            (x, y + c - 1, c, 1),
            (x, y, 1, c),
            (x + c - 1, y, 1, c),
        ] {
            img.rect(xx, yy, w, h, [80, 220, 255]);
        }
    }
    if stride > 1 {
        img.text(
            LEFT,
            864,
            &format!("labels: one every {stride} tokens; hover a cell for any pair"),
            DIM,
            2,
            false,
        );
    }
    let labels = Labels {
        px: 8 * scale,
        stride,
        tokens: n,
        bounds,
    };
    (img, labels)
}

/// The head's strongest links between words, in the left column: the largest weights off the
/// diagonal whose key is not [CLS] or [SEP] (most heads park much of their weight there).
fn links(img: &mut Image, tokens: &[String], weights: &[f32]) {
    let n = tokens.len();
    let special = |t: &str| t == "[CLS]" || t == "[SEP]";
    let mut pairs: Vec<(f32, usize, usize)> = Vec::new();
    for i in 0..n {
        for j in 0..n {
            if i != j && !special(&tokens[j]) && !special(&tokens[i]) {
                pairs.push((weights.get(i * n + j).copied().unwrap_or(0.0), i, j));
            }
        }
    }
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0));
    if pairs.is_empty() {
        return;
    }
    let top = 380;
    img.text(LEFT, top, "strongest links, query -> key:", DIM, 2, false);
    // The bars against the strongest link, so that small weights still compare.
    let most = pairs[0].0.max(f32::MIN_POSITIVE);
    for (k, &(w, i, j)) in pairs.iter().take(12).enumerate() {
        let y = top + 36 + k * 36;
        let bar = ((w / most).clamp(0.0, 1.0) * 120.0).round() as usize;
        img.rect(LEFT, y, bar.max(1), 24, colour(w));
        img.text(LEFT + 132, y + 4, &format!("{w:.2}"), DIM, 2, false);
        img.text(
            LEFT + 208,
            y,
            &format!("{} -> {}", label(&tokens[i], 8), label(&tokens[j], 8)),
            TEXT,
            3,
            false,
        );
    }
}

/// Every layer (rows) and head (columns) as small heatmaps, for the PNG.
pub fn grid(n: usize, probs: &[Vec<f32>], heads: usize) -> Image {
    let cell = (96 / n.max(1)).max(1);
    let tile = cell * n + 8;
    let (w, h) = (60 + heads * tile, 30 + probs.len() * tile);
    let mut img = Image::new(w, h);
    for head in 0..heads {
        img.text(60 + head * tile, 10, &format!("h{head}"), DIM, 1, false);
    }
    for (layer, p) in probs.iter().enumerate() {
        img.text(
            8,
            30 + layer * tile + tile / 2,
            &format!("L{layer}"),
            DIM,
            1,
            false,
        );
        for head in 0..heads {
            for i in 0..n {
                for j in 0..n {
                    let wgt = p.get((head * n + i) * n + j).copied().unwrap_or(0.0);
                    img.rect(
                        60 + head * tile + j * cell,
                        30 + layer * tile + i * cell,
                        cell,
                        cell,
                        colour(wgt),
                    );
                }
            }
        }
    }
    img
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// At every length up to MiniLM's limit the labels are at least 16 pixels tall, inside
    /// the view, and the pointer's cell is found where it is drawn.
    #[test]
    fn labels_stay_readable_and_inside_at_every_length() {
        for n in [1, 3, 17, 48, 100, 200, 333, 512] {
            let tokens: Vec<String> = (0..n).map(|i| format!("word{i}")).collect();
            let weights = vec![1.0 / n as f32; n * n];
            let (img, labels) = view(&View {
                tokens: &tokens,
                weights: &weights,
                title: "layer 1 of 6, head 1 of 12",
                notes: &[],
                selected: Some((n - 1, 0)),
            });
            assert_eq!(img.pixels.len(), WIDTH * HEIGHT);
            assert!(labels.px >= 16, "{n} tokens: {labels:?}");
            let [x, y, w, h] = labels.bounds;
            assert!(
                x >= 200 && y > 0 && x + w <= WIDTH && y + h <= HEIGHT,
                "{n}: {labels:?}"
            );
            let cell = cell_size(n);
            assert!(
                labels.stride * cell >= labels.px,
                "{n}: labels overlap: {labels:?}"
            );
            let (cx, cy) = cell_centre(n, n - 1, 0);
            assert_eq!(cell_at(n, cx as f32, cy as f32), Some((n - 1, 0)));
        }
    }
}
