//! The collector's export (`GET /export`, or a file saved from it): the stored crowd reports
//! with their ids and senders, in pages. `fleet merge --from` reads it; the collector writes it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::crowd::{SetAside, Submission};
use crate::error::{FleetError, Result};
use crate::json;
use crate::report::Report;
use crate::text::clip;

/// The `schema` field of an export.
pub const SCHEMA: &str = "kiln-fleet-export";
/// The export version this build writes and reads.
pub const VERSION: u32 = 1;

/// One page of stored reports, in id order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Export {
    pub schema: String,
    pub version: u32,
    pub reports: Vec<Entry>,
    /// Where the next page starts (`GET /export?after=<next>`); null on the last page.
    pub next: Option<i64>,
}

/// One stored report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The collector's id: its arrival order.
    pub id: i64,
    pub received_unix: i64,
    /// The salted hash of the sender's address (hex): the same sender, the same hash.
    pub sender: String,
    pub report: Value,
}

/// A page read: the reports that validate, those that do not (set aside, with why), and the
/// next page's cursor.
#[derive(Debug, Default)]
pub struct Page {
    pub submissions: Vec<Submission>,
    pub set_aside: Vec<SetAside>,
    pub next: Option<i64>,
}

impl Export {
    /// A page of the given entries.
    pub fn page(reports: Vec<Entry>, next: Option<i64>) -> Export {
        Export {
            schema: SCHEMA.into(),
            version: VERSION,
            reports,
            next,
        }
    }
}

/// Reads an export page (`what` names it in errors). Each report is validated as a report
/// is anywhere; one that does not validate is set aside, not fatal.
pub fn parse(what: &str, text: &str) -> Result<Page> {
    let export = parse_envelope(what, text)?;
    let mut page = submissions(what, export.reports)?;
    page.next = export.next;
    Ok(page)
}

/// Reads an export page's envelope: the entries' reports are left as they are.
pub fn parse_envelope(what: &str, text: &str) -> Result<Export> {
    let invalid = |detail: String| FleetError::InvalidReport {
        what: what.to_string(),
        detail,
    };
    let value = json::parse_unique(text).map_err(|r| match r {
        json::Refusal::Syntax(e) => invalid(format!("not JSON: {e}")),
        json::Refusal::Rule(e) => invalid(e),
    })?;
    match value.get("schema").and_then(Value::as_str) {
        Some(SCHEMA) => {}
        other => {
            return Err(invalid(format!(
                "schema `{}`, not `{SCHEMA}` (an export of a fleet collector)",
                clip(other.unwrap_or(""), 80)
            )));
        }
    }
    if value.get("version").and_then(Value::as_u64) != Some(u64::from(VERSION)) {
        return Err(invalid(format!(
            "this build reads export version {VERSION}"
        )));
    }
    serde_path_to_error::deserialize(value)
        .map_err(|e| invalid(format!("{}: {}", e.path(), e.inner())))
}

/// The entries' reports validated: those that do not validate are set aside.
pub fn submissions(what: &str, entries: Vec<Entry>) -> Result<Page> {
    let mut page = Page::default();
    for entry in entries {
        if entry.sender.is_empty()
            || entry.sender.len() > 64
            || !entry.sender.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(FleetError::InvalidReport {
                what: what.to_string(),
                detail: format!(
                    "report {}: sender `{}` is not a hex hash",
                    entry.id,
                    clip(&entry.sender, 70)
                ),
            });
        }
        match Report::from_value(&format!("report {}", entry.id), entry.report) {
            Ok(report) => page.submissions.push(Submission {
                id: entry.id,
                sender: entry.sender,
                report,
            }),
            Err(e) => page.set_aside.push(SetAside {
                id: entry.id,
                device: String::new(),
                what: "the report".into(),
                why: e.to_string(),
            }),
        }
    }
    Ok(page)
}

/// Largest export page read (the collector sends a few MiB per page).
#[cfg(not(target_arch = "wasm32"))]
const MAX_PAGE_BYTES: u64 = 256 << 20;
/// Most pages read from one collector: a bound on a collector whose cursor never ends.
#[cfg(not(target_arch = "wasm32"))]
const MAX_PAGES: usize = 100_000;

/// Every stored report of the collector at `url` (`http://host:port`), validated.
#[cfg(not(target_arch = "wasm32"))]
pub fn fetch(url: &str) -> Result<Page> {
    submissions(url, fetch_entries(url)?)
}

/// Every stored entry of the collector at `url`, page by page, as the collector sent them.
#[cfg(not(target_arch = "wasm32"))]
pub fn fetch_entries(url: &str) -> Result<Vec<Entry>> {
    let url = url.trim_end_matches('/');
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(120)))
        .build()
        .into();
    let mut all = Vec::new();
    let mut after = 0i64;
    for _ in 0..MAX_PAGES {
        let page_url = format!("{url}/export?after={after}");
        let text = agent
            .get(&page_url)
            .call()
            .and_then(|mut r| {
                r.body_mut()
                    .with_config()
                    .limit(MAX_PAGE_BYTES)
                    .read_to_string()
            })
            .map_err(|e| FleetError::Usage(format!("{page_url}: {e}")))?;
        let page = parse_envelope(&page_url, &text)?;
        all.extend(page.reports);
        match page.next {
            // The cursor must move forward, or the collector would be asked forever.
            Some(next) if next > after => after = next,
            Some(next) => {
                return Err(FleetError::Usage(format!(
                    "{page_url}: the next page starts after {next}, not after {after}"
                )));
            }
            None => return Ok(all),
        }
    }
    Err(FleetError::Usage(format!(
        "{url}: more than {MAX_PAGES} export pages"
    )))
}
