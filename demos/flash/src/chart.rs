//! A small raster for the native speed page and the walkthrough's visuals: filled rectangles,
//! lines, 8×8-font text, and the two chart kinds the page draws (log-scale lines over x, and
//! labelled bars).

use font8x8::UnicodeFonts;

pub const BACKGROUND: [u8; 3] = [16, 18, 24];
pub const TEXT: [u8; 3] = [230, 232, 238];
pub const DIM: [u8; 3] = [140, 146, 160];
/// The series colours, the page's own (site/src/flash.js `COLORS`): flash (and the GPU path)
/// orange, naive GPU attention blue, the CPU path green — in the window, on the page and in the
/// walkthrough alike.
pub const GPU: [u8; 3] = [0xff, 0xb4, 0x54];
pub const NAIVE: [u8; 3] = [0x6c, 0xb6, 0xff];
pub const CPU: [u8; 3] = [0x7e, 0xe7, 0x87];

/// RGBA8 pixels packed as u32.
#[derive(Debug)]
pub struct Canvas {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u32>,
    /// What an empty chart says (the walkthrough puts the sweep's progress there).
    pub empty: String,
}

fn pack([r, g, b]: [u8; 3]) -> u32 {
    u32::from_le_bytes([r, g, b, 255])
}

/// One line of a line chart.
#[derive(Debug)]
pub struct Series<'a> {
    pub label: &'a str,
    pub colour: [u8; 3],
    /// (x, y) points; y ≤ 0 or non-finite are skipped.
    pub points: Vec<(f64, f64)>,
}

impl Canvas {
    pub fn new(width: usize, height: usize) -> Canvas {
        Canvas {
            width,
            height,
            pixels: vec![pack(BACKGROUND); width * height],
            empty: "no data yet".into(),
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

    /// A 2-pixel line from (x0, y0) to (x1, y1).
    pub fn line(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), colour: [u8; 3]) {
        let steps = ((x1 - x0).abs().max((y1 - y0).abs()) as usize).max(1);
        for s in 0..=steps {
            let t = s as f64 / steps as f64;
            let (x, y) = (x0 + t * (x1 - x0), y0 + t * (y1 - y0));
            if x >= 0.0 && y >= 0.0 {
                self.rect(x as usize, y as usize, 2, 2, colour);
            }
        }
    }

    /// Text from the 8×8 font at `scale` pixels per font pixel.
    pub fn text(&mut self, x: usize, y: usize, s: &str, colour: [u8; 3], scale: usize) {
        for (k, ch) in s.chars().enumerate() {
            let glyph = font8x8::BASIC_FONTS
                .get(ch)
                .or_else(|| font8x8::LATIN_FONTS.get(ch))
                .unwrap_or([0; 8]);
            for (gy, bits) in glyph.iter().enumerate() {
                for gx in 0..8 {
                    if bits >> gx & 1 == 1 {
                        let (px, py) = (x + (k * 8 + gx) * scale, y + gy * scale);
                        self.rect(px, py, scale, scale, colour);
                    }
                }
            }
        }
    }

    /// Lines over x in the box (x, y, w, h); y on a log scale when `log`.
    #[allow(clippy::too_many_arguments)]
    pub fn lines(
        &mut self,
        (x, y, w, h): (usize, usize, usize, usize),
        title: &str,
        x_label: &str,
        y_label: &str,
        series: &[Series<'_>],
        log: bool,
    ) {
        self.text(x, y, title, TEXT, 2);
        let (px, py, pw, ph) = (x + 70, y + 30, w.saturating_sub(90), h.saturating_sub(70));
        self.rect(px, py + ph, pw, 1, DIM);
        self.rect(px, py, 1, ph, DIM);
        let all: Vec<(f64, f64)> = series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|p| p.1.is_finite() && (!log || p.1 > 0.0))
            .collect();
        if all.is_empty() {
            let empty = self.empty.clone();
            self.text(px + 10, py + ph / 2, &empty, DIM, 2);
            return;
        }
        let f = |v: f64| if log { v.log10() } else { v };
        let (xmin, xmax) = all
            .iter()
            .fold((f64::MAX, f64::MIN), |a, p| (a.0.min(p.0), a.1.max(p.0)));
        let (mut ymin, mut ymax) = all.iter().fold((f64::MAX, f64::MIN), |a, p| {
            (a.0.min(f(p.1)), a.1.max(f(p.1)))
        });
        if !log {
            ymin = ymin.min(0.0);
        }
        if ymax - ymin < 1e-9 {
            ymax = ymin + 1.0;
        }
        let xr = (xmax - xmin).max(1e-9);
        let to = |p: (f64, f64)| {
            (
                px as f64 + (p.0 - xmin) / xr * pw as f64,
                (py + ph) as f64 - (f(p.1) - ymin) / (ymax - ymin) * ph as f64,
            )
        };
        let fmt = |v: f64| {
            let v = if log { 10f64.powf(v) } else { v };
            if v >= 100.0 {
                format!("{v:.0}")
            } else if v >= 1.0 {
                format!("{v:.1}")
            } else {
                format!("{v:.3}")
            }
        };
        self.text(x, py, &fmt(ymax), DIM, 1);
        self.text(x, py + ph - 8, &fmt(ymin), DIM, 1);
        self.text(x, py + ph / 2, y_label, DIM, 1);
        self.text(px, py + ph + 6, &format!("{xmin}"), DIM, 1);
        let right = format!("{xmax}");
        // Saturating: a chart boxed smaller than its labels still draws (clipped), never panics.
        let right_x = (px + pw).saturating_sub(8 * right.len());
        self.text(right_x, py + ph + 6, &right, DIM, 1);
        self.text(
            (px + pw / 2).saturating_sub(4 * x_label.len()),
            py + ph + 6,
            x_label,
            DIM,
            1,
        );
        for (i, s) in series.iter().enumerate() {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|p| p.1.is_finite() && (!log || p.1 > 0.0))
                .map(to)
                .collect();
            for pair in pts.windows(2) {
                self.line(pair[0], pair[1], s.colour);
            }
            // Earlier series get bigger markers, so a later one drawn over it still shows it.
            let size = 5 + 4 * (series.len() - 1 - i);
            for p in &pts {
                let (x, y) = (p.0 - size as f64 / 2.0, p.1 - size as f64 / 2.0);
                self.rect(
                    x.max(0.0) as usize,
                    y.max(0.0) as usize,
                    size,
                    size,
                    s.colour,
                );
            }
            self.rect(px + 10 + i * 170, py + ph + 22, 12, 12, s.colour);
            self.text(px + 28 + i * 170, py + ph + 24, s.label, TEXT, 1);
        }
    }

    /// Horizontal bars with labels and values, in the box (x, y, w, h).
    pub fn bars(
        &mut self,
        (x, y, w, _h): (usize, usize, usize, usize),
        title: &str,
        bars: &[(String, f64, [u8; 3])],
        unit: &str,
    ) {
        self.text(x, y, title, TEXT, 2);
        let max = bars
            .iter()
            .map(|b| b.1)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        for (i, (label, v, colour)) in bars.iter().enumerate() {
            let by = y + 30 + i * 30;
            self.text(x, by + 4, label, TEXT, 1);
            let bw = if max > 0.0 && v.is_finite() {
                ((v / max) * (w.saturating_sub(260)) as f64) as usize
            } else {
                0
            };
            self.rect(x + 150, by, bw.max(1), 18, *colour);
            self.text(x + 160 + bw, by + 4, &format!("{v:.2} {unit}"), DIM, 1);
        }
    }

    pub fn rgba_u32(&self) -> &[u32] {
        &self.pixels
    }

    /// The pixels as RGBA8 bytes (for a page's ImageData).
    pub fn rgba_bytes(&self) -> Vec<u8> {
        self.pixels.iter().flat_map(|p| p.to_le_bytes()).collect()
    }
}
