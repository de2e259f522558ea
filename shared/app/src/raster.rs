//! Text on an RGBA8 bitmap, from the 8×8 public-domain font (font8x8): the native window's HUD
//! and presenter panel. The web page uses HTML instead.

use font8x8::UnicodeFonts;

pub type Rgba = [u8; 4];

/// The site's colours (site/src/style.css), for pictures that sit beside its text.
pub mod palette {
    use super::Rgba;

    pub const BG: Rgba = [13, 13, 18, 255];
    pub const TEXT: Rgba = [236, 236, 241, 255];
    pub const MUTED: Rgba = [169, 169, 184, 255];
    pub const ACCENT: Rgba = [255, 180, 84, 255];
}

/// An RGBA8 bitmap.
#[derive(Clone, Debug)]
pub struct Bitmap {
    pub w: usize,
    pub h: usize,
    pub rgba: Vec<u8>,
    /// Every text drawn: its box (x, y, width, height) and its letters' height, in pixels of the
    /// bitmap: the tests check that each is readable and inside the picture.
    pub texts: Vec<[usize; 5]>,
}

impl Bitmap {
    pub fn new(w: usize, h: usize, fill: Rgba) -> Bitmap {
        let mut rgba = vec![0u8; w * h * 4];
        for px in rgba.chunks_exact_mut(4) {
            px.copy_from_slice(&fill);
        }
        Bitmap {
            w,
            h,
            rgba,
            texts: Vec::new(),
        }
    }

    /// What a page's tests read (see [`texts_json`]).
    pub fn texts_json(&self, stage: Option<usize>) -> String {
        texts_json(self.w, self.h, stage, &self.texts)
    }

    /// The pixels packed as u32, red in the low byte: what a kiln_app frame tensor holds.
    pub fn packed(&self) -> Vec<u32> {
        self.rgba
            .chunks_exact(4)
            .map(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]))
            .collect()
    }

    /// Fills a rectangle (clipped to the bitmap).
    pub fn rect(&mut self, x: usize, y: usize, w: usize, h: usize, colour: Rgba) {
        for yy in y..(y + h).min(self.h) {
            for xx in x..(x + w).min(self.w) {
                let i = (yy * self.w + xx) * 4;
                self.rgba[i..i + 4].copy_from_slice(&colour);
            }
        }
    }

    /// Draws one character cell (8 × 8 font pixels, `scale` screen pixels each) at (x, y).
    pub fn glyph(&mut self, x: usize, y: usize, ch: char, scale: usize, colour: Rgba) {
        let glyph = font_glyph(ch)
            .or_else(|| font8x8::BASIC_FONTS.get('?'))
            .unwrap_or([0; 8]);
        for (gy, bits) in glyph.iter().enumerate() {
            for gx in 0..8 {
                if bits >> gx & 1 == 1 {
                    self.rect(x + gx * scale, y + gy * scale, scale, scale, colour);
                }
            }
        }
    }

    /// Draws a line of text; returns the x after its last character.
    pub fn text(&mut self, x: usize, y: usize, text: &str, scale: usize, colour: Rgba) -> usize {
        let count = text.chars().count();
        if count > 0 {
            self.texts
                .push([x, y, count * 8 * scale, 8 * scale, 8 * scale]);
        }
        let mut at = x;
        for ch in text.chars() {
            self.glyph(at, y, ch, scale, colour);
            at += 8 * scale;
        }
        at
    }
}

/// The 8×8 bitmap of `ch` (bit x of row y is pixel x): font8x8's, or one of the few that the
/// panels and pictures use and it lacks; `None` for a character neither has. Every picture of
/// the demos draws its letters from here.
pub fn font_glyph(ch: char) -> Option<[u8; 8]> {
    extra_glyph(ch)
        .or_else(|| font8x8::BASIC_FONTS.get(ch))
        .or_else(|| font8x8::LATIN_FONTS.get(ch))
        .or_else(|| font8x8::BOX_FONTS.get(ch))
        .or_else(|| font8x8::GREEK_FONTS.get(ch))
}

/// What a page's tests read of a picture (`width` × `height` pixels): its size and every text's
/// box and letter height, `[x, y, width, height, letter]` in the picture's pixels (`stage`: the
/// walkthrough stage drawn, if it is one).
pub fn texts_json<T: serde::Serialize>(
    width: usize,
    height: usize,
    stage: Option<usize>,
    texts: &[T],
) -> String {
    texts_value(width, height, stage, texts).to_string()
}

/// [`texts_json`] as a JSON object, for a picture that publishes more beside its boxes.
pub fn texts_value<T: serde::Serialize>(
    width: usize,
    height: usize,
    stage: Option<usize>,
    texts: &[T],
) -> serde_json::Value {
    serde_json::json!({ "width": width, "height": height, "stage": stage, "texts": texts })
}

/// Characters the panels use that font8x8 lacks (bit x of row y is pixel x).
fn extra_glyph(ch: char) -> Option<[u8; 8]> {
    match ch {
        '…' => Some([0, 0, 0, 0, 0, 0, 0x92, 0]),
        '→' => Some([0, 0x10, 0x30, 0x7F, 0x7F, 0x30, 0x10, 0]),
        '←' => Some([0, 0x04, 0x06, 0x7F, 0x7F, 0x06, 0x04, 0]),
        '–' => Some([0, 0, 0, 0x3E, 0, 0, 0, 0]),
        '²' => Some([0x0E, 0x08, 0x04, 0x02, 0x0E, 0, 0, 0]),
        'ᵀ' => Some([0x3E, 0x08, 0x08, 0x08, 0, 0, 0, 0]),
        '≥' => Some([0x02, 0x08, 0x20, 0x08, 0x02, 0, 0x3E, 0]),
        '≤' => Some([0x20, 0x08, 0x02, 0x08, 0x20, 0, 0x3E, 0]),
        _ => None,
    }
}

/// Splits text into lines of at most `cols` characters at spaces. A longer word (a device
/// class, a path, a variant name) is cut after its last `/`, `_`, `-`, `.` or `,` that fits, and
/// only where it has none, at the width.
pub fn wrap(text: &str, cols: usize) -> Vec<String> {
    let cols = cols.max(1);
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            let (len, wlen) = (line.chars().count(), word.chars().count());
            if len > 0 && len + 1 + wlen > cols {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
            while line.chars().count() > cols {
                let chars: Vec<char> = line.chars().collect();
                let cut = chars[..cols]
                    .iter()
                    .rposition(|c| matches!(c, '/' | '_' | '-' | '.' | ','))
                    .map_or(cols, |i| i + 1);
                lines.push(chars[..cut].iter().collect());
                line = chars[cut..].iter().collect();
            }
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_words_and_width() {
        assert_eq!(wrap("one two three", 7), vec!["one two", "three"]);
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("a\nb", 10), vec!["a", "b"]);
        // A device class breaks after a separator, not inside a part.
        assert_eq!(
            wrap("class webgpu/cpu/0000/none/32k", 16),
            vec!["class", "webgpu/cpu/0000/", "none/32k"]
        );
    }

    #[test]
    fn text_sets_pixels_in_its_cell_only() {
        let mut b = Bitmap::new(40, 20, [0, 0, 0, 255]);
        let end = b.text(2, 2, "A", 2, [255, 255, 255, 255]);
        assert_eq!(end, 18);
        let lit = b.rgba.chunks_exact(4).filter(|p| p[0] == 255).count();
        assert!(lit > 20, "the glyph drew {lit} pixels");
        let outside = (0..20).any(|y| b.rgba[(y * 40 + 30) * 4] == 255);
        assert!(!outside, "pixels outside the glyph's cell");
    }
}
