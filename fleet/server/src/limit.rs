//! Per-address rate limiting (an IPv6 address by its /64, `crate::sender::key`): a token bucket
//! of `rate_per_minute` tokens refilled continuously.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

pub struct RateLimit {
    per_minute: f64,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl RateLimit {
    pub fn new(per_minute: u32) -> Self {
        RateLimit {
            per_minute: f64::from(per_minute),
            buckets: Mutex::default(),
        }
    }

    /// Takes a token for `addr`: `Ok` to go ahead, or `Err(seconds)` until the next token.
    pub fn take(&self, addr: IpAddr) -> Result<(), u64> {
        let now = Instant::now();
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Forget idle addresses now and then, so a flood of addresses cannot grow the map
        // without bound.
        if buckets.len() > 10_000 {
            buckets.retain(|_, (_, seen)| now.duration_since(*seen).as_secs() < 60);
        }
        let (tokens, seen) = buckets
            .entry(crate::sender::key(addr))
            .or_insert((self.per_minute, now));
        let refill = now.duration_since(*seen).as_secs_f64() * self.per_minute / 60.0;
        *tokens = (*tokens + refill).min(self.per_minute);
        *seen = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - *tokens) * 60.0 / self.per_minute).ceil().max(1.0) as u64)
        }
    }
}
