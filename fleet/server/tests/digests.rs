//! The summary merges from each report's digest (what the crowd merge reads of it, stored
//! beside it), never from the report itself: its picks, undecided entries and counts are the
//! full-report merge's (`kiln_fleet::crowd::merge` over the export) on a crowd with liars; a
//! restart merges every class again without parsing a report; a digest this build does not read
//! is replaced by its report; a database of an earlier server (no digests) is migrated, its
//! digests filled in the background, and then no report is parsed either. Each on SQLite and on
//! PostgreSQL. (`reports_parsed`, `digests_read`: the summary's own counts since the start.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use kiln_fleet::crowd::{self, CrowdMerge};
use kiln_fleet::report::Outcome;
use kiln_fleet::{Report, case_models::CaseModels, export};
use serde_json::{Value, json};

/// A result made wrong (as a report may claim).
fn make_wrong(x: &mut kiln_fleet::report::VariantResult) {
    x.outcome = Outcome::Wrong;
    x.timing = None;
    x.error = Some("does not match".into());
}

/// The crowd: honest devices of a new class, a device sent twice, near-copies from one
/// address, devices that mark every matmul variant wrong but the slowest (too few to exclude:
/// disputed), forged ceilings with impossible times, the poison of the H200's profile with
/// every matmul wrong; and small lavapipe-class reports from addresses of their own. Each with
/// the address it comes from.
fn crowd_reports() -> Vec<([u8; 4], Report)> {
    let mut out = Vec::new();
    for i in 0..4u8 {
        out.push(([127, 0, 0, 2 + i], new_class(i as usize)));
    }
    // The first device again, from the same address: the later report supersedes it.
    let mut again = new_class(0);
    again.elapsed_s += 1.0;
    out.push(([127, 0, 0, 2], again));
    // Three near-copies from one address: one device per sender and class counts.
    for i in 0..3 {
        let mut r = new_class(100 + i);
        r.elapsed_s += i as f64;
        out.push(([127, 0, 0, 10], r));
    }
    // Three coordinated liars: every matmul variant wrong but one.
    for i in 0..3u8 {
        let mut r = new_class(200 + i as usize);
        let keep = r
            .results
            .iter()
            .find(|x| x.family == "matmul" && x.outcome == Outcome::Ok)
            .map(|x| x.variant.clone())
            .unwrap();
        for x in r.results.iter_mut().filter(|x| x.family == "matmul") {
            if x.variant != keep {
                make_wrong(x);
            }
        }
        out.push(([127, 0, 0, 20 + i], r));
    }
    // Forged ceilings and impossible times.
    let mut forged = new_class(300);
    forged.ceilings.copy_gb_per_s = 9e5;
    for x in &mut forged.results {
        if let Some(t) = &mut x.timing {
            (t.median_ms, t.min_ms, t.max_ms) = (3e-6, 3e-6, 3e-6);
        }
    }
    out.push(([127, 0, 0, 30], forged));
    // The H200's own profile, every matmul variant wrong.
    let mut poison = checked_in("nvidia-h200.json");
    for x in poison.results.iter_mut().filter(|x| x.family == "matmul") {
        make_wrong(x);
    }
    out.push(([127, 0, 0, 31], poison));
    // Small reports of lavapipe's class, each device from an address of its own.
    for i in 0..5usize {
        let mut v = report(i);
        v["device"]["name"] = json!(format!("llvmpipe {i}"));
        let r = Report::parse("small", &v.to_string()).unwrap();
        out.push(([127, 0, 0, 40 + i as u8], r));
    }
    out
}

fn post_all(url: &str, reports: &[([u8; 4], Report)]) {
    for (from, r) in reports {
        let body = serde_json::to_string(r).unwrap();
        assert_eq!(post_from(url, *from, &body), 201);
    }
}

/// The merge of the stored reports themselves, as `fleet merge --from` makes it.
fn full_report_merge(url: &str) -> CrowdMerge {
    let page = export::fetch(url).unwrap();
    let curated = vec![checked_in("lavapipe.json"), checked_in("nvidia-h200.json")];
    crowd::merge(
        &page.submissions,
        &CaseModels::from_curated(&curated),
        &kiln::Registry::builtin().unwrap(),
        &crowd::Rules::default(),
    )
}

/// What the summary decided (everything but when, how long and its own counts).
fn decided(summary: &Value) -> Value {
    let mut v = summary.clone();
    for k in ["as_of_unix", "update_ms", "digests_read", "reports_parsed"] {
        v.as_object_mut().unwrap().remove(k);
    }
    v
}

/// The summary says what the full-report merge says: the same picks (variant, median, devices,
/// runner-up, verdicts), the same undecided entries, counted and set-aside reports.
fn assert_same_as(summary: &Value, merged: &CrowdMerge) {
    assert!(!merged.picks.is_empty(), "the crowd decides something");
    assert_eq!(summary["counted"], merged.counted, "{summary}");
    assert_eq!(summary["set_aside"], merged.set_aside.len(), "{summary}");
    assert_eq!(summary["unreadable"], 0, "{summary}");
    assert_eq!(summary["undecided_total"], merged.unmet.len(), "{summary}");
    assert_eq!(summary["picks_total"], merged.picks.len(), "{summary}");
    // By (class, family, bucket, variant): a bucket has a pick per scope (its dtype).
    let listed: BTreeMap<(String, String, String, String), &Value> = summary["picks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let s = |k: &str| p[k].as_str().unwrap().to_string();
            ((s("class"), s("family"), s("bucket"), s("variant")), p)
        })
        .collect();
    assert_eq!(listed.len(), merged.picks.len());
    let mut disputed = 0;
    for p in &merged.picks {
        let key = (
            p.class.clone(),
            p.family.clone(),
            p.bucket.clone(),
            p.variant.clone(),
        );
        let got = listed[&key];
        assert_eq!(got["median_ms"].as_f64(), Some(p.median_ms), "{got}");
        assert_eq!(got["devices"], p.votes.len(), "{got}");
        assert_eq!(got["runner_up"], json!(p.runner_up), "{got}");
        assert_eq!(got["excluded_total"], p.excluded.len(), "{got}");
        assert_eq!(got["disputed_total"], p.disputed.len(), "{got}");
        assert_eq!(
            got["disputed"],
            json!(p.disputed.iter().take(8).collect::<Vec<_>>())
        );
        assert_eq!(
            got["excluded"],
            json!(p.excluded.iter().take(8).collect::<Vec<_>>())
        );
        disputed += p.disputed.len();
    }
    assert!(disputed > 0, "the liars' verdicts are disputed");
}

/// Rows stored without a digest.
fn undigested(s: &Server) -> i64 {
    let sql = "SELECT count(*) FROM reports WHERE digest = ''";
    match &s.pg {
        Some(db) => db.client().query_one(sql, &[]).unwrap().get(0),
        None => rusqlite::Connection::open(s.database())
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap(),
    }
}

fn the_summary_merges_from_digests_as_the_full_reports_merge(backend: &Backend) {
    let s = Server::start(backend, 1_000_000);
    let crowd = crowd_reports();
    post_all(&s.url, &crowd);
    let n = crowd.len() as u64;
    let first = summary_of(&s.url, n);
    let merged = full_report_merge(&s.url);
    assert_same_as(&first, &merged);
    // Nothing the writer stored was parsed again.
    assert_eq!(first["reports_parsed"], 0);

    // After a restart every class is merged again from the stored digests alone.
    let s = s.restart(1_000_000, "");
    let restarted = summary_of(&s.url, n);
    assert_eq!(restarted["reports_parsed"], 0);
    assert_eq!(restarted["digests_read"], restarted["counted"]);
    assert_eq!(decided(&restarted), decided(&first));

    // A digest this build does not read (another version): its report is read instead, once
    // (report 2 counts: report 1 was superseded by report 5).
    s.execute("UPDATE reports SET digest = '{\"v\": 99}' WHERE id = 2");
    let s = s.restart(1_000_000, "");
    let again = summary_of(&s.url, n);
    assert_eq!(again["reports_parsed"], 1, "{}", again["digests_read"]);
    assert_eq!(decided(&again), decided(&first));
}

fn an_earlier_servers_database_gets_its_digests(backend: &Backend) {
    let mut s = Server::start(backend, 1_000_000);
    let crowd = crowd_reports();
    post_all(&s.url, &crowd);
    let n = crowd.len() as u64;
    let first = summary_of(&s.url, n);
    assert!(s.signal_and_wait("TERM").is_some());
    // The database as the server before digests left it: schema version 3, no digest column.
    match &s.pg {
        Some(_) => {
            s.execute("ALTER TABLE reports DROP COLUMN digest; UPDATE kiln_fleet SET version = 3")
        }
        None => s.execute("ALTER TABLE reports DROP COLUMN digest; PRAGMA user_version = 3"),
    }
    // Migrated; until the digests are filled in the summary reads the reports, and says the same.
    let s = s.restart(1_000_000, "");
    let migrated = summary_of(&s.url, n);
    assert_eq!(decided(&migrated), decided(&first));
    let deadline = Instant::now() + Duration::from_secs(120);
    while undigested(&s) > 0 {
        assert!(
            Instant::now() < deadline,
            "digests not filled in: {}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Filled in: a restart parses no report, and the merge is the full reports' still.
    let s = s.restart(1_000_000, "");
    let restarted = summary_of(&s.url, n);
    assert_eq!(restarted["reports_parsed"], 0);
    assert_eq!(decided(&restarted), decided(&first));
    assert_same_as(&restarted, &full_report_merge(&s.url));
    // New reports are written with theirs.
    let mut v = report(99);
    v["device"]["name"] = json!("llvmpipe 99");
    assert_eq!(post_from(&s.url, [127, 0, 0, 99], &v.to_string()), 201);
    summary_of(&s.url, n + 1);
    assert_eq!(undigested(&s), 0);
}

on_both_backends!(
    the_summary_merges_from_digests_as_the_full_reports_merge,
    an_earlier_servers_database_gets_its_digests,
);
