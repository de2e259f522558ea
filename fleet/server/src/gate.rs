//! Caps on open connections, in all and per address (an IPv6 /64): a connection past either cap
//! is answered at once and closed, so that no one address can hold every socket the process
//! has (300 idle sockets used to stop `/health`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

/// Which cap a connection met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    Total,
    Address,
}

#[derive(Debug)]
pub struct Gate {
    total: usize,
    per_address: usize,
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// An admitted connection: dropping it frees its place.
#[derive(Debug)]
pub struct Pass {
    gate: Arc<Gate>,
    key: IpAddr,
}

impl Gate {
    pub fn new(total: usize, per_address: usize) -> Arc<Gate> {
        Arc::new(Gate {
            total,
            per_address,
            open: Mutex::default(),
        })
    }

    /// A place for a connection from `ip`, or which cap is reached; a trusted proxy's
    /// (`proxy`) meets the total cap only, its clients being many.
    pub fn admit(self: &Arc<Self>, ip: IpAddr, proxy: bool) -> Result<Pass, Full> {
        let key = crate::sender::key(ip);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.0 >= self.total {
            return Err(Full::Total);
        }
        let theirs = open.1.entry(key).or_insert(0);
        if *theirs >= self.per_address && !proxy {
            return Err(Full::Address);
        }
        *theirs += 1;
        open.0 += 1;
        Ok(Pass {
            gate: self.clone(),
            key,
        })
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        let mut open = self
            .gate
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        open.0 = open.0.saturating_sub(1);
        if let Some(n) = open.1.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                open.1.remove(&self.key);
            }
        }
    }
}
