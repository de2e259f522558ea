//! Untrusted text: which characters a report's strings may hold, its names in one form (NFKC),
//! and how to print them.

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// Whether `c` can make printed text lie about itself: bidirectional overrides, embeddings and
/// isolates (which reorder what follows them), line and paragraph separators (which break a
/// line where no newline is), and zero-width characters (which hide that two names differ).
pub fn is_deceptive(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// Whether `c` draws nothing, or nothing this build can name, so that a name holding it looks
/// like one without it (`NVI\u{ad}DIA H200`, a private-use glyph, U+FFFF): the Unicode
/// `Default_Ignorable_Code_Point` characters (soft hyphen, combining grapheme joiner, the Hangul
/// fillers, variation selectors, tags, …, listed by hand: no well-kept crate exposes the
/// property) and the blank Braille pattern, which draws as a space; and by general category,
/// every format (`Cf`), private-use (`Co`), surrogate (`Cs`) and unassigned (`Cn`: the
/// noncharacters U+FFFE, U+FFFF, … and what this build's Unicode tables do not know yet)
/// character.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{2800}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    ) || matches!(
        c.general_category(),
        GeneralCategory::Format
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
            | GeneralCategory::Unassigned
    )
}

/// `text` in Unicode's compatibility composition (NFKC): full-width, ligature, superscript and
/// other compatibility forms as the plain characters they stand for, combining sequences
/// composed. Two names that draw alike then compare alike (`ＮＶＩＤＩＡ` is `NVIDIA`). Text
/// already in that form (every ASCII name) is returned as it is, without a copy.
pub fn nfkc(text: &str) -> Option<String> {
    match is_nfkc_quick(text.chars()) {
        IsNormalized::Yes => None,
        _ => {
            let normal: String = text.nfkc().collect();
            (normal != text).then_some(normal)
        }
    }
}

/// How a string may span lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// A name: no control character at all.
    One,
    /// A message (an error, why a variant was skipped): newlines and tabs allowed.
    Many,
}

/// The first reason `text` breaks the string rules: over `max` bytes, a control character
/// (other than the newlines and tabs a message may hold), a deceptive one, or an invisible one.
pub fn check(text: &str, max: usize, lines: Lines) -> Result<(), String> {
    if text.len() > max {
        return Err(format!("{} bytes, over {max}", text.len()));
    }
    for c in text.chars() {
        let allowed = lines == Lines::Many && (c == '\n' || c == '\t');
        if c.is_control() && !allowed {
            return Err(format!("control character U+{:04X}", u32::from(c)));
        }
        if is_deceptive(c) {
            return Err(format!(
                "bidirectional or invisible formatting character U+{:04X}",
                u32::from(c)
            ));
        }
        if is_invisible(c) {
            return Err(format!(
                "invisible, private-use or unassigned character U+{:04X}",
                u32::from(c)
            ));
        }
    }
    Ok(())
}

/// `text` on one line for a terminal: newlines as `⏎`, any other control or deceptive
/// character as its escape. Reports are checked when read, so this only matters for messages
/// (which may hold newlines) and for text that did not come through `Report::parse`.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str(" ⏎ "),
            '\t' => out.push(' '),
            c if c.is_control() || is_deceptive(c) || is_invisible(c) => {
                out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

/// At most `n` characters of `s`, made printable, for quoting untrusted text in an error.
pub fn clip(s: &str, n: usize) -> String {
    let mut out: String = one_line(&s.chars().take(n).collect::<String>());
    if s.chars().count() > n {
        out.push('…');
    }
    out
}
