use super::{Array, check_array};
use crate::error::{Error, Result};
use crate::shape::embedding_table;

/// Embedding lookup: table [vocab, cols] and token ids → [tokens.len(), cols], row i being
/// `table[tokens[i]]`. An id ≥ vocab is an error.
pub fn embedding(table: &Array, tokens: &[u32]) -> Result<Array> {
    let op = "embedding";
    check_array(op, table)?;
    let (vocab, cols) = embedding_table(op, &table.shape)?;
    check_tokens(op, tokens, vocab)?;
    let mut y = Vec::with_capacity(tokens.len() * cols);
    for &t in tokens {
        y.extend_from_slice(&table.data[t as usize * cols..][..cols]);
    }
    Array::new(&[tokens.len(), cols], y)
}

/// The gradient of [`embedding`]: dy [tokens.len(), cols] → d_table [vocab, cols], each row the
/// sum of dy's rows whose token is that id, added in token order (ids that never occur give
/// zero rows). An id ≥ vocab is an error.
pub fn embedding_backward(dy: &Array, tokens: &[u32], vocab: usize) -> Result<Array> {
    let op = "embedding_backward";
    check_array(op, dy)?;
    let [n, cols] = dy.shape[..] else {
        return Err(Error::shape(
            op,
            format!("dy has shape {:?}: expected [tokens, cols]", dy.shape),
        ));
    };
    if n != tokens.len() {
        return Err(Error::shape(
            op,
            format!("dy has {n} rows for {} tokens", tokens.len()),
        ));
    }
    crate::shape::non_empty(op, &[vocab, cols])?;
    check_tokens(op, tokens, vocab)?;
    let mut d = vec![0.0f32; vocab * cols];
    for (i, &t) in tokens.iter().enumerate() {
        let row = &mut d[t as usize * cols..][..cols];
        for (acc, g) in row.iter_mut().zip(&dy.data[i * cols..][..cols]) {
            *acc += g;
        }
    }
    Array::new(&[vocab, cols], d)
}

fn check_tokens(op: &'static str, tokens: &[u32], vocab: usize) -> Result<()> {
    if tokens.is_empty() {
        return Err(Error::shape(op, "no tokens: at least one is needed"));
    }
    if let Some((i, t)) = tokens
        .iter()
        .enumerate()
        .find(|&(_, &t)| t as usize >= vocab)
    {
        return Err(Error::InvalidArgument {
            op,
            detail: format!("token {t} at {i} is out of range for a vocabulary of {vocab}"),
        });
    }
    Ok(())
}
