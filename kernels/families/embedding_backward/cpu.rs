use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};
use crate::families::embedding::cpu::check_tokens;

/// The gradient of [`embedding`](crate::cpu::embedding): dy [tokens.len(), cols] → d_table [vocab, cols], each row the
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
