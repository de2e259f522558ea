//! fleet-load: the collector's load figure, a benchmark run by hand (not a test):
//!
//!     cargo bench -p kiln-fleet-server --bench fleet-load [-- --backend sqlite|postgres|both]
//!
//! For each backend it starts a collector on 127.0.0.1 on a new database (SQLite: a file in a
//! temporary directory; PostgreSQL: a server of its own, started as the tests start theirs) and
//! fills it with `--stored` distinct reports (10 000). Then, each phase bounded in time:
//! `--writers` clients post new reports (at most `--reports`, for at most `--seconds`) while one
//! client reads `/summary` twenty times a second: the sustained reports/s, the p50/p99 latency of
//! `POST /reports` and of `/summary` under writes; then `--readers` clients read `/summary` as
//! fast as they are answered for `--read-seconds`: its requests/s and p50/p99. Every request is a
//! new connection from one of 250 local addresses (127.0.0.2-251: senders, each with four
//! devices), as devices send their reports; the latency runs from the connection's start to the
//! answer's last byte. The server, the database and this driver (one thread) share the machine.
//!
//! With `--new-classes N` it measures instead what a report per new device class costs the
//! summary: N reports (the checked-in H200 report, a vendor id each), 100 from each of N/100
//! addresses (within the default quotas; only the rate limit is lifted); then the summary's
//! size, its last update's time, and how soon each of 20 more reports shows in it; then the
//! first summary after a restart, which merges every class again (from the reports' digests).
//!
//! `cargo test` builds this file and runs it without `--bench`, which measures nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::{Backend, Launch};

#[derive(Parser)]
#[command(name = "fleet-load", about = "The collector's load figure")]
struct Args {
    /// sqlite, postgres or both.
    #[arg(long, default_value = "both")]
    backend: String,
    /// Reports stored before the measurement.
    #[arg(long, default_value_t = 10_000)]
    stored: usize,
    /// Most new reports posted while measuring.
    #[arg(long, default_value_t = 2_000)]
    reports: usize,
    /// Longest the measurement runs, seconds.
    #[arg(long, default_value_t = 30.0)]
    seconds: f64,
    /// Clients posting reports at once.
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// Clients reading /summary at once, in the read phase.
    #[arg(long, default_value_t = 2)]
    readers: usize,
    /// How long the read phase runs, seconds.
    #[arg(long, default_value_t = 10.0)]
    read_seconds: f64,
    /// Reports each naming a new device class, instead of the load figure (0: the load figure).
    #[arg(long, default_value_t = 0)]
    new_classes: usize,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// How long filling the database may take at most.
const FILL_LIMIT: Duration = Duration::from_secs(900);

/// The settings that let one machine send every report: no rate limit or quota in the way.
const SETTINGS: &str = "quota_reports_per_address = 1000000000
quota_bytes_per_address = 1000000000000
quota_bytes_total = 1000000000000
max_connections_per_address = 256
";

/// Latencies of one kind of request, and how many were answered otherwise than expected.
#[derive(Default)]
struct Timings {
    ms: Vec<f64>,
    failed: usize,
    first_failure: Option<String>,
}

impl Timings {
    fn percentile(&self, p: f64) -> f64 {
        if self.ms.is_empty() {
            return f64::NAN;
        }
        let mut v = self.ms.clone();
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * p).round() as usize]
    }

    fn line(&self, what: &str, seconds: f64) -> String {
        format!(
            "{what}: {} in {seconds:.1} s = {:.0}/s; p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {} failed{}",
            self.ms.len(),
            self.ms.len() as f64 / seconds,
            self.percentile(0.5),
            self.percentile(0.99),
            self.ms.iter().copied().fold(0.0, f64::max),
            self.failed,
            self.first_failure
                .as_ref()
                .map(|f| format!(" (first: {f})"))
                .unwrap_or_default()
        )
    }
}

/// One request on a new connection from `from`: the status and body, and the time it took.
async fn request(
    addr: std::net::SocketAddr,
    from: [u8; 4],
    head: &str,
    body: &[u8],
) -> (u16, Vec<u8>, f64) {
    let started = Instant::now();
    let answer = async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(std::net::SocketAddr::from((from, 0)))?;
        let mut stream = socket.connect(addr).await?;
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        std::io::Result::Ok(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(120), answer).await;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let Ok(Ok(answer)) = answer else {
        return (0, b"no answer".to_vec(), ms);
    };
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(answer.len());
    let status = String::from_utf8_lossy(&answer[..split])
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, answer[(split + 4).min(answer.len())..].to_vec(), ms)
}

/// Report `i`: one of 1000 devices (four per sender address), distinct by its elapsed time.
fn report(template: &Value, i: usize) -> (Vec<u8>, [u8; 4]) {
    let device = i % 1000;
    let mut v = template.clone();
    v["device"]["name"] = json!(format!("bench device {device}"));
    v["elapsed_s"] = json!(10.0 + i as f64 / 1000.0);
    (
        v.to_string().into_bytes(),
        [127, 0, 0, 2 + (device % 250) as u8],
    )
}

/// What a phase measured: the posts and the reads, each with the seconds it ran.
struct Phase {
    posts: Timings,
    post_s: f64,
    reads: Timings,
    read_s: f64,
}

/// Posts reports `range` from `writers` clients and reads /summary from `readers` clients (each
/// waiting `pace` between requests, if given) until the reports are all sent or `limit` has
/// passed (without writers: until `limit` has passed).
async fn drive(
    addr: std::net::SocketAddr,
    range: std::ops::Range<usize>,
    writers: usize,
    readers: usize,
    pace: Option<Duration>,
    limit: Duration,
) -> Phase {
    let template = Arc::new(common::report(0));
    let next = Arc::new(AtomicUsize::new(range.start));
    let done = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let deadline = started + limit;
    let mut posting = Vec::new();
    for _ in 0..writers {
        let (template, next, end) = (template.clone(), next.clone(), range.end);
        posting.push(tokio::task::spawn_local(async move {
            let mut t = Timings::default();
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= end || Instant::now() >= deadline {
                    return t;
                }
                let (body, from) = report(&template, i);
                let head = format!(
                    "POST /reports HTTP/1.1\r\nHost: x\r\nX-Kiln-Consent: yes\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let (status, answer, ms) = request(addr, from, &head, &body).await;
                t.ms.push(ms);
                if status != 201 {
                    t.failed += 1;
                    t.first_failure.get_or_insert_with(|| {
                        format!("{status} {}", String::from_utf8_lossy(&answer))
                    });
                }
            }
        }));
    }
    let mut reading = Vec::new();
    for r in 0..readers {
        let done = done.clone();
        reading.push(tokio::task::spawn_local(async move {
            let mut t = Timings::default();
            let head = "GET /summary HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
            while !done.load(Ordering::SeqCst) && Instant::now() < deadline {
                let (status, answer, ms) = request(addr, [127, 0, 1, 2 + r as u8], head, b"").await;
                t.ms.push(ms);
                if status != 200 {
                    t.failed += 1;
                    t.first_failure.get_or_insert_with(|| {
                        format!("{status} {}", String::from_utf8_lossy(&answer))
                    });
                }
                if let Some(pace) = pace {
                    tokio::time::sleep(pace).await;
                }
            }
            t
        }));
    }
    let mut posts = Timings::default();
    for task in posting {
        let t = task.await.unwrap();
        posts.ms.extend(t.ms);
        posts.failed += t.failed;
        posts.first_failure = posts.first_failure.or(t.first_failure);
    }
    let post_s = started.elapsed().as_secs_f64();
    if writers == 0 {
        tokio::time::sleep_until(deadline.into()).await;
    }
    done.store(true, Ordering::SeqCst);
    let mut reads = Timings::default();
    for task in reading {
        let t = task.await.unwrap();
        reads.ms.extend(t.ms);
        reads.failed += t.failed;
        reads.first_failure = reads.first_failure.or(t.first_failure);
    }
    Phase {
        posts,
        post_s,
        reads,
        read_s: started.elapsed().as_secs_f64(),
    }
}

/// The machine's load average over the last minute (other work on it shares the cores).
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn measure(backend: &Backend, args: &Args) {
    println!("== {} (load average {})", backend.name(), load());
    let launch = Launch::fresh(backend, 1_000_000_000, SETTINGS);
    let server = launch.run().unwrap_or_else(|e| panic!("{e}"));
    let addr: std::net::SocketAddr = server.url.trim_start_matches("http://").parse().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let fill = local.block_on(
        &runtime,
        drive(addr, 0..args.stored, args.writers, 0, None, FILL_LIMIT),
    );
    println!(
        "{}",
        fill.posts.line(
            &format!("filling 0 -> {} reports, POST /reports", args.stored),
            fill.post_s
        )
    );
    let stored = common::get(&server.url, "/health").1["reports"]
        .as_u64()
        .unwrap_or(0);
    assert_eq!(
        stored as usize,
        args.stored - fill.posts.failed,
        "stored after the fill"
    );
    // The summary of every stored report, before the measurement starts.
    let waited = Instant::now();
    common::summary_of(&server.url, stored);
    println!(
        "the summary covered the {stored} reports {:.1} s after the last was stored",
        waited.elapsed().as_secs_f64()
    );
    let writes = local.block_on(
        &runtime,
        drive(
            addr,
            args.stored..args.stored + args.reports,
            args.writers,
            1,
            Some(Duration::from_millis(50)),
            Duration::from_secs_f64(args.seconds),
        ),
    );
    let after = common::get(&server.url, "/health").1["reports"]
        .as_u64()
        .unwrap_or(0);
    println!(
        "writes, from {stored} to {after} stored reports: {} clients posting, one reading /summary 20 times a second",
        args.writers
    );
    println!("  {}", writes.posts.line("POST /reports", writes.post_s));
    println!("  {}", writes.reads.line("GET /summary", writes.read_s));
    let waited = Instant::now();
    let summary = common::summary_of(&server.url, after);
    println!(
        "  the summary covered the {after} reports {:.1} s after the last was stored ({} bytes, {} devices)",
        waited.elapsed().as_secs_f64(),
        summary.to_string().len(),
        summary["devices"].as_array().map_or(0, Vec::len)
    );
    let reads = local.block_on(
        &runtime,
        drive(
            addr,
            0..0,
            0,
            args.readers,
            None,
            Duration::from_secs_f64(args.read_seconds),
        ),
    );
    println!(
        "reads, at {after} stored reports: {} clients reading /summary, nothing written",
        args.readers
    );
    println!("  {}", reads.reads.line("GET /summary", reads.read_s));
    println!("(load average {} at the end)", load());
}

/// Report `i` of the new-classes run: the H200 report with a vendor id of its own (a class of
/// its own), from one of `i / 100`'s addresses.
fn new_class(template: &Value, i: usize) -> (Vec<u8>, [u8; 4]) {
    let mut v = template.clone();
    v["device"]["vendor"] = json!(0x2_0000 + i);
    v["device"]["name"] = json!(format!("class {i}"));
    let sender = i / 100;
    (
        v.to_string().into_bytes(),
        [127, 1, (sender / 250) as u8, 2 + (sender % 250) as u8],
    )
}

fn post_head(body: &[u8]) -> String {
    format!(
        "POST /reports HTTP/1.1\r\nHost: x\r\nX-Kiln-Consent: yes\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
}

/// `/summary` as served: its JSON and size.
async fn summary_now(addr: std::net::SocketAddr) -> (Value, usize) {
    let head = "GET /summary HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (_, body, _) = request(addr, [127, 0, 1, 2], head, b"").await;
    (
        serde_json::from_slice(&body).unwrap_or(Value::Null),
        body.len(),
    )
}

/// Waits until the summary covers `reports`: how long until it counted them, and until every
/// class was merged too (`classes_pending` 0), and that summary and its size.
async fn covered(addr: std::net::SocketAddr, reports: usize) -> (f64, f64, Value, usize) {
    let started = Instant::now();
    let mut counted = None;
    loop {
        let (v, bytes) = summary_now(addr).await;
        if v["reports"] == reports {
            let at = *counted.get_or_insert(started.elapsed().as_secs_f64());
            if v["classes_pending"] == 0 {
                return (at, started.elapsed().as_secs_f64(), v, bytes);
            }
        }
        assert!(
            started.elapsed() < FILL_LIMIT,
            "the summary never covered {reports}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn measure_new_classes(backend: &Backend, args: &Args) {
    let n = args.new_classes;
    println!(
        "== {} (load average {}): {n} reports, a new class each",
        backend.name(),
        load()
    );
    let server = Launch::fresh(backend, 1_000_000_000, "")
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let addr: std::net::SocketAddr = server.url.trim_start_matches("http://").parse().unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../reports/nvidia-h200.json");
    let template: Arc<Value> =
        Arc::new(serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let next = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut posting = Vec::new();
        for _ in 0..args.writers {
            let (template, next) = (template.clone(), next.clone());
            posting.push(tokio::task::spawn_local(async move {
                let mut t = Timings::default();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= n {
                        return t;
                    }
                    let (body, from) = new_class(&template, i);
                    let (status, answer, ms) = request(addr, from, &post_head(&body), &body).await;
                    t.ms.push(ms);
                    if status != 201 {
                        t.failed += 1;
                        t.first_failure.get_or_insert_with(|| {
                            format!("{status} {}", String::from_utf8_lossy(&answer))
                        });
                    }
                }
            }));
        }
        let mut posts = Timings::default();
        for task in posting {
            let t = task.await.unwrap();
            posts.ms.extend(t.ms);
            posts.failed += t.failed;
            posts.first_failure = posts.first_failure.or(t.first_failure);
        }
        println!("{}", posts.line("POST /reports", started.elapsed().as_secs_f64()));
        let stored = n - posts.failed;
        let (counted, merged, summary, bytes) = covered(addr, stored).await;
        println!(
            "the summary counted the {stored} reports {counted:.2} s after the last was stored, and had merged every class {merged:.2} s after: {bytes} bytes; {} classes, {} devices listed of {}; reports parsed again {}, digests read {}",
            summary["classes"],
            summary["devices"].as_array().map_or(0, Vec::len),
            summary["devices_total"],
            summary["reports_parsed"],
            summary["digests_read"]
        );
        // One report at a time: how soon each shows, and the update that merged it.
        let (mut shown, mut merges, mut updates, mut sizes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for k in 0..20 {
            let (body, _) = new_class(&template, n + k);
            let (status, answer, _) =
                request(addr, [127, 2, 0, 2 + k as u8], &post_head(&body), &body).await;
            assert_eq!(status, 201, "{}", String::from_utf8_lossy(&answer));
            let (counted, merged, summary, bytes) = covered(addr, stored + k + 1).await;
            shown.push(counted * 1e3);
            merges.push(merged * 1e3);
            updates.push(summary["update_ms"].as_f64().unwrap_or(f64::NAN));
            sizes.push(bytes);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let p50 = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        println!(
            "20 more reports, one at a time: counted in the summary after p50 {:.0} ms (max {:.0}), merged after p50 {:.0} ms (max {:.0}); the update that merged each took p50 {:.0} ms (max {:.0}); the summary at most {} bytes",
            p50(&shown),
            max(&shown),
            p50(&merges),
            max(&merges),
            p50(&updates),
            max(&updates),
            sizes.iter().max().copied().unwrap_or(0)
        );
    });
    // After a restart the first summary merges every class again, from the stored digests.
    let server = server.kill_and_restart(1_000_000_000, "");
    let addr: std::net::SocketAddr = server.url.trim_start_matches("http://").parse().unwrap();
    let (counted, merged, summary, bytes) = local.block_on(&runtime, covered(addr, n + 20));
    println!(
        "after a restart: the summary counted the {} reports {counted:.1} s after the server listened, and had merged every class {merged:.1} s after ({bytes} bytes, its update {} ms; reports parsed again {}, digests read {})",
        n + 20,
        summary["update_ms"],
        summary["reports_parsed"],
        summary["digests_read"]
    );
    println!("(load average {} at the end)", load());
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "fleet-load: a benchmark, not a test; run it with \
             `cargo bench -p kiln-fleet-server --bench fleet-load`"
        );
        return;
    }
    let args = Args::parse();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "fleet-load: {} reports stored, then at most {} more or {} s; {cores} cores",
        args.stored, args.reports, args.seconds
    );
    let names: &[&str] = match args.backend.as_str() {
        "sqlite" => &["sqlite"],
        "postgres" => &["postgres"],
        "both" => &["sqlite", "postgres"],
        other => panic!("--backend {other}: give sqlite, postgres or both"),
    };
    for name in names {
        // PostgreSQL's server runs only while its backend is measured.
        let backend = match *name {
            "sqlite" => Backend::Sqlite,
            _ => Backend::Postgres(common::pg::Cluster::start().unwrap_or_else(|e| panic!("{e}"))),
        };
        if args.new_classes > 0 {
            measure_new_classes(&backend, &args);
        } else {
            measure(&backend, &args);
        }
    }
}
