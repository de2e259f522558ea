//! The lines of text about a text's tokens and the heatmap shown for them: the HUD's token
//! summary and the heatmap's notes, the same natively and on the page's CPU fallback.

use crate::model::Model;
use crate::tokenizer::Tokens;

/// The tokens in a few words for the HUD: all of them when they are few, else the first and
/// the last few with the count (the page shows the text itself, and a long text's token list
/// would push the page down by thousands of pixels); and the cut, said plainly.
pub fn token_summary(tokens: &Tokens, limit: usize) -> Vec<String> {
    const FEW: usize = 24;
    let t = &tokens.tokens;
    let n = t.len();
    let mut words: Vec<&str> = t.iter().map(String::as_str).collect();
    if n > FEW {
        words = t[..16]
            .iter()
            .map(String::as_str)
            .chain(["…"])
            .chain(t[n - 4..].iter().map(String::as_str))
            .collect();
    }
    let mut lines = Vec::new();
    let mut line = format!("{n} tokens:");
    for w in words {
        if line.chars().count() + w.chars().count() > 40 {
            lines.push(std::mem::take(&mut line));
        }
        line.push(' ');
        line.push_str(w);
    }
    lines.push(line);
    if tokens.full > n {
        lines.push(format!(
            "cut: the text has {}{} tokens; the model takes {limit}",
            over(tokens),
            tokens.full
        ));
    }
    lines
}

/// "over " where the count is of the part of the text read before the cut, not all of it.
fn over(tokens: &Tokens) -> &'static str {
    if tokens.counted_all { "" } else { "over " }
}

/// The heatmap's lines under its title: the path and token count, the cut, the weights.
pub fn view_notes(path: &str, tokens: &Tokens, model: &Model) -> Vec<String> {
    let mut notes = vec![format!("{path} path · {} tokens", tokens.tokens.len())];
    if tokens.full > tokens.tokens.len() {
        notes.push(format!(
            "cut: {} of {}{} tokens (the model's limit)",
            tokens.tokens.len(),
            over(tokens),
            tokens.full
        ));
    }
    if model.synthetic {
        notes.push("SYNTHETIC weights: random, no meaning".into());
    }
    notes
}
