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

/// The environment variable that sets the bound on the size of an input file, in MiB.
pub const MAX_INPUT_VAR: &str = "HPCSCOPE_MAX_INPUT_MB";

/// How long reading a FIFO waits for its writer's first bytes.
pub const FIFO_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// A value of [`MAX_INPUT_VAR`] that is not a limit: the value and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLimit {
    /// The value as set (lossy when it is not UTF-8).
    pub value: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl std::fmt::Display for BadLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{MAX_INPUT_VAR}='{}' {}: give a whole number of MiB, 1 or more, digits only \
             ({MAX_INPUT_VAR}=4096 reads inputs up to 4 GiB), or unset it for the default \
             limit of {} MiB",
            self.value,
            self.why,
            DEFAULT_MAX_INPUT_BYTES >> 20
        )
    }
}

impl std::error::Error for BadLimit {}

impl crate::Classify for BadLimit {
    fn kind(&self) -> crate::ErrorKind {
        crate::ErrorKind::Input
    }
}

/// The limit, bytes, that a value of [`MAX_INPUT_VAR`] sets: a whole number of MiB, digits
/// only (no sign, space, fraction or exponent), at least 1. `0` is refused: no input is
/// empty of bytes, so a limit of 0 would refuse every file (unset the variable for the
/// default; there is no "no limit").
pub fn parse_max_input_mb(value: &str) -> std::result::Result<u64, BadLimit> {
    let bad = |why| BadLimit {
        value: value.to_string(),
        why,
    };
    if value.is_empty() {
        return Err(bad("is empty"));
    }
    if !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("is not a whole number of MiB"));
    }
    let mb: u64 = value.parse().map_err(|_| bad("is larger than any file"))?;
    if mb == 0 {
        return Err(bad("is 0, a limit that would refuse every input"));
    }
    mb.checked_mul(1 << 20)
        .ok_or_else(|| bad("is larger than any file"))
}

/// The bound on the size of any input file: `$HPCSCOPE_MAX_INPUT_MB` mebibytes when set
/// (see [`parse_max_input_mb`]; a value that is not a limit is an error, never ignored),
/// else [`DEFAULT_MAX_INPUT_BYTES`] (1 GiB). A larger file, or a device that never ends
/// (`/dev/zero`), is refused before it fills the memory.
pub fn max_input_bytes() -> std::result::Result<u64, BadLimit> {
    match std::env::var_os(MAX_INPUT_VAR) {
        None => Ok(DEFAULT_MAX_INPUT_BYTES),
        Some(v) => match v.to_str() {
            Some(s) => parse_max_input_mb(s),
            None => Err(BadLimit {
                value: v.to_string_lossy().into_owned(),
                why: "is not UTF-8",
            }),
        },
    }
}

/// Why an input file could not be read (see [`read_bytes`]).
#[derive(Debug)]
pub enum ReadError {
    /// The operating system refused (missing file, permission...).
    Io(std::io::Error),
    /// Larger than the bound ([`max_input_bytes`]).
    TooLarge {
        /// The bound, bytes.
        limit: u64,
        /// The size of a regular file (refused before any byte is read); `None` for a
        /// stream (a pipe, a device), refused once it passed the bound.
        size: Option<u64>,
    },
    /// `$HPCSCOPE_MAX_INPUT_MB` is not a limit.
    BadLimit(BadLimit),
    /// A FIFO whose writer sent nothing within [`FIFO_WAIT`].
    NoWriter,
    /// A directory.
    Directory,
    /// Not text (see [`read_text_bytes`]): what and where.
    NotText(String),
}

/// `n` bytes in MiB, as short as exact.
fn mib(n: u64) -> String {
    if n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => match e.kind() {
                std::io::ErrorKind::NotFound => f.write_str("no such file"),
                std::io::ErrorKind::PermissionDenied => f.write_str("permission denied"),
                _ => write!(f, "{e}"),
            },
            ReadError::TooLarge {
                limit,
                size: Some(size),
            } => write!(
                f,
                "{}, larger than the input limit of {} (nothing read); if the file is right, \
                 raise the limit: {MAX_INPUT_VAR}={}",
                mib(*size),
                mib(*limit),
                size.div_ceil(1 << 20)
            ),
            ReadError::TooLarge { limit, size: None } => write!(
                f,
                "larger than the input limit of {} (a stream: stopped reading past {}); if \
                 the input is right, raise {MAX_INPUT_VAR} (MiB)",
                mib(*limit),
                mib(*limit)
            ),
            ReadError::BadLimit(b) => write!(f, "{b}"),
            ReadError::NoWriter => write!(
                f,
                "a FIFO that no program wrote to within {} s",
                FIFO_WAIT.as_secs()
            ),
            ReadError::Directory => f.write_str("a directory, not a file"),
            ReadError::NotText(m) => f.write_str(m),
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
/// substitutions (`<(cmd)`) are read as they come. A regular file larger than the bound is
/// refused from its size, before any byte is read; a stream (a pipe, a device) as soon as
/// it passed the bound. The file is noted as an input of this process
/// ([`crate::fs::note_input`]), so that no output of the command replaces it.
pub fn read_bytes(p: &Path) -> std::result::Result<Vec<u8>, ReadError> {
    read_checked(p, |b, _| Ok(b.len()))
}

/// As [`read_bytes`], for a text file: refused as soon as a byte is not UTF-8 or is NUL (no
/// text format hpcscope reads holds one), so a binary file or a device such as `/dev/zero`
/// is refused at its first bytes, not after the whole limit was read.
pub fn read_text_bytes(p: &Path) -> std::result::Result<Vec<u8>, ReadError> {
    read_checked(p, check_text)
}

/// How much a stream is read at a time.
const CHUNK: usize = 1 << 16;

fn read_checked(
    p: &Path,
    check: impl FnMut(&[u8], usize) -> std::result::Result<usize, String>,
) -> std::result::Result<Vec<u8>, ReadError> {
    let limit = max_input_bytes().map_err(ReadError::BadLimit)?;
    read_limited(p, limit, check)
}

/// Reads `p` up to `limit` bytes, `check`ing the bytes as they come (it returns how far
/// they are checked).
fn read_limited(
    p: &Path,
    limit: u64,
    mut check: impl FnMut(&[u8], usize) -> std::result::Result<usize, String>,
) -> std::result::Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let meta = std::fs::metadata(p).map_err(ReadError::Io)?;
    if meta.is_dir() {
        return Err(ReadError::Directory);
    }
    if meta.is_file() {
        crate::fs::note_input(p);
        if meta.len() > limit {
            return Err(ReadError::TooLarge {
                limit,
                size: Some(meta.len()),
            });
        }
    }
    let mut file = open_for_reading(p, &meta)?.take(limit.saturating_add(1));
    let mut buf: Vec<u8> = Vec::with_capacity(if meta.is_file() {
        meta.len() as usize
    } else {
        0
    });
    let mut chunk = vec![0u8; CHUNK];
    // Bytes of `buf` already checked.
    let mut checked = 0;
    loop {
        let n = match file.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() as u64 > limit {
            return Err(ReadError::TooLarge { limit, size: None });
        }
        checked = check(&buf, checked).map_err(ReadError::NotText)?;
        if n == 0 {
            if checked < buf.len() {
                // A character cut by the end of the file.
                return Err(ReadError::NotText(not_utf8(&buf, checked)));
            }
            return Ok(buf);
        }
    }
}

/// Checks the bytes of `buf` from `from`: returns how far they are complete UTF-8 without
/// NUL (a character the next read may complete is left unchecked), or the error.
fn check_text(buf: &[u8], from: usize) -> std::result::Result<usize, String> {
    let part = &buf[from..];
    let ok = match std::str::from_utf8(part) {
        Ok(_) => part.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(e) => return Err(not_utf8(buf, from + e.valid_up_to())),
    };
    if let Some(i) = part[..ok].iter().position(|&b| b == 0) {
        return Err(not_text(
            buf,
            from + i,
            "a NUL byte: a binary file or a device, not text",
        ));
    }
    Ok(from + ok)
}

fn not_utf8(b: &[u8], at: usize) -> String {
    not_text(b, at, "not valid UTF-8")
}

fn not_text(b: &[u8], at: usize, what: &str) -> String {
    let line = b[..at].iter().filter(|&&c| c == b'\n').count() + 1;
    format!(
        "not UTF-8 text: byte 0x{:02x} at line {line} (byte offset {at}) is {what}",
        b[at]
    )
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
            Err(not_utf8(e.as_bytes(), at))
        }
    }
}

/// Loads the calibration at `p` (a file `validate --calibrate` wrote), or the bundled one.
pub fn calibration(p: Option<&Path>) -> Result<crate::point::Calibration> {
    match p {
        Some(p) => {
            let text = read(
                p,
                "calibration",
                "give a file written by hpcscope validate --calibrate",
            )?;
            crate::point::Calibration::from_toml_str(&text, &p.display().to_string())
        }
        None => Ok(crate::point::Calibration::bundled()),
    }
}

/// Reads a whole text file (bounded, see [`read_bytes`]; see [`text`]); the error says what
/// the file was for (`what`) and how to fix it.
pub fn read(p: &Path, what: &str, fix: &str) -> Result<String> {
    let e = |msg: String, fix: &str| -> crate::Error {
        InputError::new(
            p.display().to_string(),
            "",
            format!("cannot read {what}: {msg}"),
            fix,
        )
        .into()
    };
    let bytes = read_text_bytes(p).map_err(|r| match r {
        // These say their own fix (the limit to raise, the variable to correct).
        ReadError::TooLarge { .. } | ReadError::BadLimit(_) => e(r.to_string(), ""),
        r => e(r.to_string(), fix),
    })?;
    text(bytes).map_err(|m| e(m, fix))
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

    #[test]
    fn the_limit_is_a_positive_whole_number_of_mib_and_anything_else_is_refused() {
        assert_eq!(parse_max_input_mb("1"), Ok(1 << 20));
        assert_eq!(parse_max_input_mb("4096"), Ok(4096 << 20));
        assert_eq!(parse_max_input_mb("007"), Ok(7 << 20));
        for bad in [
            "0", "-1", "abc", "1e3", " 5", "5 ", "+5", "1.5", "", "5MB", "0x10",
        ] {
            let e = parse_max_input_mb(bad).unwrap_err();
            let m = e.to_string();
            assert!(
                m.starts_with(&format!("HPCSCOPE_MAX_INPUT_MB='{bad}' "))
                    && m.contains("whole number of MiB")
                    && m.contains("unset it"),
                "{m}"
            );
        }
        assert!(
            parse_max_input_mb("0")
                .unwrap_err()
                .why
                .contains("refuse every")
        );
        // Past what bytes can count.
        let e = parse_max_input_mb(&(u64::MAX >> 19).to_string()).unwrap_err();
        assert!(e.why.contains("larger than any file"), "{e}");
        let e = parse_max_input_mb("99999999999999999999999").unwrap_err();
        assert!(e.why.contains("larger than any file"), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn a_limit_is_accepted_exactly_when_it_is_digits_of_a_positive_number(v in "[-+ 0-9a-z.]{0,8}") {
            let digits = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
            match parse_max_input_mb(&v) {
                Ok(n) => {
                    proptest::prop_assert!(digits);
                    proptest::prop_assert_eq!(n, v.parse::<u64>().unwrap() << 20);
                    proptest::prop_assert!(n > 0);
                }
                Err(e) => {
                    proptest::prop_assert!(!digits || v.parse::<u64>().unwrap() == 0, "{}", e);
                    proptest::prop_assert_eq!(e.value, v);
                }
            }
        }
    }

    #[test]
    fn a_large_file_is_refused_from_its_size_and_a_stream_past_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let big = d.path().join("big.toml");
        // Sparse: 2 GiB that take no room, refused without being read.
        std::fs::File::create(&big)
            .unwrap()
            .set_len(2 << 30)
            .unwrap();
        let e = read_limited(&big, 1 << 20, |b, _| Ok(b.len())).unwrap_err();
        assert!(
            matches!(e, ReadError::TooLarge { size: Some(s), .. } if s == 2 << 30),
            "{e}"
        );
        let m = e.to_string();
        assert!(
            m.contains("2048 MiB, larger than the input limit of 1 MiB")
                && m.contains("HPCSCOPE_MAX_INPUT_MB=2048"),
            "{m}"
        );
        // A device that never ends: refused once past the limit, not after the whole of it.
        let e = read_limited(Path::new("/dev/zero"), 1 << 20, |b, _| Ok(b.len())).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { size: None, .. }), "{e}");
        // As text: refused at its first byte.
        let e = read_limited(Path::new("/dev/zero"), 1 << 40, check_text).unwrap_err();
        assert!(
            e.to_string()
                .contains("byte 0x00 at line 1 (byte offset 0)"),
            "{e}"
        );
        // Exactly at the limit is read; one byte more is not.
        let f = d.path().join("f.json");
        std::fs::write(&f, vec![b'x'; 1 << 20]).unwrap();
        assert_eq!(
            read_limited(&f, 1 << 20, check_text).unwrap().len(),
            1 << 20
        );
        std::fs::write(&f, vec![b'x'; (1 << 20) + 1]).unwrap();
        assert!(read_limited(&f, 1 << 20, check_text).is_err());
    }

    #[test]
    fn text_is_checked_as_it_comes_across_chunks() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("t.txt");
        // A character of two bytes cut by the boundary between two reads.
        let mut b = vec![b'a'; CHUNK - 1];
        b.extend("é".as_bytes());
        b.extend(b"\nz");
        std::fs::write(&f, &b).unwrap();
        assert_eq!(read_limited(&f, 1 << 20, check_text).unwrap(), b);
        // A bad byte after the first chunk: its line and offset.
        let mut b = vec![b'a'; CHUNK + 10];
        b[CHUNK] = b'\n';
        b[CHUNK + 5] = 0xff;
        std::fs::write(&f, &b).unwrap();
        let e = read_limited(&f, 1 << 20, check_text)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("byte 0xff at line 2 (byte offset {})", CHUNK + 5)),
            "{e}"
        );
        // A character cut by the end of the file.
        std::fs::write(&f, [b'a', 0xc3]).unwrap();
        let e = read_limited(&f, 1 << 20, check_text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("byte 0xc3 at line 1 (byte offset 1)"), "{e}");
        // Bytes, not text: NUL and all read.
        std::fs::write(&f, [0u8, 0xff, 1]).unwrap();
        assert_eq!(
            read_limited(&f, 10, |b, _| Ok(b.len())).unwrap(),
            [0, 0xff, 1]
        );
    }
}
