//! The merge against poisoning (no GPU): the checked-in table comes out of the checked-in
//! reports unchanged; each poisoning attempt from issue 19 changes nothing in the merged table,
//! while the same reports merged by the curated rule (today's `fleet merge`, which trusts every
//! report it is given) do change it — so each test shows the attack is real and that the crowd
//! rules stop it; an honest quorum of a new class is written; `fleet merge --from` prints the
//! review and writes only with `--write`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use kiln::{DeviceProfile, Registry, TunedTable};
use kiln_fleet::case_models::CaseModels;
use kiln_fleet::crowd::{self, CrowdMerge, Rules, Submission};
use kiln_fleet::export::{Entry, Export};
use kiln_fleet::report::Outcome;
use kiln_fleet::{Report, merge, review};

/// The source `fleet merge` writes for the checked-in reports.
const CURATED_SOURCE: &str =
    "fleet merge of 2 report(s): llvmpipe (LLVM 15.0.6, 256 bits), NVIDIA H200";

fn reports_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("reports")
}

fn checked_in(name: &str) -> Report {
    let path = reports_dir().join(name);
    Report::parse(name, &std::fs::read_to_string(path).unwrap()).unwrap()
}

fn curated() -> Vec<Report> {
    vec![checked_in("lavapipe.json"), checked_in("nvidia-h200.json")]
}

fn builtin() -> TunedTable {
    TunedTable::builtin().unwrap()
}

/// The registry, built once (it renders every family's variants).
fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| Registry::builtin().unwrap())
}

/// The table a review of `crowd` writes over the checked-in one (with the curated reports).
fn reviewed(crowd: &[Submission]) -> (TunedTable, CrowdMerge) {
    let curated = curated();
    let merged = crowd::merge(
        crowd,
        &CaseModels::from_curated(&curated),
        registry(),
        &Rules::default(),
    );
    let r = review::review(
        &builtin(),
        &merge::picks(&curated),
        CURATED_SOURCE,
        merged.clone(),
        "crowd",
        Rules::default().quorum,
    );
    (r.table, merged)
}

/// The table today's `fleet merge` would write with `extra` given to it beside the curated
/// reports.
fn merged_as_curated(extra: &[Report]) -> TunedTable {
    let mut all = curated();
    all.extend_from_slice(extra);
    merge::tuned_table(&merge::picks(&all), &builtin(), CURATED_SOURCE)
}

/// What a table picks: (class, family, bucket, variant) per entry, without the sources (which
/// count the devices behind an entry).
fn choices(table: &TunedTable) -> Vec<(String, String, String, String)> {
    table
        .entries
        .iter()
        .map(|e| {
            (
                e.class.clone(),
                e.family.clone(),
                e.bucket.clone(),
                e.variant.clone(),
            )
        })
        .collect()
}

fn sub(id: i64, sender: &str, report: Report) -> Submission {
    // Submissions come from a collector's export, where every report was validated.
    Report::parse("crowd", &report.to_json().unwrap()).unwrap();
    Submission {
        id,
        sender: sender.into(),
        report,
    }
}

/// `s` senders' ids: distinct hex hashes.
fn sender(i: usize) -> String {
    format!("{:032x}", 0xabc0_0000 + i)
}

/// Another device of the H200's kind: the same results, another driver build (so another
/// fingerprint), every time scaled by `speed`.
fn h200_like(n: usize, speed: f64) -> Report {
    let mut r = checked_in("nvidia-h200.json");
    r.device.driver_info = format!("580.{n}.0");
    r.platform.driver = format!("NVIDIA 580.{n}.0");
    scale(&mut r, speed);
    r
}

/// The same, as a device of a class no curated report measured (another vendor id).
fn new_class(n: usize, speed: f64) -> Report {
    let mut r = h200_like(n, speed);
    r.device.vendor = 0x1002;
    r.device.name = format!("Radeon {n}");
    r
}

fn scale(r: &mut Report, speed: f64) {
    for x in &mut r.results {
        if let Some(t) = &mut x.timing {
            t.median_ms *= speed;
            t.min_ms *= speed;
            t.max_ms *= speed;
        }
    }
}

/// A result made wrong (as a report may claim).
fn make_wrong(x: &mut kiln_fleet::report::VariantResult) {
    x.outcome = Outcome::Wrong;
    x.timing = None;
    x.error = Some("does not match".into());
}

/// The H200 matmul pick of the checked-in table in the bucket the issue names.
fn h200_matmul_pick(table: &TunedTable) -> Vec<(String, String)> {
    let class = checked_in("nvidia-h200.json").device.class();
    table
        .entries
        .iter()
        .filter(|e| e.class == class && e.family == "matmul")
        .map(|e| (e.bucket.clone(), e.variant.clone()))
        .collect()
}

#[test]
fn the_checked_in_table_comes_out_of_the_checked_in_reports() {
    let curated = curated();
    let table = merge::tuned_table(&merge::picks(&curated), &builtin(), CURATED_SOURCE);
    assert_eq!(table, builtin());
    // Through the review, with no crowd report: the same, and nothing to change.
    let (table, merged) = reviewed(&[]);
    assert_eq!(table, builtin());
    assert!(merged.picks.is_empty());
}

/// The poison of the first finding: the H200's profile, every matmul variant but the
/// slowest one marked wrong, or timed 1000× slower.
fn marks_others_wrong() -> Report {
    let mut r = checked_in("nvidia-h200.json");
    let slowest = slowest_matmul(&r);
    for x in r.results.iter_mut().filter(|x| x.family == "matmul") {
        if x.variant != slowest {
            make_wrong(x);
        }
    }
    r
}

fn times_others_slowly() -> Report {
    let mut r = checked_in("nvidia-h200.json");
    let slowest = slowest_matmul(&r);
    for x in r.results.iter_mut().filter(|x| x.family == "matmul") {
        if x.variant != slowest
            && let Some(t) = &mut x.timing
        {
            t.median_ms *= 1000.0;
            t.min_ms *= 1000.0;
            t.max_ms *= 1000.0;
        }
    }
    r
}

fn slowest_matmul(r: &Report) -> String {
    r.results
        .iter()
        .filter(|x| x.family == "matmul" && x.case.starts_with("matmul 1024x1024x1024 f16"))
        .max_by(|a, b| {
            let t = |x: &kiln_fleet::report::VariantResult| x.timing.as_ref().unwrap().median_ms;
            t(a).total_cmp(&t(b))
        })
        .unwrap()
        .variant
        .clone()
}

#[test]
fn one_report_that_marks_the_others_wrong_or_slow_moves_nothing() {
    for poison in [marks_others_wrong(), times_others_slowly()] {
        // Today's merge: one report moves the H200's matmul pick.
        let before = h200_matmul_pick(&builtin());
        assert_ne!(
            h200_matmul_pick(&merged_as_curated(std::slice::from_ref(&poison))),
            before
        );
        // Through the crowd rules: nothing changes, even sent from three addresses as three
        // devices.
        let crowd: Vec<Submission> = (0..3)
            .map(|i| {
                let mut r = poison.clone();
                r.device.driver_info = format!("poison {i}");
                sub(i as i64 + 1, &sender(i), r)
            })
            .collect();
        let (table, _) = reviewed(&crowd);
        assert_eq!(table, builtin());
    }
}

/// `n` honest devices of a class no curated report measured, each its own sender (device `i`
/// at speed `1 + i × step`, as `new_class` takes it).
fn honest_devices(n: usize, step: f64) -> Vec<Submission> {
    (0..n)
        .map(|i| {
            sub(
                i as i64 + 1,
                &sender(i),
                new_class(i, 1.0 + i as f64 * step),
            )
        })
        .collect()
}

#[test]
fn a_minority_cannot_move_a_class_the_crowd_decides() {
    // Three honest devices of a class no curated report measured decide it...
    let honest = honest_devices(3, 0.05);
    let (fair, merged) = reviewed(&honest);
    assert!(!merged.picks.is_empty());
    assert_ne!(fair, builtin());
    // ...and two attackers (two addresses, two devices of the class) who mark every matmul
    // variant but the slowest wrong, and time that one 10× faster than honest devices do,
    // move none of its picks.
    let mut crowd = honest.clone();
    for i in 0..2 {
        let mut r = new_class(10 + i, 1.0);
        let slowest = slowest_matmul(&r);
        for x in r.results.iter_mut().filter(|x| x.family == "matmul") {
            if x.variant == slowest {
                let t = x.timing.as_mut().unwrap();
                t.median_ms /= 10.0;
                t.min_ms /= 10.0;
                t.max_ms /= 10.0;
            } else {
                make_wrong(x);
            }
        }
        crowd.push(sub(100 + i as i64, &sender(10 + i), r));
    }
    let (table, _) = reviewed(&crowd);
    assert_eq!(choices(&table), choices(&fair));
    // Today's merge of the same reports: the attackers decide.
    let reports: Vec<Report> = crowd.iter().map(|s| s.report.clone()).collect();
    let honest_reports: Vec<Report> = honest.iter().map(|s| s.report.clone()).collect();
    assert_ne!(
        merged_as_curated(&reports),
        merged_as_curated(&honest_reports)
    );
}

#[test]
fn a_time_past_the_device_ceilings_is_refused() {
    // Three devices claim a variant (one honest devices skip for time) at 0.0000 ms.
    let crowd: Vec<Submission> = (0..3)
        .map(|i| {
            let mut r = new_class(i, 1.0);
            for x in r.results.iter_mut().filter(|x| x.family == "matmul") {
                if let Some(t) = &mut x.timing {
                    (t.median_ms, t.min_ms, t.max_ms) = (1e-7, 1e-7, 1e-7);
                }
            }
            sub(i as i64 + 1, &sender(i), r)
        })
        .collect();
    let (table, merged) = reviewed(&crowd);
    assert!(
        merged
            .set_aside
            .iter()
            .any(|a| a.why.starts_with("implausible")),
        "{:?}",
        merged.set_aside.first()
    );
    assert!(
        !table
            .entries
            .iter()
            .any(|e| e.class == crowd[0].report.device.class() && e.family == "matmul"),
        "an impossible time was written"
    );
    let reports: Vec<Report> = crowd.iter().map(|s| s.report.clone()).collect();
    assert!(
        merged_as_curated(&reports)
            .entries
            .iter()
            .any(|e| e.class == crowd[0].report.device.class() && e.family == "matmul"),
        "today's merge writes it"
    );
}

#[test]
fn a_variant_that_does_not_exist_counts_for_nothing() {
    let poison = |i: usize| {
        let mut r = checked_in("nvidia-h200.json");
        r.device.driver_info = format!("poison {i}");
        let x = r
            .results
            .iter_mut()
            .find(|x| x.family == "matmul" && x.outcome == Outcome::Ok)
            .unwrap();
        x.variant = "f16_does_not_exist".into();
        x.timing.as_mut().unwrap().median_ms = 1e-3;
        x.timing.as_mut().unwrap().min_ms = 1e-3;
        r
    };
    assert_ne!(merged_as_curated(&[poison(0)]), builtin());
    let crowd: Vec<Submission> = (0..3)
        .map(|i| sub(i as i64, &sender(i), poison(i)))
        .collect();
    let (table, merged) = reviewed(&crowd);
    assert_eq!(table, builtin());
    assert!(
        merged
            .set_aside
            .iter()
            .any(|a| a.why.contains("no variant `f16_does_not_exist`"))
    );
}

#[test]
fn a_cpu_rasterizers_report_relabelled_as_an_h200_adds_nothing() {
    let relabelled = |i: usize| {
        let mut r = checked_in("lavapipe.json");
        r.device = checked_in("nvidia-h200.json").device;
        r.device.driver_info = format!("580.{i}");
        r
    };
    assert_ne!(merged_as_curated(&[relabelled(0)]), builtin());
    let crowd: Vec<Submission> = (0..3)
        .map(|i| sub(i as i64, &sender(i), relabelled(i)))
        .collect();
    let (table, merged) = reviewed(&crowd);
    assert_eq!(table, builtin());
    assert!(
        merged.set_aside.iter().any(|a| a
            .why
            .contains("a software campaign's case on a hardware device")),
        "{:?}",
        merged.set_aside.first()
    );
}

/// A browser's report: the software adapter's cases on Chromium's SwiftShader profile (no f16).
fn browser(i: usize) -> Report {
    let mut r = checked_in("lavapipe.json");
    r.device = stored_profile("chromium-swiftshader");
    r.device.driver_info = format!("Chrome/15{i}.0.0.0, google, swiftshader");
    r.platform.os = "web".into();
    r.platform.arch = "wasm32".into();
    r.platform.browser = Some(format!("Mozilla/5.0 Chrome/15{i}.0.0.0"));
    r
}

fn stored_profile(name: &str) -> DeviceProfile {
    kiln::device::stored_profiles()
        .unwrap()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap()
        .1
}

#[test]
fn a_new_class_waits_for_a_quorum_and_gets_only_what_its_profile_runs() {
    let class = browser(0).device.class();
    let of_class = |t: &TunedTable| -> Vec<String> {
        t.entries
            .iter()
            .filter(|e| e.class == class)
            .map(|e| e.variant.clone())
            .collect()
    };
    // Today: the first report decides the class, f16 variants included.
    let first = of_class(&merged_as_curated(&[browser(0)]));
    assert!(first.iter().any(|v| v.starts_with("f16")), "{first:?}");
    // The crowd rules: one report decides nothing; three devices decide, without f16.
    let (table, merged) = reviewed(&[sub(1, &sender(1), browser(0))]);
    assert!(of_class(&table).is_empty());
    assert!(!merged.unmet.is_empty());
    assert!(
        merged
            .set_aside
            .iter()
            .any(|a| a.what.contains(" f16_") && a.why.contains("not offered")),
        "{:?}",
        merged.set_aside
    );
    let crowd: Vec<Submission> = (0..3)
        .map(|i| sub(i as i64, &sender(i), browser(i)))
        .collect();
    let (table, _) = reviewed(&crowd);
    let decided = of_class(&table);
    assert!(!decided.is_empty());
    assert!(!decided.iter().any(|v| v.starts_with("f16")), "{decided:?}");
}

#[test]
fn near_copies_from_one_sender_count_as_one_device() {
    // Twenty near-copies from one address, each another "device": one device counts.
    let crowd: Vec<Submission> = (0..20)
        .map(|i| {
            let mut r = new_class(i, 1.0);
            r.elapsed_s += i as f64;
            sub(i as i64, &sender(0), r)
        })
        .collect();
    let (table, merged) = reviewed(&crowd);
    assert_eq!(table, builtin());
    assert_eq!(merged.counted, 1);
    assert!(merged.picks.is_empty());
    // The same device sending again counts once too: its latest report.
    let again: Vec<Submission> = (0..20)
        .map(|i| sub(i as i64, &sender(i % 2), new_class(7, 1.0)))
        .collect();
    let (table, merged) = reviewed(&again);
    assert_eq!(table, builtin());
    assert_eq!(merged.counted, 2);
    // Today's merge counts all twenty as devices of the class and decides it.
    let reports: Vec<Report> = crowd.iter().map(|s| s.report.clone()).collect();
    assert_ne!(merged_as_curated(&reports), builtin());
}

#[test]
fn a_self_reported_tolerance_does_not_make_a_wrong_result_right() {
    // Three devices of a new class claim a variant is right, with a relative error of 0.5
    // under their own tolerance of 1 (the loosest validation takes), and fastest.
    let target = slowest_matmul(&new_class(0, 1.0));
    let liar = |i: usize| {
        let mut r = new_class(20 + i, 1.0);
        for x in r.results.iter_mut().filter(|x| x.variant == target) {
            x.rel_l2 = Some(0.5);
            x.tolerance = 1.0;
            let t = x.timing.as_mut().unwrap();
            t.median_ms /= 50.0;
            t.min_ms /= 50.0;
            t.max_ms /= 50.0;
        }
        sub(100 + i as i64, &sender(20 + i), r)
    };
    let liars: Vec<Submission> = (0..3).map(liar).collect();
    let picked = |t: &TunedTable| t.entries.iter().any(|e| e.variant == target);
    let reports: Vec<Report> = liars.iter().map(|s| s.report.clone()).collect();
    assert!(
        picked(&merged_as_curated(&reports)),
        "today's merge picks the wrong variant"
    );
    // The family's tolerance makes each of them a vote for `wrong`: a quorum excludes it.
    let (table, merged) = reviewed(&liars);
    assert!(!picked(&table));
    assert!(
        merged
            .picks
            .iter()
            .any(|p| p.excluded.iter().any(|v| v.variant == target))
    );
    // Beside three honest devices, the class gets what the honest ones alone give it.
    let honest: Vec<Submission> = (0..3)
        .map(|i| sub(i as i64, &sender(i), new_class(i, 1.0)))
        .collect();
    let (fair, _) = reviewed(&honest);
    let mut all = honest;
    all.extend(liars);
    assert_eq!(choices(&reviewed(&all).0), choices(&fair));
}

/// `fleet merge` run in a scratch directory with a copy of the checked-in table.
fn fleet_merge(dir: &std::path::Path, extra: &[&str]) -> (std::process::Output, Vec<u8>) {
    let out = dir.join("tuned.json");
    let out_arg = out.display().to_string();
    let lavapipe = reports_dir().join("lavapipe.json");
    let h200 = reports_dir().join("nvidia-h200.json");
    let output = Command::new(env!("CARGO_BIN_EXE_fleet"))
        .arg("merge")
        .arg(&lavapipe)
        .arg(&h200)
        .args(["--out", &out_arg])
        .args(extra)
        .output()
        .unwrap();
    (output, std::fs::read(&out).unwrap())
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kiln-crowd-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/tuned.json"),
        dir.join("tuned.json"),
    )
    .unwrap();
    dir
}

#[test]
fn fleet_merge_from_an_export_prints_the_review_and_writes_only_with_write() {
    let original = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../kernels/tuned.json"
    ))
    .unwrap();
    // The checked-in reports alone: the checked-in table, byte for byte.
    let dir = scratch("curated");
    let (output, written) = fleet_merge(&dir, &[]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(written, original);

    // An export: three honest devices of a new class and the poison of the first finding.
    let mut entries: Vec<Entry> = (0..3)
        .map(|i| Entry {
            id: i as i64 + 1,
            received_unix: 1_700_000_000,
            sender: sender(i),
            report: serde_json::to_value(new_class(i, 1.0)).unwrap(),
        })
        .collect();
    entries.push(Entry {
        id: 9,
        received_unix: 1_700_000_000,
        sender: sender(9),
        report: serde_json::to_value(marks_others_wrong()).unwrap(),
    });
    let export = dir.join("export.json");
    std::fs::write(
        &export,
        serde_json::to_string(&Export::page(entries, None)).unwrap(),
    )
    .unwrap();
    let from = export.display().to_string();

    let (output, written) = fleet_merge(&dir, &["--from", &from]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(written, original, "written without --write");
    assert!(text.contains("nothing written"), "{text}");
    let class = new_class(0, 1.0).device.class();
    assert!(
        text.contains(&format!("add {class} matmul")),
        "the review names each entry it adds: {text}"
    );
    assert!(text.contains("devices' medians"), "{text}");

    let (output, written) = fleet_merge(&dir, &["--from", &from, "--write"]);
    assert!(output.status.success(), "{output:?}");
    let table = TunedTable::from_json("written", &String::from_utf8(written).unwrap()).unwrap();
    let builtin = builtin();
    // Every checked-in entry is still there, unchanged; the new class's entries follow.
    assert_eq!(table.entries[..builtin.entries.len()], builtin.entries[..]);
    assert!(
        table.entries[builtin.entries.len()..]
            .iter()
            .all(|e| e.class == class)
    );
    assert!(table.entries.len() > builtin.entries.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn three_liars_cannot_outvote_six_honest_devices() {
    // Six honest devices of a class no curated report measured, and three senders that mark
    // every matmul variant but the slowest wrong (audit finding 1: they used to exclude the
    // rest, and the review proposed a variant 37.8× slower).
    let honest = honest_devices(6, 0.02);
    let (fair, _) = reviewed(&honest);
    let mut crowd = honest.clone();
    for i in 0..3 {
        let mut r = new_class(30 + i, 1.0);
        let slowest = slowest_matmul(&r);
        for x in r.results.iter_mut().filter(|x| x.family == "matmul") {
            if x.variant != slowest {
                make_wrong(x);
            }
        }
        crowd.push(sub(100 + i as i64, &sender(30 + i), r));
    }
    let (table, merged) = reviewed(&crowd);
    assert_eq!(choices(&table), choices(&fair));
    // Nothing is excluded, and each disputed variant shows its counts.
    let matmul: Vec<_> = merged
        .picks
        .iter()
        .filter(|p| p.family == "matmul")
        .collect();
    assert!(!matmul.is_empty());
    for p in &matmul {
        assert!(p.excluded.is_empty(), "{:?}", p.excluded);
        for v in &p.disputed {
            assert_eq!((v.wrong, v.right), (3, 6), "{v:?}");
        }
    }
    assert!(matmul.iter().any(|p| !p.disputed.is_empty()));
    // A majority of the class's devices still excludes a variant.
    let target = slowest_matmul(&new_class(0, 1.0));
    let mut majority: Vec<Submission> = (0..2)
        .map(|i| sub(i as i64 + 1, &sender(i), new_class(i, 1.0)))
        .collect();
    for i in 0..3 {
        let mut r = new_class(40 + i, 1.0);
        for x in r.results.iter_mut().filter(|x| x.variant == target) {
            make_wrong(x);
        }
        majority.push(sub(200 + i as i64, &sender(40 + i), r));
    }
    let (_, merged) = reviewed(&majority);
    let excluded: Vec<_> = merged.picks.iter().flat_map(|p| &p.excluded).collect();
    assert!(
        excluded
            .iter()
            .any(|v| v.variant == target && v.wrong == 3 && v.right == 2),
        "{excluded:?}"
    );
}

/// A sender that reposts `honest`'s device profile as its own (every field, so its fingerprint),
/// marks every matmul variant but the slowest wrong and times the slowest 10× faster.
fn reposted(honest: &Report) -> Report {
    let mut r = new_class(70, 1.0);
    r.device = honest.device.clone();
    let slowest = slowest_matmul(&r);
    for x in r.results.iter_mut().filter(|x| x.family == "matmul") {
        if x.variant != slowest {
            make_wrong(x);
        } else if let Some(t) = &mut x.timing {
            t.median_ms /= 10.0;
            t.min_ms /= 10.0;
            t.max_ms /= 10.0;
        }
    }
    r
}

#[test]
fn reposted_profiles_vote_only_for_their_own_senders() {
    // Issue 61's second finding: four senders repost four of six honest devices' profiles (as
    // the export publishes them). Grouped by fingerprint, each copied device had one sender
    // that timed the fast variants and one that marked them wrong, and a tie counted as wrong:
    // wrong on 4, right on 2, and the review added the slowest variant, 37.8× slower.
    let honest = honest_devices(6, 0.02);
    let (fair, fair_merge) = reviewed(&honest);
    let copies = |n: usize| -> Vec<Submission> {
        (0..n)
            .map(|k| {
                sub(
                    100 + k as i64,
                    &sender(30 + k),
                    reposted(&honest[k % honest.len()].report),
                )
            })
            .collect()
    };
    let mut crowd = honest.clone();
    crowd.extend(copies(4));
    let (table, merged) = reviewed(&crowd);
    assert_eq!(choices(&table), choices(&fair));
    // The matmul picks and their medians are the honest crowd's (the copies' other results are
    // their senders' own votes, honest-looking: they count as any sender's would).
    let picked = |m: &CrowdMerge| -> Vec<(String, String, f64, usize)> {
        m.picks
            .iter()
            .filter(|p| p.family == "matmul")
            .map(|p| {
                (
                    p.bucket.clone(),
                    p.variant.clone(),
                    p.median_ms,
                    p.votes.len(),
                )
            })
            .collect()
    };
    assert_eq!(picked(&merged), picked(&fair_merge));
    // Each copy is a device of its own sender: the marks are disputed (4 wrong, all of them
    // copies, against 6 right), and the review names the profiles reported twice.
    let matmul: Vec<_> = merged
        .picks
        .iter()
        .filter(|p| p.family == "matmul")
        .collect();
    assert!(matmul.iter().all(|p| p.excluded.is_empty()));
    let disputed: Vec<_> = matmul.iter().flat_map(|p| &p.disputed).collect();
    assert!(!disputed.is_empty());
    for v in &disputed {
        assert_eq!((v.wrong, v.right, v.wrong_repeated), (4, 6, 4), "{v:?}");
    }
    assert_eq!(merged.repeated.len(), 4, "{:?}", merged.repeated);
    let mut named: Vec<_> = merged
        .repeated
        .iter()
        .map(|r| (r.first.0, r.others.clone()))
        .collect();
    named.sort();
    let want: Vec<_> = (0..4)
        .map(|k| {
            let copy = (100 + k as i64, sender(30 + k)[..8].to_string());
            (k as i64 + 1, vec![copy])
        })
        .collect();
    assert_eq!(named, want);
    let text = review::review(
        &builtin(),
        &merge::picks(&curated()),
        CURATED_SOURCE,
        merged,
        "crowd",
        Rules::default().quorum,
    )
    .text();
    assert!(
        text.contains("profiles reported by more than one sender: 4")
            && text.contains("(4 of them a profile another sender reported first)"),
        "{text}"
    );
    // The bound (fleet/SCHEMA.md): as many copies as honest senders still change nothing; one
    // sender more than the honest ones excludes what they timed, copied profile or not.
    let mut crowd = honest.clone();
    crowd.extend(copies(6));
    assert_eq!(choices(&reviewed(&crowd).0), choices(&fair));
    crowd.extend(copies(7).into_iter().skip(6));
    assert_ne!(choices(&reviewed(&crowd).0), choices(&fair));
}

#[test]
fn ceilings_come_from_the_class_not_the_claimant() {
    // Three senders claim ceilings of 9e5 GB/s and 9e8 GFLOP/s (under the bounds validation
    // sets) and a matmul variant at 3e-6 ms: possible on those ceilings, impossible on any
    // real device's (audit finding 2: checked against their own ceilings, it was picked).
    let target = slowest_matmul(&new_class(0, 1.0));
    let liar = |i: usize| {
        let mut r = new_class(50 + i, 1.0);
        r.ceilings.copy_gb_per_s = 9e5;
        r.ceilings.fma_gflop_per_s = 9e8;
        for x in r.results.iter_mut().filter(|x| x.variant == target) {
            let t = x.timing.as_mut().unwrap();
            (t.median_ms, t.min_ms, t.max_ms) = (3e-6, 3e-6, 3e-6);
        }
        sub(300 + i as i64, &sender(50 + i), r)
    };
    let liars: Vec<Submission> = (0..3).map(liar).collect();
    let picked_fast = |merged: &CrowdMerge| {
        merged
            .picks
            .iter()
            .any(|p| p.variant == target && p.median_ms < 1e-4)
    };
    // Alone in their class: the class's ceilings are clamped to what any device of the type
    // can do, their reports sit far off it and are set aside, and nothing of theirs is picked.
    let (table, merged) = reviewed(&liars);
    assert!(!picked_fast(&merged));
    assert!(
        !table
            .entries
            .iter()
            .any(|e| e.variant == target && e.class == liars[0].report.device.class())
    );
    let aside: Vec<_> = merged
        .set_aside
        .iter()
        .filter(|a| a.what == "the report" && a.why.contains("ceilings"))
        .collect();
    assert_eq!(aside.len(), 3, "{:?}", merged.set_aside.first());
    // Beside six honest devices: the honest picks, unchanged.
    let honest: Vec<Submission> = (0..6)
        .map(|i| sub(i as i64 + 1, &sender(i), new_class(i, 1.0)))
        .collect();
    let (fair, _) = reviewed(&honest);
    let mut all = honest;
    all.extend(liars);
    let (table, merged) = reviewed(&all);
    assert!(!picked_fast(&merged));
    assert_eq!(choices(&table), choices(&fair));
}

/// One class's merge through `checks`, from the digests of `reports` (each its own sender).
fn merge_through(checks: &mut crowd::Checks, reports: &[Report]) -> CrowdMerge {
    let subs: Vec<Submission> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| Submission {
            id: i as i64 + 1,
            sender: sender(i),
            report: r.clone(),
        })
        .collect();
    let heads: Vec<crowd::Head> = subs.iter().map(crowd::Head::of).collect();
    let mut tally = crowd::Tally::new(checks, Rules::default());
    let counted = tally.select(&heads);
    for s in subs.iter().filter(|s| counted.contains(&s.id)) {
        tally.add_digest(s.id, &crowd::Digest::of(&s.report));
    }
    tally.finish()
}

/// The per-result checks remembered across merges (the collector keeps them for its life) give
/// each merge what checks made afresh give, whatever was merged before: a profile offered fewer
/// variants (a smaller invocation limit, in the same class) does not inherit another's offered
/// set, nor gives it its own.
#[test]
fn remembered_checks_merge_as_fresh_ones() {
    let curated = curated();
    let models = CaseModels::from_curated(&curated);
    let full: Vec<Report> = (0..3).map(|n| new_class(n, 1.0)).collect();
    let limited: Vec<Report> = (3..6)
        .map(|n| {
            let mut r = new_class(n, 1.0);
            r.device.limits.max_compute_invocations_per_workgroup = 64;
            r
        })
        .collect();
    assert_eq!(full[0].device.class(), limited[0].device.class());
    let mut shared = crowd::Checks::new(&models, registry());
    let mut merged = Vec::new();
    for crowd in [&full, &limited, &full, &limited] {
        let fresh = merge_through(&mut crowd::Checks::new(&models, registry()), crowd);
        let remembered = merge_through(&mut shared, crowd);
        assert_eq!(remembered, fresh);
        merged.push(fresh);
    }
    // The limit mattered: the limited devices' larger workgroups are set aside as not offered.
    let not_offered = |m: &CrowdMerge| {
        m.set_aside
            .iter()
            .filter(|a| a.why.starts_with("not offered"))
            .count()
    };
    assert_eq!(not_offered(&merged[0]), 0);
    assert!(not_offered(&merged[1]) > 0, "{:?}", merged[1].set_aside);
    assert!(!merged[0].picks.is_empty());
}
