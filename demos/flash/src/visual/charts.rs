//! Visual 4: the measured times of the flash, naive and CPU paths and kiln's byte model of the
//! two GPU paths, as line charts, with a summary and the sweep's note under them.

use kiln_app::raster::wrap;

use super::pen::{LINE, MARGIN, Pen, SIZE, SMALL};
use crate::chart::{self, Series};
use crate::sweep::{Bytes, Point, Shape};

/// One sequence length's measured times (None: not measured, or left out).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Timed {
    pub seq: usize,
    pub flash_ms: Option<f64>,
    pub naive_ms: Option<f64>,
    pub cpu_ms: Option<f64>,
}

impl From<&Point> for Timed {
    fn from(p: &Point) -> Timed {
        Timed {
            seq: p.seq,
            flash_ms: Some(p.flash_ms),
            naive_ms: Some(p.naive_ms),
            cpu_ms: p.cpu_ms,
        }
    }
}

/// What visual 4 shows: the lengths swept, the times measured so far and a line on where they
/// come from.
#[derive(Clone, Copy, Debug)]
pub struct Measured<'a> {
    pub shape: Shape,
    pub lengths: &'a [usize],
    pub points: &'a [Timed],
    pub note: &'a str,
    /// While nothing is measured yet: how far the sweep is, which the empty chart says instead
    /// of "no data yet" (the first length can take minutes on a software adapter).
    pub pending: Option<&'a str>,
}

/// The two charts, the latest length's summary and the note.
pub(super) fn draw(pen: &mut Pen, m: &Measured<'_>) {
    let u = pen.u;
    let (w, x0, y0) = (SIZE.0 as f64 * u, pen.ox, pen.oy);
    let px = |v: f64| v.max(0.0).round() as usize;
    let s = m.shape;
    let timed = |f: &dyn Fn(&Timed) -> Option<f64>| -> Vec<(f64, f64)> {
        m.points
            .iter()
            .filter_map(|p| f(p).map(|v| (p.seq as f64, v)))
            .collect()
    };
    if let Some(p) = m.pending {
        pen.c.empty = p.to_string();
    }
    pen.c.label = SMALL * u;
    pen.c.title = 2.0 * u;
    pen.c.lines(
        (
            px(x0 + 12.0 * u),
            px(y0 + 12.0 * u),
            px(w - 12.0 * u),
            px(300.0 * u),
        ),
        &format!(
            "Time (ms), fwd+bwd, B{} H{} d{}",
            s.batch, s.heads, s.head_dim
        ),
        "sequence length N",
        "ms",
        &[
            Series {
                label: "flash GPU",
                colour: chart::GPU,
                points: timed(&|p| p.flash_ms),
            },
            Series {
                label: "naive GPU",
                colour: chart::NAIVE,
                points: timed(&|p| p.naive_ms),
            },
            Series {
                label: "CPU",
                colour: chart::CPU,
                points: timed(&|p| p.cpu_ms),
            },
        ],
        true,
    );
    // The byte model needs no measurement: every length at once.
    let bytes: Vec<(usize, Bytes)> = m
        .lengths
        .iter()
        .filter_map(|&n| Bytes::of(s, n).ok().map(|b| (n, b)))
        .collect();
    let line = |f: &dyn Fn(&Bytes) -> f64| bytes.iter().map(|(n, b)| (*n as f64, f(b))).collect();
    let summary = m
        .points
        .iter()
        .rev()
        .find_map(|p| Some((p.seq, p.flash_ms?, p.naive_ms?)))
        .and_then(|(n, f, nv)| {
            let (_, b) = bytes.iter().find(|(len, _)| *len == n)?;
            Some(format!(
                "N = {n}: flash {f:.2} ms, naive {nv:.2} ms; {:.1}x fewer bytes",
                b.naive_mb / b.flash_mb
            ))
        });
    // The summary and the whole note fit under the charts: the bytes chart gives up the height
    // they need (a long adapter name makes the note a line longer).
    let y = text_top(summary.as_deref(), m.note);
    pen.c.lines(
        (
            px(x0 + 12.0 * u),
            px(y0 + 320.0 * u),
            px(w - 12.0 * u),
            px((260.0 - (TEXT_TOP - y)) * u),
        ),
        "MB moved (byte model)",
        "sequence length N",
        "MB",
        &[
            Series {
                label: "flash",
                colour: chart::GPU,
                points: line(&|b| b.flash_mb),
            },
            Series {
                label: "naive",
                colour: chart::NAIVE,
                points: line(&|b| b.naive_mb),
            },
        ],
        true,
    );
    let mut y = y;
    if let Some(text) = summary {
        y = pen.para(20.0, y, &text, chart::TEXT);
    }
    for (y, line) in note_lines(m.note, y) {
        pen.text(20.0, y, &line, chart::DIM, SMALL);
    }
}

/// Where the summary and the note start when they fit under the charts as drawn.
const TEXT_TOP: f64 = 588.0;
/// The most the bytes chart gives up for them.
const MOST_LIFT: f64 = 120.0;
/// How far the note sits under the line it starts on.
const NOTE_DROP: f64 = 4.0;

/// Columns of small text from x = 20 to the right margin.
fn text_cols() -> usize {
    ((SIZE.0 as f64 - MARGIN - 20.0) / (8.0 * SMALL))
        .floor()
        .max(1.0) as usize
}

/// Where the summary (wrapped as `Pen::para` wraps it) and the note start so that the note's
/// last line is inside the picture: `TEXT_TOP`, or higher by up to `MOST_LIFT`.
fn text_top(summary: Option<&str>, note: &str) -> f64 {
    let lines = summary.map_or(0, |s| wrap(s, text_cols()).len()) + wrap(note, text_cols()).len();
    let last = SIZE.1 as f64 - 4.0 - 8.0 * SMALL - NOTE_DROP;
    let top = last - (lines.max(1) - 1) as f64 * LINE;
    top.clamp(TEXT_TOP - MOST_LIFT, TEXT_TOP)
}

/// The sweep's note from `y` down: as many of its lines as fit whole (the glyphs' bottom inside
/// the picture's 4-unit edge), each with the height it is drawn at.
fn note_lines(note: &str, y: f64) -> Vec<(f64, String)> {
    let cols = text_cols();
    let mut out = Vec::new();
    let mut y = y + NOTE_DROP;
    for line in wrap(note, cols) {
        if y + 8.0 * SMALL > SIZE.1 as f64 - 4.0 {
            break;
        }
        out.push((y, line));
        y += LINE;
    }
    out
}

/// The first words of stage 4's note on a software adapter (empty elsewhere): why the CPU path
/// can beat the "GPU" there, said first so that it is never among the lines left out.
pub fn software_caveat(profile: &kiln_app::kiln::DeviceProfile) -> &'static str {
    if profile.is_software() {
        "A software adapter: its GPU path runs on the CPU, so the CPU path can win. "
    } else {
        ""
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The note is never cut: with the longest adapter names the stored profiles have and a
    /// two-line summary, every word of it is drawn (a 2026-12-07 pass lost its last word).
    #[test]
    fn the_whole_note_fits_under_the_charts() {
        let profiles = kiln_app::kiln::device::stored_profiles().unwrap();
        let summary = "N = 1024: flash 1234.56 ms, naive 5678.90 ms; 12.3x fewer bytes";
        for (name, profile) in &profiles {
            for clock in ["wall clock", "GPU timestamps"] {
                let note = format!(
                    "{}measured on {} (a very long adapter name, as browsers give), GPU times \
                     from {clock}; CPU path: this page's wasm build, one thread",
                    software_caveat(profile),
                    profile.name
                );
                let top = text_top(Some(summary), &note);
                let y = top + wrap(summary, text_cols()).len() as f64 * LINE;
                let shown: Vec<String> = note_lines(&note, y).into_iter().map(|(_, l)| l).collect();
                assert_eq!(shown, wrap(&note, text_cols()), "{name}: {clock}");
            }
        }
    }

    /// On a software adapter stage 4's note starts with why the CPU path can win, and the
    /// lines that fit under a two-line summary hold all of it.
    #[test]
    fn the_software_caveat_is_never_left_out() {
        let profiles = kiln_app::kiln::device::stored_profiles().unwrap();
        for (name, profile) in &profiles {
            let caveat = software_caveat(profile);
            assert_eq!(caveat.is_empty(), !profile.is_software(), "{name}");
            let note = format!(
                "{caveat}measured on {}, GPU times from the adapter's timestamps; CPU path: \
                 this page's wasm build, one thread",
                profile.name
            );
            let shown: Vec<String> = note_lines(&note, 588.0 + 2.0 * LINE)
                .into_iter()
                .map(|(_, l)| l)
                .collect();
            let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
            let shown = words(&shown.join(" "));
            assert!(
                shown.len() >= words(caveat).len()
                    && shown[..words(caveat).len()] == words(caveat)[..],
                "{name}: {shown:?}"
            );
        }
    }
}
