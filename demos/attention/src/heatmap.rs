//! Drawing on the CPU: attention weights as heatmaps with the tokens on both axes, the code
//! panel, and the grid of every layer and head for the PNG. Pixels are RGBA8 packed in u32
//! (red in the low byte), as the display pass reads them.

use font8x8::UnicodeFonts;

/// The view's size and layout: the left half holds the HUD (in the window) above the code
/// panel; the right half the heatmap with its labels.
pub const WIDTH: usize = 1600;
pub const HEIGHT: usize = 900;
const MAP_X: usize = 960;
const MAP_Y: usize = 150;
const MAP_SIZE: usize = 520;
const CODE_X: usize = 20;
const CODE_Y: usize = 600;

pub const BACKGROUND: [u8; 3] = [14, 14, 20];
pub const TEXT: [u8; 3] = [225, 225, 232];
pub const DIM: [u8; 3] = [140, 140, 155];

#[derive(Debug)]
pub struct Image {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u32>,
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
        for (k, ch) in s.chars().enumerate() {
            let glyph = font8x8::BASIC_FONTS
                .get(ch)
                .or_else(|| font8x8::LATIN_FONTS.get(ch))
                .or_else(|| font8x8::GREEK_FONTS.get(ch))
                .unwrap_or([0; 8]);
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

/// Where a heatmap cell is: the cell (query row, key column) under pixel (x, y), if any.
pub fn cell_at(n: usize, x: f32, y: f32) -> Option<(usize, usize)> {
    let cell = (MAP_SIZE / n.max(1)).max(1) as f32;
    let (cx, cy) = ((x - MAP_X as f32) / cell, (y - MAP_Y as f32) / cell);
    (cx >= 0.0 && cy >= 0.0 && (cx as usize) < n && (cy as usize) < n)
        .then_some((cy as usize, cx as usize))
}

/// The main view: one head's weights [N, N] (row = query, column = key) with the tokens on
/// both axes, the selected cell outlined, a title, and the code panel.
pub fn view(
    tokens: &[String],
    weights: &[f32],
    title: &str,
    selected: Option<(usize, usize)>,
    code: &[&str],
) -> Image {
    let mut img = Image::new(WIDTH, HEIGHT);
    let n = tokens.len();
    let cell = (MAP_SIZE / n.max(1)).max(1);
    img.text(MAP_X, 16, title, TEXT, 2, false);
    img.text(MAP_X, MAP_Y - 108, "keys ->", DIM, 1, false);
    img.text(MAP_X - 110, MAP_Y - 12, "queries", DIM, 1, false);
    for (i, t) in tokens.iter().enumerate() {
        let t = label(t, 10);
        // Query labels on the left, right-aligned; key labels above, one character per line.
        let w = t.chars().count() * 8;
        img.text(
            MAP_X - 6 - w,
            MAP_Y + i * cell + cell / 2 - 4,
            &t,
            TEXT,
            1,
            false,
        );
        img.text(
            MAP_X + i * cell + cell / 2 - 4,
            MAP_Y - 96,
            &t,
            TEXT,
            1,
            true,
        );
        for j in 0..n {
            let w = weights.get(i * n + j).copied().unwrap_or(0.0);
            img.rect(
                MAP_X + j * cell,
                MAP_Y + i * cell,
                cell.saturating_sub(1).max(1),
                cell.saturating_sub(1).max(1),
                colour(w),
            );
        }
    }
    if let Some((i, j)) = selected {
        let (x, y) = (MAP_X + j * cell, MAP_Y + i * cell);
        for (xx, yy, w, h) in [
            (x, y, cell, 1),
            (x, y + cell - 1, cell, 1),
            (x, y, 1, cell),
            (x + cell - 1, y, 1, cell),
        ] {
            img.rect(xx, yy, w, h, [80, 220, 255]);
        }
    }
    // The colour scale.
    for k in 0..200 {
        img.rect(
            MAP_X + MAP_SIZE + 30,
            MAP_Y + 199 - k,
            16,
            1,
            colour(k as f32 / 199.0),
        );
    }
    img.text(MAP_X + MAP_SIZE + 52, MAP_Y, "1", DIM, 1, false);
    img.text(MAP_X + MAP_SIZE + 52, MAP_Y + 192, "0", DIM, 1, false);
    img.text(
        CODE_X,
        CODE_Y - 20,
        "the layer, on kiln's ops (demos/attention/src/encoder.rs):",
        DIM,
        1,
        false,
    );
    for (k, line) in code.iter().enumerate() {
        img.text(CODE_X, CODE_Y + k * 11, line, TEXT, 1, false);
    }
    img
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
