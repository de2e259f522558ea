//! The selector's picks for the sample calls (`kiln::explain`) on every stored profile, pinned
//! in `tests/snapshots/picks.txt`: the rules' branches for hardware GPUs, cooperative matrices and
//! browsers run here without those devices, and a change to a rule or the tuned table shows up as
//! a diff to review. `KILN_UPDATE_SNAPSHOTS=1` rewrites the file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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
    let now = current();
    common::check_snapshot("picks.txt", &now);
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
