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

/// The HUD's lines for the uncapped rates: each path's frames per second and their ratio, to
/// three significant figures (a slow GPU reads 0.016x, not 0.0x). Where the CPU path is faster
/// the line says why: on a software adapter the "GPU" runs on the CPU too, through a
/// rasterizer made for drawing, not for these kernels.
pub fn uncapped(r: &crate::Rates, software: bool) -> [String; 2] {
    // A demo may leave its GPU path unmeasured (off for settings it is far slower at).
    if !r.gpu_fps.is_finite() {
        return [
            "uncapped GPU: not measured for these settings (the GPU path is off)".into(),
            format!("uncapped CPU: {} frames/s", significant(r.cpu_fps)),
        ];
    }
    let ratio = r.gpu_fps / r.cpu_fps;
    let why = match (ratio < 1.0, software) {
        (false, _) => "",
        (true, true) => " (CPU faster: this adapter is a software one, on the CPU)",
        (true, false) => " (the CPU path is faster at this size)",
    };
    [
        format!(
            "uncapped GPU: {} frames/s ({})",
            significant(r.gpu_fps),
            r.gpu_clock
        ),
        format!(
            "uncapped CPU: {} frames/s; GPU/CPU {}x{why}",
            significant(r.cpu_fps),
            significant(ratio)
        ),
    ]
}

/// `x` with three significant figures (at least its whole digits).
fn significant(x: f64) -> String {
    let decimals = match x.abs() {
        a if a >= 100.0 || a == 0.0 || !a.is_finite() => 0,
        a if a >= 10.0 => 1,
        a if a >= 1.0 => 2,
        a => (2.0 - a.log10().floor()).min(9.0) as usize,
    };
    format!("{x:.decimals$}")
}

/// The HUD's line for the displayed frame rate. Vsync caps it only when it is near the
/// display's refresh rate (`refresh_hz`, where the platform tells it; browsers do not, and most
/// displays run at 60 Hz): below that, the frame's own work sets the pace, and saying "capped
/// by vsync" would be false.
pub fn displayed(fps: f64, refresh_hz: Option<f64>) -> String {
    match refresh_hz {
        Some(hz) if fps >= 0.9 * hz => {
            format!("displayed {fps:.1} frames/s (capped by vsync at {hz:.0} Hz)")
        }
        None if fps >= 54.0 => format!("displayed {fps:.1} frames/s (about the display's rate)"),
        _ => format!(
            "displayed {fps:.1} frames/s (below the display's rate: each frame's work sets the pace)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::{displayed, significant, uncapped};

    #[test]
    fn rates_keep_three_significant_figures_and_say_why_the_cpu_wins() {
        assert_eq!(significant(0.01644), "0.0164");
        assert_eq!(significant(0.3), "0.300");
        assert_eq!(significant(4.85), "4.85");
        assert_eq!(significant(26.54), "26.5");
        assert_eq!(significant(21463.2), "21463");
        let rates = |gpu_fps, cpu_fps| crate::Rates {
            gpu_fps,
            cpu_fps,
            gpu_clock: kiln::bench::Clock::WallClock,
        };
        let [_, slow] = uncapped(&rates(0.3, 18.2), true);
        assert!(slow.contains("GPU/CPU 0.0165x"), "{slow}");
        assert!(slow.contains("software"), "{slow}");
        let [_, fast] = uncapped(&rates(3000.0, 2.0), false);
        assert!(fast.ends_with("GPU/CPU 1500x"), "{fast}");
    }

    #[test]
    fn vsync_is_named_only_near_the_display_rate() {
        assert!(displayed(59.8, Some(60.0)).contains("capped by vsync at 60 Hz"));
        assert!(displayed(119.0, Some(120.0)).contains("capped by vsync"));
        for (fps, hz) in [
            (5.9, Some(60.0)),
            (60.0, Some(144.0)),
            (5.9, None),
            (30.0, None),
        ] {
            let line = displayed(fps, hz);
            assert!(!line.contains("vsync"), "{line}");
            assert!(line.contains("each frame's work sets the pace"), "{line}");
        }
        assert!(!displayed(60.0, None).contains("vsync"));
    }
}
