//! `/summary`, served from a cache: each stored report marks it stale, and a thread of its own
//! updates it on its own read connection (at most once per `summary_interval_s`, so a burst of
//! reports is summarised once) — readers get the last summary at once and never wait on a
//! write, and writes never wait on a summary.
//!
//! An update costs what changed, not what is stored: the crowd's rules decide each device class
//! from its own reports alone, so an update reads the heads of the reports stored since the last
//! one and merges again only the classes they name, from those classes' counted reports (one per
//! device and sender); a long one publishes as it goes. A class is merged from its reports'
//! digests (`kiln_fleet::crowd::Digest`: what the merge reads of a report, stored beside it),
//! never from the reports themselves: a burst behind the writer and the first update after a
//! start parse no report (a row an earlier server stored has its report parsed until its digest
//! is filled in: `reports_parsed` counts those). And the summary lists at most
//! [`LISTED`] devices, picks and undecided classes, within a byte budget each, counting the
//! rest, so its size does not grow with the classes either (3,400 reports naming a class each
//! once made it 14.6 MB, and each recompute 10 s of CPU). A stored row that no longer validates
//! is skipped and logged, never an error for everyone; rows removed by hand are noticed (fewer
//! are stored than were read) and everything is read again.

use std::cmp::Ordering;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use kiln::Registry;
use kiln_fleet::Report;
use kiln_fleet::case_models::CaseModels;
use kiln_fleet::crowd::{Checks, CrowdPick, Digest, Head, Rules, Tally, Verdict, fingerprint};
use serde_json::{Value, json};

use crate::db::{Database, Merged as Stored, Reader};
use crate::error::{Result, ServerError};

/// The most devices, picks and classes with undecided entries the summary lists (the rest are
/// counted): the classes with the most devices first.
const LISTED: usize = 100;
/// A pick's votes listed: those nearest the median; and its excluded and disputed variants.
const VOTES_LISTED: usize = 9;
const VERDICTS_LISTED: usize = 8;
/// The most bytes of JSON each list takes, whatever its entries hold (a device name is up to
/// 256 bytes): with them the summary stays under 1 MB.
const DEVICES_BYTES: usize = 128 << 10;
const PICKS_BYTES: usize = 512 << 10;
const UNDECIDED_BYTES: usize = 64 << 10;

/// The most reports handed over by the writer and not merged yet that are held: past them the
/// summariser reads their digests from the database.
const HANDED_OVER: usize = 256;

#[derive(Debug)]
pub struct Summary {
    current: RwLock<Arc<Vec<u8>>>,
    stale: SyncSender<()>,
    /// Reports just stored, as the writer parsed them (by id), digested: the summariser takes
    /// them instead of reading their stored digests.
    handed_over: Mutex<HashMap<i64, Digest>>,
    /// Since the start: stored digests read, and reports parsed whole (a row stored before
    /// digests were kept and not filled in yet, or whose digest this build does not read).
    digests_read: AtomicU64,
    reports_parsed: AtomicU64,
}

impl Summary {
    /// Starts the summariser on the database; the first summary follows at once.
    pub fn start(database: Database, interval: Duration) -> Arc<Summary> {
        // One pending mark is enough: the next update reads every new report.
        let (stale, marks) = std::sync::mpsc::sync_channel(1);
        let first = json!({"status": "starting", "reports": 0}).to_string();
        let summary = Arc::new(Summary {
            current: RwLock::new(Arc::new(first.into_bytes())),
            stale,
            handed_over: Mutex::default(),
            digests_read: AtomicU64::new(0),
            reports_parsed: AtomicU64::new(0),
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

    /// The writer stored `report` as `id`: the summary is updated soon.
    pub fn stored(&self, id: i64, report: &Report) {
        let mut held = self.handed();
        if held.len() < HANDED_OVER {
            held.insert(id, Digest::of(report));
        }
        drop(held);
        self.mark_stale();
    }

    fn handed(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Digest>> {
        self.handed_over
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The summary is to be updated soon.
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
    let mut state = State::default();
    // The per-result checks' answers, kept for the server's life (they depend on the build).
    let mut checks = Checks::new(models, registry);
    let mut reader: Option<Reader> = None;
    while marks.recv().is_ok() {
        let started = Instant::now();
        let Some(summary) = summary.upgrade() else {
            return;
        };
        let publish = |json| {
            *summary
                .current
                .write()
                .unwrap_or_else(PoisonError::into_inner) = Arc::new(json);
        };
        let updated = connected(&mut reader, database)
            .and_then(|r| state.update(r, &summary, &mut checks, started, publish));
        if let Err(e) = updated {
            // Tried again after the interval, on a new connection (the database may be back by
            // then); the classes not merged yet stay to be merged.
            log::error!("summary: {e}");
            reader = None;
            summary.mark_stale();
        }
        drop(summary);
        std::thread::sleep(interval.saturating_sub(started.elapsed()));
    }
}

/// The summariser's read connection, opened again after an error.
fn connected<'a>(reader: &'a mut Option<Reader>, database: &Database) -> Result<&'a mut Reader> {
    if reader.is_none() {
        *reader = Some(Reader::open(database)?);
    }
    reader
        .as_mut()
        .ok_or_else(|| ServerError::Internal("the summary's connection".into()))
}

/// How often a long update (many classes to merge: a burst, the first after a start) publishes
/// what it has, the reports stored since counted (`classes_pending`: classes whose picks are
/// still to follow).
const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// What the summariser keeps between updates.
#[derive(Debug, Default)]
struct State {
    /// The last report id read, and the reports read.
    last: i64,
    reports: usize,
    classes: BTreeMap<String, Class>,
    /// Per device fingerprint: the name and class of its first report, and its reports.
    devices: HashMap<String, Device>,
    /// Classes with reports not merged yet, in the order they were named, and as a set.
    dirty: VecDeque<String>,
    pending: HashSet<String>,
}

#[derive(Debug, Default)]
struct Class {
    heads: Vec<Head>,
    /// Devices whose first report names this class.
    devices: usize,
    merged: Merged,
}

#[derive(Debug)]
struct Device {
    name: String,
    class: String,
    reports: usize,
}

/// What the summary shows of one class's merge.
#[derive(Debug, Default)]
struct Merged {
    counted: usize,
    unreadable: usize,
    set_aside: usize,
    /// Profiles more than one sender reported (each sender's reports vote as its own device).
    repeated: usize,
    picks: Vec<CrowdPick>,
    /// The (family, bucket, scope) the crowd cannot decide yet, and the most devices that
    /// timed any one variant of them.
    undecided: usize,
    undecided_devices: usize,
}

impl State {
    /// Reads the reports stored since the last update and merges again the classes they name;
    /// a long one publishes every [`PUBLISH_EVERY`] meanwhile, the reports stored since counted.
    fn update(
        &mut self,
        reader: &mut Reader,
        summary: &Summary,
        checks: &mut Checks,
        started: Instant,
        publish: impl Fn(Vec<u8>),
    ) -> Result<()> {
        self.read(reader)?;
        let mut published = started;
        let (mut merged, mut read) = (0, 0);
        // In the order the classes were named (none waits behind classes named after it); a
        // class stays dirty until it is merged: an error leaves the rest for the next update.
        while let Some(name) = self.dirty.front().cloned() {
            if let Some(class) = self.classes.get_mut(&name) {
                let (m, r) = merge_class(reader, summary, &class.heads, checks)?;
                (class.merged, merged, read) = (m, merged + 1, read + r);
            }
            self.dirty.pop_front();
            self.pending.remove(&name);
            if !self.dirty.is_empty() && published.elapsed() >= PUBLISH_EVERY {
                self.read(reader)?;
                publish(self.render(summary, started)?);
                published = Instant::now();
            }
        }
        // What was handed over and read is merged, or does not count.
        let last = self.last;
        summary.handed().retain(|id, _| *id > last);
        publish(self.render(summary, started)?);
        log::debug!(
            "summary: {merged} classes merged in {} ms, {read} digests read",
            started.elapsed().as_millis()
        );
        Ok(())
    }

    /// Reads the heads of the reports stored since the last read (all of them again when fewer
    /// are stored than were read: some were removed by hand).
    fn read(&mut self, reader: &mut Reader) -> Result<()> {
        let (mut heads, stored) = reader.heads_after(self.last)?;
        if stored != (self.reports + heads.len()) as i64 {
            log::info!("summary: stored reports were removed: reading every report again");
            *self = State::default();
            heads = reader.heads_after(0)?.0;
        }
        for h in heads {
            self.last = self.last.max(h.id);
            self.reports += 1;
            let class = self.classes.entry(h.class.clone()).or_default();
            match self.devices.entry(h.fingerprint.clone()) {
                Entry::Occupied(mut d) => d.get_mut().reports += 1,
                Entry::Vacant(d) => {
                    d.insert(Device {
                        name: h.device.clone(),
                        class: h.class.clone(),
                        reports: 1,
                    });
                    class.devices += 1;
                }
            }
            if self.pending.insert(h.class.clone()) {
                self.dirty.push_back(h.class.clone());
            }
            class.heads.push(h);
        }
        Ok(())
    }

    /// The summary: counts of everything, and the first entries of each list.
    fn render(&self, summary: &Summary, started: Instant) -> Result<Vec<u8>> {
        let (mut counted, mut unreadable, mut set_aside, mut repeated) = (0, 0, 0, 0);
        let mut picks: Vec<&CrowdPick> = Vec::new();
        let mut undecided: Vec<(&str, &Merged)> = Vec::new();
        let mut undecided_entries = 0;
        for (name, class) in &self.classes {
            let m = &class.merged;
            counted += m.counted;
            unreadable += m.unreadable;
            set_aside += m.set_aside;
            repeated += m.repeated;
            picks.extend(&m.picks);
            if m.undecided > 0 {
                undecided.push((name, m));
                undecided_entries += m.undecided;
            }
        }
        let (picks_total, undecided_classes) = (picks.len(), undecided.len());
        // The best evidence first: picks by their devices, undecided classes by how near they
        // are to a quorum, devices by their class's devices (a class each cannot crowd out the
        // classes the crowd decides).
        let picks = first_by(picks, |a, b| {
            b.votes
                .len()
                .cmp(&a.votes.len())
                .then_with(|| {
                    (&a.class, &a.family, &a.bucket).cmp(&(&b.class, &b.family, &b.bucket))
                })
                .then_with(|| a.variant.cmp(&b.variant))
        });
        let undecided = first_by(undecided, |(ca, a), (cb, b)| {
            b.undecided_devices
                .cmp(&a.undecided_devices)
                .then_with(|| ca.cmp(cb))
        });
        let class_devices = |d: &Device| self.classes.get(&d.class).map_or(0, |c| c.devices);
        let devices = first_by(
            self.devices
                .iter()
                .map(|(fp, d)| (class_devices(d), fp, d))
                .collect(),
            |(na, fa, a), (nb, fb, b)| {
                nb.cmp(na)
                    .then_with(|| a.class.cmp(&b.class))
                    .then_with(|| b.reports.cmp(&a.reports))
                    .then_with(|| fa.cmp(fb))
            },
        );
        let devices_listed = listed(
            devices.iter().map(|(_, fp, d)| {
                json!({"fingerprint": fp.chars().take(12).collect::<String>(), "name": d.name,
                       "class": d.class, "reports": d.reports})
            }),
            DEVICES_BYTES,
        );
        let picks_listed = listed(picks.iter().map(|p| pick(p)), PICKS_BYTES);
        let undecided_listed = listed(
            undecided.iter().map(|(class, m)| {
                json!({"class": class, "entries": m.undecided, "devices": m.undecided_devices})
            }),
            UNDECIDED_BYTES,
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        serde_json::to_vec(&json!({
            "status": "ok",
            "as_of_unix": now,
            "update_ms": started.elapsed().as_millis() as u64,
            "reports": self.reports,
            "counted": counted,
            "unreadable": unreadable,
            "set_aside": set_aside,
            "profiles_repeated": repeated,
            "classes": self.classes.len(),
            "classes_pending": self.dirty.len(),
            "devices_total": self.devices.len(),
            "devices": devices_listed,
            "picks_total": picks_total,
            "picks": picks_listed,
            "undecided_classes": undecided_classes,
            "undecided_total": undecided_entries,
            "undecided": undecided_listed,
            "digests_read": summary.digests_read.load(AtomicOrdering::Relaxed),
            "reports_parsed": summary.reports_parsed.load(AtomicOrdering::Relaxed),
        }))
        .map_err(|e| ServerError::Internal(e.to_string()))
    }
}

/// The first [`LISTED`] of `items` in `order`: selected, then only those sorted (a summary of
/// 10,000 classes sorts 100 of them).
fn first_by<T>(mut items: Vec<T>, order: impl Fn(&T, &T) -> Ordering) -> Vec<T> {
    if items.len() > LISTED {
        items.select_nth_unstable_by(LISTED, &order);
        items.truncate(LISTED);
    }
    items.sort_by(order);
    items
}

/// The first entries of `items`: at most `budget` bytes of JSON.
fn listed(items: impl Iterator<Item = Value>, budget: usize) -> Vec<Value> {
    let mut bytes = 0;
    let mut out = Vec::new();
    for item in items {
        bytes += item.to_string().len() + 1;
        if bytes > budget {
            break;
        }
        out.push(item);
    }
    out
}

/// A pick as the summary shows it: its devices counted, the votes nearest the median listed.
fn pick(p: &CrowdPick) -> Value {
    let mut votes: Vec<_> = p.votes.iter().collect();
    votes.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    let from = (votes.len() / 2)
        .saturating_sub(VOTES_LISTED / 2)
        .min(votes.len().saturating_sub(VOTES_LISTED));
    let verdicts = |v: &[Verdict]| v.iter().take(VERDICTS_LISTED).cloned().collect::<Vec<_>>();
    json!({
        "class": p.class,
        "family": p.family,
        "bucket": p.bucket,
        "variant": p.variant,
        "median_ms": p.median_ms,
        "devices": p.votes.len(),
        "votes": &votes[from..(from + VOTES_LISTED).min(votes.len())],
        "runner_up": p.runner_up,
        "excluded_total": p.excluded.len(),
        "excluded": verdicts(&p.excluded),
        "disputed_total": p.disputed.len(),
        "disputed": verdicts(&p.disputed),
    })
}

/// One class's merge, by the merge's rules (`fleet/SCHEMA.md`), from its reports' heads and the
/// digests of those that count; and how many of those were read from the database.
fn merge_class(
    reader: &mut Reader,
    summary: &Summary,
    heads: &[Head],
    checks: &mut Checks,
) -> Result<(Merged, usize)> {
    let mut tally = Tally::new(checks, Rules::default());
    let counted = tally.select(heads);
    // The reports the writer handed over count as they are (it parsed and stored them); the
    // others' digests are read.
    let mut ids = Vec::new();
    for id in counted {
        match summary.handed().remove(&id) {
            Some(digest) => tally.add_digest(id, &digest),
            None => ids.push(id),
        }
    }
    ids.sort_unstable();
    // What each row's columns claim (the selection above went by them): the digest's (or the
    // report's) own profile must produce the same class and fingerprint, or the row does not
    // count.
    let claimed: HashMap<i64, (&str, &str)> = heads
        .iter()
        .map(|h| (h.id, (h.class.as_str(), h.fingerprint.as_str())))
        .collect();
    let mut unreadable = 0;
    let mut add = |tally: &mut Tally, id: i64, digest: std::result::Result<Digest, String>| {
        let checked = digest.and_then(|d| {
            let own = (d.device.class(), fingerprint(&d.device));
            match claimed.get(&id) {
                Some((class, fp)) if (*class, *fp) == (own.0.as_str(), own.1.as_str()) => Ok(d),
                _ => Err(format!(
                    "stored report {id}: its stored class or fingerprint is not its \
                     profile's ({})",
                    own.0
                )),
            }
        });
        match checked {
            Ok(d) => tally.add_digest(id, &d),
            Err(e) => {
                log::warn!("{e}: skipped");
                unreadable += 1;
                tally.unreadable(id, e);
            }
        }
    };
    let parse = |id: i64, body: &str| {
        summary.reports_parsed.fetch_add(1, AtomicOrdering::Relaxed);
        Report::parse(&format!("stored report {id}"), body)
            .map(|r| Digest::of(&r))
            .map_err(|e| e.to_string())
    };
    // A digest this build does not read: its report is read instead.
    let mut whole = Vec::new();
    reader.digests(&ids, |id, stored| match stored {
        Stored::Digest(text) => {
            summary.digests_read.fetch_add(1, AtomicOrdering::Relaxed);
            match Digest::parse(&text) {
                Some(d) => add(&mut tally, id, Ok(d)),
                None => whole.push(id),
            }
        }
        Stored::Body(body) => add(&mut tally, id, parse(id, &body)),
    })?;
    reader.bodies(&whole, |id, _sender, body| {
        add(&mut tally, id, parse(id, &body));
    })?;
    let merged = tally.finish();
    let merged_class = Merged {
        counted: merged.counted,
        unreadable,
        set_aside: merged.set_aside.len(),
        repeated: merged.repeated.len(),
        undecided: merged.unmet.len(),
        undecided_devices: merged.unmet.iter().map(|u| u.devices).max().unwrap_or(0),
        picks: merged.picks,
    };
    Ok((merged_class, ids.len()))
}
