//! Reliability of the run store: round trips, filters, concurrent writers in two processes,
//! migration of an old schema, corrupted and truncated files, a crash in the middle of a
//! record.
//!
//! The multi-process tests re-run this test binary as a child (`--exact <helper> --ignored`)
//! with `HPCSCOPE_HISTORY_TEST_CHILD` set: the helper tests do the child's work and do nothing
//! in a normal run.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use hpcscope_history::error::HistoryError;
use hpcscope_history::record::{Fingerprint, GitInfo, Metric, RunRecord};
use hpcscope_history::sha256::sha256_file;
use hpcscope_history::store::{Filter, SCHEMA_VERSION, Store};

const CHILD: &str = "HPCSCOPE_HISTORY_TEST_CHILD";

fn machine(kernel: &str) -> Fingerprint {
    Fingerprint {
        cpu_model: "Test CPU @ 2.0GHz".into(),
        cpu_count: 8,
        kernel: kernel.into(),
        governor: Some("performance".into()),
        machine_file: None,
        machine_file_sha256: None,
        hostname: Some("node01".into()),
    }
}

fn run(i: usize, writer: &str) -> RunRecord {
    let mut r = RunRecord::new(format!("./bench --size {i}"), "record");
    r.started_at = 1_700_000_000.0 + i as f64;
    r.fingerprint = machine("6.1.0");
    r.tags.insert("writer".into(), writer.into());
    r.tags.insert("i".into(), i.to_string());
    r.env.insert("OMP_NUM_THREADS".into(), "4".into());
    r.git = Some(GitInfo {
        commit: format!("{:040x}", i),
        dirty: i.is_multiple_of(2),
        branch: Some("main".into()),
    });
    r.binary_sha256 = Some("ab".repeat(32));
    r.duration_s = Some(1.0 + i as f64 * 1e-3);
    r.metrics = vec![
        Metric::new("time_s", 1.0 + i as f64 * 1e-3, "s"),
        Metric::new("instructions", 1e9, "count"),
        Metric::new("l2_bytes", 4e8 + i as f64, "B"),
    ];
    r
}

fn child_exe_run(test: &str, db: &Path, extra: &[(&str, &str)]) -> std::process::Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        test,
        "--ignored",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(CHILD, db);
    for (k, v) in extra {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

#[test]
fn round_trip_and_filters() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sub").join("h.sqlite");
    let mut s = Store::open(&db).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let ids: Vec<i64> = (0..5).map(|i| s.record(&run(i, "a")).unwrap()).collect();
    let mut other = run(5, "b");
    other.fingerprint = machine("6.8.0");
    let oid = s.record(&other).unwrap();

    let all = s.runs(&Filter::default()).unwrap();
    assert_eq!(all.len(), 6);
    let back = &all[0];
    assert_eq!(back.id, ids[0]);
    let mut expect = run(0, "a");
    expect.cwd = back.record.cwd.clone();
    assert_eq!(back.record, expect);
    assert_eq!(back.started, "2023-11-14T22:13:20.000Z");

    let f = Filter {
        tags: vec![("writer".into(), "a".into())],
        ..Filter::default()
    };
    assert_eq!(s.count(&f).unwrap(), 5);
    let f = Filter {
        machine: Some(machine("6.8.0").id()[..6].to_string()),
        ..Filter::default()
    };
    assert_eq!(s.run_ids(&f).unwrap(), vec![oid]);
    let f = Filter {
        last: Some(2),
        ..Filter::default()
    };
    assert_eq!(s.run_ids(&f).unwrap(), vec![ids[4], oid]);
    let f = Filter {
        git_commit: Some(format!("{:040x}", 3)),
        ..Filter::default()
    };
    assert_eq!(s.run_ids(&f).unwrap(), vec![ids[3]]);
    let f = Filter {
        git_commit: Some("0000".into()),
        command_contains: Some("--size 2".into()),
        ..Filter::default()
    };
    assert_eq!(s.run_ids(&f).unwrap(), vec![ids[2]]);

    let series = s.series("l2_bytes", &Filter::default()).unwrap();
    assert_eq!(series.len(), 6);
    assert_eq!(series[2].value, 4e8 + 2.0);
    assert_eq!(series[2].unit, "B");
    assert!(s.series("nope", &Filter::default()).unwrap().is_empty());
    let names = s.metric_names(&Filter::default()).unwrap();
    assert_eq!(names.len(), 3);
    assert_eq!(s.machines().unwrap().len(), 2);
    assert_eq!(
        s.run(oid).unwrap().unwrap().record.fingerprint.kernel,
        "6.8.0"
    );
    assert!(s.run(9999).unwrap().is_none());
    s.check_integrity().unwrap();
}

#[test]
fn invalid_records_are_rejected_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(dir.path().join("h.sqlite")).unwrap();
    let mut bad = run(0, "a");
    bad.metrics.push(Metric::new("nan", f64::NAN, ""));
    let e = s.record_all(&[run(1, "a"), bad]).unwrap_err();
    assert!(matches!(e, HistoryError::InvalidRecord(_)), "{e}");
    assert!(e.to_string().contains("`nan`"));
    let mut dup = run(0, "a");
    dup.metrics.push(Metric::new("time_s", 1.0, "s"));
    assert!(s.record(&dup).is_err());
    assert_eq!(s.count(&Filter::default()).unwrap(), 0);
}

/// Helper for `two_processes_record_concurrently`: records 150 runs, one transaction each.
#[test]
#[ignore = "helper run as a child process by two_processes_record_concurrently"]
fn child_writer() {
    let Some(db) = std::env::var_os(CHILD) else {
        return;
    };
    let name = std::env::var("WRITER").unwrap();
    let mut s = Store::open(&db).unwrap();
    for i in 0..150 {
        s.record(&run(i, &name)).unwrap();
    }
}

#[test]
fn two_processes_record_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    // Neither process finds the file: both race through creation and migration too.
    let mut a = child_exe_run("child_writer", &db, &[("WRITER", "a")]);
    let mut b = child_exe_run("child_writer", &db, &[("WRITER", "b")]);
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let s = Store::open(&db).unwrap();
    for w in ["a", "b"] {
        let f = Filter {
            tags: vec![("writer".into(), w.into())],
            ..Filter::default()
        };
        assert_eq!(s.count(&f).unwrap(), 150, "writer {w}");
    }
    assert_eq!(s.series("time_s", &Filter::default()).unwrap().len(), 300);
    s.check_integrity().unwrap();
}

#[test]
fn threads_with_separate_connections_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    Store::open(&db).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut s = Store::open(&db).unwrap();
                for i in 0..50 {
                    s.record(&run(i, &format!("t{t}"))).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let s = Store::open(&db).unwrap();
    assert_eq!(s.count(&Filter::default()).unwrap(), 200);
}

/// Helper for `crash_mid_record_leaves_the_store_consistent`.
#[test]
#[ignore = "helper run as a child process by crash_mid_record_leaves_the_store_consistent"]
fn child_crasher() {
    let Some(db) = std::env::var_os(CHILD) else {
        return;
    };
    let mut s = Store::open(&db).unwrap();
    s.record_then_abort_before_commit(&run(99, "crash"));
}

#[test]
fn crash_mid_record_leaves_the_store_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    {
        let mut s = Store::open(&db).unwrap();
        s.record_all(&(0..3).map(|i| run(i, "ok")).collect::<Vec<_>>())
            .unwrap();
    }
    let st = child_exe_run("child_crasher", &db, &[]).wait().unwrap();
    assert!(!st.success(), "the child should have aborted");
    let mut s = Store::open(&db).unwrap();
    s.check_integrity().unwrap();
    assert_eq!(s.count(&Filter::default()).unwrap(), 3);
    // No orphan metric, tag or environment row of the aborted run.
    assert_eq!(s.series("time_s", &Filter::default()).unwrap().len(), 3);
    let f = Filter {
        tags: vec![("writer".into(), "crash".into())],
        ..Filter::default()
    };
    assert_eq!(s.count(&f).unwrap(), 0);
    // And the store still takes new runs.
    s.record(&run(4, "ok")).unwrap();
    assert_eq!(s.count(&Filter::default()).unwrap(), 4);
}

#[test]
fn schema_1_store_is_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.sqlite");
    {
        // A store as the first schema wrote it, built by hand.
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE runs (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                started_at TEXT NOT NULL,
                command TEXT NOT NULL,
                duration_s REAL,
                exit_status INTEGER,
                hostname TEXT
             );
             CREATE TABLE metrics (
                run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                value REAL NOT NULL,
                unit TEXT NOT NULL DEFAULT '',
                PRIMARY KEY (run_id, name)
             );
             INSERT INTO runs (started_at, command, duration_s, exit_status, hostname)
                VALUES ('2024-03-01T10:00:00Z', './a.out', 1.5, 0, 'n1'),
                       ('2024-03-02T10:00:00Z', './a.out', 1.6, 0, 'n1'),
                       ('2024-03-03T10:00:00Z', './a.out', 1.4, 0, NULL);
             INSERT INTO metrics VALUES (1, 'time_s', 1.5, 's'), (2, 'time_s', 1.6, 's'),
                                        (3, 'time_s', 1.4, 's');
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    // Read-only opening refuses to guess and says how to migrate.
    let e = Store::open_read_only(&db).unwrap_err();
    assert!(e.to_string().contains("migrate"), "{e}");
    let mut s = Store::open(&db).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let runs = s.runs(&Filter::default()).unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0].machine_id, "legacy-n1");
    assert_eq!(runs[2].machine_id, "legacy-unknown");
    assert_eq!(runs[0].record.started_at, 1_709_287_200.0);
    assert_eq!(runs[1].record.metric("time_s"), Some(1.6));
    assert_eq!(runs[0].record.source, "record");
    // New runs go in next to the old ones, and the migration is not repeated.
    s.record(&run(1, "new")).unwrap();
    drop(s);
    let s = Store::open(&db).unwrap();
    assert_eq!(s.count(&Filter::default()).unwrap(), 4);
    assert_eq!(s.machines().unwrap().len(), 3);
    Store::open_read_only(&db).unwrap();
}

fn filled_store(db: &Path) {
    let mut s = Store::open(db).unwrap();
    let runs: Vec<RunRecord> = (0..400).map(|i| run(i, "x")).collect();
    s.record_all(&runs).unwrap();
    // Closing the last connection checkpoints the WAL into the main file.
}

fn assert_untouched(db: &Path, before: &str, e: &HistoryError) {
    assert_eq!(&sha256_file(db).unwrap(), before, "the file was modified");
    assert!(
        !db.with_extension("sqlite-wal").exists()
            || std::fs::metadata(db.with_extension("sqlite-wal"))
                .unwrap()
                .len()
                == 0,
        "a WAL was created next to a damaged file"
    );
    let msg = e.to_string();
    assert!(msg.contains(&db.display().to_string()), "{msg}");
    assert!(msg.contains("untouched"), "{msg}");
}

#[test]
fn truncated_file_is_a_clear_error_and_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    filled_store(&db);
    let len = std::fs::metadata(&db).unwrap().len();
    assert!(len > 8 * 4096, "{len}");
    // Cut at a page boundary (so the length check alone cannot tell) and mid-page.
    for cut in [len / 2 / 4096 * 4096, len / 2 + 123, 50] {
        let d = dir.path().join(format!("cut{cut}.sqlite"));
        std::fs::copy(&db, &d).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&d).unwrap();
        f.set_len(cut).unwrap();
        drop(f);
        let before = sha256_file(&d).unwrap();
        let e = Store::open(&d).unwrap_err();
        assert!(matches!(e, HistoryError::Corrupt { .. }), "cut {cut}: {e}");
        assert_untouched(&d, &before, &e);
        assert!(Store::open_read_only(&d).is_err());
    }
}

#[test]
fn corrupted_pages_are_a_clear_error_and_are_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    filled_store(&db);
    let mut bytes = std::fs::read(&db).unwrap();
    let page = 4096;
    // Scribble over the middle of pages 3 and 4 (b-tree pages of the runs and metrics).
    for b in &mut bytes[2 * page + 200..4 * page - 200] {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();
    let before = sha256_file(&db).unwrap();
    let e = Store::open(&db).unwrap_err();
    assert!(matches!(e, HistoryError::Corrupt { .. }), "{e}");
    assert_untouched(&db, &before, &e);
}

/// A directory or `/dev/null` as the store got "Is a directory (os error 21)" and "disk I/O
/// error: Error code 1034" with advice to migrate: both are refused by what they are.
#[test]
fn a_directory_or_a_device_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    for open in [Store::open, Store::open_read_only] {
        let e = open(dir.path()).map(|_| ()).unwrap_err();
        assert!(matches!(e, HistoryError::NotAStore { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("a directory; --db and $HPCSCOPE_DB name the store's file"),
            "{e}"
        );
        let e = open(Path::new("/dev/null")).map(|_| ()).unwrap_err();
        assert!(matches!(e, HistoryError::NotAStore { .. }), "{e}");
        assert!(e.to_string().contains("a device, not a file"), "{e}");
    }
}

/// One text that is not UTF-8 (written by another tool) made every reader fail with
/// rusqlite's "Conversion error from type Text"; it is read with U+FFFD in its place.
#[test]
fn a_text_that_is_not_utf8_does_not_stop_the_readers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let mut s = Store::open(&db).unwrap();
    s.record(&run(0, "w")).unwrap();
    drop(s);
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "UPDATE runs SET command = CAST(X'6361ff65' AS TEXT); \
             UPDATE metrics SET unit = CAST(X'ff' AS TEXT);",
        )
        .unwrap();
    }
    let s = Store::open_read_only(&db).unwrap();
    let runs = s.runs(&Filter::default()).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].record.command, "ca\u{fffd}e");
    assert!(!s.metric_names(&Filter::default()).unwrap().is_empty());
}

#[test]
fn foreign_files_are_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let txt = dir.path().join("notes.sqlite");
    std::fs::write(&txt, "these are my notes, not a database\n".repeat(20)).unwrap();
    let before = sha256_file(&txt).unwrap();
    let e = Store::open(&txt).unwrap_err();
    assert!(matches!(e, HistoryError::NotAStore { .. }), "{e}");
    assert_eq!(sha256_file(&txt).unwrap(), before);

    let other = dir.path().join("other.sqlite");
    {
        let c = rusqlite::Connection::open(&other).unwrap();
        c.execute_batch(
            "CREATE TABLE customers (id INTEGER, name TEXT); PRAGMA application_id = 7;",
        )
        .unwrap();
    }
    let before = sha256_file(&other).unwrap();
    let e = Store::open(&other).unwrap_err();
    assert!(matches!(e, HistoryError::NotAStore { .. }), "{e}");
    assert!(e.to_string().contains("customers"));
    assert_eq!(sha256_file(&other).unwrap(), before);

    let newer = dir.path().join("newer.sqlite");
    Store::open(&newer).unwrap();
    {
        let c = rusqlite::Connection::open(&newer).unwrap();
        c.execute_batch("PRAGMA user_version = 99;").unwrap();
    }
    let e = Store::open(&newer).unwrap_err();
    assert!(matches!(e, HistoryError::TooNew { found: 99, .. }), "{e}");

    let missing = dir.path().join("missing.sqlite");
    let e = Store::open_read_only(&missing).unwrap_err();
    assert!(matches!(e, HistoryError::Missing { .. }));
    assert!(!missing.exists());
}

#[test]
fn empty_file_becomes_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("empty.sqlite");
    std::fs::write(&db, b"").unwrap();
    let mut s = Store::open(&db).unwrap();
    s.record(&run(0, "a")).unwrap();
    let m: BTreeMap<_, _> = s.runs(&Filter::default()).unwrap()[0]
        .record
        .metrics
        .iter()
        .map(|m| (m.name.clone(), m.value))
        .collect();
    assert_eq!(m["time_s"], 1.0);
}

#[test]
fn json_results_of_other_commands_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let v: serde_json::Value =
        serde_json::from_str(r#"{"triad": {"bandwidth_gbs": 25.5}, "levels": [1, 2]}"#).unwrap();
    let tags = vec![("suite".to_string(), "stream".to_string())];
    let id = hpcscope_history::store::record_json_result(
        Some(&db),
        "bench",
        "hpcscope bench",
        &tags,
        &v,
    )
    .unwrap();
    let s = Store::open_read_only(&db).unwrap();
    let r = s.run(id).unwrap().unwrap();
    assert_eq!(r.record.source, "bench");
    assert_eq!(r.record.metric("triad.bandwidth_gbs"), Some(25.5));
    assert_eq!(r.record.metric("levels.1"), Some(2.0));
    assert_eq!(r.record.tags["suite"], "stream");
    let none = serde_json::json!({"name": "x"});
    assert!(
        hpcscope_history::store::record_json_result(Some(&db), "bench", "x", &[], &none).is_err()
    );
}

/// Helper for `a_transaction_left_by_a_killed_process_is_rolled_back`: opens the store in
/// rollback-journal mode (as a store is while it is created, or on a file system without
/// shared memory), writes inside a transaction and dies before the commit.
#[test]
#[ignore = "helper run as a child process by a_transaction_left_by_a_killed_process_is_rolled_back"]
fn child_journal_crasher() {
    let Some(db) = std::env::var_os(CHILD) else {
        return;
    };
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("PRAGMA journal_mode = DELETE; PRAGMA cache_size = 1;")
        .unwrap();
    c.execute_batch("BEGIN IMMEDIATE; DELETE FROM metrics; DELETE FROM tags; DELETE FROM env;")
        .unwrap();
    // Big enough to spill to the file before the commit.
    for i in 0..2000 {
        c.execute(
            "INSERT INTO runs (started_at, command, source) VALUES ('x', ?1, 'crash')",
            [format!("{i:0>400}")],
        )
        .unwrap();
    }
    std::process::abort();
}

#[test]
fn a_transaction_left_by_a_killed_process_is_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    {
        let mut s = Store::open(&db).unwrap();
        s.record_all(&(0..3).map(|i| run(i, "ok")).collect::<Vec<_>>())
            .unwrap();
    }
    {
        // The crasher switches the store to a rollback journal.
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("PRAGMA journal_mode = DELETE;").unwrap();
    }
    let st = child_exe_run("child_journal_crasher", &db, &[])
        .wait()
        .unwrap();
    assert!(!st.success(), "the child should have aborted");
    let journal = dir.path().join("h.sqlite-journal");
    assert!(
        std::fs::metadata(&journal).unwrap().len() > 0,
        "the crash left a hot journal"
    );
    // Readers and writers alike see the last committed state; before, every command failed
    // with "attempt to write a readonly database".
    let s = Store::open_read_only(&db).unwrap();
    assert_eq!(s.count(&Filter::default()).unwrap(), 3);
    drop(s);
    let mut s = Store::open(&db).unwrap();
    s.check_integrity().unwrap();
    assert_eq!(s.count(&Filter::default()).unwrap(), 3);
    s.record(&run(4, "ok")).unwrap();
    assert_eq!(s.count(&Filter::default()).unwrap(), 4);
}

#[test]
fn a_creation_killed_halfway_leaves_no_store_and_its_leftovers_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    // A process that is gone (its pid reaped) left its temporary files.
    let mut c = Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    let host: String = hpcscope_host::facts::hostname()
        .unwrap_or_else(|| "host".into())
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let left = dir
        .path()
        .join(format!(".h.sqlite.{host}-{dead}.Ab12Cd.creating"));
    std::fs::write(&left, b"SQLite format 3\0").unwrap();
    std::fs::write(left.with_extension("creating-journal"), b"x").unwrap();
    // No store is there: readers say so, they do not take the leftovers for one.
    assert!(matches!(
        Store::open_read_only(&db).unwrap_err(),
        HistoryError::Missing { .. }
    ));
    let mut s = Store::open(&db).unwrap();
    s.record(&run(1, "ok")).unwrap();
    drop(s);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("creating"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn a_checkpoint_growing_the_file_is_not_taken_for_damage() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    filled_store(&db);
    let full = std::fs::read(&db).unwrap();
    // The moment a checkpoint has written page 1 (which announces the new size) but not yet
    // the pages that grow the file: the file is shorter than its header says, for a moment.
    let short = dir.path().join("growing.sqlite");
    std::fs::write(&short, &full[..full.len() - 4096]).unwrap();
    let tail = full[full.len() - 4096..].to_vec();
    let s2 = short.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(30));
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&s2).unwrap();
        f.write_all(&tail).unwrap();
    });
    // Before, this reported "the history store is damaged ... Restore it from a backup".
    let s = Store::open_read_only(&short).unwrap();
    assert_eq!(s.count(&Filter::default()).unwrap(), 400);
    writer.join().unwrap();
}
