//! Opening the database safely, with the real binary. SQLite: a missing database is refused
//! without `--init` (a deleted one is not recreated empty, nor a crash's WAL discarded); `""`
//! and `:memory:` are refused; a foreign SQLite file is refused and left as it was; a damaged one
//! is refused; a port in use leaves no database behind; a restart after kill -9 needs no
//! `--init` and keeps every report. PostgreSQL (a server of the test's own): an empty database is
//! refused without `--init`, one that does not exist is refused and not created, another
//! application's is refused and left as it was, a port in use leaves the database untouched, an
//! unreachable server and a host elsewhere are refused with a clear error, the password appears
//! in no message or log; a server restart under a running collector costs only the writes made
//! while it was down, and a crash of the server none that was acknowledged. Both: a schema newer
//! than the server's is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::path::Path;

use common::*;

/// A schema newer than this server's is refused (and not touched).
fn a_newer_schema_is_refused(backend: &Backend) {
    let mut s = Server::start(backend, 10_000);
    assert_eq!(post(&s.url, &report(1).to_string(), true).0, 201);
    assert!(s.signal_and_wait("TERM").is_some());
    match &s.pg {
        Some(_) => s.execute("UPDATE kiln_fleet SET version = 99"),
        None => s.execute("PRAGMA user_version = 99"),
    }
    let mut launch = Launch::new(s.dir.clone(), 10_000, "");
    launch.database = Some(s.database.clone());
    let why = refused(launch);
    assert!(why.contains("schema version 99 is newer"), "{why}");
}

on_both_backends!(a_newer_schema_is_refused);

/// Starts a server in `dir` (its database `fleet.sqlite` there unless `database` says
/// otherwise) and expects it to refuse: what it said.
fn refused(launch: Launch) -> String {
    match launch.run() {
        Ok(s) => panic!("the server started on {}: {}", s.url, s.log()),
        Err(e) => e,
    }
}

fn tables(db: &Path) -> Vec<String> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

mod sqlite {
    use super::*;

    #[test]
    fn a_missing_database_is_refused_without_init() {
        let dir = fresh_dir();
        let why = refused(Launch::new(dir.clone(), 10_000, ""));
        assert!(why.contains("--init"), "{why}");
        assert!(!dir.join("fleet.sqlite").exists(), "a database was created");
        // With --init it is created, and then opens without.
        let mut launch = Launch::new(dir.clone(), 10_000, "");
        launch.init = true;
        let s = launch.run().unwrap();
        assert_eq!(post(&s.url, &report(1).to_string(), true).0, 201);
        let s = s.kill_and_restart(10_000, "");
        assert_eq!(get(&s.url, "/health").1["reports"], 1);
    }

    #[test]
    fn a_deleted_database_is_not_recreated_nor_a_crashs_wal_discarded() {
        let s = Server::start(&Backend::Sqlite, 10_000);
        assert_eq!(post(&s.url, &report(1).to_string(), true).0, 201);
        let dir = s.dir.clone();
        let mut s = s;
        s.child.kill().unwrap();
        s.child.wait().unwrap();
        // The committed report is in the WAL, which the crash left.
        assert!(dir.join("fleet.sqlite-wal").exists());
        std::fs::remove_file(dir.join("fleet.sqlite")).unwrap();
        let why = refused(Launch::new(dir.clone(), 10_000, ""));
        assert!(why.contains("does not exist"), "{why}");
        let mut launch = Launch::new(dir.clone(), 10_000, "");
        launch.init = true;
        let why = refused(launch);
        assert!(why.contains("-wal file is there"), "{why}");
        assert!(!dir.join("fleet.sqlite").exists());
        drop(s);
    }

    #[test]
    fn names_that_keep_nothing_are_refused() {
        for name in ["", ":memory:", "file::memory:"] {
            let mut launch = Launch::fresh(&Backend::Sqlite, 10_000, "");
            launch.database = Some(name.to_string());
            let dir = launch.dir.clone();
            let why = refused(launch);
            assert!(why.contains("keeps nothing"), "`{name}`: {why}");
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn a_foreign_sqlite_file_is_refused_and_left_as_it_was() {
        let dir = fresh_dir();
        let db = dir.join("fleet.sqlite");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);
         INSERT INTO customers (name) VALUES ('someone');",
        )
        .unwrap();
        drop(conn);
        let before = std::fs::read(&db).unwrap();
        for init in [false, true] {
            let mut launch = Launch::new(dir.clone(), 10_000, "");
            launch.init = init;
            let why = refused(launch);
            assert!(why.contains("not a Kiln fleet database"), "{why}");
        }
        assert_eq!(tables(&db), ["customers"]);
        assert_eq!(std::fs::read(&db).unwrap(), before, "the file was changed");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_damaged_database_is_refused() {
        let s = Server::start(&Backend::Sqlite, 10_000);
        for i in 0..20 {
            assert_eq!(post(&s.url, &report(i).to_string(), true).0, 201);
        }
        let dir = s.dir.clone();
        let mut s = s;
        assert!(s.signal_and_wait("TERM").is_some());
        let db = dir.join("fleet.sqlite");
        // Everything into the main file, then one of its pages overwritten.
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        let page: u64 = conn
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap();
        drop(conn);
        let mut bytes = std::fs::read(&db).unwrap();
        let start = (page * 2) as usize;
        assert!(bytes.len() > start + page as usize);
        for b in &mut bytes[start..start + page as usize] {
            *b = 0xa5;
        }
        std::fs::write(&db, &bytes).unwrap();
        let why = refused(Launch::new(dir.clone(), 10_000, ""));
        assert!(why.contains("fails its integrity check"), "{why}");
        drop(s);
    }

    #[test]
    fn a_port_in_use_leaves_no_database_behind() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        for init in [false, true] {
            let dir = fresh_dir();
            let mut launch = Launch::new(dir.clone(), 10_000, "");
            launch.init = init;
            launch.args = vec!["--listen".into(), addr.clone()];
            let why = refused(launch);
            assert!(why.contains("listen"), "{why}");
            for file in ["fleet.sqlite", "fleet.sqlite-wal", "fleet.sqlite-journal"] {
                assert!(
                    !dir.join(file).exists(),
                    "--init {init}: {file} was created"
                );
            }
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}

mod postgres {
    use super::*;

    /// The names of the tables in `db`'s public schema.
    fn tables(db: &PgDatabase) -> Vec<String> {
        db.client()
            .query(
                "SELECT CAST(tablename AS TEXT) FROM pg_tables WHERE schemaname = 'public' \
                 ORDER BY 1",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    /// A launch on a new, empty database of `cluster`, in a fresh directory.
    fn on_new_database(backend: &Backend) -> Launch {
        Launch::on(backend, fresh_dir(), 10_000, "")
    }

    #[test]
    fn an_empty_database_is_refused_without_init_and_kept_after_kill_9() {
        let Some(backend) = Backend::postgres() else {
            return;
        };
        let Backend::Postgres(cluster) = &backend else {
            unreachable!()
        };
        let launch = on_new_database(&backend);
        let (dir, db) = (launch.dir.clone(), launch.pg.clone().unwrap());
        let why = refused(launch);
        assert!(why.contains("is empty: start with --init"), "{why}");
        assert!(!why.contains(cluster.password()), "the password in {why}");
        assert!(tables(&db).is_empty(), "{:?}", tables(&db));
        // With --init the schema is made; a restart after kill -9 needs none, and keeps every
        // report.
        let mut launch = Launch::new(dir, 10_000, "");
        launch.database = Some(db.url());
        launch.pg = Some(db.clone());
        launch.init = true;
        let s = launch.run().unwrap();
        assert_eq!(tables(&db), ["audit", "kiln_fleet", "meta", "reports"]);
        for i in 0..3 {
            assert_eq!(post(&s.url, &report(i).to_string(), true).0, 201);
        }
        let s = s.kill_and_restart(10_000, "");
        assert_eq!(get(&s.url, "/health").1["reports"], 3);
        assert_eq!(post(&s.url, &report(0).to_string(), true).0, 200);
        assert!(
            s.log().contains("postgres://kiln@127.0.0.1"),
            "the log names the database: {}",
            s.log()
        );
        assert!(!s.log().contains(cluster.password()), "{}", s.log());
    }

    #[test]
    fn a_database_that_does_not_exist_is_refused_and_not_created() {
        let Some(Backend::Postgres(cluster)) = Backend::postgres() else {
            return;
        };
        for init in [false, true] {
            let dir = fresh_dir();
            let mut launch = Launch::new(dir.clone(), 10_000, "");
            launch.database = Some(cluster.url("nosuch"));
            launch.init = init;
            let why = refused(launch);
            assert!(why.contains("does not exist on the server"), "{why}");
            std::fs::remove_dir_all(dir).unwrap();
        }
        let databases: Vec<String> = cluster
            .client("postgres")
            .query("SELECT CAST(datname AS TEXT) FROM pg_database", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(!databases.contains(&"nosuch".to_string()), "{databases:?}");
    }

    #[test]
    fn another_applications_database_is_refused_and_left_as_it_was() {
        let Some(backend) = Backend::postgres() else {
            return;
        };
        let launch = on_new_database(&backend);
        let (dir, db) = (launch.dir.clone(), launch.pg.clone().unwrap());
        drop(launch);
        db.client()
            .batch_execute(
                "CREATE TABLE customers (id SERIAL PRIMARY KEY, name TEXT);
                 INSERT INTO customers (name) VALUES ('someone');",
            )
            .unwrap();
        for init in [false, true] {
            let mut launch = Launch::new(dir.clone(), 10_000, "");
            launch.database = Some(db.url());
            launch.init = init;
            let why = refused(launch);
            assert!(why.contains("not a Kiln fleet database"), "{why}");
            assert!(why.contains("customers"), "{why}");
        }
        assert_eq!(tables(&db), ["customers"]);
        let names: Vec<String> = db
            .client()
            .query("SELECT name FROM customers", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(names, ["someone"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_port_in_use_leaves_the_database_untouched() {
        let Some(backend) = Backend::postgres() else {
            return;
        };
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut launch = on_new_database(&backend);
        let (dir, db) = (launch.dir.clone(), launch.pg.clone().unwrap());
        launch.init = true;
        launch.args = vec!["--listen".into(), taken.local_addr().unwrap().to_string()];
        let why = refused(launch);
        assert!(why.contains("listen"), "{why}");
        assert!(tables(&db).is_empty(), "{:?}", tables(&db));
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Needs no PostgreSQL server: nothing listens where the URL points, or the URL names
    /// another machine (refused before any connection is tried: no TLS to cross a network).
    #[test]
    fn an_unreachable_server_and_a_host_elsewhere_are_refused_with_a_clear_error() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let cases = [
            (
                format!("postgres://kiln:hunter2@127.0.0.1:{port}/fleet"),
                "PostgreSQL cannot be reached",
            ),
            (
                "postgres://kiln:hunter2@db.example.invalid/fleet".to_string(),
                "is not on this machine",
            ),
            (
                "postgresql://kiln:hunter2@127.0.0.1:5432,db.example.invalid:5432/fleet"
                    .to_string(),
                "is not on this machine",
            ),
            (
                "postgres://kiln:hunter2@/fleet".to_string(),
                "names no host",
            ),
            (
                "postgres://kiln:hunter2@127.0.0.1:port/fleet".to_string(),
                "not a PostgreSQL URL",
            ),
        ];
        for (url, want) in cases {
            for init in [false, true] {
                let dir = fresh_dir();
                let mut launch = Launch::new(dir.clone(), 10_000, "");
                launch.database = Some(url.clone());
                launch.init = init;
                let why = refused(launch);
                assert!(why.contains(want), "{url}: {why}");
                assert!(!why.contains("hunter2"), "the password in {why}");
                assert!(!why.contains("panicked"), "{why}");
                std::fs::remove_dir_all(dir).unwrap();
            }
        }
    }

    /// PostgreSQL stops under a running collector: `/health` says the database cannot be
    /// written and a report is answered 503 (not acknowledged); started again, the collector
    /// connects again and stores, and nothing acknowledged before is lost.
    #[test]
    fn the_collector_rides_out_a_server_restart() {
        let Some(backend) = Backend::postgres() else {
            return;
        };
        let Backend::Postgres(cluster) = &backend else {
            unreachable!()
        };
        let s = Server::start_with(
            &backend,
            10_000,
            "health_probe_s = 0.2
",
        );
        assert_eq!(post(&s.url, &report(1).to_string(), true).0, 201);
        cluster.stop();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let (status, v, _) = get(&s.url, "/health");
            if status == 503 {
                assert_eq!(v["writable"], false, "{v}");
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{v}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let (status, v) = post(&s.url, &report(2).to_string(), true);
        assert_eq!(status, 503, "{v}");
        cluster.start_again();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while get(&s.url, "/health").0 != 200 {
            assert!(std::time::Instant::now() < deadline, "never writable again");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(post(&s.url, &report(2).to_string(), true).0, 201);
        assert_eq!(post(&s.url, &report(1).to_string(), true).0, 200);
        assert_eq!(get(&s.url, "/health").1["reports"], 2);
        summary_of(&s.url, 2);
    }

    /// PostgreSQL stops as in a crash while reports are written: after it recovers, every
    /// report the collector acknowledged is there (a commit is acknowledged only once it is in
    /// the WAL on disk).
    #[test]
    fn a_server_crash_during_writes_loses_no_acknowledged_report() {
        let Some(backend) = Backend::postgres() else {
            return;
        };
        let Backend::Postgres(cluster) = &backend else {
            unreachable!()
        };
        let s = Server::start_with(&backend, 1_000_000, UNLIMITED);
        let url = s.url.clone();
        let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let writer = {
            let acked = acked.clone();
            std::thread::spawn(move || {
                for i in 0..100_000 {
                    let body = report(7000 + i).to_string();
                    if post(&url, &body, true).0 != 201 {
                        break; // the database is gone
                    }
                    acked.lock().unwrap().push(body);
                }
            })
        };
        while acked.lock().unwrap().len() < 40 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        cluster.crash();
        writer.join().unwrap();
        cluster.start_again();
        let acked = acked.lock().unwrap();
        // Every acknowledged report is there: sending it again is a duplicate.
        for body in acked.iter() {
            let (status, v) = post(&s.url, body, true);
            assert_eq!(status, 200, "{v}");
        }
        // And the collector stores new ones again.
        assert_eq!(post(&s.url, &report(6999).to_string(), true).0, 201);
    }
}
