# Tallies a test log into "passed failed skipped": cargo's per-binary "test result: ok. N
# passed; M failed; K ignored; …" lines, node's "# pass N", "# fail N" and "# skipped N" lines,
# and the "kiln-skip: " lines of Rust tests that had nothing to run here (libtest counts those
# as passed; they move to skipped). Used by scripts/test.sh; shared/testing/tests/tally.rs
# checks it.
/^test result:/ {
  for (i = 1; i <= NF; i++) {
    if ($(i+1) ~ /^passed/) p += $i
    if ($(i+1) ~ /^failed/) f += $i
    if ($(i+1) ~ /^ignored/) s += $i
  }
}
/^# pass [0-9]+$/ { p += $3 }
/^# fail [0-9]+$/ { f += $3 }
/^# skipped [0-9]+$/ { s += $3 }
index($0, "kiln-skip: ") { s += 1; p -= 1 }
END { print p + 0, f + 0, s + 0 }
