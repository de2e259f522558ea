//! The visuals' pen: the design's size and text metrics, and drawing in design pixels, scaled
//! and centred on a canvas of any size.

use kiln_app::raster::wrap;

use super::colour::HIGHLIGHT;
use crate::chart::Canvas;

/// The design size: the native presenter window's left column at 1280×720. Other sizes scale
/// the design and centre it.
pub const SIZE: (usize, usize) = (564, 720);
/// Small text's font pixels per design pixel: its letters are 13.2 design pixels tall, 18 pixels
/// of the picture at 1920×1080 (12 at 1280×720) in presenter mode.
pub(super) const SMALL: f64 = 1.65;
/// Small text's line height and the right margin, in design pixels.
pub(super) const LINE: f64 = 17.0;
pub(super) const MARGIN: f64 = 14.0;

/// Draws the design (SIZE) scaled by `u` and centred on the canvas.
pub(super) struct Pen {
    pub c: Canvas,
    pub u: f64,
    pub ox: f64,
    pub oy: f64,
}

impl Pen {
    pub fn new(w: usize, h: usize) -> Pen {
        let u = (w as f64 / SIZE.0 as f64).min(h as f64 / SIZE.1 as f64);
        Pen {
            c: Canvas::new(w, h),
            u,
            ox: (w as f64 - SIZE.0 as f64 * u) / 2.0,
            oy: (h as f64 - SIZE.1 as f64 * u) / 2.0,
        }
    }

    fn at(&self, x: f64, y: f64) -> (usize, usize) {
        (
            (self.ox + x * self.u).max(0.0).round() as usize,
            (self.oy + y * self.u).max(0.0).round() as usize,
        )
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, colour: [u8; 3]) {
        let (x0, y0) = self.at(x, y);
        let (x1, y1) = self.at(x + w, y + h);
        let (w, h) = (x1.saturating_sub(x0).max(1), y1.saturating_sub(y0).max(1));
        self.c.rect(x0, y0, w, h, colour);
    }

    /// A 2-pixel frame around (x, y, w, h).
    pub fn outline(&mut self, x: f64, y: f64, w: f64, h: f64) {
        self.rect(x, y, w, 2.0, HIGHLIGHT);
        self.rect(x, y + h - 2.0, w, 2.0, HIGHLIGHT);
        self.rect(x, y, 2.0, h, HIGHLIGHT);
        self.rect(x + w - 2.0, y, 2.0, h, HIGHLIGHT);
    }

    /// Text at `size` font pixels per design pixel (SMALL or 2).
    pub fn text(&mut self, x: f64, y: f64, s: &str, colour: [u8; 3], size: f64) {
        let (x, y) = (self.ox + x * self.u, self.oy + y * self.u);
        self.c.text_at(x, y, s, colour, size * self.u);
    }

    /// Small text from (x, y), wrapped between words to the design's right margin; returns the
    /// y under its last line.
    pub fn para(&mut self, x: f64, y: f64, s: &str, colour: [u8; 3]) -> f64 {
        let cols = ((SIZE.0 as f64 - MARGIN - x) / (8.0 * SMALL))
            .floor()
            .max(1.0) as usize;
        let mut y = y;
        for line in wrap(s, cols) {
            self.text(x, y, &line, colour, SMALL);
            y += LINE;
        }
        y
    }
}
