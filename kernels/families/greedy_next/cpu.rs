//! Greedy decoding's hand-over on the CPU: the pick rule both paths share, and what the GPU
//! kernel leaves behind.

use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};

const OP: &str = "greedy_next";

/// The likeliest id of `row`: the largest value in IEEE total order (a NaN above every number),
/// the last of equals. `None` for an empty row.
pub fn greedy_pick(row: &[f32]) -> Option<u32> {
    row.iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i as u32)
}

/// (V, cap) of logits [.., V] and a log [cap, V + 1], both at least 1; the GPU launcher checks
/// its tensors with it too.
pub(crate) fn log_dims(logits: &[usize], log: &[usize]) -> Result<(usize, usize)> {
    let vocab = logits.last().copied().unwrap_or(0);
    match *log {
        [cap, width] if vocab > 0 && cap > 0 && width == vocab + 1 => Ok((vocab, cap)),
        [_, _] => Err(Error::shape(
            OP,
            format!(
                "logits {logits:?} and log {log:?}: expected [.., V] with V ≥ 1 and [cap ≥ 1, V + 1]"
            ),
        )),
        _ => Err(Error::shape(
            OP,
            format!("log {log:?}: expected [cap, V + 1]"),
        )),
    }
}

/// What the kernel leaves: the pick of `logits`' last row, and `position` and `length` moved on
/// by one, as `[token, position, length]`; the row and the pick (as f32) written to row
/// `position % cap` of `log` [cap, V + 1].
pub fn greedy_next(
    logits: &Array,
    position: u32,
    length: u32,
    log: &mut Array,
) -> Result<[u32; 3]> {
    check_array(OP, logits)?;
    check_array(OP, log)?;
    let (v, cap) = log_dims(&logits.shape, &log.shape)?;
    let width = v + 1;
    let last = &logits.data[logits.data.len() - v..];
    let pick = greedy_pick(last).unwrap_or(0);
    let at = (position as usize % cap) * width;
    log.data[at..at + v].copy_from_slice(last);
    log.data[at + v] = pick as f32;
    Ok([pick, position.wrapping_add(1), length.wrapping_add(1)])
}
