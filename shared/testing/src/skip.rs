//! Skips that the test runner counts: a test that has nothing to run on this machine (a kernel
//! family the adapter offers no variant of, a server that cannot be started outside CI) says so
//! in one line that `scripts/test.sh`'s tally counts as skipped, not passed.

/// What a skipped test prints first on its line; `scripts/lib/tally.awk` counts these.
pub const MARK: &str = "kiln-skip: ";

/// Reports the running test (libtest names its thread after it) as skipped for `why`; the
/// caller then returns without asserting anything.
pub fn skip(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    println!("{MARK}{test}: {why}");
}
