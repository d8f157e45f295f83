//! Loading machines, profiles and other inputs from files or built-in names, with errors
//! that say which file, what is wrong and how to fix it.

use std::path::{Path, PathBuf};

use crate::error::{InputError, Result};
use crate::{Machine, Profile, library};

/// Loads a machine: a TOML file when one exists at `arg` (or `arg` ends in `.toml` or
/// holds a `/`), otherwise a built-in id.
pub fn machine(arg: &str) -> Result<Machine> {
    let p = Path::new(arg);
    if p.exists() || arg.ends_with(".toml") || arg.contains('/') {
        let text = read(
            p,
            "machine file",
            "give a machine TOML file or a built-in id (hpcscope machine list)",
        )?;
        Machine::from_toml_str(&text, &p.display().to_string())
    } else {
        library::builtin(arg)
    }
}

/// Loads a machine named in a file of directory `base` (a scenario): relative to `base`
/// when it is a file there, else as [`machine`] does.
pub fn machine_rel(arg: &str, base: &Path) -> Result<Machine> {
    let rel = base.join(arg);
    if !Path::new(arg).exists() && rel.exists() {
        machine(&rel.to_string_lossy())
    } else {
        machine(arg)
    }
}

/// Loads and validates a profile.
pub fn profile(p: &Path) -> Result<Profile> {
    let text = read(
        p,
        "profile",
        "give a profile JSON file, as written by hpcscope mix",
    )?;
    Profile::from_json_str(&text, &p.display().to_string())
}

/// The default bound on the size of an input file, bytes (see [`max_input_bytes`]).
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 1 << 30;

/// How long reading a FIFO waits for its writer's first bytes.
pub const FIFO_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The bound on the size of any input file: `$HPCSCOPE_MAX_INPUT_MB` mebibytes when set,
/// else [`DEFAULT_MAX_INPUT_BYTES`] (1 GiB). A larger file, or a device that never ends
/// (`/dev/zero`), is refused before it fills the memory.
pub fn max_input_bytes() -> u64 {
    std::env::var("HPCSCOPE_MAX_INPUT_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&v| v > 0)
        .map_or(DEFAULT_MAX_INPUT_BYTES, |mb| mb.saturating_mul(1 << 20))
}

/// Why an input file could not be read (see [`read_bytes`]).
#[derive(Debug)]
pub enum ReadError {
    /// The operating system refused (missing file, permission...).
    Io(std::io::Error),
    /// Larger than the bound ([`max_input_bytes`]); at least this many bytes.
    TooLarge(u64),
    /// A FIFO whose writer sent nothing within [`FIFO_WAIT`].
    NoWriter,
    /// A directory.
    Directory,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => match e.kind() {
                std::io::ErrorKind::NotFound => f.write_str("no such file"),
                std::io::ErrorKind::PermissionDenied => f.write_str("permission denied"),
                _ => write!(f, "{e}"),
            },
            ReadError::TooLarge(n) => write!(
                f,
                "larger than the input limit of {} MiB (read {} MiB and stopped); raise \
                 HPCSCOPE_MAX_INPUT_MB if the file is right",
                max_input_bytes() >> 20,
                n >> 20
            ),
            ReadError::NoWriter => write!(
                f,
                "a FIFO that no program wrote to within {} s",
                FIFO_WAIT.as_secs()
            ),
            ReadError::Directory => f.write_str("a directory, not a file"),
        }
    }
}

impl std::error::Error for ReadError {}

impl ReadError {
    /// The kind of the failure: a full disk or a permission is the environment; the rest is
    /// the input the user gave.
    pub fn kind(&self) -> crate::ErrorKind {
        match self {
            ReadError::Io(e) => crate::kind::io_kind(e),
            _ => crate::ErrorKind::Input,
        }
    }
}

/// Reads a whole file, bounded by [`max_input_bytes`], without blocking forever on a FIFO
/// nobody writes to (it waits [`FIFO_WAIT`] for the first bytes). Pipes and process
/// substitutions (`<(cmd)`) are read as they come.
pub fn read_bytes(p: &Path) -> std::result::Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let limit = max_input_bytes();
    let meta = std::fs::metadata(p).map_err(ReadError::Io)?;
    if meta.is_dir() {
        return Err(ReadError::Directory);
    }
    if meta.is_file() && meta.len() > limit {
        return Err(ReadError::TooLarge(meta.len()));
    }
    let file = open_for_reading(p, &meta)?;
    let mut buf = Vec::with_capacity(if meta.is_file() {
        meta.len() as usize
    } else {
        0
    });
    file.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(ReadError::Io)?;
    if buf.len() as u64 > limit {
        return Err(ReadError::TooLarge(buf.len() as u64));
    }
    Ok(buf)
}

#[cfg(unix)]
fn open_for_reading(
    p: &Path,
    meta: &std::fs::Metadata,
) -> std::result::Result<std::fs::File, ReadError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    if !meta.file_type().is_fifo() {
        return std::fs::File::open(p).map_err(ReadError::Io);
    }
    // A named FIFO: opening it blocks until a writer opens it, maybe never. Open without
    // blocking, wait for data (or the writer's end) up to FIFO_WAIT, then read normally.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(p)
        .map_err(ReadError::Io)?;
    let start = std::time::Instant::now();
    loop {
        let mut pfd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&f),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut pfd, 1, 100) };
        if r > 0 && pfd.revents & (libc::POLLIN | libc::POLLHUP) != 0 {
            break;
        }
        if start.elapsed() >= FIFO_WAIT {
            return Err(ReadError::NoWriter);
        }
    }
    // Back to blocking reads for the rest of the stream.
    let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    Ok(f)
}

#[cfg(not(unix))]
fn open_for_reading(
    p: &Path,
    _meta: &std::fs::Metadata,
) -> std::result::Result<std::fs::File, ReadError> {
    std::fs::File::open(p).map_err(ReadError::Io)
}

/// Text from the bytes of a file: UTF-8, with a leading byte-order mark dropped (as every
/// format hpcscope reads treats it). The error says where the first bad byte is.
pub fn text(bytes: Vec<u8>) -> std::result::Result<String, String> {
    match String::from_utf8(bytes) {
        Ok(mut s) => {
            if s.starts_with('\u{feff}') {
                s.drain(..3);
            }
            Ok(s)
        }
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let b = e.as_bytes();
            let line = b[..at].iter().filter(|&&c| c == b'\n').count() + 1;
            Err(format!(
                "not UTF-8 text: byte 0x{:02x} at line {line} (byte offset {at}) is not valid UTF-8",
                b[at]
            ))
        }
    }
}

/// Reads a whole text file (bounded, see [`read_bytes`]; see [`text`]); the error says what
/// the file was for (`what`) and how to fix it.
pub fn read(p: &Path, what: &str, fix: &str) -> Result<String> {
    let e = |msg: String| -> crate::Error {
        InputError::new(
            p.display().to_string(),
            "",
            format!("cannot read {what}: {msg}"),
            fix,
        )
        .into()
    };
    let bytes = read_bytes(p).map_err(|r| e(r.to_string()))?;
    text(bytes).map_err(e)
}

/// `arg` resolved against `base` (the directory of the file that names it), unless absolute.
pub fn rel(base: &Path, arg: &str) -> PathBuf {
    let p = Path::new(arg);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_ids_files_and_errors() {
        assert_eq!(machine("thunderx2").unwrap().id, "thunderx2");
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("m.toml");
        std::fs::write(&f, library::builtin("a64fx").unwrap().to_toml_string()).unwrap();
        assert_eq!(machine(&f.display().to_string()).unwrap().id, "a64fx");
        assert_eq!(machine_rel("m.toml", d.path()).unwrap().id, "a64fx");
        let e = machine("no/such.toml").unwrap_err().to_string();
        assert!(e.contains("no such file") && e.contains("fix:"), "{e}");
        let e = profile(&d.path().join("p.json")).unwrap_err().to_string();
        assert!(e.contains("cannot read profile"), "{e}");
        assert_eq!(rel(Path::new("/a"), "b"), Path::new("/a/b"));
        assert_eq!(rel(Path::new("/a"), "/b"), Path::new("/b"));
    }
}
