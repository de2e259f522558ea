//! Rendering a variant's template to WGSL, plain or with its template values marked (the
//! kernel-source view): `Piece`s of text and value.

use std::fmt::Write as _;

use minijinja::{Environment, Value};
use serde::Serialize;

use super::variant::Variant;
use crate::device::DeviceProfile;
use crate::error::{Error, Result};

/// A run of rendered WGSL: template text, or the value of a template expression.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Piece {
    pub text: String,
    /// Whether the text came from a template expression.
    pub marked: bool,
}

// Private-use characters bracket expression output while rendering; no template contains them.
const MARK_OPEN: char = '\u{E000}';
const MARK_CLOSE: char = '\u{E001}';

/// Renders `variant`'s family template in `env` with the variant's values.
pub(super) fn render_in(
    env: &Environment<'_>,
    variant: &Variant,
    profile: &DeviceProfile,
) -> Result<String> {
    let template = env
        .get_template(&variant.family)
        .map_err(|e| template_error(&variant.family, &variant.name, &e))?;
    template
        .render(variant.context(profile))
        .map_err(|e| template_error(&variant.family, &variant.name, &e))
}

/// The marked environment's formatter: a template value between the marks.
pub(super) fn mark_values(
    out: &mut minijinja::Output<'_>,
    state: &mut minijinja::State<'_, '_>,
    value: &Value,
) -> std::result::Result<(), minijinja::Error> {
    // A macro's output is rendered template text (lines, with its own marks inside), not a value.
    if value.is_safe()
        || value
            .as_str()
            .is_some_and(|s| s.contains(MARK_OPEN) || s.contains('\n'))
    {
        return minijinja::escape_formatter(out, state, value);
    }
    out.write_char(MARK_OPEN)?;
    minijinja::escape_formatter(out, state, value)?;
    out.write_char(MARK_CLOSE)?;
    Ok(())
}

/// Splits text bracketed by the marks into pieces (adjacent pieces of one kind merged).
pub(super) fn pieces(text: &str) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    let mut push = |text: &str, marked: bool| {
        if text.is_empty() {
            return;
        }
        match out.last_mut() {
            Some(last) if last.marked == marked => last.text.push_str(text),
            _ => out.push(Piece {
                text: text.to_string(),
                marked,
            }),
        }
    };
    let mut rest = text;
    while let Some(open) = rest.find(MARK_OPEN) {
        push(&rest[..open], false);
        let after = &rest[open + MARK_OPEN.len_utf8()..];
        let close = after.find(MARK_CLOSE).unwrap_or(after.len());
        push(&after[..close], true);
        rest = after.get(close + MARK_CLOSE.len_utf8()..).unwrap_or("");
    }
    push(rest, false);
    out
}

pub(super) fn template_error(family: &str, variant: &str, e: &minijinja::Error) -> Error {
    Error::Template {
        family: family.to_string(),
        variant: variant.to_string(),
        line: e.line(),
        detail: e.to_string(),
    }
}
