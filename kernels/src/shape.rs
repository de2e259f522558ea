//! Shape rules shared by the GPU ops and the CPU path, so both accept and refuse the same calls.

use crate::error::{Error, Result};

/// The dimensions of a (batched) matrix product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulDims {
    pub batch: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// Elements between consecutive A (B, C) matrices; 0 when one matrix serves every batch.
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
}

impl MatmulDims {
    /// `a: [.., m, k]` times `b: [.., k, n]`, ranks 2 or 3, batches equal or 1.
    pub fn new(a: &[usize], b: &[usize]) -> Result<Self> {
        let op = "matmul";
        let split = |s: &[usize], which: &str| -> Result<(usize, usize, usize)> {
            match *s {
                [r, c] => Ok((1, r, c)),
                [n, r, c] => Ok((n, r, c)),
                _ => Err(Error::shape(
                    op,
                    format!("{which} has shape {s:?}: expected rank 2 or 3"),
                )),
            }
        };
        let (ba, m, k) = split(a, "A")?;
        let (bb, k2, n) = split(b, "B")?;
        non_empty(op, a)?;
        non_empty(op, b)?;
        if k != k2 {
            return Err(Error::shape(
                op,
                format!("A {a:?} · B {b:?}: inner dimensions differ ({k} vs {k2})"),
            ));
        }
        if ba != bb && ba != 1 && bb != 1 {
            return Err(Error::shape(
                op,
                format!("A {a:?} · B {b:?}: batch sizes {ba} and {bb} differ and neither is 1"),
            ));
        }
        let batch = ba.max(bb);
        Ok(MatmulDims {
            batch,
            m,
            k,
            n,
            stride_a: if ba == 1 { 0 } else { m * k },
            stride_b: if bb == 1 { 0 } else { k * n },
            stride_c: m * n,
        })
    }

    /// `a: [.., m, k]` times the transpose of `b: [.., n, k]`.
    pub fn new_bt(a: &[usize], b: &[usize]) -> Result<Self> {
        Self::transposed(a, b, false, true)
    }

    /// A · B with either operand given transposed: `a` as [.., k, m] when `a_trans`, `b` as
    /// [.., n, k] when `b_trans`.
    pub fn transposed(a: &[usize], b: &[usize], a_trans: bool, b_trans: bool) -> Result<Self> {
        let swap = |s: &[usize]| match *s {
            [r, c] => vec![c, r],
            [n, r, c] => vec![n, c, r],
            _ => s.to_vec(),
        };
        let a2 = if a_trans { swap(a) } else { a.to_vec() };
        let b2 = if b_trans { swap(b) } else { b.to_vec() };
        let mut d = Self::new(&a2, &b2).map_err(|e| match e {
            Error::Shape { op, detail } if a_trans || b_trans => Error::Shape {
                op,
                detail: format!(
                    "{detail} ({} given transposed)",
                    match (a_trans, b_trans) {
                        (true, true) => format!("A as {a:?} and B as {b:?} are"),
                        (true, false) => format!("A is given as {a:?},"),
                        _ => format!("B is given as {b:?},"),
                    }
                ),
            },
            other => other,
        })?;
        if a_trans && d.stride_a != 0 {
            d.stride_a = d.k * d.m;
        }
        if b_trans && d.stride_b != 0 {
            d.stride_b = d.k * d.n;
        }
        Ok(d)
    }

    /// The shape of C: rank 3 when either input was batched, else rank 2.
    pub fn out_shape(&self, a: &[usize], b: &[usize]) -> Vec<usize> {
        if a.len() == 3 || b.len() == 3 {
            vec![self.batch, self.m, self.n]
        } else {
            vec![self.m, self.n]
        }
    }

    /// The fewest bytes a product can move: A and B read once, C written once.
    pub fn min_bytes(&self, elem_bytes: u64) -> f64 {
        let a = if self.stride_a == 0 { 1 } else { self.batch } * self.m * self.k;
        let b = if self.stride_b == 0 { 1 } else { self.batch } * self.k * self.n;
        let c = self.batch * self.m * self.n;
        ((a + b + c) as u64 * elem_bytes) as f64
    }

    /// Floating-point operations: one multiply and one add per term.
    pub fn flops(&self) -> f64 {
        2.0 * self.batch as f64 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// The dimensions of an attention call: Q [.., Nq, D], K and V [.., Nk, D], the leading
/// extents (batch, heads, …) equal across the three and flattened into `batch_heads` (Q's).
/// With grouped query heads ([`grouped`](Self::grouped)) K and V have `group` times fewer heads
/// than Q, and query matrix `bh` reads K/V matrix `bh / group`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionDims {
    pub batch_heads: usize,
    pub q_len: usize,
    pub kv_len: usize,
    pub head_dim: usize,
    /// Query heads per K/V head (1: one each).
    pub group: usize,
}

impl AttentionDims {
    /// Q, K and V with the same leading extents (no grouping).
    pub fn new(op: &'static str, q: &[usize], k: &[usize], v: &[usize]) -> Result<Self> {
        Self::with_groups(op, q, k, v, false)
    }

    /// Q [.., Hq, Nq, D] against K and V [.., Hkv, Nk, D] where Hkv divides Hq (grouped-query
    /// attention); the extents before the heads equal.
    pub fn grouped(op: &'static str, q: &[usize], k: &[usize], v: &[usize]) -> Result<Self> {
        Self::with_groups(op, q, k, v, true)
    }

    /// The K/V matrix query matrix `bh` reads.
    pub fn kv_matrix(&self, bh: usize) -> usize {
        bh / self.group.max(1)
    }

    /// How many K/V matrices there are (batch × K/V heads).
    pub fn kv_matrices(&self) -> usize {
        self.batch_heads / self.group.max(1)
    }

    fn with_groups(
        op: &'static str,
        q: &[usize],
        k: &[usize],
        v: &[usize],
        groups: bool,
    ) -> Result<Self> {
        for (name, s) in [("Q", q), ("K", k), ("V", v)] {
            non_empty(op, s)?;
            if s.len() < 2 {
                return Err(Error::shape(
                    op,
                    format!("{name} has shape {s:?}: expected [.., sequence, head_dim]"),
                ));
            }
        }
        let lead = |s: &[usize]| s[..s.len() - 2].to_vec();
        let (lq, lk) = (lead(q), lead(k));
        // Grouped: the head extents (the last leading ones) may differ, Hkv dividing Hq.
        let group = match (lq.split_last(), lk.split_last()) {
            (Some((&hq, outer_q)), Some((&hk, outer_k)))
                if groups && outer_q == outer_k && hk > 0 && hq % hk == 0 =>
            {
                hq / hk
            }
            _ if lq == lk => 1,
            _ => {
                let want = if groups {
                    "the K/V heads must divide the query heads, the extents before them equal"
                } else {
                    "the leading (batch, head) extents differ"
                };
                return Err(Error::shape(
                    op,
                    format!("Q {q:?}, K {k:?}, V {v:?}: {want}"),
                ));
            }
        };
        if k != v {
            return Err(Error::shape(
                op,
                format!("K {k:?} and V {v:?} must have one shape"),
            ));
        }
        let head_dim = q[q.len() - 1];
        if k[k.len() - 1] != head_dim {
            return Err(Error::shape(
                op,
                format!("Q {q:?} and K {k:?} have different head dimensions"),
            ));
        }
        Ok(AttentionDims {
            batch_heads: numel(&lead(q)),
            q_len: q[q.len() - 2],
            kv_len: k[k.len() - 2],
            head_dim,
            group,
        })
    }

    /// Whether query row `i` sees key `j`. The causal diagonal ends at the last key
    /// (bottom-right aligned, as the softmax op's mask): i sees j ≤ i + Nk − Nq, so with
    /// Nk < Nq the first Nq − Nk rows see no key at all.
    pub fn visible(&self, causal: bool, i: usize, j: usize) -> bool {
        j < self.kv_len
            && (!causal || j as i64 <= i as i64 + self.kv_len as i64 - self.q_len as i64)
    }

    /// Forward FLOPs, 4·BH·Nq·Nk·D (two products), halved when causal. With `with_backward`,
    /// forward and backward together: the backward pass counts 2.5× the forward.
    pub fn flops(&self, causal: bool, with_backward: bool) -> f64 {
        let f = 4.0
            * self.batch_heads as f64
            * self.q_len as f64
            * self.kv_len as f64
            * self.head_dim as f64;
        let f = if causal { f / 2.0 } else { f };
        if with_backward { f * 3.5 } else { f }
    }
}

/// Numpy-style broadcast of two shapes of rank ≤ 4.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broadcast {
    /// The output shape.
    pub shape: Vec<usize>,
    /// Output shape padded on the left to rank 4.
    pub shape4: [usize; 4],
    /// Element strides of A and B over `shape4`; 0 where the input is broadcast.
    pub stride_a: [usize; 4],
    pub stride_b: [usize; 4],
}

impl Broadcast {
    pub fn new(op: &'static str, a: &[usize], b: &[usize]) -> Result<Self> {
        non_empty(op, a)?;
        non_empty(op, b)?;
        let rank = a.len().max(b.len());
        if rank > 4 {
            return Err(Error::shape(
                op,
                format!("{a:?} and {b:?}: rank above 4 is not supported"),
            ));
        }
        let pad = |s: &[usize]| -> [usize; 4] {
            let mut p = [1; 4];
            p[4 - s.len()..].copy_from_slice(s);
            p
        };
        let (pa, pb) = (pad(a), pad(b));
        let mut shape4 = [1; 4];
        for d in 0..4 {
            shape4[d] = match (pa[d], pb[d]) {
                (x, y) if x == y => x,
                (1, y) => y,
                (x, 1) => x,
                (x, y) => {
                    return Err(Error::shape(
                        op,
                        format!("{a:?} and {b:?} do not broadcast: {x} vs {y}"),
                    ));
                }
            };
        }
        let strides = |p: [usize; 4]| -> [usize; 4] {
            let mut s = [0; 4];
            let mut acc = 1;
            for d in (0..4).rev() {
                s[d] = if p[d] == 1 { 0 } else { acc };
                acc *= p[d];
            }
            s
        };
        Ok(Broadcast {
            shape: shape4[4 - rank..].to_vec(),
            shape4,
            stride_a: strides(pa),
            stride_b: strides(pb),
        })
    }

    /// Whether A and B both have exactly the output's shape (no broadcasting needed).
    pub fn is_same_shape(&self, a: &[usize], b: &[usize]) -> bool {
        a == self.shape.as_slice() && b == self.shape.as_slice()
    }
}

/// `shape` with its last extent taken from `from`'s last (a linear layer's output: x's leading
/// extents, the product's columns); unchanged where either is empty.
pub fn with_last(shape: &[usize], from: &[usize]) -> Vec<usize> {
    let mut out = shape.to_vec();
    if let (Some(l), Some(&last)) = (out.last_mut(), from.last()) {
        *l = last;
    }
    out
}

/// A tensor seen as rows of its last axis: `(rows, cols)`.
pub fn rows_cols(op: &'static str, shape: &[usize]) -> Result<(usize, usize)> {
    non_empty(op, shape)?;
    let cols = shape[shape.len() - 1];
    Ok((numel(shape) / cols, cols))
}

/// Refuses rank-0 shapes and shapes with a zero extent.
pub fn non_empty(op: &'static str, shape: &[usize]) -> Result<()> {
    if shape.is_empty() || shape.contains(&0) {
        return Err(Error::shape(
            op,
            format!("shape {shape:?} is empty: every dimension must be at least 1"),
        ));
    }
    Ok(())
}

/// Elements of a shape; saturates instead of wrapping, so an absurd shape fails the length and
/// limit checks rather than becoming small.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().fold(1usize, |n, &d| n.saturating_mul(d))
}

/// Refuses data whose length is not the shape's element count.
pub fn check_len(op: &'static str, shape: &[usize], len: usize) -> Result<()> {
    non_empty(op, shape)?;
    if numel(shape) != len {
        return Err(Error::shape(
            op,
            format!(
                "shape {shape:?} holds {} elements, data has {len}",
                numel(shape)
            ),
        ));
    }
    Ok(())
}

/// `(rows, vocab)` of a cross-entropy call whose logits have `shape` and whose targets number
/// `n`: the rule the GPU op and the CPU path share.
pub fn cross_entropy_rows(op: &'static str, shape: &[usize], n: usize) -> Result<(usize, usize)> {
    let (rows, vocab) = rows_cols(op, shape)?;
    if shape.len() < 2 {
        return Err(Error::shape(
            op,
            format!("logits have shape {shape:?}: expected [.., rows, vocab] (rank ≥ 2)"),
        ));
    }
    if n != rows {
        return Err(Error::shape(
            op,
            format!("{n} targets for {rows} rows of logits {shape:?}"),
        ));
    }
    Ok((rows, vocab))
}

/// `(vocab, cols)` of an embedding table: rank 2, the rule the GPU op shares.
pub fn embedding_table(op: &'static str, shape: &[usize]) -> Result<(usize, usize)> {
    match *shape {
        [vocab, cols] if vocab > 0 && cols > 0 => Ok((vocab, cols)),
        _ => Err(Error::shape(
            op,
            format!("table has shape {shape:?}: expected [vocab, cols], both ≥ 1"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::AttentionDims;

    #[test]
    fn grouped_heads_divide_the_query_heads_and_nothing_else_differs() -> crate::error::Result<()> {
        // 8 query heads over 2 K/V heads.
        let g = AttentionDims::grouped("t", &[2, 8, 5, 64], &[2, 2, 9, 64], &[2, 2, 9, 64])?;
        assert_eq!((g.batch_heads, g.group, g.q_len, g.kv_len), (16, 4, 5, 9));
        assert_eq!(
            (
                g.kv_matrix(0),
                g.kv_matrix(3),
                g.kv_matrix(4),
                g.kv_matrix(15)
            ),
            (0, 0, 1, 3)
        );
        let same = AttentionDims::grouped("t", &[1, 4, 5, 64], &[1, 4, 9, 64], &[1, 4, 9, 64]);
        assert_eq!(same.map(|d| d.group).ok(), Some(1));
        for (q, k) in [
            (&[2, 8, 5, 64][..], &[2, 3, 9, 64][..]), // 3 does not divide 8
            (&[2, 8, 5, 64], &[1, 2, 9, 64]),         // the batches differ
            (&[2, 8, 5, 64], &[2, 0, 9, 64]),         // no K/V head
            (&[8, 5, 64], &[2, 2, 9, 64]),            // ranks differ
        ] {
            assert!(AttentionDims::grouped("t", q, k, k).is_err(), "{q:?} {k:?}");
        }
        // Without grouping the heads must match.
        assert!(AttentionDims::new("t", &[2, 8, 5, 64], &[2, 2, 9, 64], &[2, 2, 9, 64]).is_err());
        Ok(())
    }
}
