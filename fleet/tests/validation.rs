//! Validation as SCHEMA.md promises, on the checked-in reports (no GPU): every string bounded
//! and printable, the enumerations, unknown fields refused at every depth, duplicate keys
//! refused, and `fleet show` printing one line per result whatever a message holds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kiln_fleet::report::Outcome;
use kiln_fleet::{Report, show};
use serde_json::{Value, json};

fn checked_in(name: &str) -> String {
    let path = format!("{}/reports/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

/// The lavapipe report as a value.
fn base() -> Value {
    serde_json::from_str(&checked_in("lavapipe.json")).unwrap()
}

fn edited(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = base();
    edit(&mut v);
    v.to_string()
}

fn refusal(json: &str) -> String {
    match Report::parse("test", json) {
        Ok(_) => "accepted".into(),
        Err(e) => e.to_string(),
    }
}

/// Each case refused, and refused for the expected reason.
fn assert_refused(cases: Vec<(&str, String, &str)>) {
    let mut wrong = Vec::new();
    for (what, json, reason) in cases {
        let got = refusal(&json);
        if !got.contains(reason) {
            wrong.push(format!("{what}: `{got}`, expected `{reason}`"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn the_checked_in_reports_validate() {
    for name in ["lavapipe.json", "nvidia-h200.json"] {
        let r = Report::parse(name, &checked_in(name)).unwrap();
        assert!(r.results.iter().all(|x| x.outcome == Outcome::Ok));
        // Written back out and read again: the same report.
        assert_eq!(Report::parse(name, &r.to_json().unwrap()).unwrap(), r);
    }
}

#[test]
fn device_fields_are_bounded_and_enumerated() {
    let big = "x".repeat(100_000);
    assert_refused(vec![
        (
            "a 100 KB backend",
            edited(|v| v["device"]["backend"] = json!(big)),
            "device.backend",
        ),
        (
            "an unknown backend",
            edited(|v| v["device"]["backend"] = json!("<script>")),
            "device.backend: `<script>` is not one of",
        ),
        (
            "an unknown device type",
            edited(|v| v["device"]["device_type"] = json!("toaster")),
            "device.device_type",
        ),
        (
            "a 100 KB driver",
            edited(|v| v["device"]["driver"] = json!(big)),
            "device.driver: 100000 bytes",
        ),
        (
            "ESC in driver_info",
            edited(|v| v["device"]["driver_info"] = json!("Mesa\u{1b}[2J")),
            "device.driver_info: control character U+001B",
        ),
        (
            "NUL in the device name",
            edited(|v| v["device"]["name"] = json!("llvm\u{0}pipe")),
            "device.name: control character U+0000",
        ),
        (
            "markup as a coop element type",
            edited(|v| {
                v["device"]["features"]["cooperative_matrix"] = json!(true);
                v["device"]["cooperative_matrix"] =
                    json!([{"m": 16, "n": 16, "k": 16, "ab": "<script>", "cr": "f32"}]);
            }),
            "device.cooperative_matrix[0].ab",
        ),
        (
            "coop configurations without the feature",
            edited(|v| {
                v["device"]["cooperative_matrix"] =
                    json!([{"m": 16, "n": 16, "k": 16, "ab": "f16", "cr": "f32"}]);
            }),
            "device.cooperative_matrix: configurations listed without",
        ),
        (
            "subgroup sizes that are not powers of two",
            edited(|v| v["device"]["subgroup_min_size"] = json!(7)),
            "device.subgroup_min_size",
        ),
        (
            "an unknown OS",
            edited(|v| v["platform"]["os"] = json!("plan9")),
            "platform.os: `plan9` is not one of",
        ),
        (
            "a web OS on a native backend",
            edited(|v| v["platform"]["os"] = json!("web")),
            "disagree",
        ),
        (
            "a 100 KB architecture",
            edited(|v| v["platform"]["arch"] = json!(big)),
            "platform.arch",
        ),
        (
            "a long kiln version",
            edited(|v| v["kiln_version"] = json!("1".repeat(65))),
            "kiln_version: 65 bytes, over 64",
        ),
    ]);
}

#[test]
fn newlines_and_bidi_controls_are_refused_in_names() {
    assert_refused(vec![
        (
            "a newline in the device name",
            edited(|v| v["device"]["name"] = json!("llvmpipe\nNVIDIA H200  f16_fast  0.0001 ms")),
            "device.name: control character U+000A",
        ),
        (
            "a right-to-left override in a variant",
            edited(|v| v["results"][0]["variant"] = json!("f32_a\u{202e}kcab")),
            "results[0].variant",
        ),
        (
            "a newline in a case",
            edited(|v| v["results"][0]["case"] = json!("matmul\n    f16_x 0.0001 ms")),
            "results[0].case: control character U+000A",
        ),
        (
            "a bidi isolate in the driver",
            edited(|v| v["platform"]["driver"] = json!("llvmpipe \u{2067}x\u{2069}")),
            "platform.driver: bidirectional or invisible formatting character U+2067",
        ),
        (
            "a line separator in why a variant was skipped",
            edited(|v| {
                v["skipped"] = json!([{"family": "matmul", "variant": "f32_a",
                    "case": "matmul 64x64x64 f32", "why": "budget\u{2028}fake line"}]);
            }),
            "skipped[0].why: bidirectional or invisible formatting character U+2028",
        ),
        (
            "a space in a family name",
            edited(|v| v["results"][0]["family"] = json!("mat mul")),
            "results[0].family",
        ),
    ]);
}

#[test]
fn unknown_fields_are_refused_at_every_level() {
    assert_refused(vec![
        (
            "at the top",
            edited(|v| v["extra"] = json!(1)),
            "unknown field `extra`",
        ),
        (
            "inside device",
            edited(|v| v["device"]["extra"] = json!("x".repeat(1000))),
            "device: unknown field `extra`",
        ),
        (
            "inside device.features",
            edited(|v| v["device"]["features"]["teleport"] = json!(true)),
            "device.features: unknown field `teleport`",
        ),
        (
            "inside device.limits",
            edited(|v| v["device"]["limits"]["max_magic"] = json!(1)),
            "device.limits: unknown field `max_magic`",
        ),
        (
            "inside a result's timing",
            edited(|v| v["results"][0]["timing"]["note"] = json!("x")),
            "unknown field `note`",
        ),
    ]);
}

#[test]
fn duplicate_keys_are_refused() {
    let text = checked_in("lavapipe.json");
    // The same key twice, at the top, inside `device` and inside a result: serde_json alone
    // keeps the last.
    let at_top = text.replacen("\"budget_s\":", "\"budget_s\": 1.0, \"budget_s\":", 1);
    let in_device = text.replacen("\"backend\":", "\"backend\": \"metal\", \"backend\":", 1);
    let in_result = text.replacen("\"outcome\":", "\"outcome\": \"wrong\", \"outcome\":", 1);
    assert_ne!(at_top, text);
    assert_ne!(in_device, text);
    assert_ne!(in_result, text);
    assert_refused(vec![
        ("at the top", at_top, "duplicate key `budget_s`"),
        (
            "inside device",
            in_device,
            "device: duplicate key `backend`",
        ),
        (
            "inside a result",
            in_result,
            "results[0]: duplicate key `outcome`",
        ),
    ]);
}

#[test]
fn bytes_that_are_not_utf8_are_a_malformed_report() {
    let mut bytes = checked_in("lavapipe.json").into_bytes();
    let at = bytes.iter().position(|&b| b == b'l').unwrap();
    bytes[at] = 0xff;
    let got = Report::parse_bytes("body", &bytes).unwrap_err().to_string();
    assert!(got.contains("not UTF-8"), "{got}");
}

#[test]
fn show_prints_each_result_on_one_line_whatever_its_message_holds() {
    // A message may hold newlines (a driver's multi-line error): printed on one line, so that
    // it cannot draw a fake result under it.
    let json = edited(|v| {
        let r = &mut v["results"][0];
        r["outcome"] = json!("failed");
        r["timing"] = Value::Null;
        r["error"] = json!("boom\n    f16_fake_fastest                       0.0001 ms");
    });
    let report = Report::parse("test", &json).unwrap();
    let text = show::report(&report);
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("f16_fake_fastest")),
        "{text}"
    );
    assert!(text.contains("boom ⏎"), "{text}");
}

#[test]
fn numbers_past_any_campaigns_are_refused() {
    // The audit's finding 6: each of these was accepted.
    let timing = |f: &str, x: Value| edited(|v| v["results"][0]["timing"][f] = x);
    assert_refused(vec![
        (
            "a median of 1e300 ms",
            timing("median_ms", json!(1e300)),
            "median_ms: 1e300 is over",
        ),
        (
            "a rounding grid on a wall clock",
            edited(|v| {
                v["results"][0]["timing"]["clock"] = json!("wall_clock");
                v["results"][0]["timing"]["quantum_ms"] = json!(0.065536);
            }),
            "quantum_ms: a grid of 0.065536 ms belongs to gpu_timestamps",
        ),
        (
            "a negative rounding grid",
            timing("quantum_ms", json!(-0.065536)),
            "quantum_ms: -0.065536 is not a positive finite number",
        ),
        (
            "2^32 - 1 repeats",
            timing("repeats", json!(4_294_967_295u64)),
            "repeats: 4294967295 is over",
        ),
        (
            "an efficiency of 1e300",
            edited(|v| v["results"][0]["efficiency"] = json!(1e300)),
            "efficiency: 1e300 is over",
        ),
        (
            "a copy ceiling of 1e30",
            edited(|v| v["ceilings"]["copy_gb_per_s"] = json!(1e30)),
            "copy_gb_per_s: 1e30 is over",
        ),
        (
            "a tolerance of 1e300",
            edited(|v| v["results"][0]["tolerance"] = json!(1e300)),
            "tolerance: 1e300 is over",
        ),
    ]);
}

/// A browser's rounded timestamps: the grid travels with the timing (its median_ms then holds
/// the readings' mean) and reads back; reports without it still read.
#[test]
fn a_rounding_grid_reads_back_and_is_optional() {
    let json = edited(|v| {
        let t = &mut v["results"][0]["timing"];
        t["clock"] = json!("gpu_timestamps");
        t["min_ms"] = json!(0.065536);
        t["median_ms"] = json!(0.0983);
        t["max_ms"] = json!(0.131072);
        t["quantum_ms"] = json!(0.065536);
    });
    let report = Report::parse("test", &json).unwrap();
    let t = report.results[0].timing.as_ref().unwrap();
    assert_eq!(t.quantum_ms, Some(0.065536));
    let again = serde_json::to_string(&report).unwrap();
    assert_eq!(Report::parse("again", &again).unwrap(), report);
    let plain = Report::parse("lavapipe.json", &checked_in("lavapipe.json")).unwrap();
    assert!(
        plain
            .results
            .iter()
            .all(|r| r.timing.as_ref().is_none_or(|t| t.quantum_ms.is_none()))
    );
    assert!(
        !serde_json::to_string(&plain)
            .unwrap()
            .contains("quantum_ms")
    );
}
