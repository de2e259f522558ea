//! The value rules of a report that types cannot express (`fleet/SCHEMA.md`): bounded, printable
//! strings; the enumerations; a device profile that is consistent with itself; no negative or
//! non-finite time; a wrong variant never timed.

use std::collections::HashSet;

use kiln::DeviceProfile;

use crate::report::{Outcome, Report, Timing};
use crate::text::{self, Lines, clip};

/// Backends a report may name (`DeviceProfile::backend`).
pub const BACKENDS: &[&str] = &["vulkan", "metal", "dx12", "gl", "webgpu"];
/// Device types (`DeviceProfile::device_type`).
pub const DEVICE_TYPES: &[&str] = &["discrete", "integrated", "virtual", "cpu", "other"];
/// Operating systems (`platform.os`): Rust's names for the native targets wgpu runs on, and
/// `web` for the fleet page.
pub const OSES: &[&str] = &[
    "linux", "macos", "windows", "android", "ios", "freebsd", "web",
];
/// Element types of a cooperative-matrix configuration.
pub const COOP_SCALARS: &[&str] = &["f16", "f32", "i32", "u32"];

/// Most results (and most skipped entries) in one report: a full campaign on the largest
/// device has a few hundred.
pub const MAX_RESULTS: usize = 20_000;
/// Most cooperative-matrix configurations a profile lists (adapters offer a handful).
const MAX_COOP: usize = 64;

type Check = std::result::Result<(), String>;

/// Every rule; the error names the first field that breaks one.
pub fn report(r: &Report) -> Check {
    positive("budget_s", r.budget_s)?;
    non_negative("elapsed_s", r.elapsed_s)?;
    at_most("budget_s", r.budget_s, DAY_S)?;
    at_most("elapsed_s", r.elapsed_s, DAY_S)?;
    let c = &r.ceilings;
    positive("ceilings.copy_gb_per_s", c.copy_gb_per_s)?;
    positive("ceilings.fma_gflop_per_s", c.fma_gflop_per_s)?;
    positive("ceilings.dispatch_latency_us", c.dispatch_latency_us)?;
    non_negative("ceilings.compile_ms", c.compile_ms)?;
    at_most("ceilings.copy_gb_per_s", c.copy_gb_per_s, MAX_GB_PER_S)?;
    at_most(
        "ceilings.fma_gflop_per_s",
        c.fma_gflop_per_s,
        MAX_GFLOP_PER_S,
    )?;
    at_most(
        "ceilings.dispatch_latency_us",
        c.dispatch_latency_us,
        HOUR_MS * 1e3,
    )?;
    at_most("ceilings.compile_ms", c.compile_ms, HOUR_MS)?;
    clock("ceilings.clock", &c.clock)?;
    line("kiln_version", &r.kiln_version, 64)?;
    let p = &r.platform;
    one_of("platform.os", &p.os, OSES)?;
    token("platform.arch", &p.arch, 32)?;
    if let Some(b) = &p.browser {
        line("platform.browser", b, 512)?;
    }
    line("platform.driver", &p.driver, 512)?;
    // The page's campaign is the only one on WebGPU, and the only one with a user agent.
    let web = p.os == "web";
    if web != (r.device.backend == "webgpu") || web != p.browser.is_some() {
        return Err(format!(
            "platform.os `{}`, device.backend `{}` and platform.browser disagree: a report from \
             the web has all three, a native one none",
            p.os, r.device.backend
        ));
    }
    device(&r.device)?;
    if r.results.len() > MAX_RESULTS || r.skipped.len() > MAX_RESULTS {
        return Err(format!(
            "results, skipped: at most {MAX_RESULTS} entries each"
        ));
    }
    let mut seen = HashSet::new();
    for (i, x) in r.results.iter().enumerate() {
        let at = |field: &str| format!("results[{i}].{field}");
        identifier(&at("family"), &x.family, 64)?;
        identifier(&at("variant"), &x.variant, 128)?;
        line(&at("case"), &x.case, 256)?;
        identifier(&at("bucket"), &x.bucket, 128)?;
        x.bucket
            .parse::<kiln::select::Bucket>()
            .map_err(|e| format!("{}: {e}", at("bucket")))?;
        if x.family.is_empty() || x.variant.is_empty() || x.case.is_empty() {
            return Err(format!(
                "results[{i}]: family, variant and case must be named"
            ));
        }
        if !seen.insert((&x.family, &x.variant, &x.case)) {
            return Err(format!(
                "results[{i}]: {} {} on `{}` appears twice",
                x.family,
                x.variant,
                clip(&x.case, 80)
            ));
        }
        positive(&at("tolerance"), x.tolerance)?;
        // A relative error of 1 is no agreement at all: no tolerance is looser.
        at_most(&at("tolerance"), x.tolerance, 1.0)?;
        if let Some(e) = x.rel_l2 {
            non_negative(&at("rel_l2"), e)?;
        }
        if let Some(e) = &x.error {
            message(&at("error"), e, 4096)?;
        }
        if let Some(ms) = x.compile_ms {
            non_negative(&at("compile_ms"), ms)?;
            at_most(&at("compile_ms"), ms, HOUR_MS)?;
        }
        for (name, v, max) in [
            ("gflop_per_s", x.gflop_per_s, MAX_GFLOP_PER_S),
            ("gb_per_s", x.gb_per_s, MAX_GB_PER_S),
            ("efficiency", x.efficiency, MAX_EFFICIENCY),
        ] {
            if let Some(v) = v {
                non_negative(&at(name), v)?;
                at_most(&at(name), v, max)?;
            }
        }
        match (x.outcome, &x.timing) {
            (Outcome::Ok, None) => {
                return Err(format!("{}: an ok variant is timed", at("timing")));
            }
            (Outcome::Ok, Some(t)) => {
                let e = x
                    .rel_l2
                    .ok_or_else(|| format!("{}: an ok variant has its error", at("rel_l2")))?;
                if e > x.tolerance {
                    return Err(format!(
                        "{}: {e} is over the tolerance {} of an ok variant",
                        at("rel_l2"),
                        x.tolerance
                    ));
                }
                timing(&at("timing"), t)?;
            }
            (_, Some(_)) => {
                return Err(format!(
                    "{}: a {:?} variant is never timed",
                    at("timing"),
                    x.outcome
                ));
            }
            (Outcome::Failed, None) if x.error.is_none() => {
                return Err(format!("{}: a failed variant says why", at("error")));
            }
            _ => {}
        }
    }
    for (i, s) in r.skipped.iter().enumerate() {
        let at = |field: &str| format!("skipped[{i}].{field}");
        identifier(&at("family"), &s.family, 64)?;
        identifier(&at("variant"), &s.variant, 128)?;
        line(&at("case"), &s.case, 256)?;
        message(&at("why"), &s.why, 1024)?;
    }
    Ok(())
}

/// Every name of a report (every string but the messages `error` and `why`) in NFKC
/// (`text::nfkc`): the form it is checked, stored, fingerprinted and shown in. Messages are
/// kept as written: nothing compares them.
pub fn normalize_names(r: &mut Report) {
    let d = &mut r.device;
    let p = &mut r.platform;
    let mut names: Vec<&mut String> = vec![
        &mut r.kiln_version,
        &mut p.arch,
        &mut p.driver,
        &mut d.name,
        &mut d.driver,
        &mut d.driver_info,
    ];
    names.extend(p.browser.as_mut());
    for x in &mut r.results {
        names.extend([&mut x.family, &mut x.variant, &mut x.case, &mut x.bucket]);
    }
    for x in &mut r.skipped {
        names.extend([&mut x.family, &mut x.variant, &mut x.case]);
    }
    for name in names {
        // One with a character no name may hold is left as written, for the check to refuse
        // it naming that character (NFKC turns U+3164 into U+1160, invisible too).
        if name.chars().any(text::is_invisible) {
            continue;
        }
        if let Some(normal) = text::nfkc(name) {
            *name = normal;
        }
    }
}

/// The profile: its strings, enumerations, and the fields that decide its class agreeing with
/// each other (subgroup sizes exactly when subgroups are present, cooperative-matrix
/// configurations exactly when the feature is).
fn device(d: &DeviceProfile) -> Check {
    line("device.name", &d.name, 256)?;
    one_of("device.backend", &d.backend, BACKENDS)?;
    one_of("device.device_type", &d.device_type, DEVICE_TYPES)?;
    line("device.driver", &d.driver, 256)?;
    line("device.driver_info", &d.driver_info, 256)?;
    let (lo, hi) = (d.subgroup_min_size, d.subgroup_max_size);
    // With subgroups the sizes are known (powers of two up to 256, min ≤ max) or both 0 (an
    // adapter that does not say, as some browsers); without, both 0.
    let size = |s: u32| s.is_power_of_two() && s <= 256;
    let known = size(lo) && size(hi) && lo <= hi;
    let unknown = lo == 0 && hi == 0;
    if !(unknown || (d.features.subgroup && known)) {
        return Err(format!(
            "device.subgroup_min_size, subgroup_max_size: {lo} and {hi}: with the subgroup \
             feature, powers of two up to 256 with min ≤ max (or both 0); without it, both 0"
        ));
    }
    if !d.features.cooperative_matrix && !d.cooperative_matrix.is_empty() {
        return Err(
            "device.cooperative_matrix: configurations listed without the cooperative_matrix \
             feature"
                .into(),
        );
    }
    if d.cooperative_matrix.len() > MAX_COOP {
        return Err(format!(
            "device.cooperative_matrix: at most {MAX_COOP} configurations"
        ));
    }
    for (i, m) in d.cooperative_matrix.iter().enumerate() {
        let at = |field: &str| format!("device.cooperative_matrix[{i}].{field}");
        for (name, v) in [("m", m.m), ("n", m.n), ("k", m.k)] {
            if !(1..=256).contains(&v) {
                return Err(format!("{}: {v} is not between 1 and 256", at(name)));
            }
        }
        one_of(&at("ab"), &m.ab, COOP_SCALARS)?;
        one_of(&at("cr"), &m.cr, COOP_SCALARS)?;
    }
    if d.limits.max_compute_workgroup_storage_size == 0 {
        return Err("device.limits.max_compute_workgroup_storage_size: 0".into());
    }
    Ok(())
}

fn timing(at: &str, t: &Timing) -> Check {
    clock(&format!("{at}.clock"), &t.clock)?;
    for (name, v) in [
        ("median_ms", t.median_ms),
        ("min_ms", t.min_ms),
        ("max_ms", t.max_ms),
    ] {
        positive(&format!("{at}.{name}"), v)?;
        at_most(&format!("{at}.{name}"), v, HOUR_MS)?;
    }
    if !(t.min_ms <= t.median_ms && t.median_ms <= t.max_ms) {
        return Err(format!(
            "{at}: min {} ≤ median {} ≤ max {} does not hold",
            t.min_ms, t.median_ms, t.max_ms
        ));
    }
    if let Some(q) = t.quantum_ms {
        // A grid is a timestamp clock's, and finer than what it times.
        positive(&format!("{at}.quantum_ms"), q)?;
        if t.clock != "gpu_timestamps" || q > t.max_ms {
            return Err(format!(
                "{at}.quantum_ms: a grid of {q} ms belongs to gpu_timestamps readings no finer than it (clock {}, max {} ms)",
                t.clock, t.max_ms
            ));
        }
    }
    if t.repeats == 0 {
        return Err(format!("{at}.repeats: at least one timed run"));
    }
    if t.repeats > MAX_REPEATS {
        return Err(format!(
            "{at}.repeats: {} is over {MAX_REPEATS} timed runs",
            t.repeats
        ));
    }
    Ok(())
}

/// Bounds on the numbers a report gives: far past any device's or campaign's, so that a number
/// no campaign can produce (1e300 ms, 2³² − 1 repeats) is refused where it is read.
const DAY_S: f64 = 86_400.0;
const HOUR_MS: f64 = 3_600_000.0;
/// GB/s: about 200× the H200's measured copy rate.
const MAX_GB_PER_S: f64 = 1e6;
/// GFLOP/s: about 1,700× the H200's measured f16 matrix rate.
const MAX_GFLOP_PER_S: f64 = 1e9;
/// A variant's rate over its device's ceiling: matrix units reach about 11× the FMA chain's.
const MAX_EFFICIENCY: f64 = 1e4;
const MAX_REPEATS: u32 = 1_000_000;

fn at_most(name: &str, v: f64, max: f64) -> Check {
    if v <= max {
        Ok(())
    } else {
        Err(format!("{name}: {v:e} is over the bound of {max:e}"))
    }
}

fn positive(name: &str, v: f64) -> Check {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{name}: {v} is not a positive finite number"))
    }
}

fn non_negative(name: &str, v: f64) -> Check {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!("{name}: {v} is not a finite number ≥ 0"))
    }
}

fn clock(name: &str, c: &str) -> Check {
    one_of(name, c, &["gpu_timestamps", "wall_clock"]).map_err(|_| {
        format!(
            "{name}: `{}` is not a clock (gpu_timestamps, wall_clock)",
            clip(c, 40)
        )
    })
}

fn one_of(name: &str, v: &str, allowed: &[&str]) -> Check {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{name}: `{}` is not one of {}",
            clip(v, 40),
            allowed.join(", ")
        ))
    }
}

/// A name on one line.
fn line(name: &str, v: &str, max: usize) -> Check {
    text::check(v, max, Lines::One).map_err(|e| format!("{name}: {e}"))
}

/// A message: newlines and tabs allowed.
fn message(name: &str, v: &str, max: usize) -> Check {
    text::check(v, max, Lines::Many).map_err(|e| format!("{name}: {e}"))
}

/// A kernel family, variant or bucket: ASCII letters, digits, `_`, `-` and `.` (what the
/// registry and the ops write), possibly empty (a bucket the op does not use).
fn identifier(name: &str, v: &str, max: usize) -> Check {
    line(name, v, max)?;
    match v
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        None => Ok(()),
        Some(c) => Err(format!(
            "{name}: `{}` holds `{}`: names are ASCII letters, digits, _, - and .",
            clip(v, 40),
            c.escape_debug()
        )),
    }
}

/// A short ASCII word (an architecture).
fn token(name: &str, v: &str, max: usize) -> Check {
    identifier(name, v, max)?;
    if v.is_empty() {
        return Err(format!("{name}: empty"));
    }
    Ok(())
}
