//! A small raster for the native speed page and the walkthrough's visuals: filled rectangles,
//! lines, 8×8-font text, and the two chart kinds the page draws (log-scale lines over x, and
//! labelled bars).

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
    /// Pixels per font pixel of a chart's small text (labels, legend) and of its title: 1 and 2
    /// on the native page; the walkthrough sets them from its picture's size.
    pub label: f64,
    pub title: f64,
    /// Every text drawn: its box (x, y, width, height) and its letters' height, in pixels of the
    /// canvas: the page's tests check that each is readable and inside the picture.
    pub texts: Vec<[f64; 5]>,
    /// The words of each of `texts`, in the same order: the page's tests read the axes' labels.
    pub strings: Vec<String>,
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
            label: 1.0,
            title: 2.0,
            texts: Vec::new(),
            strings: Vec::new(),
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
        self.text_at(x as f64, y as f64, s, colour, scale as f64);
    }

    /// Text from the 8×8 font at `scale` (any size above 0) pixels per font pixel, recorded in
    /// `texts`.
    pub fn text_at(&mut self, x: f64, y: f64, s: &str, colour: [u8; 3], scale: f64) {
        let count = s.chars().count();
        if count == 0 || scale <= 0.0 {
            return;
        }
        let (x, y) = (x.max(0.0).round(), y.max(0.0).round());
        self.texts
            .push([x, y, count as f64 * 8.0 * scale, 8.0 * scale, 8.0 * scale]);
        self.strings.push(s.to_string());
        let at = |v: f64, n: usize| (v + n as f64 * scale).round() as usize;
        for (k, ch) in s.chars().enumerate() {
            let glyph = kiln_app::raster::font_glyph(ch).unwrap_or([0; 8]);
            for (gy, bits) in glyph.iter().enumerate() {
                for gx in 0..8 {
                    if bits >> gx & 1 == 1 {
                        let (x0, y0) = (at(x, k * 8 + gx), at(y, gy));
                        let (x1, y1) = (at(x, k * 8 + gx + 1), at(y, gy + 1));
                        self.rect(x0, y0, (x1 - x0).max(1), (y1 - y0).max(1), colour);
                    }
                }
            }
        }
    }

    /// What the page's tests read: the picture's size and every text's box and letter height
    /// (`stage`: the walkthrough stage drawn), as every page publishes them, and here also
    /// their words (`strings`).
    pub fn texts_json(&self, stage: Option<usize>) -> String {
        let mut json = kiln_app::raster::texts_value(self.width, self.height, stage, &self.texts);
        if let Some(object) = json.as_object_mut() {
            object.insert(
                "strings".into(),
                serde_json::Value::from(self.strings.clone()),
            );
        }
        json.to_string()
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
        let (l, t) = (self.label, self.title);
        self.text_at(x as f64, y as f64, title, TEXT, t);
        // Room for six characters of the y axis' labels on the left, the title above, a row of
        // x labels and one of the legend below.
        let left = (6.0 * 8.0 + 14.0) * l;
        let (px, py) = (
            x + left.round() as usize,
            y + (8.0 * t + 14.0 * l).round() as usize,
        );
        let below = (2.0 * 8.0 + 22.0) * l;
        let pw = w.saturating_sub(left.round() as usize + (4.0 * l).round() as usize);
        let ph = (y + h).saturating_sub(py + below.round() as usize);
        self.rect(px, py + ph, pw, 1, DIM);
        self.rect(px, py, 1, ph, DIM);
        let all: Vec<(f64, f64)> = series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|p| p.1.is_finite() && (!log || p.1 > 0.0))
            .collect();
        if all.is_empty() {
            let empty = self.empty.clone();
            // Wrapped between words inside the box.
            let cols = ((x + w).saturating_sub(px + 10) as f64 / (8.0 * l)).floor() as usize;
            for (k, line) in kiln_app::raster::wrap(&empty, cols).iter().enumerate() {
                let ly = (py + ph / 2) as f64 + k as f64 * 11.0 * l;
                self.text_at((px + 10) as f64, ly, line, DIM, l);
            }
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
        // One x so far (the sweep's first size): its points stand mid-box under one label.
        let single = x_labels(xmin, xmax).len() == 1;
        let xr = (xmax - xmin).max(1e-9);
        let to = |p: (f64, f64)| {
            (
                if single {
                    (px + pw / 2) as f64
                } else {
                    px as f64 + (p.0 - xmin) / xr * pw as f64
                },
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
        let (xf, pyf, phf) = (x as f64, py as f64, ph as f64);
        let chars = |s: &str| s.chars().count() as f64 * 8.0 * l;
        self.text_at(xf, pyf, &fmt(ymax), DIM, l);
        self.text_at(xf, pyf + phf - 8.0 * l, &fmt(ymin), DIM, l);
        self.text_at(xf, pyf + phf / 2.0 - 4.0 * l, y_label, DIM, l);
        let under = pyf + phf + 4.0 * l;
        match x_labels(xmin, xmax).as_slice() {
            [only] => {
                // Its label under the point, the axis' name at the left.
                let at = (px + pw / 2) as f64 - chars(only) / 2.0;
                self.text_at(at, under, only, DIM, l);
                if px as f64 + chars(x_label) + 8.0 * l < at {
                    self.text_at(px as f64, under, x_label, DIM, l);
                }
            }
            [first, .., last] => {
                self.text_at(px as f64, under, first, DIM, l);
                let right_x = ((px + pw) as f64 - chars(last)).max(0.0);
                self.text_at(right_x, under, last, DIM, l);
                // The axis' name between the two, where it fits.
                let mid = (px + pw / 2) as f64 - chars(x_label) / 2.0;
                if mid > px as f64 + chars(first) + 8.0 * l && mid + chars(x_label) < right_x {
                    self.text_at(mid, under, x_label, DIM, l);
                }
            }
            [] => {}
        }
        // The legend after the x labels, left to right.
        let mut lx = (px + 10) as f64;
        let mut ly = under + 14.0 * l;
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
            let size = (8.0 * l).round() as usize;
            // A legend too wide for the box goes on in a row below.
            let wide = 12.0 * l + chars(s.label);
            if lx > (px + 10) as f64 && lx + wide > (x + w) as f64 {
                lx = (px + 10) as f64;
                ly += 11.0 * l;
            }
            self.rect(
                lx.round() as usize,
                ly.round() as usize,
                size,
                size,
                s.colour,
            );
            self.text_at(lx + 12.0 * l, ly, s.label, TEXT, l);
            lx += 12.0 * l + chars(s.label) + 16.0 * l;
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

/// The x axis' labels: its two ends, or one where every point has the same x (a sweep's first
/// size, which read "64 … 64" with the point on the axis).
fn x_labels(xmin: f64, xmax: f64) -> Vec<String> {
    if xmax - xmin < 1e-9 {
        vec![format!("{xmin}")]
    } else {
        vec![format!("{xmin}"), format!("{xmax}")]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn one_x_is_one_label_and_its_points_stand_mid_box() {
        assert_eq!(x_labels(64.0, 64.0), ["64"]);
        assert_eq!(x_labels(64.0, 256.0), ["64", "256"]);
        // Drawn: the one point's marker is in the middle of the plot, not on the y axis.
        let mut c = Canvas::new(400, 300);
        let red = [220, 40, 40];
        let series = [Series {
            label: "flash",
            colour: red,
            points: vec![(64.0, 1.5)],
        }];
        c.lines((0, 0, 400, 300), "time", "N", "ms", &series, false);
        // Rows of the plot only: the legend below has a marker of the colour too.
        let columns: Vec<usize> = (0..250)
            .flat_map(|y| (0..c.width).map(move |x| (x, y)))
            .filter(|&(x, y)| c.pixels[y * c.width + x] == pack(red))
            .map(|(x, _)| x)
            .collect();
        let (lo, hi) = (columns.iter().min().unwrap(), columns.iter().max().unwrap());
        assert!(
            *lo > 150 && *hi < 300,
            "the marker spans columns {lo}..{hi}"
        );
    }
}
