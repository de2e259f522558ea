//! A PostgreSQL server of the test's own: `initdb` into a fresh directory, started by `pg_ctl` on
//! a free port of 127.0.0.1 (its socket in that directory, password logins over TCP), stopped
//! and removed when dropped. As root it runs as the unprivileged `postgres` user through
//! `runuser` (initdb refuses root). The binaries: `$KILN_PG_BIN`, else the newest
//! /usr/lib/postgresql/*/bin (Debian's `postgresql`), else `PATH`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A running server; each test's databases are made in it with [`Cluster::create_database`].
pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    pub port: u16,
    password: String,
    /// The user the server runs as, when that is not us (we are root).
    run_as: Option<String>,
    databases: AtomicUsize,
}

static CLUSTERS: AtomicUsize = AtomicUsize::new(0);

/// The directory of `initdb` and `pg_ctl`.
fn find_bin() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("KILN_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    debian.sort();
    if let Some((_, bin)) = debian.pop() {
        return Ok(bin);
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .find(|p| p.join("initdb").exists() && p.join("pg_ctl").exists())
        .ok_or_else(|| {
            "no initdb/pg_ctl: install PostgreSQL (Debian: apt-get install postgresql) or set \
             KILN_PG_BIN"
                .to_string()
        })
}

fn id_of(user: &str, flag: &str) -> Result<u32, String> {
    let out = Command::new("id")
        .args([flag, user])
        .output()
        .map_err(|e| format!("id {flag} {user}: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("no user `{user}` to run PostgreSQL as (initdb refuses root)"))
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

impl Cluster {
    /// A new server, or why there is none.
    pub fn start() -> Result<Arc<Cluster>, String> {
        let bin = find_bin()?;
        let dir = std::env::temp_dir().join(format!(
            "kiln-pg-{}-{}",
            std::process::id(),
            CLUSTERS.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let root = std::fs::metadata(&dir).map_err(|e| e.to_string())?.uid() == 0;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        // From here on a failure drops the cluster, which removes the directory.
        let mut cluster = Cluster {
            password: format!("kiln-test-{}-{nanos}", std::process::id()),
            dir,
            bin,
            port: 0,
            run_as: root.then(|| "postgres".to_string()),
            databases: AtomicUsize::new(0),
        };
        if let Some(user) = &cluster.run_as {
            let (uid, gid) = (id_of(user, "-u")?, id_of(user, "-g")?);
            std::os::unix::fs::chown(&cluster.dir, Some(uid), Some(gid))
                .map_err(|e| format!("chown {}: {e}", cluster.dir.display()))?;
        }
        std::fs::write(cluster.dir.join("pw"), &cluster.password).map_err(|e| e.to_string())?;
        let data = cluster.data();
        let pwfile = format!("--pwfile={}", cluster.dir.join("pw").display());
        cluster.tool(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "kiln",
                &pwfile,
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        )?;
        // A port found free may be taken before the server binds it: a few tries.
        let mut last = String::new();
        for _ in 0..3 {
            cluster.port = free_port()?;
            match cluster.start_server() {
                Ok(()) => return Ok(Arc::new(cluster)),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// Runs one of PostgreSQL's tools (as the server's user), its output into the directory's
    /// `<tool>.log`: what it said when it failed.
    fn tool(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let exe = self.bin.join(tool);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let log_path = self.dir.join(format!("{tool}.log"));
        let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        // Files, not pipes: nothing the server inherits may hold the test's output open. Run
        // from the server's directory, which its user can enter (the test's may be closed to it).
        let status = command
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .status()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        if status.success() {
            Ok(())
        } else {
            let said = std::fs::read_to_string(&log_path).unwrap_or_default();
            let server_log =
                std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            Err(format!(
                "{tool} {}: {status}: {said}{server_log}",
                args.join(" ")
            ))
        }
    }

    fn start_server(&self) -> Result<(), String> {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {}",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("server.log").display().to_string();
        self.tool(
            "pg_ctl",
            &[
                "start",
                "-D",
                &self.data(),
                "-l",
                &log,
                "-w",
                "-t",
                "60",
                "-o",
                &options,
            ],
        )
    }

    /// Stops the server (fast: sessions are ended), keeping its files.
    pub fn stop(&self) {
        self.tool("pg_ctl", &["stop", "-D", &self.data(), "-m", "fast", "-w"])
            .unwrap();
    }

    /// Stops the server as a crash would (`immediate`: every process quits at once, nothing is
    /// flushed; the next start recovers from the WAL).
    pub fn crash(&self) {
        self.tool(
            "pg_ctl",
            &["stop", "-D", &self.data(), "-m", "immediate", "-w"],
        )
        .unwrap();
    }

    /// Starts the stopped server again, on the same port.
    pub fn start_again(&self) {
        self.start_server().unwrap();
    }

    /// The URL of `database`, with the password.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://kiln:{}@127.0.0.1:{}/{database}",
            self.password, self.port
        )
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    pub fn client(&self, database: &str) -> postgres::Client {
        postgres::Client::connect(&self.url(database), postgres::NoTls).unwrap()
    }

    /// A new, empty database: its name.
    pub fn create_database(&self) -> String {
        let name = format!("fleet{}", self.databases.fetch_add(1, Ordering::SeqCst));
        self.client("postgres")
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        name
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.tool(
            "pg_ctl",
            &["stop", "-D", &self.data(), "-m", "immediate", "-w"],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server for a test that needs one: with `CI=true`, a test that cannot have one fails (it
/// never passes without running); elsewhere it is skipped, saying why.
pub fn cluster_or_skip() -> Option<Arc<Cluster>> {
    match Cluster::start() {
        Ok(c) => Some(c),
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("this test needs PostgreSQL, which could not be started (CI=true): {why}")
        }
        Err(why) => {
            kiln_testing::skip(&format!(
                "needs PostgreSQL, which could not be started: {why}"
            ));
            None
        }
    }
}
