//! Caps on open connections, in all and per address (an IPv6 /64). A connection past its
//! address's cap is answered at once and closed, so that no one address can hold every socket
//! the process has (300 idle sockets used to stop `/health`). At the total cap the connection
//! idle the longest (no request in flight) is closed to make room, so that idle sockets from
//! many addresses cannot stop it either; only when every connection has a request in flight is
//! a new one refused.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::sync::oneshot;

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
    open: Mutex<Open>,
}

/// The open connections, by the id each got when admitted.
#[derive(Debug, Default)]
struct Open {
    next: u64,
    connections: HashMap<u64, Connection>,
    per_address: HashMap<IpAddr, usize>,
}

#[derive(Debug)]
struct Connection {
    key: IpAddr,
    /// Requests in flight: from the router's call to the answer's last byte.
    busy: usize,
    /// Since when no request has been in flight (its admission, at first).
    idle_since: Instant,
    /// Dropped to close the connection: its task waits on the other end.
    _close: oneshot::Sender<()>,
}

impl Open {
    fn remove(&mut self, id: u64) {
        let Some(c) = self.connections.remove(&id) else {
            return;
        };
        if let Some(n) = self.per_address.get_mut(&c.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_address.remove(&c.key);
            }
        }
    }

    /// The connection idle the longest, if any is idle.
    fn oldest_idle(&self) -> Option<u64> {
        self.connections
            .iter()
            .filter(|(_, c)| c.busy == 0)
            .min_by_key(|(id, c)| (c.idle_since, **id))
            .map(|(id, _)| *id)
    }
}

/// An admitted connection: dropping it frees its place.
#[derive(Debug)]
pub struct Pass {
    tracker: Tracker,
}

/// Tells the gate when a connection's requests start and end.
#[derive(Clone, Debug)]
pub struct Tracker {
    gate: Arc<Gate>,
    id: u64,
}

/// A request in flight: dropping it makes its connection idle again (when it was the last).
#[derive(Debug)]
pub struct Busy {
    tracker: Tracker,
}

impl Gate {
    pub fn new(total: usize, per_address: usize) -> Arc<Gate> {
        Arc::new(Gate {
            total,
            per_address,
            open: Mutex::default(),
        })
    }

    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for a connection from `ip` and what resolves when the gate closes it (to make
    /// room), or which cap is reached; a trusted proxy's (`proxy`) meets the total cap only, its
    /// clients being many.
    pub fn admit(
        self: &Arc<Self>,
        ip: IpAddr,
        proxy: bool,
    ) -> Result<(Pass, oneshot::Receiver<()>), Full> {
        let key = crate::sender::key(ip);
        let mut open = self.open();
        if !proxy && open.per_address.get(&key).copied().unwrap_or(0) >= self.per_address {
            return Err(Full::Address);
        }
        if open.connections.len() >= self.total {
            let Some(oldest) = open.oldest_idle() else {
                return Err(Full::Total);
            };
            // Its task sees the sender dropped and closes the socket.
            open.remove(oldest);
            log::debug!("at the connection cap: the connection idle the longest is closed");
        }
        let id = open.next;
        open.next += 1;
        let (close, closed) = oneshot::channel();
        open.connections.insert(
            id,
            Connection {
                key,
                busy: 0,
                idle_since: Instant::now(),
                _close: close,
            },
        );
        *open.per_address.entry(key).or_insert(0) += 1;
        let tracker = Tracker {
            gate: self.clone(),
            id,
        };
        Ok((Pass { tracker }, closed))
    }
}

impl Pass {
    pub fn tracker(&self) -> Tracker {
        self.tracker.clone()
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        self.tracker.gate.open().remove(self.tracker.id);
    }
}

impl Tracker {
    /// A request started on the connection: it is not closed to make room until it ends.
    pub fn busy(&self) -> Busy {
        if let Some(c) = self.gate.open().connections.get_mut(&self.id) {
            c.busy += 1;
        }
        Busy {
            tracker: self.clone(),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(c) = self
            .tracker
            .gate
            .open()
            .connections
            .get_mut(&self.tracker.id)
        {
            c.busy = c.busy.saturating_sub(1);
            c.idle_since = Instant::now();
        }
    }
}
