//! Presenter mode's pictures, drawn on the CPU into a bitmap the demo uploads as its frame: the
//! waves' parameters, the two factors, the product's planes, and the frame beside the measured
//! rates. The data come from the model or from the GPU's own tensors (copied back); this module
//! only draws.

use kiln_app::raster::palette::{ACCENT, BG, MUTED, TEXT};
use kiln_app::raster::{Bitmap, Rgba};
use kiln_app::{Rates, RatesSource};

use crate::model::Model;

/// Side of every stage's picture, in pixels: fills the presenter's left column (44 % of 1280).
pub const SIZE: usize = 576;

const GRID: Rgba = [48, 48, 60, 255];
pub const COOL: Rgba = [96, 168, 255, 255];

/// A picture that says what it waits for (in the browser a copy from the GPU lands a frame or
/// two after it was asked for).
pub fn waiting(what: &str) -> Bitmap {
    let mut b = Bitmap::new(SIZE, SIZE, BG);
    b.text(16, SIZE / 2 - 8, what, 2, MUTED);
    b
}

/// Stage 1: every wave as a dot at its (kx, ky) — direction and spatial frequency — coloured by
/// its red, green and blue amplitudes, with a hand at its current phase φ − ω·t.
pub fn parameters(model: &Model, t: f32) -> Bitmap {
    let mut b = Bitmap::new(SIZE, SIZE, BG);
    b.text(
        16,
        12,
        &format!("{} waves in the (kx, ky) plane", model.count()),
        2,
        TEXT,
    );
    let (cx, cy) = (SIZE as f32 / 2.0, 290.0);
    // The shortest wavelength the model draws is 100 frame units: |k| ≤ 2π/100, the disk's edge.
    let k_max = std::f32::consts::TAU / 100.0;
    let radius = 230.0;
    let scale = radius / k_max;
    line(&mut b, cx - radius, cy, cx + radius, cy, GRID);
    line(&mut b, cx, cy - radius, cx, cy + radius, GRID);
    b.text((cx + radius) as usize - 16, cy as usize + 6, "kx", 2, MUTED);
    b.text(cx as usize + 6, (cy - radius) as usize, "ky", 2, MUTED);
    for wavelength in [100.0f32, 200.0] {
        let r = std::f32::consts::TAU / wavelength * scale;
        circle(&mut b, cx, cy, r, GRID);
        b.text(
            (cx + r * 0.71) as usize + 2,
            (cy - r * 0.71) as usize - 16,
            &format!("λ {wavelength}"),
            2,
            MUTED,
        );
    }
    let waves = model.waves();
    // Amplitudes share one scale so a faint wave looks faint.
    let amp_max = waves
        .iter()
        .flat_map(|w| w.amp[..3].iter().map(|a| a.abs()))
        .fold(1e-6f32, f32::max);
    for (w, phase) in waves.iter().zip(model.phases(t)) {
        let (x, y) = (cx + w.kx * scale, cy - w.ky * scale);
        let colour = [0, 1, 2].map(|c| (255.0 * (0.5 + 0.5 * w.amp[c] / amp_max)) as u8);
        let colour = [colour[0], colour[1], colour[2], 255];
        let hand = 16.0;
        line(
            &mut b,
            x,
            y,
            x + hand * phase.cos(),
            y - hand * phase.sin(),
            TEXT,
        );
        b.rect(
            (x - 3.0).max(0.0) as usize,
            (y - 3.0).max(0.0) as usize,
            7,
            7,
            colour,
        );
    }
    let legend = [
        "dot: direction, frequency (kx, ky)",
        "colour: amplitude in R, G, B",
        "hand: phase φ - ω·t, turning",
    ];
    for (i, text) in legend.iter().enumerate() {
        b.text(16, 522 + i * 18, text, 2, MUTED);
    }
    b
}

/// Stage 2: L [4·H, 2W] (fixed) and R(t) [2W, W_px] (rebuilt every frame) as heatmaps, blue
/// below zero and orange above, each labelled with its shape.
pub fn factors(model: &Model, left: &[f32], right: &[f32]) -> Bitmap {
    let (res, w2) = (model.res, 2 * model.count());
    let mut b = Bitmap::new(SIZE, SIZE, BG);
    b.text(16, 12, "L  x  R(t): the two factors", 2, TEXT);
    let (lx, ly, lw, lh) = (16, 52, 176, 420);
    let range = |v: &[f32]| v.iter().fold(1e-6f32, |m, x| m.max(x.abs()));
    let (lm, rm) = (range(left), range(right));
    heatmap(&mut b, [lx, ly, lw, lh], left, [4 * res, w2], |v| {
        diverging(v / lm)
    });
    b.text(lx, ly + lh + 8, "L", 2, ACCENT);
    b.text(lx, ly + lh + 28, &format!("[{}, {w2}]", 4 * res), 2, TEXT);
    b.text(lx, ly + lh + 48, "fixed", 2, MUTED);
    b.text(204, 220, "x", 3, TEXT);
    let (rx, ry, rw) = (240, 52, 320);
    heatmap(&mut b, [rx, ry, rw, rw], right, [w2, res], |v| {
        diverging(v / rm)
    });
    b.text(rx, ry + rw + 8, "R(t)", 2, ACCENT);
    b.text(rx, ry + rw + 28, &format!("[{w2}, {res}]"), 2, TEXT);
    b.text(rx, ry + rw + 48, "sin, cos of each", 2, MUTED);
    b.text(rx, ry + rw + 68, "wave's phase along x,", 2, MUTED);
    b.text(rx, ry + rw + 88, "rebuilt every frame", 2, MUTED);
    let key_y = SIZE - 26;
    b.rect(16, key_y, 16, 16, diverging(-1.0));
    b.text(38, key_y, "< 0", 2, MUTED);
    b.rect(110, key_y, 16, 16, diverging(1.0));
    b.text(132, key_y, "> 0", 2, MUTED);
    b
}

/// Stage 3: the product's four planes [4, H, W] (red, green, blue, mean) as greyscale heatmaps
/// of the raw values, before the colour mapping, each on its own symmetric range.
pub fn planes(model: &Model, planes: &[f32]) -> Bitmap {
    let res = model.res;
    let mut b = Bitmap::new(SIZE, SIZE, BG);
    b.text(
        16,
        10,
        &format!("planes = L·R(t): [4, {res}, {res}]"),
        2,
        TEXT,
    );
    let names = ["red", "green", "blue", "mean"];
    let side = 240;
    for (c, name) in names.iter().enumerate() {
        let plane = planes
            .get(c * res * res..(c + 1) * res * res)
            .unwrap_or(&[]);
        let m = plane.iter().fold(1e-6f32, |m, x| m.max(x.abs()));
        let (x, y) = (24 + (c % 2) * 288, 36 + (c / 2) * 268);
        heatmap(&mut b, [x, y, side, side], plane, [res, res], |v| {
            let g = (127.5 + 127.5 * v / m).clamp(0.0, 255.0) as u8;
            [g, g, g, 255]
        });
        b.text(x, y + side + 6, &format!("{name} ±{m:.2}"), 2, MUTED);
    }
    b
}

/// Stage 5: the frame (the GPU's pixels) beside the two measured uncapped rates as bars on a
/// logarithmic scale, with the figures, the clocks they came from, why the CPU path wins where
/// it does (`software`: a software adapter) and which measurement they are (the one the page's
/// HUD shows: measured here, or by the demo's other page for the same settings).
pub fn rates(
    model: &Model,
    frame: &[u32],
    rates: Option<&(Rates, RatesSource)>,
    software: bool,
) -> Bitmap {
    let res = model.res;
    let mut b = framed(model, frame);
    // A rate from a median of 0 ms (a coarse clock) is infinite: nothing to draw on a log scale.
    let Some((r, source)) = rates.filter(|(r, _)| r.gpu_fps.is_finite() && r.cpu_fps.is_finite())
    else {
        b.text(352, 200, "measuring...", 2, MUTED);
        return b;
    };
    bars(
        &mut b,
        &[(r.gpu_fps, ACCENT, "GPU"), (r.cpu_fps, COOL, "CPU")],
    );
    let x = r.gpu_fps / r.cpu_fps;
    let mut lines = vec![
        (format!("GPU {:.1} frames/s", r.gpu_fps), ACCENT),
        (format!("    ({})", r.gpu_clock), MUTED),
        (format!("CPU {:.2} frames/s", r.cpu_fps), COOL),
        ("    (wall clock, one thread)".to_string(), MUTED),
        (format!("GPU/CPU {}", ratio(x)), TEXT),
    ];
    // Where the CPU path wins, why.
    if x < 1.0 {
        let why = if software {
            "  CPU faster: a software adapter"
        } else {
            "  CPU faster at this frame size"
        };
        lines.push((why.to_string(), TEXT));
    }
    lines.push((format!("at {res}x{res}, {} waves", model.count()), TEXT));
    lines.push((source.short(), MUTED));
    for (i, (text, colour)) in lines.iter().enumerate() {
        b.text(16, 400 + i * 22, text, 2, *colour);
    }
    b
}

/// The picture's title and the frame itself, top left.
pub fn framed(model: &Model, frame: &[u32]) -> Bitmap {
    let res = model.res;
    let mut b = Bitmap::new(SIZE, SIZE, BG);
    b.text(16, 12, "uncapped frames/s, log scale", 2, TEXT);
    let opaque: Vec<u32> = frame.iter().map(|p| p | 0xff00_0000).collect();
    heatmap_u32(&mut b, [16, 48, 320, 320], &opaque, [res, res]);
    b
}

/// Bars on a log scale beside the frame, from 0.1 frames/s to the decade above the fastest.
pub fn bars(b: &mut Bitmap, list: &[(f64, Rgba, &str)]) {
    let (bx, by, bh) = (360usize, 48usize, 320usize);
    let top = list
        .iter()
        .fold(1.0f64, |a, (fps, _, _)| a.max(*fps))
        .log10()
        .ceil();
    let bottom = -1.0f64;
    let height = |fps: f64| {
        let at = (fps.max(0.1).log10() - bottom) / (top - bottom);
        (at.clamp(0.0, 1.0) * bh as f64) as usize
    };
    let mut decade = bottom;
    while decade <= top {
        let y = by + bh - height(10f64.powf(decade));
        b.rect(bx + 52, y, 164, 1, GRID);
        // Right-aligned against the grid, 16 pixels tall like every text of the pictures.
        let label = decade_label(decade);
        let lx = (bx + 48).saturating_sub(16 * label.chars().count());
        b.text(lx, y.saturating_sub(8), &label, 2, MUTED);
        decade += 1.0;
    }
    for (i, (fps, colour, name)) in list.iter().enumerate() {
        let x = bx + 56 + i * 84;
        let h = height(*fps).max(2);
        b.rect(x, by + bh - h, 64, h, *colour);
        b.text(x + 8, by + bh + 8, name, 2, *colour);
    }
}

/// `2582x`, `2.0x`, `0.48x`: the digits that matter.
fn ratio(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}x")
    } else if x >= 1.0 {
        format!("{x:.1}x")
    } else {
        format!("{x:.2}x")
    }
}

fn decade_label(decade: f64) -> String {
    match decade as i32 {
        -1 => "0.1".into(),
        d @ 0..=2 => format!("{}", 10u32.pow(d as u32)),
        d @ 3..=5 => format!("{}k", 10u32.pow(d as u32 - 3)),
        d => format!("1e{d}"),
    }
}

/// Blue for −1, dark for 0, orange for +1.
fn diverging(v: f32) -> Rgba {
    let v = v.clamp(-1.0, 1.0);
    let (end, a) = if v < 0.0 { (COOL, -v) } else { (ACCENT, v) };
    let mid = [20.0, 20.0, 28.0];
    let mix = |c: usize| (mid[c] + a * (f32::from(end[c]) - mid[c])) as u8;
    [mix(0), mix(1), mix(2), 255]
}

/// Draws a [rows, cols] matrix into the rectangle [x, y, w, h], nearest sample per pixel.
fn heatmap(
    b: &mut Bitmap,
    [x, y, w, h]: [usize; 4],
    data: &[f32],
    [rows, cols]: [usize; 2],
    colour: impl Fn(f32) -> Rgba,
) {
    for yy in 0..h {
        let r = yy * rows / h;
        for xx in 0..w {
            let c = xx * cols / w;
            if let Some(&v) = data.get(r * cols + c) {
                b.rect(x + xx, y + yy, 1, 1, colour(v));
            }
        }
    }
}

/// Draws packed RGBA8 pixels [rows, cols] into the rectangle [x, y, w, h].
fn heatmap_u32(b: &mut Bitmap, [x, y, w, h]: [usize; 4], data: &[u32], [rows, cols]: [usize; 2]) {
    for yy in 0..h {
        let r = yy * rows / h;
        for xx in 0..w {
            let c = xx * cols / w;
            if let Some(&p) = data.get(r * cols + c) {
                b.rect(x + xx, y + yy, 1, 1, p.to_le_bytes());
            }
        }
    }
}

/// A 2-pixel line from (x0, y0) to (x1, y1), clipped to the bitmap.
fn line(b: &mut Bitmap, x0: f32, y0: f32, x1: f32, y1: f32, colour: Rgba) {
    let steps = (x1 - x0).abs().max((y1 - y0).abs()).ceil().max(1.0) as usize;
    for i in 0..=steps {
        let f = i as f32 / steps as f32;
        let (x, y) = (x0 + f * (x1 - x0), y0 + f * (y1 - y0));
        if x >= 0.0 && y >= 0.0 {
            b.rect(x as usize, y as usize, 2, 2, colour);
        }
    }
}

fn circle(b: &mut Bitmap, cx: f32, cy: f32, r: f32, colour: Rgba) {
    let steps = (r * std::f32::consts::TAU).ceil().max(8.0) as usize;
    for i in 0..steps {
        let a = i as f32 / steps as f32 * std::f32::consts::TAU;
        let (x, y) = (cx + r * a.cos(), cy + r * a.sin());
        if x >= 0.0 && y >= 0.0 {
            b.rect(x as usize, y as usize, 1, 1, colour);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use kiln_app::kiln::bench::Clock;
    use kiln_app::kiln::cpu;

    /// Standard deviation of the bitmap's grey level, in 0..1.
    fn spread(b: &Bitmap) -> f64 {
        let g: Vec<f64> = b
            .rgba
            .chunks_exact(4)
            .map(|p| (f64::from(p[0]) + f64::from(p[1]) + f64::from(p[2])) / 765.0)
            .collect();
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        (g.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / g.len() as f64).sqrt()
    }

    fn changed(a: &Bitmap, b: &Bitmap) -> usize {
        a.rgba
            .chunks_exact(4)
            .zip(b.rgba.chunks_exact(4))
            .filter(|(x, y)| x != y)
            .count()
    }

    /// Each stage's picture from the model and the CPU path's tensors at time `t`.
    fn pictures(m: &Model, t: f32, measured: Option<&(Rates, RatesSource)>) -> Vec<Bitmap> {
        let left = cpu::Array::new(&[4 * m.res, 2 * m.count()], m.left()).unwrap();
        let right = cpu::sinusoid(&m.freq(), &m.phases(t), m.res, 0.0, m.step()).unwrap();
        let planes_ = cpu::matmul(&left, &right).unwrap();
        let frame = crate::frame::cpu_frame(m, &left, t).unwrap();
        vec![
            parameters(m, t),
            factors(m, &left.data, &right.data),
            planes(m, &planes_.data),
            rates(m, &frame, measured, true),
        ]
    }

    #[test]
    fn every_stage_picture_has_content_moves_and_differs_from_the_others() {
        let m = Model::new(16, 48, 3);
        let r = Rates {
            gpu_fps: 1234.0,
            cpu_fps: 5.6,
            gpu_clock: Clock::GpuTimestamps,
        };
        let r = (r, RatesSource::here());
        let now = pictures(&m, 0.3, Some(&r));
        let later = pictures(&m, 0.8, Some(&r));
        for (i, (a, b)) in now.iter().zip(&later).enumerate() {
            assert_eq!((a.w, a.h), (SIZE, SIZE));
            assert!(spread(a) > 0.05, "stage picture {i} has no contrast");
            assert!(
                changed(a, b) > 100,
                "stage picture {i} does not move: {} pixels changed",
                changed(a, b)
            );
        }
        for pair in now.windows(2) {
            assert!(changed(&pair[0], &pair[1]) > 10_000);
        }
        let left = cpu::Array::new(&[4 * m.res, 2 * m.count()], m.left()).unwrap();
        let frame = crate::frame::cpu_frame(&m, &left, 0.3).unwrap();
        let unmeasured = rates(&m, &frame, None, false);
        assert!(
            changed(&unmeasured, &now[3]) > 1000,
            "bars drawn without measured rates"
        );
    }

    /// In presenter mode the picture is shown 813 pixels wide at 1920×1080 (532 at 1280×720):
    /// every text of every stage, with long figures, has letters of 16 pixels of the picture
    /// (22.6 on screen; 14.8 at 1280×720) and lies inside it.
    #[test]
    fn every_text_is_readable_and_inside() {
        let m = Model::new(512, 256, 3);
        let r = Rates {
            gpu_fps: 12345.6,
            cpu_fps: 0.12,
            gpu_clock: Clock::GpuTimestamps,
        };
        let left = cpu::Array::new(&[4 * m.res, 2 * m.count()], m.left()).unwrap();
        let frame = crate::frame::cpu_frame(&m, &left, 0.3).unwrap();
        // The longest source line: another page's measurement, minutes old.
        let shared = RatesSource {
            here: false,
            page: "the walkthrough".into(),
            age_s: 1500.0,
        };
        let slow = Rates {
            gpu_fps: 0.123,
            cpu_fps: 12345.6,
            gpu_clock: Clock::GpuTimestamps,
        };
        let mut all = pictures(&m, 0.3, Some(&(r, RatesSource::here())));
        all.push(rates(
            &m,
            &frame,
            Some(&(slow.clone(), shared.clone())),
            true,
        ));
        all.push(rates(&m, &frame, Some(&(slow, shared)), false));
        all.push(rates(&m, &frame, None, true));
        all.push(waiting("copying from the GPU..."));
        for (i, b) in all.iter().enumerate() {
            assert!(!b.texts.is_empty(), "picture {i}: no text");
            for &[x, y, w, h, letter] in &b.texts {
                assert!(
                    letter >= 16,
                    "picture {i}: a text {letter} pixels tall at {x},{y}"
                );
                assert!(
                    x + w <= SIZE && y + h <= SIZE,
                    "picture {i}: a text at {x},{y}, {w}×{h}, outside"
                );
            }
        }
    }

    #[test]
    fn the_rate_bars_are_log_scaled_and_ordered() {
        let m = Model::new(8, 16, 1);
        let frame = vec![0xff20_4060; 16 * 16];
        let bar_height = |gpu: f64, cpu: f64| {
            let r = Rates {
                gpu_fps: gpu,
                cpu_fps: cpu,
                gpu_clock: Clock::WallClock,
            };
            let b = rates(&m, &frame, Some(&(r, RatesSource::here())), false);
            // Pixels of each bar's colour in its column.
            let column = |x: usize, colour: Rgba| {
                (48..368)
                    .filter(|&y| b.rgba[(y * SIZE + x) * 4..][..4] == colour)
                    .count()
            };
            (column(360 + 56 + 30, ACCENT), column(360 + 140 + 30, COOL))
        };
        let (g, c) = bar_height(10_000.0, 10.0);
        assert!(g > c && c > 0, "GPU {g} px, CPU {c} px");
        // Three decades apart on a five-decade axis (0.1 … 10k): 3/5 of the 320 px.
        assert!((g - c).abs_diff(192) <= 2, "GPU {g} px, CPU {c} px");
    }
}
