//! `GET /export`: pages of the stored reports for `fleet merge --from` (`fleet/SCHEMA.md`, "The
//! collector's export"), at a cost the rest of the server never waits on.
//!
//! A page is written from the stored bytes: a report the writer stored (or the digest fill
//! parsed) has a digest beside it and goes out as it was stored, its JSON syntax checked (so
//! that no row can break the page) but nothing parsed into a report; only a row without one (an
//! earlier server's, not yet filled in, or one written by hand) is validated first and left out
//! if it does not validate. Parsing every report of an 8.4 MB page again cost 1.5–2.6 s of CPU
//! per export, and exports from 20 addresses left `/health` and POST unanswered.
//!
//! What an export may cost:
//! - one page is built at a time, on one read connection kept between builds (a connection per
//!   export once ate the descriptors the database needs); the others wait for it, and a wait
//!   ends with its client: a request whose connection closed is dropped before it is built,
//!   and a build whose client went away stops at the next row;
//! - built pages are kept (`CACHE_BYTES`, `CACHE_TTL`): the same page asked again, by anyone,
//!   is sent from memory (a full page never changes; the last one is built again once a report
//!   was stored since);
//! - per address, one export at a time (waiting, built or being sent) and
//!   `export_build_ms_per_minute` of building (a page from the cache costs nothing): past them
//!   429 with `Retry-After`;
//! - in all, `export_in_flight` exports at a time: past them 503 with `Retry-After`.
//!
//! `/health` says what the exports do (`exports`: in flight now; since the start, pages built,
//! sent from the cache, refused, and dropped because their client had gone).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use kiln_fleet::Report;

use crate::db::{Database, Reader, Row};
use crate::error::{Result, ServerError};

/// About the most bytes of reports one page holds (a page ends after the report that passes it).
const PAGE_BYTES: usize = 8 << 20;
/// The most bytes of built pages kept, and how long one is kept: a full page never changes, but
/// rows removed by hand should leave it within a while.
const CACHE_BYTES: usize = 64 << 20;
const CACHE_TTL: Duration = Duration::from_secs(30);
/// A page goes to hyper in pieces of this size, so that its export counts as in flight until
/// about all of it has been taken by the socket (hyper asks for the next piece once its write
/// buffer has room).
const PIECE: usize = 64 << 10;
/// Addresses whose budget is remembered at most; past it the idle ones are forgotten.
const ADDRESSES: usize = 10_000;

/// The exports: the builder, the built pages, and what each address has in flight and left.
pub struct Exports {
    database: Database,
    per_page: usize,
    /// Milliseconds of building per address and minute, and exports in flight in all.
    build_ms_per_minute: f64,
    in_flight_max: usize,
    /// The builder's read connection (opened at the first build, again after an error): whoever
    /// holds it builds.
    builder: Arc<tokio::sync::Mutex<Option<Reader>>>,
    state: Mutex<Shared>,
    stats: Stats,
}

impl std::fmt::Debug for Exports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exports")
            .field("per_page", &self.per_page)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Shared {
    in_flight: usize,
    addresses: HashMap<IpAddr, Budget>,
    /// Built pages by `after`, oldest first, and their bytes.
    pages: VecDeque<(i64, Arc<Page>)>,
    page_bytes: usize,
}

/// One address's exports.
#[derive(Debug)]
struct Budget {
    busy: bool,
    /// Milliseconds of building left (negative after a long build: it waits longer).
    ms: f64,
    seen: Instant,
}

/// A built page.
#[derive(Debug)]
struct Page {
    bytes: Bytes,
    /// Whether it is the last page (it changes as reports are stored), the reports stored when
    /// it was built, and when.
    last: bool,
    stored: i64,
    built: Instant,
}

#[derive(Debug, Default)]
struct Stats {
    built: AtomicU64,
    cached: AtomicU64,
    refused: AtomicU64,
    dropped: AtomicU64,
}

impl Exports {
    pub fn new(
        database: Database,
        per_page: usize,
        build_ms_per_minute: u64,
        in_flight_max: usize,
    ) -> Arc<Exports> {
        Arc::new(Exports {
            database,
            per_page,
            build_ms_per_minute: build_ms_per_minute as f64,
            in_flight_max,
            builder: Arc::default(),
            state: Mutex::default(),
            stats: Stats::default(),
        })
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What `/health` says of the exports since the start.
    pub fn stats(&self) -> Value {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let in_flight = self.shared().in_flight;
        json!({
            "in_flight": in_flight,
            "built": n(&self.stats.built),
            "from_cache": n(&self.stats.cached),
            "refused": n(&self.stats.refused),
            "dropped": n(&self.stats.dropped),
        })
    }

    /// The page after the id `after` for `client` (its address key), `stored` reports being
    /// stored now: from the cache, or built, or refused (429, 503) with when to try again.
    pub async fn answer(self: &Arc<Self>, client: IpAddr, after: i64, stored: i64) -> Response {
        match self.page(client, after, stored).await {
            Ok(response) => response,
            Err(e) => {
                if matches!(e, ServerError::TooMany { .. } | ServerError::Busy { .. }) {
                    self.stats.refused.fetch_add(1, Ordering::Relaxed);
                }
                e.into_response()
            }
        }
    }

    async fn page(self: &Arc<Self>, client: IpAddr, after: i64, stored: i64) -> Result<Response> {
        let key = crate::sender::key(client);
        let slot = self.admit(key)?;
        if let Some(page) = self.cached(after, stored) {
            self.stats.cached.fetch_add(1, Ordering::Relaxed);
            return Ok(send(page.bytes.clone(), slot));
        }
        self.afford(key)?;
        // Until the page is ready, a request dropped with its connection counts as dropped.
        let unanswered = Unanswered(Some(self.clone()));
        // Waiting here ends with the request: nothing of it runs once its client has gone.
        let mut reader = self.builder.clone().lock_owned().await;
        // Built meanwhile for another request.
        if let Some(page) = self.cached(after, stored) {
            unanswered.answered();
            self.stats.cached.fetch_add(1, Ordering::Relaxed);
            return Ok(send(page.bytes.clone(), slot));
        }
        let stop = Stop::default();
        let stopped = stop.0.clone();
        let (database, per_page) = (self.database.clone(), self.per_page);
        let started = Instant::now();
        // The builder's lock moves into the blocking task: one build at a time, off the async
        // threads; the task ends early once `stop` is dropped with this request.
        let built = tokio::task::spawn_blocking(move || {
            build(&mut reader, &database, after, per_page, &stopped)
        })
        .await
        .map_err(|e| ServerError::Internal(e.to_string()))?;
        self.charge(key, started.elapsed());
        drop(stop);
        let Some((bytes, last)) = built? else {
            return Err(ServerError::Internal(
                "the export stopped while its client waited".into(),
            ));
        };
        unanswered.answered();
        self.stats.built.fetch_add(1, Ordering::Relaxed);
        let page = Arc::new(Page {
            bytes: Bytes::from(bytes),
            last,
            stored,
            built: Instant::now(),
        });
        self.keep(after, page.clone());
        Ok(send(page.bytes.clone(), slot))
    }

    /// A place for an export from `key`: one per address, `in_flight_max` in all.
    fn admit(self: &Arc<Self>, key: IpAddr) -> Result<Slot> {
        let mut shared = self.shared();
        let now = Instant::now();
        if shared.addresses.len() > ADDRESSES {
            shared
                .addresses
                .retain(|_, b| b.busy || now.duration_since(b.seen) < Duration::from_secs(60));
        }
        if shared.in_flight >= self.in_flight_max {
            return Err(ServerError::Busy {
                why: format!(
                    "{} exports are in progress, the most the collector serves at once",
                    self.in_flight_max
                ),
                retry_s: 5,
            });
        }
        let full = self.build_ms_per_minute;
        let budget = shared.addresses.entry(key).or_insert(Budget {
            busy: false,
            ms: full,
            seen: now,
        });
        if budget.busy {
            return Err(ServerError::TooMany {
                why: format!(
                    "an export for {key} is in progress: one at a time per address (read the \
                     pages one after another)"
                ),
                retry_s: 1,
            });
        }
        budget.busy = true;
        shared.in_flight += 1;
        Ok(Slot {
            exports: self.clone(),
            key,
        })
    }

    /// Whether `key` has building time left (refilled at its rate since it was last seen).
    fn afford(&self, key: IpAddr) -> Result<()> {
        let mut shared = self.shared();
        let full = self.build_ms_per_minute;
        let Some(budget) = shared.addresses.get_mut(&key) else {
            return Ok(());
        };
        let now = Instant::now();
        let per_s = full / 60.0;
        budget.ms = (budget.ms + now.duration_since(budget.seen).as_secs_f64() * per_s).min(full);
        budget.seen = now;
        if budget.ms > 0.0 {
            return Ok(());
        }
        let retry_s = ((1.0 - budget.ms) / per_s).ceil().max(1.0) as u64;
        Err(ServerError::TooMany {
            why: format!(
                "exports for {key} have used their {full} ms of building a minute: try again in \
                 {retry_s} s (a page another client had built is sent at once)"
            ),
            retry_s,
        })
    }

    /// Charges a build's time to `key`.
    fn charge(&self, key: IpAddr, took: Duration) {
        if let Some(budget) = self.shared().addresses.get_mut(&key) {
            budget.ms -= took.as_secs_f64() * 1e3;
        }
    }

    /// The built page after `after`, while it still holds what is stored.
    fn cached(&self, after: i64, stored: i64) -> Option<Arc<Page>> {
        let mut shared = self.shared();
        let Shared {
            pages, page_bytes, ..
        } = &mut *shared;
        let now = Instant::now();
        // Old pages go first (they are in the order they were built).
        while let Some((_, p)) = pages.front()
            && now.duration_since(p.built) > CACHE_TTL
        {
            *page_bytes -= p.bytes.len();
            pages.pop_front();
        }
        pages
            .iter()
            .rev()
            .find(|(a, p)| *a == after && !(p.last && p.stored != stored))
            .map(|(_, p)| p.clone())
    }

    /// Keeps a built page, dropping the oldest past [`CACHE_BYTES`].
    fn keep(&self, after: i64, page: Arc<Page>) {
        let size = page.bytes.len();
        if size > CACHE_BYTES {
            return;
        }
        let mut shared = self.shared();
        let Shared {
            pages, page_bytes, ..
        } = &mut *shared;
        // The page it replaces (the last page, built again).
        if let Some(at) = pages.iter().position(|(a, _)| *a == after)
            && let Some((_, old)) = pages.remove(at)
        {
            *page_bytes -= old.bytes.len();
        }
        while *page_bytes + size > CACHE_BYTES {
            match pages.pop_front() {
                Some((_, old)) => *page_bytes -= old.bytes.len(),
                None => break,
            }
        }
        *page_bytes += size;
        pages.push_back((after, page));
    }
}

/// An export in flight: its address's one and one of the total. Dropped when its answer has
/// been taken whole, or with its connection.
#[derive(Debug)]
struct Slot {
    exports: Arc<Exports>,
    key: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut shared = self.exports.shared();
        shared.in_flight = shared.in_flight.saturating_sub(1);
        if let Some(budget) = shared.addresses.get_mut(&self.key) {
            budget.busy = false;
        }
    }
}

/// Counts a request as dropped if it goes before its page was ready (its client went away).
struct Unanswered(Option<Arc<Exports>>);

impl Unanswered {
    fn answered(mut self) {
        self.0 = None;
    }
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        if let Some(exports) = self.0.take() {
            exports.stats.dropped.fetch_add(1, Ordering::Relaxed);
            log::debug!("export: the client went away before its page was ready: dropped");
        }
    }
}

/// Tells the build to stop when dropped (with its request, or once the build is done).
#[derive(Default)]
struct Stop(Arc<AtomicBool>);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The page answer: the bytes in pieces, the slot held until the last is taken.
fn send(bytes: Bytes, slot: Slot) -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        Body::new(Pieces { bytes, _slot: slot }),
    )
        .into_response()
}

/// A page's body, [`PIECE`] bytes at a time.
struct Pieces {
    bytes: Bytes,
    _slot: Slot,
}

impl HttpBody for Pieces {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, Self::Error>>> {
        if self.bytes.is_empty() {
            return Poll::Ready(None);
        }
        let n = PIECE.min(self.bytes.len());
        let piece = self.bytes.split_to(n);
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.bytes.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.bytes.len() as u64)
    }
}

/// Builds the page of up to `per_page` rows after `after` (and about [`PAGE_BYTES`]) on the
/// builder's connection: its JSON and whether it is the last page, or `None` once `stop` is
/// set (its client went away).
fn build(
    reader: &mut Option<Reader>,
    database: &Database,
    after: i64,
    per_page: usize,
    stop: &AtomicBool,
) -> Result<Option<(Vec<u8>, bool)>> {
    let conn = match reader {
        Some(r) => r,
        None => reader.insert(Reader::open(database)?),
    };
    let mut out = format!(
        "{{\"schema\":\"{}\",\"version\":{},\"reports\":[",
        kiln_fleet::export::SCHEMA,
        kiln_fleet::export::VERSION
    )
    .into_bytes();
    let (mut rows, mut written, mut bytes) = (0, 0, 0);
    let (mut more, mut stopped, mut last_id) = (false, false, None);
    let read = conn.rows_after(after, per_page as i64 + 1, &mut |row| {
        if stop.load(Ordering::Relaxed) {
            stopped = true;
            return false;
        }
        if rows == per_page || (bytes > PAGE_BYTES && rows > 0) {
            more = true;
            return false;
        }
        rows += 1;
        bytes += row.body.len();
        last_id = Some(row.id);
        if let Some(entry) = entry(&row) {
            if written > 0 {
                out.push(b',');
            }
            out.extend_from_slice(entry.as_bytes());
            written += 1;
        }
        true
    });
    if let Err(e) = read {
        // Opened again at the next build (the database may be back by then).
        *reader = None;
        return Err(e);
    }
    if stopped {
        return Ok(None);
    }
    let next = if more { last_id } else { None };
    out.extend_from_slice(b"],\"next\":");
    out.extend_from_slice(
        next.map_or("null".to_string(), |n| n.to_string())
            .as_bytes(),
    );
    out.push(b'}');
    Ok(Some((out, !more)))
}

/// One row as an export entry (`{id, received_unix, sender, report}`), or `None` (logged) for a
/// row whose report cannot go out: a body that is not JSON, or without a digest, one that does
/// not validate.
fn entry(row: &Row) -> Option<String> {
    let what = format!("stored report {}", row.id);
    let report = if row.digested {
        // Stored from a report this server validated: as stored, its syntax checked (a row
        // edited by hand must not break the page's JSON), nothing built.
        match serde_json::from_str::<IgnoredAny>(&row.body) {
            Ok(_) => std::borrow::Cow::Borrowed(row.body.as_str()),
            Err(e) => {
                log::warn!("{what}: not JSON: {e}: left out of the export");
                return None;
            }
        }
    } else {
        let canonical = Report::parse(&what, &row.body)
            .map_err(|e| e.to_string())
            .and_then(|r| serde_json::to_string(&r).map_err(|e| e.to_string()));
        match canonical {
            Ok(text) => std::borrow::Cow::Owned(text),
            Err(e) => {
                log::warn!("{e}: left out of the export");
                return None;
            }
        }
    };
    let sender = serde_json::to_string(&row.sender).ok()?;
    Some(format!(
        "{{\"id\":{},\"received_unix\":{},\"sender\":{sender},\"report\":{report}}}",
        row.id, row.received_unix
    ))
}
