//! `scripts/lib/tally.awk`, the test runner's closing count, on a log of each kind of line: a
//! Rust test that had nothing to run moves from passed to skipped, node's skips count, and a
//! failure is never lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

fn tally(log: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/lib/tally.awk");
    let mut awk = Command::new("awk")
        .args(["-f", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    awk.stdin.take().unwrap().write_all(log.as_bytes()).unwrap();
    let out = awk.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn skips_are_counted_apart_from_passes() {
    let log = "\
running 3 tests
kiln-skip: every_offered_mma_chain_variant_matches_the_cpu: llvmpipe offers no mma_chain variant
test every_offered_mma_chain_variant_matches_the_cpu ... ok
test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 1.00s
test result: FAILED. 4 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 2.00s
# pass 5
# fail 1
# skipped 2
";
    // 3 + 4 + 5 passed, less the one that skipped; 2 + 1 failed; 1 ignored, 1 marked, 2 in node.
    assert_eq!(tally(log), "11 3 4");
    assert_eq!(tally(""), "0 0 0");
}
