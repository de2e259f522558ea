//! `/summary`, served from a cache: each stored report marks it stale, and a thread of its own
//! recomputes it on its own read connection (at most once per `summary_interval_s`, so a burst
//! of reports is summarised once) — readers get the last summary at once and never wait on a
//! write, and writes never wait on a summary. A stored row that no longer validates is skipped
//! and logged, never an error for everyone.

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use kiln::Registry;
use kiln_fleet::Report;
use kiln_fleet::case_models::CaseModels;
use kiln_fleet::crowd::{Rules, Submission, Tally, fingerprint};
use serde_json::json;

use crate::db::{Database, Reader};
use crate::error::{Result, ServerError};

#[derive(Debug)]
pub struct Summary {
    current: RwLock<Arc<Vec<u8>>>,
    stale: SyncSender<()>,
}

impl Summary {
    /// Starts the summariser on the database; the first summary follows at once.
    pub fn start(database: Database, interval: Duration) -> Arc<Summary> {
        // One pending mark is enough: the next summary reads every report.
        let (stale, marks) = std::sync::mpsc::sync_channel(1);
        let first = json!({"status": "starting", "reports": 0}).to_string();
        let summary = Arc::new(Summary {
            current: RwLock::new(Arc::new(first.into_bytes())),
            stale,
        });
        summary.mark_stale();
        let weak = Arc::downgrade(&summary);
        std::thread::spawn(move || {
            // Built here, not before the server listens: rendering every variant takes a while.
            let made = kiln_fleet::curated::checked_in()
                .map_err(|e| ServerError::Internal(e.to_string()))
                .and_then(|curated| {
                    Registry::builtin()
                        .map(|r| (CaseModels::from_curated(&curated), r))
                        .map_err(|e| ServerError::Internal(e.to_string()))
                });
            let (models, registry) = match made {
                Ok(m) => m,
                Err(e) => {
                    log::error!("summary: {e}");
                    return;
                }
            };
            run(&weak, &marks, &database, interval, &models, &registry);
        });
        summary
    }

    /// A report was stored: the summary is recomputed soon.
    pub fn mark_stale(&self) {
        match self.stale.try_send(()) {
            Ok(()) | Err(TrySendError::Full(())) => {}
            Err(TrySendError::Disconnected(())) => log::error!("summary: the summariser stopped"),
        }
    }

    /// The last summary, as JSON.
    pub fn current(&self) -> Arc<Vec<u8>> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn run(
    summary: &std::sync::Weak<Summary>,
    marks: &Receiver<()>,
    database: &Database,
    interval: Duration,
    models: &CaseModels,
    registry: &Registry,
) {
    while marks.recv().is_ok() {
        let started = Instant::now();
        let Some(summary) = summary.upgrade() else {
            return;
        };
        match compute(database, models, registry) {
            Ok(json) => {
                *summary
                    .current
                    .write()
                    .unwrap_or_else(PoisonError::into_inner) = Arc::new(json);
            }
            Err(e) => {
                // Tried again after the interval (the database may be back by then).
                log::error!("summary: {e}");
                summary.mark_stale();
            }
        }
        drop(summary);
        std::thread::sleep(interval.saturating_sub(started.elapsed()));
    }
}

/// The summary of every stored report: the devices, the crowd picks by the merge's rules
/// (`fleet/SCHEMA.md`), what the crowd cannot decide yet, and how many reports were set aside.
fn compute(database: &Database, models: &CaseModels, registry: &Registry) -> Result<Vec<u8>> {
    let mut reader = Reader::open(database)?;
    let heads = reader.heads()?;
    let mut tally = Tally::new(models, registry, Rules::default());
    let counted = tally.select(&heads);
    // What each row's columns claim (the selection above went by them): the report's own
    // profile must produce the same class and fingerprint, or the row does not count.
    let claimed: HashMap<i64, (&str, &str)> = heads
        .iter()
        .map(|h| (h.id, (h.class.as_str(), h.fingerprint.as_str())))
        .collect();
    let mut unreadable = 0;
    reader.each_body(|id, sender, body| {
        if !counted.contains(&id) {
            return;
        }
        let parsed = Report::parse(&format!("stored report {id}"), &body)
            .map_err(|e| e.to_string())
            .and_then(|report| {
                let own = (report.device.class(), fingerprint(&report.device));
                match claimed.get(&id) {
                    Some((class, fp)) if (*class, *fp) == (own.0.as_str(), own.1.as_str()) => {
                        Ok(report)
                    }
                    _ => Err(format!(
                        "stored report {id}: its stored class or fingerprint is not its \
                         profile's ({})",
                        own.0
                    )),
                }
            });
        match parsed {
            Ok(report) => tally.add(&Submission { id, sender, report }),
            Err(e) => {
                log::warn!("{e}: skipped");
                unreadable += 1;
                tally.unreadable(id, e);
            }
        }
    })?;
    let merged = tally.finish();
    // One entry per device (fingerprint), with how many reports it sent.
    let mut devices: BTreeMap<&str, (&str, &str, usize)> = BTreeMap::new();
    for h in &heads {
        devices
            .entry(h.fingerprint.as_str())
            .or_insert((h.device.as_str(), h.class.as_str(), 0))
            .2 += 1;
    }
    let devices: Vec<_> = devices
        .iter()
        .map(|(fp, (name, class, n))| {
            json!({"fingerprint": fp.chars().take(12).collect::<String>(), "name": name,
                   "class": class, "reports": n})
        })
        .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    serde_json::to_vec(&json!({
        "status": "ok",
        "as_of_unix": now,
        "reports": heads.len(),
        "counted": merged.counted,
        "unreadable": unreadable,
        "devices": devices,
        "picks": merged.picks,
        "undecided": merged.unmet,
        "set_aside": merged.set_aside.len(),
    }))
    .map_err(|e| ServerError::Internal(e.to_string()))
}
