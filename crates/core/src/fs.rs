//! Writing result files so that nothing is ever half-written.

use std::io::Write;
use std::path::Path;

/// Writes `contents` to `path` atomically: a temporary file in the same directory, flushed to
/// disk, then renamed over `path`. An interrupted or failed write leaves `path` as it was
/// (absent, or its old contents) and no temporary file behind.
///
/// Permissions are those of an ordinary new file: `0666` less the process umask (usually
/// `0644`), or, when `path` already exists, its current mode, so rewriting a file someone
/// made group-writable or private keeps it that way.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".hpcscope-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // The mode given to open(2) is reduced by the umask, as for any new file.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes `contents` to a new file `path`, atomically, without ever replacing a file of that
/// name: a temporary file in the same directory (named `.NAME.*.tmp`, so an interrupted
/// write can be told from other files), flushed to disk, then linked into place. Returns
/// `false`, and leaves the existing file alone, when `path` already exists.
pub fn write_new(path: &Path, contents: &[u8]) -> std::io::Result<bool> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut builder = tempfile::Builder::new();
    let prefix = format!(".{name}.");
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    match tmp.persist_noclobber(path) {
        Ok(_) => Ok(true),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e.error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_contents_and_leaves_no_temporary_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.json")]);
    }

    #[cfg(unix)]
    #[test]
    fn new_files_get_the_umask_mode_and_old_files_keep_theirs() {
        let d = tempfile::tempdir().unwrap();
        // What a plain create gives in this process (0666 less the umask).
        let plain = d.path().join("plain");
        std::fs::write(&plain, b"x").unwrap();
        let want = std::fs::metadata(&plain).unwrap().permissions().mode() & 0o777;
        let p = d.path().join("new");
        write_atomic(&p, b"x").unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            want
        );
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"y").unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
    }

    #[test]
    fn new_files_never_replace_an_existing_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rank-000000.n.json");
        assert!(write_new(&p, b"one").unwrap());
        assert!(!write_new(&p, b"two").unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_missing_directory_is_an_error_and_creates_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("no/such/dir/out.json");
        assert!(write_atomic(&p, b"x").is_err());
        assert!(!p.exists());
    }
}
