//! The two stages before the forward pass: the text as characters and UTF-8 bytes, then its
//! WordPiece tokens and their ids.

use kiln_app::raster::wrap;

use super::plot::{ACCENT, Area, HIGHLIGHT, bars};
use super::scene::{ROW_PERIOD, Scene, WIDTH, cycle};
use crate::heatmap::{DIM, Image, TEXT, label};

const SPECIAL: [u8; 3] = [60, 60, 76];
const WORD: [u8; 3] = [40, 72, 120];
const PIECE: [u8; 3] = [92, 52, 120];

/// Characters per second on the text stage.
const CHAR_RATE: f32 = 6.0;

pub(super) fn text_stage(img: &mut Image, scene: &Scene<'_>) {
    let chars: Vec<char> = scene.text.chars().collect();
    img.text(
        16,
        40,
        &format!("text: {} characters", chars.len()),
        ACCENT,
        2,
        false,
    );
    img.text(16, 64, "what the person typed", DIM, 2, false);
    if chars.is_empty() {
        img.text(16, 100, "(empty: type a sentence)", DIM, 2, false);
        return;
    }
    let lit = cycle(scene.time, 1.0 / CHAR_RATE, chars.len());
    // The sentence large, wrapped at 24 characters; the lit character on a box.
    let (scale, cols) = (3, 24);
    let mut k = 0;
    let mut y: usize = 100;
    for line in wrap(scene.text, cols) {
        for (c, ch) in line.chars().enumerate() {
            // `wrap` drops the spaces it breaks at: keep the index on the original text.
            while k < chars.len() && chars[k] != ch {
                k += 1;
            }
            let x = 16 + c * 8 * scale;
            if k == lit {
                img.rect(
                    x.saturating_sub(2),
                    y.saturating_sub(3),
                    8 * scale + 4,
                    8 * scale + 6,
                    HIGHLIGHT,
                );
                img.text(x, y, &ch.to_string(), [10, 10, 14], scale, false);
            } else {
                img.text(x, y, &ch.to_string(), TEXT, scale, false);
            }
            k += 1;
        }
        y += 40;
    }
    let ch = chars[lit];
    y += 20;
    img.text(
        16,
        y,
        &format!("character {} of {}: '{ch}'", lit + 1, chars.len()),
        TEXT,
        2,
        false,
    );
    img.text(
        16,
        y + 28,
        &format!("code point U+{:04X}", u32::from(ch)),
        DIM,
        2,
        false,
    );
    // The bytes a computer holds: UTF-8, the lit character's bytes highlighted.
    y += 76;
    img.text(16, y, "as UTF-8 bytes:", DIM, 2, false);
    y += 28;
    let mut at = 0;
    for (i, c) in chars.iter().enumerate() {
        let mut buf = [0u8; 4];
        for b in c.encode_utf8(&mut buf).bytes() {
            let (x, yy) = (16 + (at % 16) * 38, y + (at / 16) * 24);
            if yy + 16 > 580 {
                break;
            }
            let colour = if i == lit { HIGHLIGHT } else { DIM };
            img.text(x, yy, &format!("{b:02x}"), colour, 2, false);
            at += 1;
        }
    }
    // The same numbers as bars: the text is already a vector of numbers.
    let codes: Vec<f32> = chars.iter().map(|&c| u32::from(c) as f32).collect();
    img.text(16, 594, "each character's number:", DIM, 2, false);
    let area = Area {
        x: 16,
        y: 620,
        w: 608,
        h: 160,
    };
    bars(img, &area, &codes, false, Some(lit));
}

pub(super) fn token_stage(img: &mut Image, scene: &Scene<'_>) {
    let n = scene.tokens.len();
    img.text(
        16,
        40,
        &format!("tokens: {n} WordPiece pieces"),
        ACCENT,
        2,
        false,
    );
    img.text(16, 64, "## marks a piece of a word", DIM, 2, false);
    if n == 0 {
        return;
    }
    let lit = cycle(scene.time, ROW_PERIOD, n);
    let (mut x, mut y) = (16, 96);
    for (i, (t, id)) in scene.tokens.iter().zip(scene.ids).enumerate() {
        let t = label(t, 16);
        let w = (t.chars().count().max(3) * 16 + 16).max(id.to_string().len() * 16 + 16);
        if x + w > WIDTH - 16 {
            x = 16;
            y += 62;
        }
        if y + 52 > 470 {
            break;
        }
        let fill = if i == lit {
            HIGHLIGHT
        } else if t.starts_with('[') {
            SPECIAL
        } else if t.starts_with("##") {
            PIECE
        } else {
            WORD
        };
        img.rect(x, y, w, 52, fill);
        let ink = if i == lit { [10, 10, 14] } else { TEXT };
        img.text(x + 8, y + 8, &t, ink, 2, false);
        img.text(x + 8, y + 30, &id.to_string(), ink, 2, false);
        x += w + 8;
    }
    let (t, id) = (&scene.tokens[lit], scene.ids.get(lit).copied().unwrap_or(0));
    img.text(
        16,
        486,
        &format!("token {} of {n}: '{}'", lit + 1, label(t, 14)),
        TEXT,
        2,
        false,
    );
    img.text(
        16,
        514,
        &format!("id {id}: row {id} of the table"),
        TEXT,
        2,
        false,
    );
    img.text(
        16,
        542,
        &format!("(the embedding table: {} rows)", scene.vocab),
        DIM,
        2,
        false,
    );
    // What the model receives: a vector of numbers.
    let ids: Vec<f32> = scene.ids.iter().map(|&i| i as f32).collect();
    img.text(16, 594, "the ids, the model's input:", DIM, 2, false);
    let area = Area {
        x: 16,
        y: 620,
        w: 608,
        h: 160,
    };
    bars(img, &area, &ids, false, Some(lit));
}
