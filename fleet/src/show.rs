//! Reports and merges as text.

use std::fmt::Write;

use crate::merge::Pick;
use crate::report::{Outcome, Report};
use crate::text::one_line;

/// One report: the device, its ceilings, and per family the fastest correct variants and every
/// wrong or failed one.
pub fn report(r: &Report) -> String {
    let mut s = String::new();
    let c = &r.ceilings;
    let _ = writeln!(
        s,
        "{} ({}, {}), kiln {}, {} results in {:.1} s of a {:.0} s budget, {} skipped",
        one_line(&r.device.name),
        r.device.backend,
        r.device.class(),
        one_line(&r.kiln_version),
        r.results.len(),
        r.elapsed_s,
        r.budget_s,
        r.skipped.len()
    );
    let _ = writeln!(
        s,
        "  ceilings: copy {:.1} GB/s, FMA {:.1} GFLOP/s ({}), dispatch {:.0} µs, compile {:.1} ms",
        c.copy_gb_per_s, c.fma_gflop_per_s, c.clock, c.dispatch_latency_us, c.compile_ms
    );
    // Each case once, in the order the campaign first ran it (its rounds interleave cases).
    let mut cases: Vec<&str> = Vec::new();
    for x in &r.results {
        if !cases.contains(&x.case.as_str()) {
            cases.push(&x.case);
        }
    }
    for case in cases {
        let mut ok: Vec<_> = r
            .results
            .iter()
            .filter(|x| x.case == case && x.outcome == Outcome::Ok)
            .collect();
        ok.sort_by(|a, b| {
            let t = |x: &&crate::report::VariantResult| {
                x.timing.as_ref().map_or(f64::MAX, |t| t.median_ms)
            };
            t(a).total_cmp(&t(b))
        });
        let _ = writeln!(s, "  {}:", one_line(case));
        for x in ok.iter().take(3) {
            if let Some(t) = &x.timing {
                let _ = writeln!(
                    s,
                    "    {:<40} {:>10.4} ms  {:>5.1} % of the ceiling",
                    x.variant,
                    t.median_ms,
                    100.0 * x.efficiency.unwrap_or(0.0)
                );
            }
        }
        for x in r
            .results
            .iter()
            .filter(|x| x.case == case && x.outcome != Outcome::Ok)
        {
            let _ = writeln!(
                s,
                "    {:<40} {:?}: {}",
                x.variant,
                x.outcome,
                one_line(x.error.as_deref().unwrap_or(""))
            );
        }
    }
    s
}

/// The merged choices.
pub fn picks(picks: &[Pick]) -> String {
    let mut s = String::new();
    for p in picks {
        let _ = writeln!(
            s,
            "{:<24} {:<18} {:<22} {:<40} {:>10.4} ms on {} device(s){}",
            p.class,
            p.family,
            p.bucket,
            p.variant,
            p.worst_ms,
            p.devices,
            if p.excluded.is_empty() {
                String::new()
            } else {
                format!("; excluded as wrong: {}", p.excluded.join(", "))
            }
        );
    }
    s
}
