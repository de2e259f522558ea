//! The collector against forged identities (issue 61), each on SQLite and on PostgreSQL: a
//! client behind a real reverse proxy (nginx) that forges `Forwarded` is one sender; reposted
//! device profiles do not move a pick; exports from many addresses leave `/health` and POST
//! answered, and an export whose client has gone is dropped; look-alike names are refused or
//! normalised, a result's bucket must be its case's, a 413 costs a rate-limit token, and
//! pipelined requests are answered or the connection is closed cleanly after the first.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use kiln_fleet::Report;
use kiln_fleet::report::Outcome;
use serde_json::{Value, json};

// ---- 1. a forged `Forwarded` through a real proxy -------------------------------------------

/// nginx, or None (skipped) where it is not installed; with `CI=true` a missing nginx fails the
/// test (scripts/test.sh installs Debian's). Nothing is installed here.
fn nginx_or_skip() -> Option<PathBuf> {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|dir| dir.join("nginx"))
        .find(|p| p.is_file());
    match found {
        Some(p) => Some(p),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("this test needs nginx (Debian's `nginx`), which is not installed (CI=true)")
        }
        None => {
            kiln_testing::skip("needs nginx (Debian's `nginx`; scripts/test.sh installs it)");
            None
        }
    }
}

/// nginx in the foreground, one process, with a configuration of the test's own in a fresh
/// directory; killed and removed when dropped.
struct Nginx {
    child: Child,
    dir: PathBuf,
    /// Where each of its `server` blocks listens, in the order they were given.
    urls: Vec<String>,
}

impl Nginx {
    /// One `server` block per entry of `locations` (the `location /` directives), each on a
    /// free port of 127.0.0.1, passing to `upstream`.
    fn start(bin: &Path, upstream: &str, locations: &[&str]) -> Nginx {
        let dir = fresh_dir();
        let ports: Vec<u16> = locations
            .iter()
            .map(|_| {
                std::net::TcpListener::bind("127.0.0.1:0")
                    .unwrap()
                    .local_addr()
                    .unwrap()
                    .port()
            })
            .collect();
        let upstream = upstream.trim_start_matches("http://");
        let servers: String = locations
            .iter()
            .zip(&ports)
            .map(|(location, port)| {
                format!(
                    "  server {{\n    listen 127.0.0.1:{port};\n    location / {{\n      \
                     proxy_pass http://{upstream};\n      {location}\n    }}\n  }}\n"
                )
            })
            .collect();
        let d = dir.display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log warn;\nevents {{ worker_connections 64; }}\nhttp {{\n  \
             access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
             fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  \
             scgi_temp_path {d}/scgi;\n{servers}}}\n"
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let log = std::fs::File::create(dir.join("stderr.log")).unwrap();
        let child = Command::new(bin)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut nginx = Nginx {
            child,
            dir,
            urls: ports
                .iter()
                .map(|p| format!("http://127.0.0.1:{p}"))
                .collect(),
        };
        // Listening once every port takes a connection.
        let deadline = Instant::now() + Duration::from_secs(20);
        for port in &ports {
            while TcpStream::connect(("127.0.0.1", *port)).is_err() {
                if let Some(status) = nginx.child.try_wait().unwrap() {
                    panic!("nginx ended ({status}): {}", nginx.log());
                }
                assert!(
                    Instant::now() < deadline,
                    "nginx never listened: {}",
                    nginx.log()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        nginx
    }

    fn log(&self) -> String {
        ["stderr.log", "error.log"]
            .iter()
            .map(|f| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default())
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A GET through `url` from the local address `from`, with extra headers: the status and the
/// JSON body.
fn get_json_from(url: &str, from: [u8; 4], headers: &[(&str, &str)], path: &str) -> (u16, Value) {
    let mut stream = connect_from(url, from);
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn get_from_with(url: &str, from: [u8; 4], headers: &[(&str, &str)], path: &str) -> u16 {
    get_json_from(url, from, headers, path).0
}

fn a_forged_forwarded_header_through_nginx_is_one_sender(backend: &Backend) {
    // Issue 61, finding 1: behind the README's nginx (X-Forwarded-For set, the client's own
    // Forwarded passed on), one client posting `Forwarded: for=10.9.0.N` was N senders.
    let Some(bin) = nginx_or_skip() else {
        return;
    };
    let s = Server::start_with(
        backend,
        7,
        "quota_reports_per_address = 3\ntrusted_proxies = [\"127.0.0.1\"]\n",
    );
    let nginx = Nginx::start(
        &bin,
        &s.url,
        &[
            // The README's proxy: both headers written by the proxy.
            "proxy_set_header X-Forwarded-For $remote_addr;\n      \
             proxy_set_header Forwarded \"\";",
            // The README's proxy before issue 61: the client's own Forwarded passed on.
            "proxy_set_header X-Forwarded-For $remote_addr;",
            // A proxy that appends its hop to the client's own X-Forwarded-For.
            "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
        ],
    );
    let (readme, before, appending) = (&nginx.urls[0], &nginx.urls[1], &nginx.urls[2]);
    // One client, 127.0.0.2, a new forged address in every request.
    let client = [127, 0, 0, 2];
    let forged = |n: usize| format!("for=10.9.0.{n}");
    let post = |via: &str, n: usize, extra: &[(&str, &str)]| {
        let f = forged(n);
        let mut headers = vec![("Forwarded", f.as_str())];
        headers.extend_from_slice(extra);
        post_from_with(via, client, &headers, &report(n).to_string())
    };
    // Its quota of three reports is one quota, whatever the proxy and the header say.
    assert_eq!(post(before, 1, &[]), 201, "{}", nginx.log());
    assert_eq!(post(before, 2, &[]), 201);
    assert_eq!(post(readme, 3, &[]), 201);
    assert_eq!(
        post(appending, 4, &[("X-Forwarded-For", "10.8.0.4")]),
        507,
        "a forged X-Forwarded-For left of the proxy's own hop"
    );
    assert_eq!(
        post(before, 5, &[]),
        507,
        "a forged Forwarded through the proxy"
    );
    // So is its rate limit: seven requests a minute (five above, and this one).
    assert_eq!(
        get_from_with(before, client, &[("Forwarded", "for=10.9.0.6")], "/summary"),
        200
    );
    assert_eq!(
        get_from_with(readme, client, &[("Forwarded", "for=10.9.0.7")], "/summary"),
        200
    );
    assert_eq!(
        get_from_with(
            appending,
            client,
            &[("X-Forwarded-For", "10.8.0.8")],
            "/summary"
        ),
        429
    );
    // Another client through the same proxy is a sender of its own.
    assert_eq!(
        post_from_with(before, [127, 0, 0, 3], &[], &report(9).to_string()),
        201
    );
    let senders: BTreeSet<String> = s.audit().into_iter().map(|(_, _, _, who)| who).collect();
    assert_eq!(senders.len(), 2, "two clients, two senders");
    // The crowd counts one device per sender: the first client's three reports (one profile)
    // are one vote, the second client's the other, of the same profile.
    // (Read from addresses of its own each time: the rate limit is low.)
    let deadline = Instant::now() + Duration::from_secs(60);
    let summary = (0..)
        .map(|i: u32| {
            std::thread::sleep(Duration::from_millis(100));
            let from = [127, 0, 3 + (i / 250) as u8, 1 + (i % 250) as u8];
            get_json_from(&s.url, from, &[], "/summary").1
        })
        .find(|v| {
            assert!(
                Instant::now() < deadline,
                "the summary never counted 4: {v}"
            );
            v["reports"] == 4 && v["classes_pending"] == 0
        })
        .unwrap();
    assert_eq!(summary["counted"], 2, "{summary}");
    assert_eq!(summary["profiles_repeated"], 1, "{summary}");
}

// ---- 2. reposted device profiles ------------------------------------------------------------

/// The slowest matmul variant of the 1024³ f16 bucket in `r`.
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

/// Another sender's report with `honest`'s whole device profile: every matmul variant but the
/// slowest marked wrong, the slowest timed 10× faster (possible on the class's ceilings).
fn reposted(honest: &Report, n: usize) -> Report {
    let mut r = new_class(50 + n);
    r.device = honest.device.clone();
    let slowest = slowest_matmul(&r);
    for x in r.results.iter_mut().filter(|x| x.family == "matmul") {
        if x.variant != slowest {
            x.outcome = Outcome::Wrong;
            x.timing = None;
            x.error = Some("does not match".into());
        } else if let Some(t) = &mut x.timing {
            (t.median_ms, t.min_ms, t.max_ms) =
                (t.median_ms / 10.0, t.min_ms / 10.0, t.max_ms / 10.0);
        }
    }
    r
}

/// The summary's picks: (class, family, bucket, variant) and median.
fn picks(summary: &Value) -> Vec<(String, String, String, String, f64)> {
    let mut out: Vec<_> = summary["picks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let s = |k: &str| p[k].as_str().unwrap().to_string();
            (
                s("class"),
                s("family"),
                s("bucket"),
                s("variant"),
                p["median_ms"].as_f64().unwrap(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.partial_cmp(b).unwrap());
    out
}

/// The review of the collector's export (as `fleet merge --from` makes it): the table it would
/// write, and its text.
fn review_of(url: &str) -> (Vec<(String, String, String, String)>, String) {
    use kiln_fleet::{case_models::CaseModels, crowd, export, merge, review};
    let page = export::fetch(url).unwrap();
    let curated = vec![checked_in("lavapipe.json"), checked_in("nvidia-h200.json")];
    let merged = crowd::merge(
        &page.submissions,
        &CaseModels::from_curated(&curated),
        &kiln::Registry::builtin().unwrap(),
        &crowd::Rules::default(),
    );
    let r = review::review(
        &kiln::TunedTable::builtin().unwrap(),
        &merge::picks(&curated),
        "curated",
        merged,
        "crowd",
        crowd::DEFAULT_QUORUM,
    );
    let table = r
        .table
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
        .collect();
    (table, r.text())
}

fn reposted_profiles_do_not_move_a_pick(backend: &Backend) {
    // Issue 61, finding 2: four senders reposting honest devices' profiles (whole, from the
    // export) beat six honest devices: a copied device had one sender for and one against, a
    // tie counted as wrong, and the review added a variant 37.8× slower.
    let s = Server::start(backend, 1_000_000);
    let honest: Vec<Report> = (0..6).map(new_class).collect();
    for (i, r) in honest.iter().enumerate() {
        let body = serde_json::to_string(r).unwrap();
        assert_eq!(post_from(&s.url, [127, 0, 0, 2 + i as u8], &body), 201);
    }
    let fair = summary_of(&s.url, 6);
    let (fair_table, _) = review_of(&s.url);
    assert!(
        picks(&fair).iter().any(|p| p.1 == "matmul"),
        "the honest crowd decides matmul: {fair}"
    );
    for (k, copied) in honest.iter().take(4).enumerate() {
        let body = serde_json::to_string(&reposted(copied, k)).unwrap();
        assert_eq!(post_from(&s.url, [127, 0, 0, 20 + k as u8], &body), 201);
    }
    let attacked = summary_of(&s.url, 10);
    // The summary's picks are the honest crowd's (the copies marked every fast matmul variant
    // wrong: their votes add nothing to the picks' medians).
    assert_eq!(picks(&attacked), picks(&fair), "{attacked}");
    assert_eq!(attacked["profiles_repeated"], 4, "{attacked}");
    // So is the table the review would write; and it names the reposted profiles.
    let (table, text) = review_of(&s.url);
    assert_eq!(table, fair_table);
    assert!(
        text.contains("profiles reported by more than one sender: 4"),
        "{text}"
    );
    assert!(
        text.contains("a profile another sender reported first"),
        "{text}"
    );
}

// ---- 3. exports under load ------------------------------------------------------------------

/// A connection from `from` that reads nothing (and takes little before the server's writes
/// stall), asking for nothing yet.
fn quiet(url: &str, from: [u8; 4]) -> TcpStream {
    let addr: std::net::SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let stream = rt.block_on(async {
        let s = tokio::net::TcpSocket::new_v4().unwrap();
        s.set_recv_buffer_size(4096).unwrap();
        s.bind(std::net::SocketAddr::from((from, 0))).unwrap();
        s.connect(addr).await.unwrap()
    });
    let stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
}

/// [`quiet`], asking for `path`: it holds on, reading nothing.
fn holding(url: &str, from: [u8; 4], path: &str) -> TcpStream {
    let mut stream = quiet(url, from);
    write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    stream
}

/// `/health`'s export counts.
fn export_counts(url: &str) -> Value {
    let (status, v, _) = get(url, "/health");
    assert_eq!(status, 200, "{v}");
    v["exports"].clone()
}

fn exports_leave_health_and_posts_answered(backend: &Backend) {
    // Issue 61, finding 3: an export page cost 1.5–2.6 s of CPU (every report parsed again),
    // and from 20 addresses × 10 connections `/health` answered 5 of 7 probes and POST 0 of 3;
    // queued exports ran on after their clients had gone.
    let s = Server::start_with(
        backend,
        1_000_000,
        &format!(
            "{UNLIMITED}max_connections = 48\nmax_connections_per_address = 16\n\
             export_in_flight = 24\n"
        ),
    );
    // About 5.6 MB of reports: a page no client's socket takes whole without reading it.
    for i in 0..30 {
        let body = serde_json::to_string(&new_class(i)).unwrap();
        assert_eq!(post_from(&s.url, [127, 0, 0, 2], &body), 201);
    }
    // Twelve addresses, four connections each, ask for pages and read nothing: as many as the
    // collector holds connections (one export in flight per address, the others refused).
    let held: Vec<TcpStream> = (0..48)
        .map(|i| {
            let from = [127, 0, 1, 1 + (i % 12) as u8];
            holding(&s.url, from, &format!("/export?after={}", i / 12))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // /health and a POST are answered meanwhile (each within the agent's generous timeout).
    for _ in 0..3 {
        let (status, v, _) = get(&s.url, "/health");
        assert_eq!(status, 200, "{v}");
    }
    let body = serde_json::to_string(&new_class(99)).unwrap();
    assert_eq!(post_from(&s.url, [127, 0, 0, 3], &body), 201);
    let during = export_counts(&s.url);
    assert!(during["refused"].as_u64().unwrap() > 0, "{during}");
    drop(held);
    // Their slots are given back as their connections close.
    let deadline = Instant::now() + Duration::from_secs(60);
    while export_counts(&s.url)["in_flight"] != 0 {
        assert!(Instant::now() < deadline, "{}", export_counts(&s.url));
        std::thread::sleep(Duration::from_millis(50));
    }
    // 24 more addresses ask at once for pages none has asked for (about 60 MB to build, one
    // page at a time) and close 20 ms later: a page whose client has gone is not built (its
    // wait for the builder, or its build, ends with its connection).
    let before = export_counts(&s.url);
    let mut gone: Vec<TcpStream> = (0..24u8)
        .map(|i| quiet(&s.url, [127, 0, 2, 1 + i]))
        .collect();
    for (i, stream) in gone.iter_mut().enumerate() {
        write!(
            stream,
            "GET /export?after={} HTTP/1.1\r\nHost: x\r\n\r\n",
            4 + i
        )
        .unwrap();
    }
    std::thread::sleep(Duration::from_millis(20));
    drop(gone);
    // Settled once none is in flight and the counts stay as they are for a while.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = Value::Null;
    let after = loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = export_counts(&s.url);
        if now == last && now["in_flight"] == 0 {
            break now;
        }
        assert!(Instant::now() < deadline, "the exports never ended: {now}");
        last = now;
    };
    eprintln!("exports: before {before}, after {after}");
    let delta = |k: &str| after[k].as_u64().unwrap() - before[k].as_u64().unwrap();
    assert!(delta("dropped") >= 1, "before {before}, after {after}");
    assert!(delta("built") < 24, "before {before}, after {after}");
    // The server still answers, and a client that reads gets every report, page by page.
    assert_eq!(get(&s.url, "/health").0, 200);
    let entries = kiln_fleet::export::fetch_entries(&s.url).unwrap();
    assert_eq!(entries.len(), 31);
}

// ---- 4. names, buckets, 413s, pipelining ----------------------------------------------------

fn look_alike_names_are_refused_or_normalised(backend: &Backend) {
    // Issue 61, finding 4: names with invisible or private-use characters were stored, so a
    // sybil could carry an honest device's name.
    let s = Server::start(backend, 1_000_000);
    for (i, c) in [
        '\u{00AD}',
        '\u{034F}',
        '\u{115F}',
        '\u{3164}',
        '\u{FFFF}',
        '\u{E000}',
        '\u{F0000}',
        '\u{2800}',
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = report(i);
        r["device"]["name"] = json!(format!("NVI{c}DIA H200"));
        let (status, v) = post(&s.url, &r.to_string(), true);
        assert_eq!(status, 422, "U+{:04X}: {v}", u32::from(c));
        let why = v["error"].as_str().unwrap();
        assert!(why.contains(&format!("U+{:04X}", u32::from(c))), "{why}");
    }
    // Compatibility forms are the names they stand for: stored as NFKC.
    let mut r = report(10);
    r["device"]["name"] = json!("ＮＶＩＤＩＡ Ｈ２００");
    let variant = r["results"][0]["variant"].as_str().unwrap().to_string();
    let wide: String = variant
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                char::from_u32(u32::from(c) - 0x21 + 0xFF01).unwrap()
            } else {
                c
            }
        })
        .collect();
    r["results"][0]["variant"] = json!(wide);
    let (status, v) = post(&s.url, &r.to_string(), true);
    assert_eq!(status, 201, "{v}");
    let (_, export, _) = get(&s.url, "/export");
    let stored = &export["reports"][0]["report"];
    assert_eq!(stored["device"]["name"], "NVIDIA H200");
    assert_eq!(stored["results"][0]["variant"], json!(variant));
    assert_eq!(get(&s.url, "/health").1["reports"], 1);
}

fn a_result_with_another_cases_bucket_is_refused(backend: &Backend) {
    // Issue 61: a report whose result named another case's bucket was stored (the merge
    // ignored it).
    let s = Server::start(backend, 1_000_000);
    let r = report(1);
    let results = r["results"].as_array().unwrap();
    let (at, other) = results
        .iter()
        .enumerate()
        .find_map(|(i, x)| {
            let bucket = x["bucket"].as_str()?;
            let other = results.iter().find_map(|y| {
                let b = y["bucket"].as_str()?;
                (!b.is_empty() && b != bucket && y["case"] != x["case"]).then(|| b.to_string())
            })?;
            (!bucket.is_empty()).then_some((i, other))
        })
        .unwrap();
    let mut bad = r.clone();
    bad["results"][at]["bucket"] = json!(other);
    let (status, v) = post(&s.url, &bad.to_string(), true);
    assert_eq!(status, 422, "{v}");
    assert!(v["error"].as_str().unwrap().contains("bucket"), "{v}");
    // And a result filed under another family than its case's.
    let mut bad = report(2);
    bad["results"][at]["family"] = json!("softmax");
    let (status, v) = post(&s.url, &bad.to_string(), true);
    assert_eq!(status, 422, "{v}");
    // The report as the campaign wrote it is stored.
    assert_eq!(post(&s.url, &r.to_string(), true).0, 201);
    assert_eq!(get(&s.url, "/health").1["reports"], 1);
}

fn a_413_costs_a_rate_limit_token(backend: &Backend) {
    // Issue 61: a body refused for its declared size cost no token, so it could be sent
    // without end.
    let s = Server::start(backend, 5);
    for _ in 0..5 {
        let (status, v) = post_headers_only(&s.url, 2 << 20);
        assert_eq!(status, 413, "{v}");
    }
    let (status, v, retry) = get(&s.url, "/summary");
    assert_eq!(status, 429, "{v}");
    assert!(retry.is_some());
    assert_eq!(post_headers_only(&s.url, 2 << 20).0, 429);
    // Health checks are never counted.
    assert_eq!(get(&s.url, "/health").0, 200);
}

/// What the server sends on a connection until it closes it, or until `answers` answers came
/// (a connection kept open after them), or 30 s: the text, and whether it ended with a clean
/// close (the end of input, not a reset).
fn read_answers(stream: &mut TcpStream, answers: usize) -> (String, bool) {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).into_owned();
                if text.matches("HTTP/1.1 ").count() >= answers {
                    return (text, false);
                }
            }
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
        }
    }
}

fn pipelined_requests_are_answered_or_closed_after_the_first(backend: &Backend) {
    // Issue 61: of one POST and 20 pipelined GETs on a connection, 16 were answered before it
    // closed.
    let s = Server::start(backend, 1_000_000);
    for (i, half_close) in [false, true].into_iter().enumerate() {
        let body = report(i).to_string();
        let mut request = format!(
            "POST /reports HTTP/1.1\r\nHost: x\r\nX-Kiln-Consent: yes\r\nContent-Type: \
             application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        for _ in 0..20 {
            request.push_str("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
        }
        let mut stream = connect_from(&s.url, [127, 0, 0, 1]);
        stream.write_all(request.as_bytes()).unwrap();
        if half_close {
            stream.shutdown(std::net::Shutdown::Write).unwrap();
        }
        let (text, clean) = read_answers(&mut stream, 21);
        let answers = text.matches("HTTP/1.1 ").count();
        let first_only =
            answers == 1 && clean && text.to_ascii_lowercase().contains("connection: close");
        assert!(
            answers == 21 || first_only,
            "half-closed {half_close}: {answers} answers, clean close {clean}: {text}"
        );
        assert!(text.starts_with("HTTP/1.1 201"), "{text}");
    }
    assert_eq!(get(&s.url, "/health").1["reports"], 2);
}

on_both_backends!(
    a_forged_forwarded_header_through_nginx_is_one_sender,
    reposted_profiles_do_not_move_a_pick,
    exports_leave_health_and_posts_answered,
    look_alike_names_are_refused_or_normalised,
    a_result_with_another_cases_bucket_is_refused,
    a_413_costs_a_rate_limit_token,
    pipelined_requests_are_answered_or_closed_after_the_first,
);
