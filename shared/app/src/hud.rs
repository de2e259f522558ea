//! HUD text as an RGBA8 bitmap: light text on a translucent dark panel, drawn over the frame
//! natively; the web page uses HTML instead.

use crate::raster::Bitmap;

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
    let mut bitmap = Bitmap::new(w, h, [12, 12, 18, 190]);
    for (row, line) in lines.iter().enumerate() {
        bitmap.text(
            PAD,
            PAD + row * 10 * SCALE,
            line,
            SCALE,
            [235, 235, 240, 255],
        );
    }
    (w as u32, h as u32, bitmap.rgba)
}
