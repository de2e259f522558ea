//! The native window's presenter panel: a stage's title, text and code drawn as a bitmap beside
//! the live visual, in type sized for a projector.

use crate::raster::{Bitmap, Rgba, wrap};
use crate::talk::{Stage, Talk};

use crate::raster::palette::{ACCENT as TITLE, BG, MUTED, TEXT};

const CODE_BG: Rgba = [24, 24, 32, 255];
const CODE: Rgba = [205, 205, 215, 255];
const MARK_BG: Rgba = TITLE;
const MARK: Rgba = [16, 12, 4, 255];

/// Draws `stage` (number `talk.stage() + 1` of `talk.count()`) on a `w` × `h` panel, with
/// `footer` lines (the measured rates) at the bottom.
pub fn draw(stage: &Stage, talk: &Talk, w: usize, h: usize, footer: &[String]) -> Bitmap {
    let mut b = Bitmap::new(w.max(1), h.max(1), BG);
    // Font pixels per screen pixel: larger on a 1080p screen than at 720p.
    let big = h >= 1000;
    let (title_s, text_s, code_s) = if big { (5, 3, 2) } else { (4, 2, 2) };
    let pad = 8 * text_s;
    let cols = |scale: usize| (w.saturating_sub(2 * pad) / (8 * scale)).max(1);
    let mut y = pad;

    let counter = format!("{} / {}", talk.stage() + 1, talk.count());
    b.text(pad, y, &counter, text_s, MUTED);
    y += 12 * text_s;
    for line in wrap(&stage.title, cols(title_s)) {
        b.text(pad, y, &line, title_s, TITLE);
        y += 11 * title_s;
    }
    y += 4 * text_s;
    for line in wrap(&stage.text, cols(text_s)) {
        b.text(pad, y, &line, text_s, TEXT);
        y += 11 * text_s;
    }

    let footer_h = (footer.len() + 1) * 10 * 2 + pad;
    if let Some(code) = &stage.code {
        y += 6 * text_s;
        for line in wrap(&code.caption, cols(2)) {
            b.text(pad, y, &line, 2, MUTED);
            y += 20;
        }
        let top = y + 4;
        let rows = h.saturating_sub(top + footer_h + 8) / (10 * code_s);
        let lines = code_lines(&code.pieces);
        let first = first_shown_line(&lines, rows, code.focus);
        b.rect(
            pad / 2,
            top,
            w.saturating_sub(pad),
            rows * 10 * code_s + 8,
            CODE_BG,
        );
        let max_cols = cols(code_s);
        for (row, line) in lines.iter().skip(first).take(rows).enumerate() {
            let ly = top + 4 + row * 10 * code_s;
            let mut x = pad;
            let mut col = 0;
            for (text, marked) in line {
                for ch in text.chars() {
                    if col + 1 >= max_cols {
                        b.glyph(x, ly, '…', code_s, MUTED);
                        break;
                    }
                    if *marked {
                        b.rect(x, ly.saturating_sub(1), 8 * code_s, 9 * code_s, MARK_BG);
                    }
                    b.glyph(x, ly, ch, code_s, if *marked { MARK } else { CODE });
                    x += 8 * code_s;
                    col += 1;
                }
            }
        }
    }

    let mut fy = h.saturating_sub(footer_h);
    let keys = "→/space next  ← back  Home first  F fullscreen  1–9, 0 jump  Esc quit";
    for line in footer.iter().map(String::as_str).chain([keys]) {
        b.text(pad, fy, line, 2, MUTED);
        fy += 20;
    }
    b
}

/// The code as lines of (text, marked) runs, tabs as spaces.
fn code_lines(pieces: &[kiln::Piece]) -> Vec<Vec<(String, bool)>> {
    let mut lines = vec![Vec::new()];
    for p in pieces {
        for (i, part) in p.text.replace('\t', "    ").split('\n').enumerate() {
            if i > 0 {
                lines.push(Vec::new());
            }
            if !part.is_empty()
                && let Some(line) = lines.last_mut()
            {
                line.push((part.to_string(), p.marked));
            }
        }
    }
    lines
}

/// The first line to show: the code's focus (where a kernel's work is, as on the page) when it
/// has one, else one line above the first that holds a template value (where the template
/// starts shaping this device's kernel); never so far down that the pane ends short.
fn first_shown_line(lines: &[Vec<(String, bool)>], rows: usize, focus: usize) -> usize {
    if rows == 0 || lines.len() <= rows {
        return 0;
    }
    let first = if focus > 0 {
        focus + 1
    } else {
        lines
            .iter()
            .position(|l| l.iter().any(|(_, m)| *m))
            .unwrap_or(0)
    };
    first.saturating_sub(1).min(lines.len() - rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::talk::Code;
    use kiln::Piece;

    fn piece(text: &str, marked: bool) -> Piece {
        Piece {
            text: text.into(),
            marked,
        }
    }

    #[test]
    fn the_code_window_starts_at_the_first_mark() {
        let mut pieces = vec![piece(&"plain\n".repeat(50), false)];
        pieces.push(piece("const T = ", false));
        pieces.push(piece("64", true));
        pieces.push(piece("u;\n", false));
        let lines = code_lines(&pieces);
        assert_eq!(lines.len(), 52);
        assert_eq!(
            lines[50],
            vec![
                ("const T = ".into(), false),
                ("64".into(), true),
                ("u;".into(), false)
            ]
        );
        let first = first_shown_line(&lines, 10, 0);
        assert_eq!(first, 42, "the window ends at the end, with the mark in it");
        assert_eq!(first_shown_line(&lines, 100, 0), 0);
        assert_eq!(first_shown_line(&lines, 10, 20), 20, "the focus first");
    }

    #[test]
    fn a_stage_draws_text_and_marked_code() {
        let code = Code {
            caption: "k".into(),
            language: "wgsl",
            pieces: vec![
                piece("let x = ", false),
                piece("64", true),
                piece("u;", false),
            ],
            focus: 0,
        };
        let stage = Stage::new("Title", "Some words.", Some(code));
        let b = draw(&stage, &Talk::new(3, Some(2)), 640, 480, &["rates".into()]);
        let count = |c: Rgba| b.rgba.chunks_exact(4).filter(|p| *p == c).count();
        assert!(count(TITLE) > 100, "title pixels: {}", count(TITLE));
        assert!(count(TEXT) > 100, "text pixels");
        // The marked value's dark glyph on its amber cell (the title's amber alone would not do).
        assert!(count(MARK) > 10, "marked code pixels: {}", count(MARK));
        let unmarked = Code {
            caption: "k".into(),
            language: "wgsl",
            pieces: vec![piece("let x = 64u;", false)],
            focus: 0,
        };
        let plain = draw(
            &Stage::new("Title", "Some words.", Some(unmarked)),
            &Talk::new(3, Some(2)),
            640,
            480,
            &[],
        );
        let marks = plain.rgba.chunks_exact(4).filter(|p| *p == MARK).count();
        assert_eq!(marks, 0, "nothing marked, nothing drawn as marked");
    }
}
