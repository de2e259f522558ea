//! The fleet: a campaign on the test adapter (lavapipe in CI) produces a report that validates
//! and holds no wrong or failed variant;
//! corrupted reports are refused with the reason; merge picks the fastest variant that was
//! correct everywhere in a class; the selector uses the merged table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use kiln::{Gpu, GpuOptions, Reason, TunedEntry, TunedTable};
use kiln_fleet::report::{Outcome, Timing, VariantResult};
use kiln_fleet::{Report, campaign, merge};
use serde_json::{Value, json};

/// One short campaign, shared by the tests that need a real report, on the adapter in hand:
/// a budget of 1 ms, so that what it covers cannot depend on the machine's speed — every family
/// runs its first variant before any budget applies, and nothing more.
fn campaign_report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| {
        let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).expect("an adapter");
        let options = campaign::Options {
            budget_s: 0.001,
            repeats: 3,
            warmup: 1,
            ..Default::default()
        };
        let mut steps = 0;
        let report = pollster::block_on(campaign::run(
            &gpu,
            &options,
            campaign::native_platform(&gpu),
            &mut |_| steps += 1,
            &|| false,
        ))
        .expect("the campaign runs");
        assert!(steps > 10, "progress was reported {steps} times");
        report
    })
}

#[test]
fn campaign_report_validates_and_covers_every_family() {
    let report = campaign_report();
    let json = report.to_json().unwrap();
    let back = Report::parse("campaign", &json).unwrap();
    assert_eq!(&back, report);
    let families: std::collections::BTreeSet<&str> =
        report.results.iter().map(|r| r.family.as_str()).collect();
    // Every family the adapter runs a variant of (the cooperative-matrix ceiling needs an
    // adapter with cooperative matrices).
    let registry = kiln::Registry::builtin().unwrap();
    let all: Vec<String> = registry
        .contracts()
        .map(|c| c.family.clone())
        .filter(|f| !kiln_fleet::campaign::LEFT_OUT_FAMILIES.contains(&f.as_str()))
        .filter(|f| {
            registry
                .supported(f, &report.device)
                .unwrap()
                .next()
                .is_some()
        })
        .collect();
    for f in &all {
        assert!(
            families.contains(f.as_str()),
            "no result for {f}: {families:?}"
        );
    }
    // Every variant the campaign ran matched its CPU reference and built: a wrong or failed
    // one is a defect of that variant, not a measurement.
    let bad: Vec<String> = report
        .results
        .iter()
        .filter(|r| r.outcome != Outcome::Ok)
        .map(|r| {
            let why = r.error.as_deref().unwrap_or("no error recorded");
            format!("{} {} ({:?}): {why}", r.family, r.variant, r.outcome)
        })
        .collect();
    assert!(bad.is_empty(), "wrong or failed variants: {bad:#?}");
    let ok = report
        .results
        .iter()
        .filter(|r| r.outcome == Outcome::Ok)
        .count();
    assert!(ok >= all.len(), "only {ok} variants passed and were timed");
    for r in report.results.iter().filter(|r| r.outcome == Outcome::Ok) {
        assert!(
            !r.bucket.is_empty() || r.family != "matmul",
            "{} has no bucket",
            r.variant
        );
        assert!(r.efficiency.unwrap() > 0.0);
    }
    assert!(report.ceilings.copy_gb_per_s > 0.0 && report.ceilings.fma_gflop_per_s > 0.0);
    // 15 s is not enough for every variant on a software adapter (every_variant.rs runs them
    // all): what was left is listed.
    println!(
        "{} results, {} skipped, {:.1} s",
        report.results.len(),
        report.skipped.len(),
        report.elapsed_s
    );
}

#[test]
fn the_merge_reads_each_familys_tolerance_as_its_case_table_sets_it() {
    // `kiln::cases::campaign_tolerance` (no GPU) against the tolerance the campaign's cases
    // carried: the merge holds crowd reports to the former.
    let mut wrong = Vec::new();
    for r in &campaign_report().results {
        let dtype = kiln_fleet::case_models::dtype_of(&r.case).expect("a dtype");
        let read = kiln::cases::campaign_tolerance(&r.family, dtype);
        if read != Some(r.tolerance) {
            wrong.push(format!(
                "{}: {read:?}, the case has {}",
                r.case, r.tolerance
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The campaign's report as JSON with `edit` applied.
fn corrupted(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = serde_json::to_value(campaign_report()).unwrap();
    edit(&mut v);
    v.to_string()
}

fn refusal(json: &str) -> String {
    Report::parse("test", json).unwrap_err().to_string()
}

#[test]
fn corrupted_reports_are_refused_with_the_reason() {
    let cases: Vec<(&str, String, &str)> = vec![
        ("not json", "{ not json".into(), "not JSON"),
        ("an array", "[1, 2]".into(), "not a JSON object"),
        (
            "another schema",
            corrupted(|v| v["schema"] = json!("something-else")),
            "schema `something-else`",
        ),
        (
            "a newer version",
            corrupted(|v| v["version"] = json!(2)),
            "version 2: this build reads version 1",
        ),
        (
            "a missing field",
            corrupted(|v| {
                v.as_object_mut().unwrap().remove("ceilings");
            }),
            "missing field `ceilings`",
        ),
        (
            "a wrong type",
            corrupted(|v| v["results"][0]["tolerance"] = json!("small")),
            "results[0].tolerance",
        ),
        (
            "an unknown field",
            corrupted(|v| v["extra"] = json!(1)),
            "unknown field `extra`",
        ),
        (
            "a negative time",
            corrupted(|v| {
                let i = first_ok(v);
                v["results"][i]["timing"]["median_ms"] = json!(-1.0);
            }),
            "median_ms: -1 is not a positive finite number",
        ),
        (
            "min above median",
            corrupted(|v| {
                let i = first_ok(v);
                let max = v["results"][i]["timing"]["max_ms"].as_f64().unwrap();
                v["results"][i]["timing"]["min_ms"] = json!(max * 2.0);
            }),
            "≤ median",
        ),
        (
            "a timed wrong variant",
            corrupted(|v| {
                let i = first_ok(v);
                v["results"][i]["outcome"] = json!("wrong");
            }),
            "a Wrong variant is never timed",
        ),
        (
            "an ok variant over its tolerance",
            corrupted(|v| {
                let i = first_ok(v);
                v["results"][i]["rel_l2"] = json!(1.0);
            }),
            "over the tolerance",
        ),
        (
            "a duplicate result",
            corrupted(|v| {
                let first = v["results"][0].clone();
                v["results"].as_array_mut().unwrap().push(first);
            }),
            "appears twice",
        ),
        (
            "a NaN written as null",
            corrupted(|v| v["budget_s"] = Value::Null),
            "budget_s",
        ),
        (
            "a huge string",
            corrupted(|v| v["kiln_version"] = json!("x".repeat(10_000))),
            "kiln_version: 10000 bytes",
        ),
        (
            "an unknown clock",
            corrupted(|v| v["ceilings"]["clock"] = json!("sundial")),
            "`sundial` is not a clock",
        ),
    ];
    for (what, json, reason) in cases {
        let got = refusal(&json);
        assert!(
            got.contains(reason),
            "{what}: refused with `{got}`, expected `{reason}`"
        );
    }
    // Markup in a device name is data: accepted, and kept as written.
    let json = corrupted(|v| {
        v["device"]["name"] = json!("<script>alert(1)</script>'; DROP TABLE reports;--")
    });
    let r = Report::parse("markup", &json).unwrap();
    assert!(r.device.name.starts_with("<script>"));
}

fn first_ok(v: &Value) -> usize {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["outcome"] == "ok")
        .expect("an ok result")
}

/// A result on a made-up case.
fn result(variant: &str, outcome: Outcome, ms: f64) -> VariantResult {
    VariantResult {
        family: "matmul".into(),
        variant: variant.into(),
        case: "matmul 256x256x256 f32".into(),
        bucket: "m256_n256_k256".into(),
        outcome,
        rel_l2: Some(if outcome == Outcome::Ok { 1e-7 } else { 0.5 }),
        tolerance: 1e-4,
        error: (outcome != Outcome::Ok).then(|| "wrong".into()),
        compile_ms: None,
        timing: (outcome == Outcome::Ok).then(|| Timing {
            clock: "gpu_timestamps".into(),
            median_ms: ms,
            min_ms: ms,
            max_ms: ms,
            warmup: 1,
            repeats: 3,
            quantum_ms: None,
        }),
        gflop_per_s: None,
        gb_per_s: None,
        efficiency: None,
    }
}

fn device_report(name: &str, vendor: u32, results: Vec<VariantResult>) -> Report {
    let mut r = campaign_report().clone();
    r.device.name = name.into();
    r.device.vendor = vendor;
    r.results = results;
    r.skipped.clear();
    Report::parse("made up", &r.to_json().unwrap()).unwrap()
}

#[test]
fn merge_picks_the_fastest_variant_correct_on_every_device_of_a_class() {
    // Two devices of one class: A is fastest on the first but wrong on the second.
    let one = device_report(
        "one",
        0x1234,
        vec![
            result("f32_a", Outcome::Ok, 1.0),
            result("f32_b", Outcome::Ok, 2.0),
            result("f32_c", Outcome::Ok, 3.0),
        ],
    );
    let two = device_report(
        "two",
        0x1234,
        vec![
            result("f32_a", Outcome::Wrong, 0.0),
            result("f32_b", Outcome::Ok, 2.5),
            result("f32_c", Outcome::Ok, 2.0),
        ],
    );
    // Another class entirely.
    let other = device_report("other", 0x9999, vec![result("f32_a", Outcome::Ok, 1.0)]);
    let picks = merge::picks(&[one.clone(), two.clone(), other.clone()]);
    assert_eq!(picks.len(), 2, "{picks:?}");
    let mine = picks
        .iter()
        .find(|p| p.class == one.device.class())
        .unwrap();
    // b: slowest 2.5 ms; c: slowest 3.0 ms; a: wrong on two.
    assert_eq!(mine.variant, "f32_b");
    assert_eq!(mine.worst_ms, 2.5);
    assert_eq!(mine.excluded, vec!["f32_a".to_string()]);
    let theirs = picks
        .iter()
        .find(|p| p.class == other.device.class())
        .unwrap();
    assert_eq!(theirs.variant, "f32_a");

    // Entries the reports did not measure are kept (another class; the same class at another
    // bucket); measured ones are replaced.
    let entry = |class: &str, bucket: &str, variant: &str| TunedEntry {
        class: class.into(),
        family: "matmul".into(),
        bucket: bucket.into(),
        variant: variant.into(),
        source: "before".into(),
    };
    let keep = TunedTable {
        version: 1,
        entries: vec![
            entry("metal/integrated/106b", "m256_n256_k256", "f32_wg8_r2_k8"),
            entry(&one.device.class(), "m256_n256_k256", "f32_old"),
            entry(&one.device.class(), "m4096_n4096_k4096", "f32_big"),
        ],
    };
    let table = merge::tuned_table(&picks, &keep, "test");
    let names: Vec<&str> = table.entries.iter().map(|e| e.variant.as_str()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.contains(&"f32_wg8_r2_k8") && names.contains(&"f32_big"));
    assert!(!names.contains(&"f32_old"));
}

#[test]
fn each_dtype_and_causal_form_of_a_bucket_gets_its_own_pick() {
    // One softmax bucket timed in f32, f16 and causal f32: three calls the selector tells
    // apart, so three picks, each the fastest of its own scope, however fast the others are.
    let softmax = |variant: &str, ms: f64| VariantResult {
        family: "softmax".into(),
        case: "softmax 256x256 f32".into(),
        bucket: "c256".into(),
        ..result(variant, Outcome::Ok, ms)
    };
    let one = device_report(
        "one",
        0x1234,
        vec![
            softmax("f32_wg64_shared", 2.0),
            softmax("f32_wg128_shared", 3.0),
            softmax("f16_wg64_shared", 0.5),
            softmax("f16_wg128_shared", 0.7),
            softmax("f32_wg64_shared_causal", 0.3),
        ],
    );
    let picks = merge::picks(std::slice::from_ref(&one));
    let chosen: Vec<&str> = picks.iter().map(|p| p.variant.as_str()).collect();
    assert_eq!(
        chosen,
        [
            "f16_wg64_shared",
            "f32_wg64_shared",
            "f32_wg64_shared_causal"
        ],
        "{picks:?}"
    );

    // A merge of f32 results alone keeps the table's f16 entry for the bucket.
    let f32_only = device_report("one", 0x1234, vec![softmax("f32_wg128_shared", 1.0)]);
    let keep = TunedTable {
        version: 1,
        entries: vec![TunedEntry {
            class: one.device.class(),
            family: "softmax".into(),
            bucket: "c256".into(),
            variant: "f16_wg128_shared".into(),
            source: "before".into(),
        }],
    };
    let table = merge::tuned_table(&merge::picks(&[f32_only]), &keep, "test");
    let names: Vec<&str> = table.entries.iter().map(|e| e.variant.as_str()).collect();
    assert_eq!(names, ["f16_wg128_shared", "f32_wg128_shared"]);
}

#[test]
fn every_variants_scope_is_read_from_its_values() {
    // The merge keys on the scope the registry reads from a variant's typed values; hold it to
    // those values for every variant, and a variant this build lacks to a scope of its own.
    let registry = kiln::Registry::builtin().unwrap();
    let mut checked = 0;
    for contract in registry.contracts() {
        for v in registry.variants(&contract.family).unwrap() {
            let dtype = v.dtype().unwrap().wgsl();
            let causal = v.get("causal").is_some() && v.flag("causal").unwrap();
            let want = if causal {
                format!("{dtype} causal")
            } else {
                dtype.to_string()
            };
            assert_eq!(merge::scope_of(&v.family, &v.name), want, "{}", v.name);
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked} variants");
    assert_eq!(
        merge::scope_of("matmul", "f32_no_such_variant"),
        "not in this build"
    );
}

#[test]
fn the_selector_uses_the_merged_table() {
    let report = campaign_report();
    let picks = merge::picks(std::slice::from_ref(report));
    let table = merge::tuned_table(&picks, &TunedTable::default(), "test");
    // An f32 matmul case the campaign timed (m64_n64_k64 on a software adapter).
    let pick = picks
        .iter()
        .find(|p| p.family == "matmul" && p.variant.starts_with("f32"))
        .expect("the campaign timed an f32 matmul");
    let s: usize = pick.bucket[1..pick.bucket.find('_').unwrap()]
        .parse()
        .unwrap();
    let gpu = pollster::block_on(Gpu::new(&GpuOptions::default()))
        .unwrap()
        .with_tuned(table)
        .unwrap();
    let call = kiln::ops::matmul::Call::new(kiln::DType::F32, 1, s, s, s);
    let choice = kiln::ops::matmul::choose(&gpu.selector(), &call, None).unwrap();
    assert_eq!(choice.variant.name, pick.variant);
    assert!(
        matches!(choice.reason, Reason::Tuned { .. }),
        "{:?}",
        choice.reason
    );
    // With an empty table the rule decides.
    let plain = pollster::block_on(Gpu::new(&GpuOptions::default()))
        .unwrap()
        .with_tuned(TunedTable::default())
        .unwrap();
    let choice = kiln::ops::matmul::choose(&plain.selector(), &call, None).unwrap();
    assert!(
        matches!(choice.reason, Reason::Rule(_)),
        "{:?}",
        choice.reason
    );
}
