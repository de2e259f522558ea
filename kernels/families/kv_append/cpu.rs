//! The key/value cache's append on the CPU: a step's rows [B, Hkv, n, D] written into a cache
//! [B, Hkv, Cap, D] at row `len` of each head.

use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};

const OP: &str = "kv_append";

/// Writes `rows` into `cache` at row `len` of each head; refuses rows that do not fit.
pub fn cache_append(cache: &mut Array, rows: &Array, len: usize) -> Result<()> {
    check_array(OP, cache)?;
    check_array(OP, rows)?;
    let (&[b, h, cap, d], &[rb, rh, n, rd]) = (&cache.shape[..], &rows.shape[..]) else {
        return Err(Error::shape(
            OP,
            format!(
                "cache {:?} and rows {:?}: expected [B, Hkv, Cap, D] and [B, Hkv, n, D]",
                cache.shape, rows.shape
            ),
        ));
    };
    if (rb, rh, rd) != (b, h, d) {
        return Err(Error::shape(
            OP,
            format!(
                "rows {:?} do not match the cache {:?}",
                rows.shape, cache.shape
            ),
        ));
    }
    if len + n > cap {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: format!("{n} rows at length {len} overflow the cache's {cap}"),
        });
    }
    for head in 0..b * h {
        let from = &rows.data[head * n * d..][..n * d];
        cache.data[(head * cap + len) * d..][..n * d].copy_from_slice(from);
    }
    Ok(())
}
