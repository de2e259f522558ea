//! The collector started on 127.0.0.1 by the test: valid reports stored once; oversized,
//! malformed, schema-invalid, consent-less and flooding requests refused with the right status;
//! concurrent clients; kill -9 during writes loses no acknowledged report. Each on SQLite and on
//! PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::json;

fn stores_valid_reports_once_and_refuses_bad_ones(backend: &Backend) {
    let s = Server::start(backend, 10_000);
    assert_eq!(get(&s.url, "/health").1["reports"], 0);

    let body = report(1).to_string();
    let (status, first) = post(&s.url, &body, true);
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["status"], "stored");
    // The same report again, even formatted differently, is stored once.
    let (status, again) = post(
        &s.url,
        &serde_json::to_string_pretty(&report(1)).unwrap(),
        true,
    );
    assert_eq!((status, &again["status"]), (200, &json!("duplicate")));
    assert_eq!(again["id"], first["id"]);

    let refusals: Vec<(&str, String, bool, u16, &str)> = vec![
        ("no consent", body.clone(), false, 403, "consent"),
        ("not JSON", "{ not json".into(), true, 422, "not JSON"),
        (
            "another version",
            {
                let mut v = report(2);
                v["version"] = json!(2);
                v.to_string()
            },
            true,
            422,
            "version 2",
        ),
        (
            "a negative time",
            {
                let mut v = report(3);
                v["elapsed_s"] = json!(-1.0);
                v.to_string()
            },
            true,
            422,
            "elapsed_s",
        ),
        (
            "a missing field",
            {
                let mut v = report(4);
                v.as_object_mut().unwrap().remove("device");
                v.to_string()
            },
            true,
            422,
            "missing field `device`",
        ),
    ];
    for (what, body, consent, want, reason) in refusals {
        let (status, v) = post(&s.url, &body, consent);
        assert_eq!(status, want, "{what}: {v}");
        assert!(
            v["error"].as_str().unwrap_or("").contains(reason),
            "{what}: {v}"
        );
    }
    // Over the 1 MiB limit: refused from the declared length, before the body is sent. (A
    // client that sends the whole body regardless may find the connection closed under it.)
    let (status, v) = post_headers_only(&s.url, 2 << 20);
    assert_eq!(status, 413, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("over the limit"),
        "{v}"
    );

    // Markup and SQL in a device name are data: stored and returned as written.
    let name = "<script>alert(1)</script>'); DROP TABLE reports;--";
    let mut hostile = report(5);
    hostile["device"]["name"] = json!(name);
    let (status, v) = post(&s.url, &hostile.to_string(), true);
    assert_eq!(status, 201, "{v}");
    // The summary is recomputed after writes, off the request path: it catches up.
    let summary = summary_of(&s.url, 2);
    let names: Vec<&str> = summary["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&name), "{names:?}");
    // Two reports from one address decide nothing: a crowd pick needs a quorum of devices
    // from distinct senders (fleet/SCHEMA.md).
    assert!(summary["picks"].as_array().unwrap().is_empty(), "{summary}");
    assert!(!summary["undecided"].as_array().unwrap().is_empty());
    assert_eq!(get(&s.url, "/health").1["reports"], 2);
}

fn every_malformed_body_gets_422_and_stores_nothing(backend: &Backend) {
    let s = Server::start(backend, 10_000);
    let text = report(1).to_string();
    let mut not_utf8 = text.clone().into_bytes();
    let at = text.find("llvmpipe").unwrap();
    not_utf8[at] = 0xff;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("not UTF-8", not_utf8, "not UTF-8"),
        (
            "a duplicate key",
            text.replacen("\"backend\":", "\"backend\":\"metal\",\"backend\":", 1)
                .into_bytes(),
            "duplicate key `backend`",
        ),
        (
            "an unknown field inside device",
            {
                let mut v = report(2);
                v["device"]["extra"] = json!("x".repeat(100_000));
                v.to_string().into_bytes()
            },
            "device: unknown field `extra`",
        ),
        (
            "ESC in device.backend",
            {
                let mut v = report(3);
                v["device"]["backend"] = json!("vulkan\u{1b}[31m");
                v.to_string().into_bytes()
            },
            "device.backend",
        ),
        (
            "a bidi override in a variant",
            {
                let mut v = report(4);
                v["results"][0]["variant"] = json!("f32\u{202e}x");
                v.to_string().into_bytes()
            },
            "results[0].variant",
        ),
    ];
    for (what, body, reason) in cases {
        let (status, v) = post_bytes(&s.url, &body);
        assert_eq!(status, 422, "{what}: {v}");
        assert!(
            v["error"].as_str().unwrap_or("").contains(reason),
            "{what}: {v}"
        );
    }
    assert_eq!(get(&s.url, "/health").1["reports"], 0);
}

fn crowd_reports_reach_the_table_only_through_the_review(backend: &Backend) {
    use kiln_fleet::report::Outcome;
    use kiln_fleet::{case_models::CaseModels, crowd, export, merge, review};
    // Small export pages, so that reading the export walks several.
    let s = Server::start_with(backend, 1_000_000, "export_page_reports = 4\n");
    // Three honest devices of a new class, each from its own address.
    for i in 0..3u8 {
        let body = serde_json::to_string(&new_class(i as usize)).unwrap();
        assert_eq!(post_from(&s.url, [127, 0, 0, 2 + i], &body), 201);
    }
    // The first finding's poison, from a fourth address: the H200's profile, every matmul
    // variant marked wrong.
    let mut poison = checked_in("nvidia-h200.json");
    for x in poison.results.iter_mut().filter(|x| x.family == "matmul") {
        x.outcome = Outcome::Wrong;
        x.timing = None;
        x.error = Some("no".into());
    }
    let body = serde_json::to_string(&poison).unwrap();
    assert_eq!(post_from(&s.url, [127, 0, 0, 9], &body), 201);
    // Twenty near-copies of a new-class device from one more address, each another "device".
    for i in 0..20 {
        let mut r = new_class(100 + i);
        r.elapsed_s += i as f64;
        let body = serde_json::to_string(&r).unwrap();
        assert_eq!(post_from(&s.url, [127, 0, 0, 10], &body), 201);
    }

    let entries = export::fetch_entries(&s.url).unwrap();
    assert_eq!(entries.len(), 24, "every page read");
    let senders: std::collections::BTreeSet<&str> =
        entries.iter().map(|e| e.sender.as_str()).collect();
    assert_eq!(senders.len(), 5, "one hash per address");
    let text = serde_json::to_string(&entries).unwrap();
    assert!(!text.contains("127.0.0."), "an address in the export");

    let page = export::fetch(&s.url).unwrap();
    let curated = vec![checked_in("lavapipe.json"), checked_in("nvidia-h200.json")];
    let merged = crowd::merge(
        &page.submissions,
        &CaseModels::from_curated(&curated),
        &kiln::Registry::builtin().unwrap(),
        &crowd::Rules::default(),
    );
    let before = kiln::TunedTable::builtin().unwrap();
    let r = review::review(
        &before,
        &merge::picks(&curated),
        "curated",
        merged,
        "crowd",
        crowd::DEFAULT_QUORUM,
    );
    let class = new_class(0).device.class();
    let h200 = curated[1].device.class();
    // The new class is decided by its three honest devices (the near-copies are one more
    // device at most); nothing of the H200's moves.
    assert!(r.table.entries.iter().any(|e| e.class == class));
    let of = |t: &kiln::TunedTable, c: &str| -> Vec<(String, String, String)> {
        t.entries
            .iter()
            .filter(|e| e.class == c)
            .map(|e| (e.family.clone(), e.bucket.clone(), e.variant.clone()))
            .collect()
    };
    assert_eq!(of(&r.table, &h200), of(&before, &h200));
    assert!(r.text().contains(&format!("add {class}")), "{}", r.text());
}

fn a_flood_from_one_address_gets_429(backend: &Backend) {
    let s = Server::start(backend, 5);
    for _ in 0..5 {
        assert_eq!(get(&s.url, "/summary").0, 200);
    }
    let (status, v, retry) = get(&s.url, "/summary");
    assert_eq!(status, 429, "{v}");
    assert!(v["error"].as_str().unwrap().contains("too many requests"));
    assert!(retry.unwrap().parse::<u64>().unwrap() >= 1);
    // A flooding client cannot post either; health checks still answer.
    assert_eq!(post(&s.url, &report(1).to_string(), true).0, 429);
    assert_eq!(get(&s.url, "/health").0, 200);
}

fn concurrent_clients_each_report_stored_exactly_once(backend: &Backend) {
    // 500 reports from one address: over the default quota of 100.
    let s = Server::start_with(backend, 1_000_000, UNLIMITED);
    let url = Arc::new(s.url.clone());
    let threads: Vec<_> = (0..20)
        .map(|c| {
            let url = url.clone();
            std::thread::spawn(move || {
                for r in 0..25 {
                    let body = report(1000 + c * 25 + r).to_string();
                    let (status, v) = post(&url, &body, true);
                    assert_eq!(status, 201, "client {c} report {r}: {v}");
                    // A retry of the same report is acknowledged as a duplicate.
                    if r % 5 == 0 {
                        assert_eq!(post(&url, &body, true).0, 200);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(get(&s.url, "/health").1["reports"], 500);
}

fn kill_9_during_writes_loses_no_acknowledged_report(backend: &Backend) {
    let s = Server::start_with(backend, 1_000_000, UNLIMITED);
    let url = s.url.clone();
    let acked = Arc::new(Mutex::new(Vec::new()));
    let writer = {
        let acked = acked.clone();
        std::thread::spawn(move || {
            for i in 0..100_000 {
                let body = report(5000 + i).to_string();
                let (status, _) = post(&url, &body, true);
                if status != 201 {
                    break; // the server is gone
                }
                acked.lock().unwrap().push(body);
            }
        })
    };
    while acked.lock().unwrap().len() < 40 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let s = s.kill_and_restart(1_000_000, UNLIMITED);
    writer.join().unwrap();
    let acked = acked.lock().unwrap();
    let stored = get(&s.url, "/health").1["reports"].as_u64().unwrap() as usize;
    assert!(
        stored >= acked.len(),
        "{stored} stored, {} acknowledged",
        acked.len()
    );
    // Every acknowledged report is there: sending it again is a duplicate.
    for body in acked.iter() {
        assert_eq!(post(&s.url, body, true).0, 200);
    }
    summary_of(&s.url, stored as u64);
}

on_both_backends!(
    stores_valid_reports_once_and_refuses_bad_ones,
    every_malformed_body_gets_422_and_stores_nothing,
    crowd_reports_reach_the_table_only_through_the_review,
    a_flood_from_one_address_gets_429,
    concurrent_clients_each_report_stored_exactly_once,
    kill_9_during_writes_loses_no_acknowledged_report,
);
