//! Untrusted text: which characters a report's strings may hold, and how to print them.

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

/// How a string may span lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// A name: no control character at all.
    One,
    /// A message (an error, why a variant was skipped): newlines and tabs allowed.
    Many,
}

/// The first reason `text` breaks the string rules: over `max` bytes, a control character
/// (other than the newlines and tabs a message may hold), or a deceptive one.
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
            c if c.is_control() || is_deceptive(c) => {
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
