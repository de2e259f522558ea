//! The selector's picks for the sample calls (`kiln::explain`) on every stored profile, pinned
//! in `tests/snapshots/picks.txt`: the rules' branches for hardware GPUs, cooperative matrices and
//! browsers run here without those devices, and a change to a rule or the tuned table shows up as
//! a diff to review. `KILN_UPDATE_SNAPSHOTS=1` rewrites the file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kiln::Registry;
use kiln::device::stored_profiles;
use kiln::select::{Selector, TunedTable};

fn current() -> String {
    let registry = Registry::builtin().unwrap();
    let tuned = TunedTable::builtin().unwrap();
    let mut out = String::new();
    for (name, profile) in stored_profiles().unwrap() {
        out.push_str(&format!("## {name}\n"));
        for p in kiln::explain::sample_picks(&Selector::new(&registry, &profile, &tuned)) {
            out.push_str(&p.line());
            out.push('\n');
        }
    }
    out
}

#[test]
fn the_picks_for_sample_calls_on_every_stored_profile_are_as_pinned() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/picks.txt");
    let now = current();
    if std::env::var_os("KILN_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(path, &now).unwrap();
        return;
    }
    let pinned = std::fs::read_to_string(path).unwrap_or_default();
    let changed: Vec<String> = now
        .lines()
        .zip(pinned.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("  pinned: {b}\n  now:    {a}"))
        .collect();
    assert!(
        changed.is_empty() && now.lines().count() == pinned.lines().count(),
        "{} picks changed ({} lines now, {} pinned); review, then KILN_UPDATE_SNAPSHOTS=1:\n{}",
        changed.len(),
        now.lines().count(),
        pinned.lines().count(),
        changed.join("\n")
    );
    // Every stored profile gets a variant for the plain f32 calls.
    for section in now.split("## ").skip(1) {
        let name = section.lines().next().unwrap_or("");
        for line in section
            .lines()
            .filter(|l| l.starts_with("matmul ") && l.contains(" f32 "))
        {
            assert!(!line.contains("→ none"), "{name}: {line}");
        }
    }
}
