//! Decoding attention on the CPU: a few new query rows against a key/value cache, with grouped
//! query heads (GQA: each K/V head serves `Hq / Hkv` query heads). Twice: the standard
//! algorithm, and flash-decoding's split — the keys cut into chunks, each chunk's (max, sum,
//! unnormalised output) kept, then combined — which is tested equal to the standard one before
//! any WGSL is trusted.
//!
//! Layout: Q [B, Hq, Nq, D]; the caches [B, Hkv, Cap, D], of which the first `len` rows hold
//! keys and values. Under the causal mask query i (of Nq) sees keys j ≤ len − Nq + i: the new
//! rows are the cache's last Nq. A row that sees no key has output 0 and LSE +∞.

use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};

use crate::families::flash_fwd::cpu::Forward;

const OP: &str = "flash_decode";

/// The sizes of a decoding call, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeDims {
    pub batch: usize,
    pub q_heads: usize,
    pub kv_heads: usize,
    /// New query rows per head (1 for plain decoding).
    pub q_len: usize,
    /// Rows the cache has room for.
    pub capacity: usize,
    /// Rows of the cache that hold keys.
    pub len: usize,
    pub head_dim: usize,
}

impl DecodeDims {
    /// Reads and checks the shapes: Q [B, Hq, Nq, D], both caches [B, Hkv, Cap, D] with
    /// Hq a multiple of Hkv, and 1 ≤ len ≤ Cap.
    pub fn new(q: &[usize], k: &[usize], v: &[usize], len: usize) -> Result<DecodeDims> {
        let shape = |detail: String| Error::shape(OP, detail);
        let [batch, q_heads, q_len, head_dim] = *q else {
            return Err(shape(format!("Q has shape {q:?}: expected [B, Hq, Nq, D]")));
        };
        let [kb, kv_heads, capacity, kd] = *k else {
            return Err(shape(format!(
                "the K cache has shape {k:?}: expected [B, Hkv, Cap, D]"
            )));
        };
        if v != k {
            return Err(shape(format!(
                "the V cache has shape {v:?}, the K cache {k:?}"
            )));
        }
        if kb != batch || kd != head_dim {
            return Err(shape(format!(
                "Q {q:?} and the cache {k:?} differ in batch or head dimension"
            )));
        }
        if [batch, q_heads, q_len, head_dim, kv_heads].contains(&0) {
            return Err(shape(format!("empty shape: Q {q:?}, cache {k:?}")));
        }
        if !q_heads.is_multiple_of(kv_heads) {
            return Err(shape(format!(
                "{q_heads} query heads are not a multiple of {kv_heads} key/value heads (grouped-query attention shares each K/V head among a whole group)"
            )));
        }
        if len == 0 || len > capacity {
            return Err(Error::InvalidArgument {
                op: OP,
                detail: format!("cache length {len}: must be 1 to the capacity, {capacity}"),
            });
        }
        Ok(DecodeDims {
            batch,
            q_heads,
            kv_heads,
            q_len,
            capacity,
            len,
            head_dim,
        })
    }

    /// Query heads per K/V head.
    pub fn group(&self) -> usize {
        self.q_heads / self.kv_heads
    }

    /// Query rows: B · Hq · Nq.
    pub fn rows(&self) -> usize {
        self.batch * self.q_heads * self.q_len
    }

    /// The keys query row `i` (of Nq) sees: `0..end`.
    pub fn visible_end(&self, causal: bool, i: usize) -> usize {
        if causal {
            (self.len + i + 1).saturating_sub(self.q_len).min(self.len)
        } else {
            self.len
        }
    }

    /// Element offset in a cache of key `j` of the K/V head query row `row` reads: rows run
    /// (b · Hq + hq) · Nq + i, and that head is b · Hkv + hq / group = row / (Nq · group).
    fn key_row(&self, row: usize, j: usize) -> usize {
        (row / (self.q_len * self.group()) * self.capacity + j) * self.head_dim
    }
}

/// One query row's scaled scores against the keys it sees, with the row and its K/V head.
fn scores(
    a: &DecodeDims,
    q: &Array,
    k: &Array,
    scale: f32,
    row: usize,
    keys: std::ops::Range<usize>,
) -> Vec<f32> {
    let d = a.head_dim;
    let qi = &q.data[row * d..][..d];
    keys.map(|j| {
        let kj = &k.data[a.key_row(row, j)..][..d];
        scale * qi.iter().zip(kj).map(|(x, y)| x * y).sum::<f32>()
    })
    .collect()
}

/// Σ p_j · V_j over `keys` of row `row`'s K/V head.
fn weighted_values(
    a: &DecodeDims,
    v: &Array,
    row: usize,
    keys: std::ops::Range<usize>,
    p: &[f32],
) -> Vec<f32> {
    let d = a.head_dim;
    let mut o = vec![0.0f32; d];
    for (j, &pj) in keys.zip(p) {
        for (oc, vc) in o.iter_mut().zip(&v.data[a.key_row(row, j)..][..d]) {
            *oc += pj * vc;
        }
    }
    o
}

fn check(q: &Array, k: &Array, v: &Array, len: usize) -> Result<DecodeDims> {
    for a in [q, k, v] {
        check_array(OP, a)?;
    }
    DecodeDims::new(&q.shape, &k.shape, &v.shape, len)
}

/// Attention of Q's rows against the first `len` rows of the caches, the standard way: each
/// row's scores, their softmax, the weighted sum of values. O [B, Hq, Nq, D] and the natural
/// LSE [B, Hq, Nq].
pub fn decode_attention(
    q: &Array,
    k: &Array,
    v: &Array,
    len: usize,
    causal: bool,
    scale: f32,
) -> Result<Forward> {
    let a = check(q, k, v, len)?;
    let (d, rows) = (a.head_dim, a.rows());
    let mut out = vec![0.0f32; rows * d];
    let mut lse = vec![f32::INFINITY; rows];
    for row in 0..rows {
        let end = a.visible_end(causal, row % a.q_len);
        if end == 0 {
            continue;
        }
        let s = scores(&a, q, k, scale, row, 0..end);
        let m = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = s.iter().map(|x| (x - m).exp()).collect();
        let sum: f32 = e.iter().sum();
        let p: Vec<f32> = e.iter().map(|x| x / sum).collect();
        out[row * d..][..d].copy_from_slice(&weighted_values(&a, v, row, 0..end, &p));
        lse[row] = m + sum.ln();
    }
    Ok(Forward {
        out: Array::new(&q.shape, out)?,
        lse,
    })
}

/// What flash-decoding's split pass leaves for each (query row, chunk): the chunk's max score
/// (base-2 scaled: score · log2 e), the sum of 2^(s − max) and the unnormalised output
/// Σ 2^(s − max) · V. A chunk whose keys the row cannot see has max −∞, sum 0 and output 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Partials {
    pub chunks: usize,
    /// [rows, chunks, 2]: (max, sum) per row and chunk.
    pub max_sum: Vec<f32>,
    /// [rows, chunks, D].
    pub out: Vec<f32>,
}

/// The number of chunks of `chunk` keys that cover `len` keys.
pub fn chunk_count(len: usize, chunk: usize) -> usize {
    len.div_ceil(chunk.max(1))
}

/// Flash-decoding's split pass: the keys cut into chunks of `chunk`, each row's state per chunk.
pub fn decode_split(
    q: &Array,
    k: &Array,
    v: &Array,
    len: usize,
    causal: bool,
    scale: f32,
    chunk: usize,
) -> Result<Partials> {
    let a = check(q, k, v, len)?;
    if chunk == 0 {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "a chunk of 0 keys".into(),
        });
    }
    let (d, rows, chunks) = (a.head_dim, a.rows(), chunk_count(len, chunk));
    let scale_log2 = scale * std::f32::consts::LOG2_E;
    let mut max_sum = vec![0.0f32; rows * chunks * 2];
    let mut out = vec![0.0f32; rows * chunks * d];
    for row in 0..rows {
        let end = a.visible_end(causal, row % a.q_len);
        for c in 0..chunks {
            let keys = c * chunk..((c + 1) * chunk).min(end);
            let slot = row * chunks + c;
            if keys.is_empty() {
                max_sum[slot * 2] = f32::NEG_INFINITY;
                continue;
            }
            let s = scores(&a, q, k, scale_log2, row, keys.clone());
            let m = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let p: Vec<f32> = s.iter().map(|x| (x - m).exp2()).collect();
            max_sum[slot * 2] = m;
            max_sum[slot * 2 + 1] = p.iter().sum();
            out[slot * d..][..d].copy_from_slice(&weighted_values(&a, v, row, keys, &p));
        }
    }
    Ok(Partials {
        chunks,
        max_sum,
        out,
    })
}

/// Flash-decoding's combine pass: each row's chunks rescaled to their common max and summed.
/// O [B, Hq, Nq, D] (`q_shape`) and the natural LSE.
pub fn decode_combine(p: &Partials, q_shape: &[usize]) -> Result<Forward> {
    let d = *q_shape.last().unwrap_or(&0);
    let rows: usize = q_shape[..q_shape.len().saturating_sub(1)].iter().product();
    if d == 0 || p.max_sum.len() != rows * p.chunks * 2 || p.out.len() != rows * p.chunks * d {
        return Err(Error::shape(
            OP,
            format!(
                "partials of {} chunks do not match Q's shape {q_shape:?}",
                p.chunks
            ),
        ));
    }
    let mut out = vec![0.0f32; rows * d];
    let mut lse = vec![f32::INFINITY; rows];
    for row in 0..rows {
        let ms = &p.max_sum[row * p.chunks * 2..][..p.chunks * 2];
        let m = ms
            .iter()
            .step_by(2)
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        if m == f32::NEG_INFINITY {
            continue;
        }
        let w: Vec<f32> = ms.chunks(2).map(|c| (c[0] - m).exp2()).collect();
        let l: f32 = ms.chunks(2).zip(&w).map(|(c, w)| c[1] * w).sum();
        let o = &mut out[row * d..][..d];
        for (c, wc) in w.iter().enumerate() {
            for (oc, pc) in o.iter_mut().zip(&p.out[(row * p.chunks + c) * d..][..d]) {
                *oc += wc * pc / l;
            }
        }
        lse[row] = (m + l.log2()) * std::f32::consts::LN_2;
    }
    Ok(Forward {
        out: Array::new(q_shape, out)?,
        lse,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::cpu::rel_l2;

    fn random(shape: &[usize], rng: &mut fastrand::Rng) -> Array {
        let n = shape.iter().product();
        Array::new(shape, (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect()).unwrap()
    }

    /// The split and combine give the standard algorithm's answer for chunks that do and do not
    /// divide the length, both masks, and rows that see only part of the last chunk.
    #[test]
    fn split_and_combine_equal_the_standard_algorithm() {
        let mut rng = fastrand::Rng::with_seed(7);
        for (b, hq, hkv, nq, cap, len) in [
            (1, 4, 1, 1, 40, 37),
            (2, 6, 2, 3, 30, 29),
            (1, 2, 2, 2, 9, 9),
        ] {
            let q = random(&[b, hq, nq, 8], &mut rng);
            let k = random(&[b, hkv, cap, 8], &mut rng);
            let v = random(&[b, hkv, cap, 8], &mut rng);
            for causal in [false, true] {
                let want = decode_attention(&q, &k, &v, len, causal, 0.3).unwrap();
                for chunk in [1, 4, 16, 64] {
                    let parts = decode_split(&q, &k, &v, len, causal, 0.3, chunk).unwrap();
                    let got = decode_combine(&parts, &q.shape).unwrap();
                    assert!(
                        rel_l2(&got.out.data, &want.out.data) < 1e-6,
                        "chunk {chunk}"
                    );
                    assert!(rel_l2(&got.lse, &want.lse) < 1e-6, "chunk {chunk}");
                }
            }
        }
    }

    /// With as many K/V heads as query heads and the whole cache filled, decoding is plain
    /// attention: the flash forward's reference gives the same answer.
    #[test]
    fn a_full_cache_without_groups_is_plain_attention() {
        let mut rng = fastrand::Rng::with_seed(8);
        let q = random(&[1, 3, 4, 8], &mut rng);
        let k = random(&[1, 3, 11, 8], &mut rng);
        let v = random(&[1, 3, 11, 8], &mut rng);
        for causal in [false, true] {
            let want = crate::cpu::attention(&q, &k, &v, causal, 0.5).unwrap();
            let got = decode_attention(&q, &k, &v, 11, causal, 0.5).unwrap();
            assert!(rel_l2(&got.out.data, &want.out.data) < 1e-6);
            assert!(rel_l2(&got.lse, &want.lse) < 1e-6);
        }
    }

    #[test]
    fn bad_shapes_are_refused_with_a_reason() {
        let e = DecodeDims::new(&[1, 6, 1, 8], &[1, 4, 10, 8], &[1, 4, 10, 8], 5).unwrap_err();
        assert!(e.to_string().contains("not a multiple of 4"), "{e}");
        let e = DecodeDims::new(&[1, 4, 1, 8], &[1, 2, 10, 8], &[1, 2, 10, 8], 11).unwrap_err();
        assert!(e.to_string().contains("capacity, 10"), "{e}");
        assert!(DecodeDims::new(&[1, 4, 1, 8], &[1, 2, 10, 8], &[1, 2, 9, 8], 3).is_err());
        assert!(DecodeDims::new(&[1, 4, 8], &[1, 2, 10, 8], &[1, 2, 10, 8], 3).is_err());
    }
}
