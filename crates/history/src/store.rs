//! The run store: one SQLite file (WAL mode) holding runs, their machines, tags, environment
//! and metrics.
//!
//! Safety rules, in the order [`Store::open`] applies them:
//! 1. a new store is built in a temporary file beside it (schema, WAL mode) and linked into
//!    place complete: a process killed while creating it leaves no store, never half of one
//!    (and a temporary file that a later creation removes);
//! 2. an existing file is checked *before* anything writes to it: SQLite header magic, page
//!    size against the file length (again a moment later when they disagree: a writer's
//!    checkpoint grows the file in steps), then a read-only connection runs
//!    `PRAGMA quick_check` and reads `application_id` and `user_version`. A damaged or
//!    foreign file is an error and is never modified. A transaction a killed process left
//!    unfinished (a hot rollback journal) is rolled back first, as SQLite itself does for
//!    any writer;
//! 3. then the file is opened read-write in WAL mode with a busy timeout, so that several
//!    processes can record at once; a store that cannot be written (read-only file or file
//!    system, a directory that does not accept SQLite's journal) is refused here, before a
//!    command runs, not after;
//! 4. schema migrations run in one `BEGIN IMMEDIATE` transaction, keyed by
//!    `PRAGMA user_version`;
//! 5. every run is written in one transaction: a process that dies mid-record leaves
//!    either the whole run or nothing.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::error::{HistoryError, Result};
use crate::record::{Fingerprint, GitInfo, Metric, RunRecord, format_rfc3339};

/// `PRAGMA application_id` of hpcscope stores ("HPCS").
pub const APPLICATION_ID: i64 = 0x4850_4353;
/// Schema version written by this build (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 2;

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// Schema migrations; entry `i` takes a store from version `i` to `i + 1`. A new store runs
/// all of them, so a migrated store and a new one have the same schema.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1: the first schema (runs and metrics).
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
     );",
    // 1 -> 2: machine fingerprints, git state, binary hash, tags, environment.
    "CREATE TABLE machines (
        id TEXT PRIMARY KEY,
        cpu_model TEXT NOT NULL DEFAULT '',
        cpu_count INTEGER NOT NULL DEFAULT 0,
        kernel TEXT NOT NULL DEFAULT '',
        governor TEXT,
        machine_file TEXT,
        machine_file_sha256 TEXT
     );
     ALTER TABLE runs ADD COLUMN started_unix REAL;
     ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT 'record';
     ALTER TABLE runs ADD COLUMN cwd TEXT;
     ALTER TABLE runs ADD COLUMN binary_sha256 TEXT;
     ALTER TABLE runs ADD COLUMN git_commit TEXT;
     ALTER TABLE runs ADD COLUMN git_dirty INTEGER;
     ALTER TABLE runs ADD COLUMN git_branch TEXT;
     ALTER TABLE runs ADD COLUMN machine_id TEXT REFERENCES machines(id);
     CREATE TABLE tags (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
     );
     CREATE TABLE env (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
     );
     -- Runs of schema 1 knew only their host: give each host a legacy machine.
     INSERT OR IGNORE INTO machines (id, cpu_model)
        SELECT DISTINCT 'legacy-' || COALESCE(hostname, 'unknown'), '' FROM runs;
     UPDATE runs SET
        machine_id = 'legacy-' || COALESCE(hostname, 'unknown'),
        started_unix = CAST(strftime('%s', started_at) AS REAL);
     CREATE INDEX runs_machine_time ON runs (machine_id, started_unix);
     CREATE INDEX metrics_name ON metrics (name, run_id);",
];

/// Where the store lives when `--db` is not given: `$HPCSCOPE_DB`, else
/// `$XDG_DATA_HOME/hpcscope/history.sqlite`, else `~/.local/share/hpcscope/history.sqlite`.
pub fn default_db_path() -> Result<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("HPCSCOPE_DB") {
        return Ok(PathBuf::from(p));
    }
    if let Some(x) = var("XDG_DATA_HOME") {
        return Ok(PathBuf::from(x).join("hpcscope").join("history.sqlite"));
    }
    if let Some(h) = var("HOME") {
        return Ok(PathBuf::from(h)
            .join(".local")
            .join("share")
            .join("hpcscope")
            .join("history.sqlite"));
    }
    Err(HistoryError::NoDefaultPath)
}

/// Stores the JSON result of an hpcscope command (its `--record` flag): every number of
/// `result` becomes a metric named by its JSON path, and the run gets this machine's
/// fingerprint, the git state of the working directory, the environment and `tags`.
/// `db` defaults to [`default_db_path`]. Returns the run id.
pub fn record_json_result(
    db: Option<&Path>,
    source: &str,
    command: &str,
    tags: &[(String, String)],
    result: &serde_json::Value,
) -> Result<i64> {
    let path = match db {
        Some(p) => p.to_path_buf(),
        None => default_db_path()?,
    };
    let mut store = Store::open(&path)?;
    let mut run = RunRecord::new(command, source);
    run.fingerprint = Fingerprint::current();
    if let Ok(cwd) = std::env::current_dir() {
        run.git = GitInfo::detect(&cwd);
    }
    run.env = crate::record::capture_env();
    run.tags = tags.iter().cloned().collect();
    run.add_json_metrics("", result);
    if run.metrics.is_empty() {
        return Err(HistoryError::InvalidRecord(format!(
            "the result of `{command}` has no number to record"
        )));
    }
    store.record(&run)
}

/// Which runs to select. Empty fields select everything.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Filter {
    /// Runs whose command line contains this text.
    pub command_contains: Option<String>,
    /// Runs that carry every one of these tags.
    pub tags: Vec<(String, String)>,
    /// Runs on a machine whose fingerprint id starts with this.
    pub machine: Option<String>,
    /// Runs whose git commit starts with this.
    pub git_commit: Option<String>,
    /// Runs from this source (`record`, `bench`...).
    pub source: Option<String>,
    /// Runs started at or after this Unix time.
    pub since: Option<f64>,
    /// Runs started before this Unix time.
    pub until: Option<f64>,
    /// Runs that have this metric.
    pub has_metric: Option<String>,
    /// Runs with an id of at most this.
    pub max_id: Option<i64>,
    /// Keep only the newest `last` runs (still returned oldest first).
    pub last: Option<usize>,
}

/// A run read back from the store.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    /// Run id, increasing in insertion order.
    pub id: i64,
    /// Start time, RFC 3339 UTC.
    pub started: String,
    /// Fingerprint id of the machine.
    pub machine_id: String,
    /// The record as stored.
    pub record: RunRecord,
}

/// One point of a metric's history.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// Run id.
    pub run_id: i64,
    /// Start time of the run, Unix seconds.
    pub started_at: f64,
    /// Value.
    pub value: f64,
    /// Unit.
    pub unit: String,
    /// Machine fingerprint id.
    pub machine_id: String,
    /// Git commit, if known.
    pub git_commit: Option<String>,
}

/// A machine known to the store.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineRow {
    /// Fingerprint id.
    pub id: String,
    /// The fingerprint (hostname empty: it is per run).
    pub fingerprint: Fingerprint,
    /// Number of runs on it.
    pub runs: i64,
}

/// An open run store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

fn sql_err(path: &Path) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
    move |e| classify(path, e)
}

/// Maps SQLite's "this is not a database" and "corrupt" codes to the store's own errors.
fn classify(path: &Path, e: rusqlite::Error) -> HistoryError {
    use rusqlite::ErrorCode as C;
    if let rusqlite::Error::SqliteFailure(f, msg) = &e {
        let detail = msg.clone().unwrap_or_else(|| f.to_string());
        match f.code {
            C::NotADatabase => {
                return HistoryError::NotAStore {
                    path: path.into(),
                    detail,
                };
            }
            C::DatabaseCorrupt => {
                return HistoryError::Corrupt {
                    path: path.into(),
                    detail,
                };
            }
            _ => {}
        }
    }
    HistoryError::Sqlite {
        path: path.into(),
        source: e,
    }
}

/// Checks an existing file without writing to it (see the module documentation).
fn check_existing(path: &Path) -> Result<()> {
    check_regular_file(path)?;
    recover_hot_journal(path)?;
    // The header and the file length are read a moment apart; a writer's checkpoint in
    // between (it writes page 1, which announces the new size, before the pages that grow
    // the file) makes them disagree for a few milliseconds. Damage stays: look again.
    let mut pause = Duration::from_millis(5);
    let start = std::time::Instant::now();
    loop {
        match check_header(path) {
            Err(HistoryError::Corrupt { .. }) if start.elapsed() < Duration::from_millis(600) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            r => {
                r?;
                break;
            }
        }
    }
    let ro = open_reader(path)?;
    inspect(&ro, path)
}

/// A read-only connection. A store in WAL mode is read through its shared-memory file,
/// which SQLite must create when no process has the store open; where nobody can create
/// files beside the store (a read-only file system, an immutable directory) nobody can
/// write to it either, and it is read as an immutable file instead.
fn open_reader(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let plain = Connection::open_with_flags(path, flags).and_then(|c| {
        // Opening is lazy: the first read is where the shared memory is needed.
        c.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
            r.get::<_, i64>(0)
        })?;
        Ok(c)
    });
    let c = match plain {
        Ok(c) => c,
        Err(rusqlite::Error::SqliteFailure(f, _))
            if matches!(
                f.code,
                rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly
            ) && !dir_writable(path) =>
        {
            let uri = format!("file:{}?immutable=1", uri_path(path));
            Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
                .map_err(sql_err(path))?
        }
        Err(e) => return Err(classify(path, e)),
    };
    c.busy_timeout(BUSY_TIMEOUT).map_err(sql_err(path))?;
    Ok(c)
}

/// Whether files can be created beside `path`.
fn dir_writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::ffi::CString::new(dir.as_os_str().as_bytes()).is_ok_and(|c| {
        // SAFETY: a valid NUL-terminated path; access(2) only reads it.
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    })
}

/// `path` for an SQLite URI: absolute, with `%`, `?` and `#` escaped.
fn uri_path(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for c in abs.to_string_lossy().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// A rollback journal beside the store is hot when the process that wrote it died in a
/// transaction (a kill while the store was created or migrated): the file must be rolled
/// back before it can be read, which a read-only connection cannot do. SQLite rolls it back
/// when a read-write connection first reads; do that here (it restores the last committed
/// state, it changes nothing that was committed).
fn recover_hot_journal(path: &Path) -> Result<()> {
    let mut journal = path.as_os_str().to_owned();
    journal.push("-journal");
    let journal = PathBuf::from(journal);
    match std::fs::metadata(&journal) {
        Ok(m) if m.len() > 0 => {}
        _ => return Ok(()),
    }
    let rw = match Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) {
        Ok(c) => c,
        Err(e) => return Err(unfinished(path, &journal, e)),
    };
    rw.busy_timeout(BUSY_TIMEOUT).map_err(sql_err(path))?;
    // Reading the schema makes SQLite look at the journal and roll it back if it is hot (a
    // journal of a live transaction in another process is left alone).
    rw.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(|e| unfinished(path, &journal, e))?;
    Ok(())
}

fn unfinished(path: &Path, journal: &Path, e: rusqlite::Error) -> HistoryError {
    match classify(path, e) {
        HistoryError::Sqlite { source, .. } => HistoryError::Unfinished {
            path: path.into(),
            journal: journal.into(),
            source,
        },
        other => other,
    }
}

/// The header and file-length checks of [`check_existing`].
/// A store is a regular file (or a link to one): a directory, a device such as `/dev/null`,
/// a FIFO or a socket is refused by what it is, before SQLite answers with an I/O error.
fn check_regular_file(path: &Path) -> Result<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        // Gone or unreadable: the next step says which, with the system's words.
        return Ok(());
    };
    if meta.is_file() {
        return Ok(());
    }
    use std::os::unix::fs::FileTypeExt;
    let ft = meta.file_type();
    let what = if ft.is_dir() {
        "a directory; --db and $HPCSCOPE_DB name the store's file, e.g. DIR/history.sqlite"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device, not a file; name a file to keep the runs in"
    } else if ft.is_fifo() {
        "a named pipe, not a file; name a file to keep the runs in"
    } else if ft.is_socket() {
        "a socket, not a file; name a file to keep the runs in"
    } else {
        "not a regular file; name a file to keep the runs in"
    };
    Err(HistoryError::NotAStore {
        path: path.into(),
        detail: what.into(),
    })
}

fn check_header(path: &Path) -> Result<()> {
    let io = |e| HistoryError::Io {
        path: path.into(),
        source: e,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    if len == 0 {
        // SQLite treats an empty file as an empty database.
        return Ok(());
    }
    let mut header = [0u8; 100];
    let mut got = 0;
    while got < 100 {
        let n = f.read(&mut header[got..]).map_err(io)?;
        if n == 0 {
            break;
        }
        got += n;
    }
    if got < 16 || &header[..16] != b"SQLite format 3\0" {
        return Err(HistoryError::NotAStore {
            path: path.into(),
            detail: if got < 16 {
                format!("{len} bytes, shorter than an SQLite header")
            } else {
                "no SQLite header".into()
            },
        });
    }
    if got < 100 {
        return Err(HistoryError::Corrupt {
            path: path.into(),
            detail: format!("truncated to {len} bytes, inside the 100-byte header"),
        });
    }
    let page = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536u64,
        p => p as u64,
    };
    if page < 512 || !page.is_power_of_two() {
        return Err(HistoryError::Corrupt {
            path: path.into(),
            detail: format!("invalid page size {page} in the header"),
        });
    }
    if len % page != 0 {
        return Err(HistoryError::Corrupt {
            path: path.into(),
            detail: format!(
                "file length {len} is not a multiple of the page size {page}: truncated"
            ),
        });
    }
    let change = u32::from_be_bytes([header[24], header[25], header[26], header[27]]);
    let valid_for = u32::from_be_bytes([header[92], header[93], header[94], header[95]]);
    let pages = u32::from_be_bytes([header[28], header[29], header[30], header[31]]) as u64;
    if change == valid_for && pages > 0 && len < pages * page {
        return Err(HistoryError::Corrupt {
            path: path.into(),
            detail: format!(
                "file length {len} is shorter than the {pages} pages of {page} bytes the header \
                 announces: truncated"
            ),
        });
    }
    Ok(())
}

/// Integrity, application id and schema version of an open connection; writes nothing.
fn inspect(conn: &Connection, path: &Path) -> Result<()> {
    let mut problems = Vec::new();
    {
        let mut st = conn
            .prepare("PRAGMA quick_check(5)")
            .map_err(sql_err(path))?;
        let rows = st
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(sql_err(path))?;
        for r in rows {
            let r = r.map_err(sql_err(path))?;
            if r != "ok" {
                problems.push(r);
            }
        }
    }
    if !problems.is_empty() {
        return Err(HistoryError::Corrupt {
            path: path.into(),
            detail: problems.join("; "),
        });
    }
    let app: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(sql_err(path))?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql_err(path))?;
    let tables: Vec<String> = {
        let mut st = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
            .map_err(sql_err(path))?;
        st.query_map([], |r| r.get(0))
            .map_err(sql_err(path))?
            .collect::<std::result::Result<_, _>>()
            .map_err(sql_err(path))?
    };
    let ours = app == APPLICATION_ID
        || (app == 0 && version >= 1 && tables.iter().any(|t| t == "runs"))
        || (app == 0 && version == 0 && tables.is_empty());
    if !ours {
        return Err(HistoryError::NotAStore {
            path: path.into(),
            detail: format!(
                "an SQLite database of another application (application_id {app:#x}, tables: {})",
                tables.join(", ")
            ),
        });
    }
    if version > SCHEMA_VERSION {
        return Err(HistoryError::TooNew {
            path: path.into(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// Temporary files of a store being created are named `.NAME.HOST-PID.*.creating`.
const CREATING: &str = ".creating";

/// This host's name as it goes into a file name.
fn host_tag() -> String {
    hpcscope_host::facts::hostname()
        .unwrap_or_else(|| "host".into())
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Builds a new, empty store (schema and WAL mode) in a temporary file beside `path`, then
/// links it into place unless another process made one first (theirs is kept). Temporary
/// files of creations killed more than an hour ago are removed on the way.
fn create(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "store".into());
    let io = |p: &Path, e| HistoryError::Io {
        path: p.into(),
        source: e,
    };
    remove_stale_creations(&dir, &name);
    let prefix = format!(".{name}.{}-{}.", host_tag(), std::process::id());
    let tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(CREATING)
        .tempfile_in(&dir)
        .map_err(|e| io(&dir, e))?;
    {
        let conn = Connection::open_with_flags(
            tmp.path(),
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql_err(path))?;
        let mut s = Store {
            conn,
            path: tmp.path().to_path_buf(),
        };
        s.configure()
            .and_then(|()| s.migrate())
            .map_err(|e| match e {
                HistoryError::Sqlite { source, .. } => HistoryError::Sqlite {
                    path: path.into(),
                    source,
                },
                other => other,
            })?;
        // Closing checkpoints the write-ahead log into the file and removes it.
        s.conn.close().map_err(|(_, e)| classify(path, e))?;
    }
    tmp.as_file().sync_all().map_err(|e| io(path, e))?;
    match tmp.persist_noclobber(path) {
        Ok(_) => Ok(()),
        // Another process created the store first: use theirs.
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(path, e.error)),
    }
}

/// Removes the temporary files (and their journals) of creations that were killed: those of
/// this host whose process is gone, and any older than an hour (another host's).
fn remove_stale_creations(dir: &Path, name: &str) {
    let prefix = format!(".{name}.");
    let host = format!("{}-", host_tag());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = f.strip_prefix(&prefix) else {
            continue;
        };
        if ![
            CREATING,
            ".creating-journal",
            ".creating-wal",
            ".creating-shm",
        ]
        .iter()
        .any(|s| f.ends_with(s))
        {
            continue;
        }
        let dead_here = rest
            .split('.')
            .next()
            .and_then(|t| t.strip_prefix(&host))
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
            .is_some_and(|pid| {
                // SAFETY: signal 0 only asks whether the process exists.
                let r = unsafe { libc::kill(pid, 0) };
                r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
            });
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(3600));
        if dead_here || old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Refuses a store that cannot be written, before anything runs: the file (a read-only
/// file, an immutable file, a read-only file system) and its directory (SQLite creates its
/// journal and write-ahead log beside the file).
fn check_writable(path: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    for (p, what) in [(path, "the store file"), (dir.as_path(), "its directory")] {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
            continue;
        };
        // SAFETY: a valid NUL-terminated path; access(2) only reads it.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(HistoryError::ReadOnly {
                path: path.into(),
                detail: format!("{what} is not writable ({e})"),
            });
        }
    }
    Ok(())
}

/// Text columns read with the bytes that are not UTF-8 shown as U+FFFD: SQLite keeps what
/// it is given (another tool, an old build), and one such text must not make every reader
/// of the store fail. A column of another type is an error, as before.
trait RowText {
    /// A text column that may be NULL.
    fn opt_text(&self, i: usize) -> rusqlite::Result<Option<String>>;
    /// A text column that is never NULL.
    fn text(&self, i: usize) -> rusqlite::Result<String> {
        self.opt_text(i)?.ok_or(rusqlite::Error::InvalidColumnType(
            i,
            String::new(),
            rusqlite::types::Type::Null,
        ))
    }
}

impl RowText for rusqlite::Row<'_> {
    fn opt_text(&self, i: usize) -> rusqlite::Result<Option<String>> {
        match self.get_ref(i)? {
            rusqlite::types::ValueRef::Null => Ok(None),
            rusqlite::types::ValueRef::Text(b) => Ok(Some(String::from_utf8_lossy(b).into_owned())),
            _ => self.get(i),
        }
    }
}

impl Store {
    /// Opens the store at `path`, creating it (and its directory) if missing, and migrates
    /// an older schema. An existing file that is not a healthy hpcscope store is an error and
    /// is left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        if !path.exists() {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| HistoryError::Io {
                    path: dir.into(),
                    source: e,
                })?;
            }
            create(&path)?;
        }
        check_existing(&path)?;
        check_writable(&path)?;
        // No output of the command may replace the store.
        hpcscope_core::fs::note_input(&path);
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql_err(&path))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql_err(&path))?;
        if conn
            .is_readonly(rusqlite::MAIN_DB)
            .map_err(sql_err(&path))?
        {
            return Err(HistoryError::ReadOnly {
                path: path.clone(),
                detail: "SQLite could open it for reading only".into(),
            });
        }
        let mut store = Store { conn, path };
        // Two processes creating the same store race through the switch to WAL and the
        // first migration; SQLite answers some of those steps SQLITE_BUSY at once, without
        // its busy handler (the switch to WAL needs the file to itself): retry them.
        let start = std::time::Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            match store.configure().and_then(|()| store.migrate()) {
                Err(e) if e.is_busy() && start.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                r => return r.map(|()| store),
            }
        }
    }

    /// Opens an existing store read-only (for `history` and `regress`); a missing file is
    /// [`HistoryError::Missing`]. An older schema is reported as is: reading needs schema 2,
    /// so open it once with [`Store::open`] to migrate.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        if !path.exists() {
            return Err(HistoryError::Missing { path });
        }
        check_existing(&path)?;
        hpcscope_core::fs::note_input(&path);
        let conn = open_reader(&path)?;
        let store = Store { conn, path };
        let v = store.schema_version()?;
        if v < SCHEMA_VERSION {
            return Err(HistoryError::Insufficient(format!(
                "{}: schema version {v} is older than {SCHEMA_VERSION}; run any `hpcscope record` \
                 on it (or open it read-write) to migrate",
                store.path.display()
            )));
        }
        Ok(store)
    }

    /// The file of this store.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the file (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<i64> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql_err(&self.path))
    }

    fn configure(&mut self) -> Result<()> {
        let p = self.path.clone();
        // WAL lets readers and one writer work at once; NORMAL sync is durable at every
        // checkpoint and never corrupts in WAL mode.
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(sql_err(&p))?;
        if !mode.eq_ignore_ascii_case("wal") {
            // A file system without shared memory (some network file systems): stay in the
            // rollback journal, which is still safe, only slower with concurrent writers.
            self.conn
                .execute_batch("PRAGMA journal_mode = DELETE")
                .map_err(sql_err(&p))?;
        }
        self.conn
            .execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(sql_err(&p))
    }

    fn migrate(&mut self) -> Result<()> {
        let p = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err(&p))?;
        let v: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql_err(&p))?;
        if v > SCHEMA_VERSION {
            return Err(HistoryError::TooNew {
                path: p,
                found: v,
                supported: SCHEMA_VERSION,
            });
        }
        if v == SCHEMA_VERSION {
            return Ok(());
        }
        for (i, m) in MIGRATIONS.iter().enumerate().skip(v as usize) {
            tx.execute_batch(m).map_err(sql_err(&p))?;
            tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))
                .map_err(sql_err(&p))?;
        }
        tx.execute_batch(&format!("PRAGMA application_id = {APPLICATION_ID}"))
            .map_err(sql_err(&p))?;
        tx.commit().map_err(sql_err(&p))
    }

    /// Stores one run in one transaction and returns its id.
    pub fn record(&mut self, run: &RunRecord) -> Result<i64> {
        Ok(self.record_all(std::slice::from_ref(run))?[0])
    }

    /// Stores several runs in one transaction (all or none) and returns their ids.
    pub fn record_all(&mut self, runs: &[RunRecord]) -> Result<Vec<i64>> {
        for r in runs {
            validate(r)?;
        }
        let p = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err(&p))?;
        let mut ids = Vec::with_capacity(runs.len());
        for r in runs {
            ids.push(insert_run(&tx, r).map_err(sql_err(&p))?);
        }
        tx.commit().map_err(sql_err(&p))?;
        Ok(ids)
    }

    /// Test hook for the crash-consistency test: writes `run` inside a transaction, then
    /// aborts the process before the commit, as a crash or `kill -9` would.
    #[doc(hidden)]
    pub fn record_then_abort_before_commit(&mut self, run: &RunRecord) -> ! {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .expect("begin");
        insert_run(&tx, run).expect("insert");
        std::process::abort()
    }

    /// Runs matching `filter`, oldest first (by start time, then id).
    pub fn runs(&self, filter: &Filter) -> Result<Vec<StoredRun>> {
        let p = &self.path;
        let ids = self.run_ids(filter)?;
        let mut out = Vec::with_capacity(ids.len());
        let mut st_run = self
            .conn
            .prepare_cached(
                "SELECT r.id, r.started_at, r.started_unix, r.command, r.cwd, r.source,
                        r.binary_sha256, r.git_commit, r.git_dirty, r.git_branch, r.machine_id,
                        r.duration_s, r.exit_status, r.hostname,
                        m.cpu_model, m.cpu_count, m.kernel, m.governor, m.machine_file,
                        m.machine_file_sha256
                 FROM runs r LEFT JOIN machines m ON m.id = r.machine_id WHERE r.id = ?1",
            )
            .map_err(sql_err(p))?;
        let mut st_tags = self
            .conn
            .prepare_cached("SELECT key, value FROM tags WHERE run_id = ?1")
            .map_err(sql_err(p))?;
        let mut st_env = self
            .conn
            .prepare_cached("SELECT key, value FROM env WHERE run_id = ?1")
            .map_err(sql_err(p))?;
        let mut st_met = self
            .conn
            .prepare_cached(
                "SELECT name, value, unit FROM metrics WHERE run_id = ?1 ORDER BY rowid",
            )
            .map_err(sql_err(p))?;
        for id in ids {
            let mut run = st_run
                .query_row([id], |r| {
                    let commit: Option<String> = r.opt_text(7)?;
                    let git = commit.map(|c| -> rusqlite::Result<GitInfo> {
                        Ok(GitInfo {
                            commit: c,
                            dirty: r.get::<_, Option<i64>>(8)?.unwrap_or(0) != 0,
                            branch: r.opt_text(9)?,
                        })
                    });
                    let started: String = r.text(1)?;
                    let started_unix: Option<f64> = r.get(2)?;
                    Ok(StoredRun {
                        id: r.get(0)?,
                        started: started.clone(),
                        machine_id: r.opt_text(10)?.unwrap_or_default(),
                        record: RunRecord {
                            command: r.text(3)?,
                            cwd: r.opt_text(4)?,
                            source: r.text(5)?,
                            tags: BTreeMap::new(),
                            binary_sha256: r.opt_text(6)?,
                            git: git.transpose()?,
                            fingerprint: Fingerprint {
                                cpu_model: r.opt_text(14)?.unwrap_or_default(),
                                cpu_count: r.get::<_, Option<u32>>(15)?.unwrap_or(0),
                                kernel: r.opt_text(16)?.unwrap_or_default(),
                                governor: r.opt_text(17)?,
                                machine_file: r.opt_text(18)?,
                                machine_file_sha256: r.opt_text(19)?,
                                hostname: r.opt_text(13)?,
                            },
                            env: BTreeMap::new(),
                            started_at: started_unix.unwrap_or(f64::NAN),
                            duration_s: r.get(11)?,
                            exit_status: r.get(12)?,
                            metrics: Vec::new(),
                        },
                    })
                })
                .map_err(sql_err(p))?;
            let kv = |st: &mut rusqlite::CachedStatement<'_>| -> Result<BTreeMap<String, String>> {
                st.query_map([id], |r| Ok((r.text(0)?, r.text(1)?)))
                    .map_err(sql_err(p))?
                    .collect::<std::result::Result<_, _>>()
                    .map_err(sql_err(p))
            };
            run.record.tags = kv(&mut st_tags)?;
            run.record.env = kv(&mut st_env)?;
            run.record.metrics = st_met
                .query_map([id], |r| Ok(Metric::new(r.text(0)?, r.get(1)?, r.text(2)?)))
                .map_err(sql_err(p))?
                .collect::<std::result::Result<_, _>>()
                .map_err(sql_err(p))?;
            out.push(run);
        }
        Ok(out)
    }

    /// Number of runs matching `filter`.
    pub fn count(&self, filter: &Filter) -> Result<usize> {
        Ok(self.run_ids(filter)?.len())
    }

    /// Ids of the runs matching `filter`, oldest first.
    pub fn run_ids(&self, filter: &Filter) -> Result<Vec<i64>> {
        let (where_sql, args) = filter_sql(filter);
        let sql = match filter.last {
            Some(n) => format!(
                "SELECT id FROM (SELECT r.id, r.started_unix FROM runs r {where_sql}
                 ORDER BY r.started_unix DESC, r.id DESC LIMIT {n})
                 ORDER BY started_unix, id"
            ),
            None => format!("SELECT r.id FROM runs r {where_sql} ORDER BY r.started_unix, r.id"),
        };
        let p = &self.path;
        let mut st = self.conn.prepare(&sql).map_err(sql_err(p))?;
        let ids = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| r.get(0))
            .map_err(sql_err(p))?
            .collect::<std::result::Result<Vec<i64>, _>>()
            .map_err(sql_err(p))?;
        Ok(ids)
    }

    /// The history of `metric` over the runs matching `filter`, oldest first.
    pub fn series(&self, metric: &str, filter: &Filter) -> Result<Vec<SeriesPoint>> {
        let mut f = filter.clone();
        f.has_metric = Some(metric.to_string());
        let (where_sql, mut args) = filter_sql(&f);
        args.push(rusqlite::types::Value::Text(metric.to_string()));
        let k = args.len();
        let inner = match f.last {
            Some(n) => format!(
                "SELECT * FROM (SELECT r.* FROM runs r {where_sql}
                 ORDER BY r.started_unix DESC, r.id DESC LIMIT {n})"
            ),
            None => format!("SELECT r.* FROM runs r {where_sql}"),
        };
        let sql = format!(
            "SELECT q.id, q.started_unix, m.value, m.unit, q.machine_id, q.git_commit
             FROM ({inner}) q JOIN metrics m ON m.run_id = q.id AND m.name = ?{k}
             ORDER BY q.started_unix, q.id"
        );
        let p = &self.path;
        let mut st = self.conn.prepare(&sql).map_err(sql_err(p))?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok(SeriesPoint {
                    run_id: r.get(0)?,
                    started_at: r.get::<_, Option<f64>>(1)?.unwrap_or(f64::NAN),
                    value: r.get(2)?,
                    unit: r.text(3)?,
                    machine_id: r.opt_text(4)?.unwrap_or_default(),
                    git_commit: r.opt_text(5)?,
                })
            })
            .map_err(sql_err(p))?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(sql_err(p))?;
        Ok(rows)
    }

    /// The history of `metric` on one machine, the newest run's (on every machine with
    /// `all_machines`), with a note saying how many runs on other machines were left out.
    /// No run with the metric is an error that says how to list the metrics.
    pub fn machine_series(
        &self,
        metric: &str,
        filter: &Filter,
        all_machines: bool,
    ) -> Result<(Vec<SeriesPoint>, Option<String>)> {
        let mut pts = self.series(metric, filter)?;
        if pts.is_empty() {
            return Err(HistoryError::Insufficient(format!(
                "no run has the metric `{metric}` (store {}); list the metrics with `hpcscope history metrics`",
                self.path.display()
            )));
        }
        let mut note = None;
        if !all_machines {
            let m = pts.last().map(|p| p.machine_id.clone()).unwrap_or_default();
            let before = pts.len();
            pts.retain(|p| p.machine_id == m);
            if pts.len() < before {
                note = Some(format!(
                    "{} run(s) on other machines left out (only machine {m}); --mix-machines to include them",
                    before - pts.len()
                ));
            }
        }
        Ok((pts, note))
    }

    /// Metric names present in the runs matching `filter`, with their unit and count.
    pub fn metric_names(&self, filter: &Filter) -> Result<Vec<(String, String, usize)>> {
        let (where_sql, args) = filter_sql(filter);
        let sql = format!(
            "SELECT m.name, MAX(m.unit), COUNT(*) FROM metrics m
             WHERE m.run_id IN (SELECT r.id FROM runs r {where_sql})
             GROUP BY m.name ORDER BY m.name"
        );
        let p = &self.path;
        let mut st = self.conn.prepare(&sql).map_err(sql_err(p))?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok((r.text(0)?, r.text(1)?, r.get::<_, i64>(2)? as usize))
            })
            .map_err(sql_err(p))?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(sql_err(p))?;
        Ok(rows)
    }

    /// Machines known to the store, with their number of runs.
    pub fn machines(&self) -> Result<Vec<MachineRow>> {
        let p = &self.path;
        let mut st = self
            .conn
            .prepare(
                "SELECT m.id, m.cpu_model, m.cpu_count, m.kernel, m.governor, m.machine_file,
                        m.machine_file_sha256, (SELECT COUNT(*) FROM runs r WHERE r.machine_id = m.id)
                 FROM machines m ORDER BY m.id",
            )
            .map_err(sql_err(p))?;
        let rows = st
            .query_map([], |r| {
                Ok(MachineRow {
                    id: r.text(0)?,
                    fingerprint: Fingerprint {
                        cpu_model: r.text(1)?,
                        cpu_count: r.get(2)?,
                        kernel: r.text(3)?,
                        governor: r.opt_text(4)?,
                        machine_file: r.opt_text(5)?,
                        machine_file_sha256: r.opt_text(6)?,
                        hostname: None,
                    },
                    runs: r.get(7)?,
                })
            })
            .map_err(sql_err(p))?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(sql_err(p))?;
        Ok(rows)
    }

    /// Full integrity check (`PRAGMA integrity_check`); `Ok(())` when healthy.
    pub fn check_integrity(&self) -> Result<()> {
        let r: String = self
            .conn
            .query_row("PRAGMA integrity_check(1)", [], |r| r.get(0))
            .map_err(sql_err(&self.path))?;
        if r == "ok" {
            Ok(())
        } else {
            Err(HistoryError::Corrupt {
                path: self.path.clone(),
                detail: r,
            })
        }
    }

    /// The run with id `id`, if any.
    pub fn run(&self, id: i64) -> Result<Option<StoredRun>> {
        let exists: Option<i64> = self
            .conn
            .query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(sql_err(&self.path))?;
        if exists.is_none() {
            return Ok(None);
        }
        let f = Filter {
            max_id: Some(id),
            last: None,
            ..Filter::default()
        };
        Ok(self.runs(&f)?.into_iter().find(|r| r.id == id))
    }
}

fn validate(r: &RunRecord) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for m in &r.metrics {
        if m.name.trim().is_empty() {
            return Err(HistoryError::InvalidRecord(
                "a metric has an empty name".into(),
            ));
        }
        if !m.value.is_finite() {
            return Err(HistoryError::InvalidRecord(format!(
                "metric `{}` has the non-finite value {}; store only finite numbers",
                m.name, m.value
            )));
        }
        if !seen.insert(m.name.as_str()) {
            return Err(HistoryError::InvalidRecord(format!(
                "metric `{}` appears twice in one run; give each metric a unique name",
                m.name
            )));
        }
    }
    if !r.started_at.is_finite() {
        return Err(HistoryError::InvalidRecord(
            "started_at is not a finite Unix time".into(),
        ));
    }
    Ok(())
}

fn insert_run(tx: &rusqlite::Transaction<'_>, r: &RunRecord) -> rusqlite::Result<i64> {
    let fp = &r.fingerprint;
    let mid = fp.id();
    tx.prepare_cached(
        "INSERT OR IGNORE INTO machines
         (id, cpu_model, cpu_count, kernel, governor, machine_file, machine_file_sha256)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        mid,
        fp.cpu_model,
        fp.cpu_count,
        fp.kernel,
        fp.governor,
        fp.machine_file,
        fp.machine_file_sha256
    ])?;
    tx.prepare_cached(
        "INSERT INTO runs (started_at, started_unix, command, cwd, source, binary_sha256,
                           git_commit, git_dirty, git_branch, machine_id, duration_s,
                           exit_status, hostname)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(params![
        format_rfc3339(r.started_at),
        r.started_at,
        r.command,
        r.cwd,
        r.source,
        r.binary_sha256,
        r.git.as_ref().map(|g| g.commit.clone()),
        r.git.as_ref().map(|g| g.dirty as i64),
        r.git.as_ref().and_then(|g| g.branch.clone()),
        mid,
        r.duration_s,
        r.exit_status,
        fp.hostname,
    ])?;
    let id = tx.last_insert_rowid();
    {
        let mut st =
            tx.prepare_cached("INSERT INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)")?;
        for (k, v) in &r.tags {
            st.execute(params![id, k, v])?;
        }
    }
    {
        let mut st =
            tx.prepare_cached("INSERT INTO env (run_id, key, value) VALUES (?1, ?2, ?3)")?;
        for (k, v) in &r.env {
            st.execute(params![id, k, v])?;
        }
    }
    let mut st = tx.prepare_cached(
        "INSERT INTO metrics (run_id, name, value, unit) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for m in &r.metrics {
        st.execute(params![id, m.name, m.value, m.unit])?;
    }
    Ok(id)
}

fn filter_sql(f: &Filter) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut w: Vec<String> = Vec::new();
    let mut a: Vec<Value> = Vec::new();
    let arg = |v: Value, a: &mut Vec<Value>| {
        a.push(v);
        format!("?{}", a.len())
    };
    if let Some(c) = &f.command_contains {
        let q = arg(Value::Text(c.clone()), &mut a);
        w.push(format!("instr(r.command, {q}) > 0"));
    }
    for (k, v) in &f.tags {
        let qk = arg(Value::Text(k.clone()), &mut a);
        let qv = arg(Value::Text(v.clone()), &mut a);
        w.push(format!(
            "EXISTS (SELECT 1 FROM tags t WHERE t.run_id = r.id AND t.key = {qk} AND t.value = {qv})"
        ));
    }
    if let Some(m) = &f.machine {
        let q = arg(Value::Text(m.clone()), &mut a);
        w.push(format!("substr(r.machine_id, 1, length({q})) = {q}"));
    }
    if let Some(c) = &f.git_commit {
        let q = arg(Value::Text(c.clone()), &mut a);
        w.push(format!("substr(r.git_commit, 1, length({q})) = {q}"));
    }
    if let Some(s) = &f.source {
        let q = arg(Value::Text(s.clone()), &mut a);
        w.push(format!("r.source = {q}"));
    }
    if let Some(t) = f.since {
        let q = arg(Value::Real(t), &mut a);
        w.push(format!("r.started_unix >= {q}"));
    }
    if let Some(t) = f.until {
        let q = arg(Value::Real(t), &mut a);
        w.push(format!("r.started_unix < {q}"));
    }
    if let Some(m) = &f.has_metric {
        let q = arg(Value::Text(m.clone()), &mut a);
        w.push(format!(
            "EXISTS (SELECT 1 FROM metrics x WHERE x.run_id = r.id AND x.name = {q})"
        ));
    }
    if let Some(id) = f.max_id {
        let q = arg(Value::Integer(id), &mut a);
        w.push(format!("r.id <= {q}"));
    }
    if w.is_empty() {
        (String::new(), a)
    } else {
        (format!("WHERE {}", w.join(" AND ")), a)
    }
}
