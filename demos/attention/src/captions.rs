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
        // A count of the part read before the cut is a lower bound, and reads as one.
        let count = grouped(tokens.full);
        lines.push(if tokens.counted_all {
            format!("cut: the text has {count} tokens; the model reads the first {limit}")
        } else {
            format!("cut: at least {count} tokens; the model reads the first {limit}")
        });
    }
    lines
}

/// A count with thousands separated by commas: `29,600`.
pub fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The heatmap's lines under its title: the path and token count, the cut, the weights.
pub fn view_notes(path: &str, tokens: &Tokens, model: &Model) -> Vec<String> {
    let mut notes = vec![format!("{path} path · {} tokens", tokens.tokens.len())];
    if tokens.full > tokens.tokens.len() {
        notes.push(format!(
            "cut: the first {} of {}{} tokens (the model's limit)",
            tokens.tokens.len(),
            if tokens.counted_all { "" } else { "at least " },
            grouped(tokens.full)
        ));
    }
    if model.synthetic {
        notes.push("SYNTHETIC weights: random, no meaning".into());
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(full: usize, counted_all: bool) -> Vec<String> {
        let tokens = Tokens {
            tokens: vec!["t".into(); 512],
            ids: vec![0; 512],
            full,
            counted_all,
        };
        token_summary(&tokens, 512)
    }

    /// A count of the part read before the cut reads as a lower bound, with its thousands.
    #[test]
    fn a_lower_bound_reads_as_one() {
        assert_eq!(grouped(7), "7");
        assert_eq!(grouped(2727), "2,727");
        assert_eq!(grouped(1_234_567), "1,234,567");
        let lower = cut(2727, false);
        assert_eq!(
            lower.last().map(String::as_str),
            Some("cut: at least 2,727 tokens; the model reads the first 512")
        );
        let all = cut(600, true);
        assert_eq!(
            all.last().map(String::as_str),
            Some("cut: the text has 600 tokens; the model reads the first 512")
        );
    }
}
