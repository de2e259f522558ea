//! Opening the database safely, with the real binary: a missing database is refused without
//! `--init` (a deleted one is not recreated empty, nor a crash's WAL discarded); `""` and
//! `:memory:` are refused; a foreign SQLite file is refused and left as it was; a damaged one is
//! refused; a port in use leaves no database behind; a restart after kill -9 needs no `--init`
//! and keeps every report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::*;

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
    let s = Server::start(10_000);
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
        let mut launch = Launch::fresh(10_000, "");
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
    let s = Server::start(10_000);
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
