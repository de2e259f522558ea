//! What `/health` says, kept up to date beside the requests so that answering waits on nothing:
//! the reports stored (the writer tells after each commit) and whether the database can be
//! written (a probe on a connection of its own asks for the write lock every few seconds; a
//! failed write says no at once).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::db::{Database, Probe};

#[derive(Debug)]
pub struct Health {
    reports: AtomicI64,
    writable: AtomicBool,
    why: Mutex<String>,
}

/// What `/health` answers.
#[derive(Debug)]
pub struct Snapshot {
    pub reports: i64,
    pub writable: bool,
    pub why: String,
}

impl Health {
    pub fn new(reports: i64) -> Arc<Health> {
        Arc::new(Health {
            reports: AtomicI64::new(reports),
            writable: AtomicBool::new(true),
            why: Mutex::new(String::new()),
        })
    }

    /// The count the writer gave after a commit. The handlers tell in the order the runtime
    /// resumes them, not in the order of their commits (under load a stale 499 came after
    /// 500): the largest count is the newest, as nothing deletes a report.
    pub fn stored(&self, reports: i64) {
        self.reports.fetch_max(reports, Ordering::Relaxed);
        self.set(true, String::new());
    }

    pub fn write_failed(&self, why: String) {
        self.set(false, why);
    }

    fn set(&self, writable: bool, why: String) {
        *self.why.lock().unwrap_or_else(PoisonError::into_inner) = why;
        self.writable.store(writable, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            reports: self.reports.load(Ordering::Relaxed),
            writable: self.writable.load(Ordering::Relaxed),
            why: self
                .why
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
    }
}

/// Starts the probe: a thread of its own (it blocks on the database's lock, never on the
/// runtime). A probe that cannot open its connection says so and tries again at the next check.
pub fn spawn_probe(health: Arc<Health>, database: Database, every: Duration) {
    std::thread::spawn(move || {
        let mut probe = None;
        loop {
            if probe.is_none() {
                match Probe::open(&database) {
                    Ok(p) => probe = Some(p),
                    Err(e) => {
                        log::error!("health probe: {e}");
                        health.write_failed(e.to_string());
                    }
                }
            }
            std::thread::sleep(every);
            let Some(p) = probe.as_mut() else {
                continue;
            };
            match p.check() {
                Ok(()) => health.set(true, String::new()),
                Err(e) => {
                    log::warn!("health probe: the database cannot be written now: {e}");
                    health.set(false, e.to_string());
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::Health;

    #[test]
    fn a_count_told_late_does_not_take_back_a_newer_one() {
        let h = Health::new(3);
        h.stored(500);
        h.stored(499);
        assert_eq!(h.snapshot().reports, 500);
        h.stored(501);
        assert_eq!(h.snapshot().reports, 501);
    }
}
