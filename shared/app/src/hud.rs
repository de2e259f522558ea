//! HUD text as an RGBA8 bitmap, from the 8×8 public-domain font (font8x8): light text on a
//! translucent dark panel. Drawn over the frame natively; the web page uses HTML instead.

use font8x8::UnicodeFonts;

/// Pixels per font pixel.
const SCALE: usize = 2;
const PAD: usize = 6;

/// Renders lines of text; returns (width, height, RGBA8 bytes).
pub fn rasterize(lines: &[String]) -> (u32, u32, Vec<u8>) {
    let cols = lines
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(1);
    let (w, h) = (
        cols * 8 * SCALE + 2 * PAD,
        lines.len().max(1) * 10 * SCALE + 2 * PAD,
    );
    let mut rgba = vec![0u8; w * h * 4];
    for px in rgba.chunks_exact_mut(4) {
        px.copy_from_slice(&[12, 12, 18, 190]);
    }
    for (row, line) in lines.iter().enumerate() {
        for (col, ch) in line.chars().enumerate() {
            let glyph = font8x8::BASIC_FONTS
                .get(ch)
                .or_else(|| font8x8::LATIN_FONTS.get(ch))
                .or_else(|| font8x8::BASIC_FONTS.get('?'))
                .unwrap_or([0; 8]);
            for (gy, bits) in glyph.iter().enumerate() {
                for gx in 0..8 {
                    if bits >> gx & 1 == 0 {
                        continue;
                    }
                    for sy in 0..SCALE {
                        for sx in 0..SCALE {
                            let x = PAD + (col * 8 + gx) * SCALE + sx;
                            let y = PAD + (row * 10 + gy) * SCALE + sy;
                            let i = (y * w + x) * 4;
                            rgba[i..i + 4].copy_from_slice(&[235, 235, 240, 255]);
                        }
                    }
                }
            }
        }
    }
    (w as u32, h as u32, rgba)
}
