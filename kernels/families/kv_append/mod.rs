//! The key/value cache of decoding on the GPU: [`KvCache`] holds preallocated K and V caches
//! [B, Hkv, Cap, D] and their length; a step's rows are appended in place (this family's
//! kernel, K and V in one launch) and the new queries attend to the cache through
//! flash-decoding (`families/flash_decode`). Both kernels read the length from a one-word
//! buffer when they run, so a step captured once (a [`Plan`](crate::gpu::Plan)) is replayed as
//! the cache grows with only that word rewritten.

pub(crate) mod cases;
pub mod cpu;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::flash_decode;
use crate::gpu::{Dispatch, Gpu};
use crate::launch::{check_operands, choose_elementwise, record};
use crate::select::Choice;
use crate::tensor::Tensor;

const OP: &str = "kv_append";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    count: u32,
    n: u32,
    columns: u32,
    cap: u32,
    _pad: [u32; 4],
}

/// Writes `k` and `v` [B, Hkv, n, D] into rows `len` … `len + n` of the caches
/// [B, Hkv, Cap, D], with the named variant or the selector's choice. `length` (u32 [1]) must
/// hold `len + n` when the launch runs: the kernel reads where to write from it.
pub fn kv_append_into(
    k: &Tensor,
    v: &Tensor,
    k_cache: &Tensor,
    v_cache: &Tensor,
    length: &Tensor,
    len: usize,
    named: Option<&str>,
) -> Result<Choice> {
    record(k.gpu(), launch(k, v, k_cache, v_cache, length, len, named)?)
}

/// Checks the call (`len`, the rows held before it, against the capacity) and prepares its
/// launch.
pub fn launch(
    k: &Tensor,
    v: &Tensor,
    k_cache: &Tensor,
    v_cache: &Tensor,
    length: &Tensor,
    len: usize,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[k, v, k_cache, v_cache])?;
    check_length(OP, length)?;
    if k.dtype() == DType::U32 {
        return Err(Error::shape(OP, "keys and values must be f32 or f16"));
    }
    let (&[b, h, n, d], &[cb, ch, cap, cd]) = (k.shape(), k_cache.shape()) else {
        return Err(Error::shape(
            OP,
            format!(
                "rows {:?} and cache {:?}: expected [B, Hkv, n, D] and [B, Hkv, Cap, D]",
                k.shape(),
                k_cache.shape()
            ),
        ));
    };
    if v.shape() != k.shape() || v_cache.shape() != k_cache.shape() || (b, h, d) != (cb, ch, cd) {
        return Err(Error::shape(
            OP,
            format!(
                "K {:?}, V {:?} and the caches {:?}, {:?} do not match",
                k.shape(),
                v.shape(),
                k_cache.shape(),
                v_cache.shape()
            ),
        ));
    }
    if !d.is_multiple_of(4) {
        return Err(Error::shape(
            OP,
            format!("head dimension {d}: must be a multiple of 4"),
        ));
    }
    if len + n > cap {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("{n} rows at length {len} overflow the cache's capacity of {cap}"),
        });
    }
    for (cache, rows) in [(k_cache, k), (k_cache, v), (v_cache, k), (v_cache, v)] {
        if cache.overlaps(rows) {
            return Err(Error::InvalidArgument {
                op: OP,
                detail: "the new rows share a buffer with a cache; give separate tensors".into(),
            });
        }
    }
    if k_cache.overlaps(length) || v_cache.overlaps(length) {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "the length shares a buffer with a cache".into(),
        });
    }
    if k_cache.overlaps(v_cache) {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "the K and V caches share a buffer".into(),
        });
    }
    let count = k.numel() / 4;
    let choice = choose_elementwise(OP, k, None, named)?;
    let gpu = k.gpu();
    let wg = u64::from(Design::parse(&choice.variant)?.wg.max(1));
    let groups = gpu.groups(OP, (count as u64).div_ceil(wg))?;
    let params = Params {
        count: count as u32,
        n: n as u32,
        columns: (d / 4) as u32,
        cap: cap as u32,
        _pad: [0; 4],
    };
    let dispatch = Dispatch::new(
        gpu,
        &choice.variant,
        &[k, v, k_cache, v_cache, length],
        &params,
        groups,
    )?;
    Ok((dispatch, choice))
}

/// A cache's length as the kernels read it: a u32 tensor of one element on the same device.
pub fn check_length(op: &'static str, length: &Tensor) -> Result<()> {
    crate::launch::check_word(op, "length", length)
}

/// Preallocated K and V caches [B, Hkv, Cap, D] and the rows of them that hold keys: counted
/// here, and in a one-word buffer the kernels read when they run. Appending writes into the
/// caches' buffers; attending reads the first `len` rows.
#[derive(Clone, Debug)]
pub struct KvCache {
    k: Tensor,
    v: Tensor,
    length: Tensor,
    /// The value last written to `length`, shared by a group's caches so that each step writes
    /// the word once (a second write would submit the work recorded since the first).
    written: Arc<AtomicUsize>,
    len: usize,
}

impl KvCache {
    /// Empty caches with room for `capacity` rows per head.
    pub fn new(
        gpu: &Gpu,
        batch: usize,
        kv_heads: usize,
        capacity: usize,
        head_dim: usize,
        dtype: DType,
    ) -> Result<KvCache> {
        if [batch, kv_heads, capacity, head_dim].contains(&0) {
            return Err(Error::shape(
                OP,
                format!("an empty cache [{batch}, {kv_heads}, {capacity}, {head_dim}]"),
            ));
        }
        let shape = [batch, kv_heads, capacity, head_dim];
        Ok(KvCache {
            k: Tensor::uninit(gpu, &shape, dtype)?,
            v: Tensor::uninit(gpu, &shape, dtype)?,
            length: Tensor::from_u32(gpu, &[1], &[0])?,
            written: Arc::new(AtomicUsize::new(0)),
            len: 0,
        })
    }

    /// `count` empty caches of `shape` [B, Hkv, Cap, D] that share one length word: a model's
    /// layers, appended to together (each counts its rows; the word is written when the count
    /// differs from the value last written, so once per step), whose length one launch moves on
    /// ([`greedy_next`](crate::ops::greedy_next_into)). Such a launch leaves the host's record
    /// of the word behind: the caller then sets the count to one the word was not last written
    /// with (as a greedy run does, growing the caches by the rows its replays appended), so that
    /// the word is written again.
    pub fn group(gpu: &Gpu, count: usize, shape: [usize; 4], dtype: DType) -> Result<Vec<KvCache>> {
        let [batch, kv_heads, capacity, head_dim] = shape;
        if count == 0 {
            return Ok(Vec::new());
        }
        let first = KvCache::new(gpu, batch, kv_heads, capacity, head_dim, dtype)?;
        let mut group = vec![first.clone()];
        for _ in 1..count {
            group.push(KvCache {
                k: Tensor::uninit(gpu, &shape, dtype)?,
                v: Tensor::uninit(gpu, &shape, dtype)?,
                ..first.clone()
            });
        }
        Ok(group)
    }

    /// Whether the two count their rows in one word (made together by [`group`](Self::group)).
    pub fn shares_length(&self, other: &KvCache) -> bool {
        self.length.overlaps(&other.length)
    }

    /// Rows per head that hold keys.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Rows per head the caches have room for.
    pub fn capacity(&self) -> usize {
        self.k.shape()[2]
    }

    /// The K cache [B, Hkv, Cap, D]: rows past `len` hold nothing meaningful.
    pub fn keys(&self) -> &Tensor {
        &self.k
    }

    /// The V cache [B, Hkv, Cap, D].
    pub fn values(&self) -> &Tensor {
        &self.v
    }

    /// The one-word buffer the kernels read the length from.
    pub fn length(&self) -> &Tensor {
        &self.length
    }

    /// Forgets rows past `len` (a new prompt: 0); they are overwritten by the next appends.
    pub fn truncate(&mut self, len: usize) -> Result<()> {
        self.set_len(self.len.min(len))
    }

    /// Counts `n` more rows as held without writing them: what a replayed step's append (captured
    /// from [`append`](Self::append)) writes when it runs. Refused when they do not fit.
    pub fn grow(&mut self, n: usize) -> Result<()> {
        let cap = self.capacity();
        if self.len + n > cap {
            return Err(Error::InvalidArgument {
                op: OP,
                detail: format!(
                    "{n} rows at length {} overflow the cache's capacity of {cap}",
                    self.len
                ),
            });
        }
        self.set_len(self.len + n)
    }

    fn set_len(&mut self, len: usize) -> Result<()> {
        if self.written.load(Ordering::Relaxed) != len {
            self.length.write_u32(&[len as u32])?;
            self.written.store(len, Ordering::Relaxed);
        }
        self.len = len;
        Ok(())
    }

    /// Appends a step's keys and values [B, Hkv, n, D]; refused, with nothing written, when they
    /// do not fit.
    pub fn append(&mut self, k: &Tensor, v: &Tensor) -> Result<()> {
        let n = k.shape().get(2).copied().unwrap_or(0);
        let plan = launch(k, v, &self.k, &self.v, &self.length, self.len, None)?;
        self.grow(n)?;
        record(k.gpu(), plan)?;
        Ok(())
    }

    /// Attention of Q [B, Hq, Nq, D] (Hq a multiple of Hkv) against the cache: O like Q and the
    /// LSE [B, Hq, Nq]. Under `causal` the Nq rows are the cache's newest: query i sees keys
    /// j ≤ len − Nq + i. The split is planned for the whole capacity, so that a captured call
    /// stays right as the cache grows; chunks past the length write an empty state at once.
    pub fn attend(&self, q: &Tensor, causal: bool, scale: f32) -> Result<(Tensor, Tensor)> {
        flash_decode::decode_dims(q, &self.k, &self.v, self.len, scale)?;
        let o = Tensor::uninit(q.gpu(), q.shape(), q.dtype())?;
        let lse = Tensor::uninit(q.gpu(), &q.shape()[..3], DType::F32)?;
        flash_decode::flash_decode_into(
            q,
            &self.k,
            &self.v,
            &self.length,
            self.capacity(),
            &o,
            &lse,
            causal,
            scale,
            None,
        )?;
        Ok((o, lse))
    }
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{KvCache, kv_append_into};
}
