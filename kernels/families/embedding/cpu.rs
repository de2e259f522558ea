use crate::cpu::{Array, check_array};
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

pub(crate) fn check_tokens(op: &'static str, tokens: &[u32], vocab: usize) -> Result<()> {
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
