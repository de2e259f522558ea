//! The collector started on 127.0.0.1 by the tests: a server with its own database (an SQLite
//! file in a fresh directory, or a fresh database in a PostgreSQL server of the test's own), and
//! requests as clients send them (from other local addresses too).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

pub mod pg;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Makes each `fn NAME(backend: &Backend)` a test on each backend: `NAME::sqlite` and
/// `NAME::postgres` (which fails with `CI=true`, and is skipped elsewhere, when no PostgreSQL
/// server can be started: `pg::cluster_or_skip`).
#[allow(unused_macros)]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() {
                super::$name(&crate::common::Backend::Sqlite);
            }

            #[test]
            fn postgres() {
                if let Some(backend) = crate::common::Backend::postgres() {
                    super::$name(&backend);
                }
            }
        }
    )*};
}

/// Where a test's servers keep their reports.
#[derive(Clone)]
pub enum Backend {
    /// A file in the server's directory.
    Sqlite,
    /// A database of its own in this server (the test's).
    Postgres(Arc<pg::Cluster>),
}

impl Backend {
    /// A PostgreSQL server of the test's own, or None (skipped) where none can be started.
    pub fn postgres() -> Option<Backend> {
        pg::cluster_or_skip().map(Backend::Postgres)
    }

    pub fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }
}

/// A PostgreSQL database of a server: its cluster and name.
#[derive(Clone)]
pub struct PgDatabase {
    pub cluster: Arc<pg::Cluster>,
    pub name: String,
}

impl PgDatabase {
    pub fn url(&self) -> String {
        self.cluster.url(&self.name)
    }

    pub fn client(&self) -> postgres::Client {
        self.cluster.client(&self.name)
    }
}

use serde_json::{Value, json};

/// Quotas no test that writes many reports from one address reaches.
pub const UNLIMITED: &str =
    "quota_reports_per_address = 1000000\nquota_bytes_per_address = 100000000000\n";

/// A running server with its own database, its files in a fresh directory.
pub struct Server {
    pub child: Child,
    pub url: String,
    pub dir: PathBuf,
    /// Its PostgreSQL database, if it has one (else its SQLite file is `fleet.sqlite`).
    pub pg: Option<PgDatabase>,
    /// `database = …` as configured.
    pub database: String,
}

/// Another connection's write lock on a server's database, held until released.
pub enum WriteLock {
    Sqlite(rusqlite::Connection),
    Postgres(postgres::Client),
}

impl WriteLock {
    pub fn release(self) {
        match self {
            WriteLock::Sqlite(c) => c.execute_batch("ROLLBACK").unwrap(),
            WriteLock::Postgres(mut c) => c.batch_execute("ROLLBACK").unwrap(),
        }
    }
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl Server {
    pub fn start(backend: &Backend, rate_per_minute: u32) -> Server {
        Server::start_with(backend, rate_per_minute, "")
    }

    /// A server on a new database (`--init`) whose configuration has `extra` lines.
    pub fn start_with(backend: &Backend, rate_per_minute: u32, extra: &str) -> Server {
        Launch::fresh(backend, rate_per_minute, extra)
            .run()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// SIGKILL, then a new process on the same database (without `--init`).
    pub fn kill_and_restart(mut self, rate_per_minute: u32, extra: &str) -> Server {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.restart(rate_per_minute, extra)
    }

    /// A new process on the same database, in the same directory, once this one has ended.
    pub fn restart(mut self, rate_per_minute: u32, extra: &str) -> Server {
        let mut launch = Launch::new(self.dir.clone(), rate_per_minute, extra);
        launch.database = Some(self.database.clone());
        launch.pg = self.pg.take();
        // The directory stays for the new process.
        self.dir = PathBuf::new();
        drop(self);
        launch.run().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Sends `signal` (`INT`, `TERM`) and waits for the process to end, at most a minute: its
    /// exit status, or None if it is still running then.
    pub fn signal_and_wait(&mut self, signal: &str) -> Option<std::process::ExitStatus> {
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(sent.success());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }

    /// The server's log (its standard error).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// The SQLite file.
    pub fn database(&self) -> PathBuf {
        self.dir.join("fleet.sqlite")
    }

    /// Runs SQL statements on the server's database from another connection.
    pub fn execute(&self, sql: &str) {
        match &self.pg {
            Some(db) => db.client().batch_execute(sql).unwrap(),
            None => rusqlite::Connection::open(self.database())
                .unwrap()
                .execute_batch(sql)
                .unwrap(),
        }
    }

    /// Takes the database's write lock from another connection (SQLite's exclusive lock, the
    /// lock PostgreSQL's writer takes on the reports).
    pub fn lock_writes(&self) -> WriteLock {
        match &self.pg {
            Some(db) => {
                let mut c = db.client();
                c.batch_execute("BEGIN; LOCK TABLE reports IN EXCLUSIVE MODE")
                    .unwrap();
                WriteLock::Postgres(c)
            }
            None => {
                let c = rusqlite::Connection::open(self.database()).unwrap();
                c.execute_batch("BEGIN EXCLUSIVE").unwrap();
                WriteLock::Sqlite(c)
            }
        }
    }

    /// The audit records: time, report id, bytes received, sender.
    pub fn audit(&self) -> Vec<(i64, i64, i64, String)> {
        let sql = "SELECT received_unix, report_id, bytes, sender FROM audit ORDER BY id";
        match &self.pg {
            Some(db) => db
                .client()
                .query(sql, &[])
                .unwrap()
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect(),
            None => rusqlite::Connection::open(self.database())
                .unwrap()
                .prepare(sql)
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap(),
        }
    }

    /// Everything the database holds, as text: SQLite's files as they are; every row of every
    /// table of PostgreSQL's database.
    pub fn stored_text(&self) -> String {
        match &self.pg {
            Some(db) => {
                let mut c = db.client();
                let tables: Vec<String> = c
                    .query(
                        "SELECT CAST(tablename AS TEXT) FROM pg_tables WHERE schemaname = 'public'",
                        &[],
                    )
                    .unwrap()
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                assert!(tables.contains(&"audit".to_string()), "{tables:?}");
                tables
                    .iter()
                    .flat_map(|t| {
                        c.query(&format!("SELECT CAST(t AS TEXT) FROM {t} t"), &[])
                            .unwrap()
                            .iter()
                            .map(|r| r.get::<_, String>(0))
                            .collect::<Vec<_>>()
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            None => ["fleet.sqlite", "fleet.sqlite-wal"]
                .iter()
                .map(|f| {
                    String::from_utf8_lossy(&std::fs::read(self.dir.join(f)).unwrap_or_default())
                        .into_owned()
                })
                .collect(),
        }
    }
}

/// A fresh directory for a server's files.
pub fn fresh_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "kiln-fleet-server-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// How a server is started: its directory (configuration, database, log), settings, and
/// command-line arguments.
pub struct Launch {
    pub dir: PathBuf,
    pub rate_per_minute: u32,
    pub extra: String,
    /// `database = …` as written in the configuration (default: `fleet.sqlite` in `dir`).
    pub database: Option<String>,
    pub args: Vec<String>,
    /// The process's limit on open files (`ulimit -n`).
    pub fd_limit: Option<u32>,
    /// `--init`: create the database.
    pub init: bool,
    /// The PostgreSQL database `database` names, if it names one.
    pub pg: Option<PgDatabase>,
}

impl Launch {
    pub fn new(dir: PathBuf, rate_per_minute: u32, extra: &str) -> Launch {
        Launch {
            dir,
            rate_per_minute,
            extra: extra.to_string(),
            database: None,
            args: Vec::new(),
            fd_limit: None,
            init: false,
            pg: None,
        }
    }

    /// A server in a fresh directory on a new database of the backend (an empty PostgreSQL
    /// database made in the test's server), creating its schema.
    pub fn fresh(backend: &Backend, rate_per_minute: u32, extra: &str) -> Launch {
        let mut launch = Launch::on(backend, fresh_dir(), rate_per_minute, extra);
        launch.init = true;
        launch
    }

    /// A server in `dir` on a new database of the backend (SQLite: `fleet.sqlite` in `dir`,
    /// not created yet), without `--init`.
    pub fn on(backend: &Backend, dir: PathBuf, rate_per_minute: u32, extra: &str) -> Launch {
        let mut launch = Launch::new(dir, rate_per_minute, extra);
        if let Backend::Postgres(cluster) = backend {
            let db = PgDatabase {
                name: cluster.create_database(),
                cluster: cluster.clone(),
            };
            launch.database = Some(db.url());
            launch.pg = Some(db);
        }
        launch
    }

    /// Starts the server: it, once it says where it listens, or what it printed when it did
    /// not start.
    pub fn run(self) -> Result<Server, String> {
        let config = self.dir.join("fleet-server.toml");
        let database = self
            .database
            .clone()
            .unwrap_or_else(|| self.dir.join("fleet.sqlite").display().to_string());
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:0\"\ndatabase = \"{database}\"\nallowed_origin = \"http://127.0.0.1:8080\"\nmax_body_bytes = 1048576\nrate_per_minute = {}\n{}",
                self.rate_per_minute, self.extra
            ),
        )
        .unwrap();
        let log = std::fs::File::create(self.dir.join("server.log")).unwrap();
        let bin = env!("CARGO_BIN_EXE_fleet-server");
        let mut command = match self.fd_limit {
            // The shell lowers the limit and becomes the server.
            Some(n) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let mut child = command
            .arg("--config")
            .arg(&config)
            .args(&self.args)
            .args(self.init.then_some("--init"))
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        match line.trim().strip_prefix("fleet-server listening on ") {
            Some(url) => Ok(Server {
                child,
                url: url.to_string(),
                dir: self.dir,
                pg: self.pg,
                database,
            }),
            None => {
                let status = child.wait().unwrap();
                let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
                Err(format!("the server did not start ({status}): {line}{log}"))
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

pub fn agent() -> ureq::Agent {
    // Bounded: a server that stopped answering fails the test instead of hanging it.
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(60)))
        .build()
        .into()
}

/// Status and JSON body of a request.
pub fn post(url: &str, body: &str, consent: bool) -> (u16, Value) {
    let mut req = agent().post(format!("{url}/reports"));
    if consent {
        req = req.header("X-Kiln-Consent", "yes");
    }
    match req.header("Content-Type", "application/json").send(body) {
        Ok(mut r) => {
            let status = r.status().as_u16();
            let text = r.body_mut().read_to_string().unwrap_or_default();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        }
        Err(e) => (0, json!({"transport": e.to_string()})),
    }
}

/// Status and JSON body of a POST of raw bytes (with consent).
pub fn post_bytes(url: &str, body: &[u8]) -> (u16, Value) {
    match agent()
        .post(format!("{url}/reports"))
        .header("X-Kiln-Consent", "yes")
        .header("Content-Type", "application/json")
        .send(body)
    {
        Ok(mut r) => {
            let status = r.status().as_u16();
            let text = r.body_mut().read_to_string().unwrap_or_default();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        }
        Err(e) => (0, json!({"transport": e.to_string()})),
    }
}

/// A POST that declares `length` bytes and sends none of them: the status and JSON body of the
/// answer, read over a plain socket.
pub fn post_headers_only(url: &str, length: usize) -> (u16, Value) {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST /reports HTTP/1.1\r\nHost: {addr}\r\nX-Kiln-Consent: yes\r\nContent-Type: application/json\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

pub fn get(url: &str, path: &str) -> (u16, Value, Option<String>) {
    let mut r = agent().get(format!("{url}{path}")).call().unwrap();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap(), retry)
}

/// The summary once it covers `reports` stored reports, every class merged (it is updated in
/// the background after writes; waited for at most a minute).
pub fn summary_of(url: &str, reports: u64) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, summary, _) = get(url, "/summary");
        assert_eq!(status, 200, "{summary}");
        if summary["reports"] == reports && summary["classes_pending"] == 0 {
            return summary;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the summary never reached {reports} reports: {summary}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A valid report (the checked-in lavapipe one, cut to 20 results), made distinct by `i`.
pub fn report(i: usize) -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../reports/lavapipe.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["results"].as_array_mut().unwrap().truncate(20);
    v["skipped"] = json!([]);
    v["elapsed_s"] = json!(10.0 + i as f64 / 1000.0);
    v
}

/// A TCP connection to `url` from the local address `from` (127.0.0.2, …: every 127/8 address
/// is this machine, and the collector tells senders apart by address).
pub fn connect_from(url: &str, from: [u8; 4]) -> std::net::TcpStream {
    let addr: std::net::SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let stream = rt.block_on(async {
        let s = tokio::net::TcpSocket::new_v4().unwrap();
        s.bind(std::net::SocketAddr::from((from, 0))).unwrap();
        s.connect(addr).await.unwrap()
    });
    let stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    stream
}

/// POSTs a report from the local address `from`: the status.
pub fn post_from(url: &str, from: [u8; 4], body: &str) -> u16 {
    post_from_with(url, from, &[], body)
}

/// [`post_from`], with extra request headers (a proxy's `X-Forwarded-For`, say).
pub fn post_from_with(url: &str, from: [u8; 4], headers: &[(&str, &str)], body: &str) -> u16 {
    use std::io::{Read, Write};
    let mut stream = connect_from(url, from);
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        stream,
        "POST /reports HTTP/1.1\r\nHost: x\r\nX-Kiln-Consent: yes\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

pub fn checked_in(name: &str) -> kiln_fleet::Report {
    let path = format!("{}/../reports/{name}", env!("CARGO_MANIFEST_DIR"));
    kiln_fleet::Report::parse(name, &std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A device of a class no curated report measured: the H200's results on another vendor id,
/// another driver build per `n`.
pub fn new_class(n: usize) -> kiln_fleet::Report {
    let mut r = checked_in("nvidia-h200.json");
    r.device.vendor = 0x1002;
    r.device.name = format!("Radeon {n}");
    r.device.driver_info = format!("580.{n}.0");
    r
}
