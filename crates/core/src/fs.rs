//! Writing result files so that nothing is ever half-written, and nothing is replaced that
//! should be written through.
//!
//! Where a result goes is decided once, by [`Destination::of`]:
//!
//! * `-` is standard output;
//! * a symbolic link is followed (through any number of links, even to a file that does not
//!   exist yet), and the file it points to is replaced atomically: the link stays a link, as
//!   with `cp` and editors;
//! * a special file (a character or block device such as `/dev/null`, a FIFO, a socket) and a
//!   descriptor path (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`) are written through,
//!   never replaced;
//! * a regular file (existing or new) is replaced atomically: a temporary file in the same
//!   directory, flushed to disk, then renamed over it.
//!
//! A missing directory is an error that names the directory ([`MissingDirectory`]); it is an
//! environment limit (exit 3), as a full disk or a read-only directory is.
//!
//! An output never replaces what the command reads, nor another of its outputs: a set of
//! [`Outputs`] refuses a regular file that is the same file (the same device and inode, so a
//! hard link, a symbolic link or another spelling of the name is caught) as one of the
//! command's inputs ([`Outputs::reading`], [`note_input`]) or as another file of the set,
//! before anything is written ([`SameFile`], bad input: exit 2).

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The directory an output file would go into does not exist. Carried inside the
/// [`std::io::Error`] (kind `NotFound`) that [`write_atomic`] returns, so that
/// [`crate::kind::io_kind`] classifies it as an environment limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingDirectory {
    /// The directory.
    pub dir: PathBuf,
}

impl fmt::Display for MissingDirectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the directory '{}' does not exist: create it first (mkdir -p '{}') or write elsewhere",
            self.dir.display(),
            self.dir.display()
        )
    }
}

impl std::error::Error for MissingDirectory {}

/// An output that is the same file as an input of the command or as another of its outputs:
/// writing it would destroy the other. Carried inside the [`std::io::Error`] (kind
/// `InvalidInput`, bad input) that [`Outputs::add`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SameFile {
    /// The output, as given.
    pub output: PathBuf,
    /// The input or the other output, as given.
    pub other: PathBuf,
    /// Whether `other` is an input (else an output of the same command).
    pub input: bool,
}

impl fmt::Display for SameFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let output = std::path::absolute(&self.output).unwrap_or_else(|_| self.output.clone());
        let same = if self.output == self.other || output == self.other {
            String::new()
        } else {
            format!(" '{}'", self.other.display())
        };
        if self.input {
            write!(
                f,
                "'{}' is the same file as the input{same} of this command: writing the \
                 result there would replace it; nothing was written, give another output file",
                self.output.display()
            )
        } else {
            write!(
                f,
                "'{}' is the same file as another output{same} of this command: one would \
                 replace the other; nothing was written, give each output its own file",
                self.output.display()
            )
        }
    }
}

impl std::error::Error for SameFile {}

/// The files this process read as inputs (see [`note_input`]).
static INPUTS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Notes `path` as an input of this process: the result of a command ([`Outputs::reading`]
/// with [`inputs`]) must not replace it. The bounded reader
/// ([`crate::load::read_bytes`]) notes every regular file it reads; a command notes the
/// inputs it opens otherwise (a database, a program).
pub fn note_input(path: &Path) {
    let p = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut v = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    if !v.contains(&p) {
        v.push(p);
    }
}

/// The inputs this process noted so far ([`note_input`]), absolute.
pub fn inputs() -> Vec<PathBuf> {
    INPUTS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// What makes two paths the same file: the device and inode of an existing file; the
/// canonical directory and name of one not created yet.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileId {
    Inode(u64, u64),
    New(PathBuf),
}

/// The identity of the regular file `path` names (through its links), `None` for a special
/// file or one that cannot be looked at (the write itself then says why).
fn file_id(path: &Path) -> Option<FileId> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                Some(FileId::Inode(m.dev(), m.ino()))
            }
            #[cfg(not(unix))]
            {
                std::fs::canonicalize(path).ok().map(FileId::New)
            }
        }
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = std::fs::canonicalize(parent_dir(path)).ok()?;
            Some(FileId::New(dir.join(path.file_name()?)))
        }
        Err(_) => None,
    }
}

/// Where bytes for a path go (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Standard output (`-`).
    Stdout,
    /// An open descriptor of this process (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`):
    /// written at its current offset, as a shell redirection left it.
    Descriptor(i32),
    /// A special file (device, FIFO): opened for writing and written through.
    Special(PathBuf),
    /// A regular file, existing or not (the final target of any symbolic links): replaced
    /// atomically.
    File(PathBuf),
}

/// Links followed at most before giving up (as the kernel's `ELOOP`).
const MAX_LINKS: usize = 40;

impl Destination {
    /// Decides where `path` writes to. Fails on a link loop and on a directory.
    pub fn of(path: &Path) -> std::io::Result<Destination> {
        if path.as_os_str() == "-" {
            return Ok(Destination::Stdout);
        }
        let mut p = path.to_path_buf();
        for _ in 0..=MAX_LINKS {
            if let Some(fd) = descriptor_of(&p) {
                return Ok(Destination::Descriptor(fd));
            }
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_symlink() => {
                    let t = std::fs::read_link(&p)?;
                    p = if t.is_absolute() {
                        t
                    } else {
                        p.parent().unwrap_or(Path::new("")).join(t)
                    };
                }
                Ok(m) if m.is_dir() => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::IsADirectory,
                        format!(
                            "'{}' is a directory: give a file name inside it",
                            path.display()
                        ),
                    ));
                }
                Ok(m) if m.is_file() => return Ok(Destination::File(p)),
                Ok(_) => return Ok(Destination::Special(p)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(Destination::File(p));
                }
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "'{}': more than {MAX_LINKS} symbolic links (a loop?)",
                path.display()
            ),
        ))
    }
}

/// The descriptor number a path names, when it names one of this process's descriptors
/// (`/dev/stdin|stdout|stderr`, `/dev/fd/N`, `/proc/self/fd/N`, `/proc/PID/fd/N` of this
/// process).
fn descriptor_of(p: &Path) -> Option<i32> {
    let s = p.to_str()?;
    match s {
        "/dev/stdin" => return Some(0),
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => {}
    }
    let own = format!("/proc/{}/fd/", std::process::id());
    let n = s
        .strip_prefix("/dev/fd/")
        .or_else(|| s.strip_prefix("/proc/self/fd/"))
        .or_else(|| s.strip_prefix("/proc/thread-self/fd/"))
        .or_else(|| s.strip_prefix(own.as_str()))?;
    n.parse().ok()
}

/// Checks, before a long command runs, that `path` can be written when it is done: its
/// directory exists and takes new files (a read-only or immutable directory, a read-only
/// file system fail here), and it is not a directory. Special files and standard output are
/// not checked (a FIFO is opened only when the result is ready).
pub fn preflight(path: &Path) -> std::io::Result<()> {
    match Destination::of(path)? {
        Destination::File(target) => {
            let dir = parent_dir(&target);
            if !dir.is_dir() {
                return Err(missing_dir(dir));
            }
            // A temporary file, created and removed: what the real write will need.
            tempfile::Builder::new()
                .prefix(&format!(
                    "{TEMP_PREFIX}{}-{}.",
                    host_tag(),
                    std::process::id()
                ))
                .suffix(".tmp")
                .tempfile_in(dir)
                .map(drop)
        }
        _ => Ok(()),
    }
}

/// Writes `contents` to `path` (see the module documentation): standard output for `-`,
/// through a special file or descriptor, else atomically: an interrupted or failed write
/// leaves the file as it was (absent, or its old contents) and no temporary file behind.
///
/// Permissions of a new file are those of an ordinary new file: `0666` less the process
/// umask (usually `0644`), or, when the file already exists, its current mode, so rewriting a
/// file someone made group-writable or private keeps it that way.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut set = Outputs::new();
    set.add(path, contents.to_vec())?;
    set.commit()
}

/// Several output files written together: every regular file is first written to its
/// temporary file (so a missing directory, a full disk or a permission problem with any of
/// them fails before any is in place), then all are put in place. A failure before
/// [`Outputs::commit`] leaves nothing behind.
///
/// No two files of a set are the same file, and none is one of the inputs the set was
/// given ([`Outputs::reading`]): [`Outputs::add`] refuses it ([`SameFile`]).
#[derive(Default)]
pub struct Outputs {
    staged: Vec<Staged>,
    /// Files no output may be.
    inputs: Vec<PathBuf>,
    /// The identity and name of each regular file staged.
    taken: Vec<(FileId, PathBuf)>,
}

enum Staged {
    Direct(Destination, Vec<u8>),
    File(tempfile::NamedTempFile, PathBuf),
}

impl Outputs {
    /// An empty set.
    pub fn new() -> Outputs {
        Outputs::default()
    }

    /// An empty set whose files may not be any of `inputs` (the files the command read:
    /// [`inputs`] and its own).
    pub fn reading<P: AsRef<Path>>(inputs: impl IntoIterator<Item = P>) -> Outputs {
        Outputs {
            inputs: inputs
                .into_iter()
                .map(|p| p.as_ref().to_path_buf())
                .collect(),
            ..Outputs::default()
        }
    }

    /// Also refuses the files `outputs` (the outputs of the command already written by other
    /// sets): each is another output of the same command.
    pub fn written_before<P: AsRef<Path>>(mut self, outputs: impl IntoIterator<Item = P>) -> Self {
        for p in outputs {
            let p = p.as_ref();
            if let Some(id) = Destination::of(p).ok().and_then(|d| match d {
                Destination::File(t) => file_id(&t),
                _ => None,
            }) {
                self.taken.push((id, p.to_path_buf()));
            }
        }
        self
    }

    /// Stages `contents` for `path`: a regular file's temporary file is written and flushed
    /// now; standard output, descriptors and special files are written at commit. Refuses
    /// ([`SameFile`]) a regular file that is one of the inputs or a file already staged.
    pub fn add(&mut self, path: &Path, contents: Vec<u8>) -> std::io::Result<()> {
        match Destination::of(path)? {
            Destination::File(target) => {
                if let Some(id) = file_id(&target) {
                    let same = |other: &Path, input: bool| {
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidInput,
                            SameFile {
                                output: path.to_path_buf(),
                                other: other.to_path_buf(),
                                input,
                            },
                        )
                    };
                    if let Some(i) = self
                        .inputs
                        .iter()
                        .find(|i| file_id(i).as_ref() == Some(&id))
                    {
                        return Err(same(i, true));
                    }
                    if let Some((_, o)) = self.taken.iter().find(|(t, _)| *t == id) {
                        return Err(same(o, false));
                    }
                    self.taken.push((id, path.to_path_buf()));
                }
                let tmp = stage_file(&target, &contents)?;
                self.staged.push(Staged::File(tmp, target));
            }
            d => self.staged.push(Staged::Direct(d, contents)),
        }
        Ok(())
    }

    /// Puts every staged output in place, in the order added.
    pub fn commit(self) -> std::io::Result<()> {
        for s in self.staged {
            match s {
                Staged::File(tmp, target) => {
                    tmp.persist(&target).map_err(|e| e.error)?;
                }
                Staged::Direct(d, bytes) => write_through(&d, &bytes)?,
            }
        }
        Ok(())
    }
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn missing_dir(dir: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::NotFound,
        MissingDirectory { dir: dir.into() },
    )
}

/// The temporary file of `target`, written and flushed.
fn stage_file(target: &Path, contents: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = parent_dir(target);
    if !dir.is_dir() {
        return Err(missing_dir(dir));
    }
    remove_stale_temporaries(dir);
    let mut builder = tempfile::Builder::new();
    let prefix = format!("{TEMP_PREFIX}{}-{}.", host_tag(), std::process::id());
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // The mode given to open(2) is reduced by the umask, as for any new file.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    if let Ok(meta) = std::fs::metadata(target) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

/// Temporary files of the atomic writer are `.hpcscope-HOST-PID.XXXXXX.tmp`.
const TEMP_PREFIX: &str = ".hpcscope-";

/// This host's name as it goes into a file name.
fn host_tag() -> String {
    let name = hpcscope_host::facts::hostname().unwrap_or_default();
    let tag: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if tag.is_empty() { "host".into() } else { tag }
}

/// Removes the temporary files of this writer that a killed process (of this host) left in
/// `dir`: a `kill -9` between the write and the rename cannot be caught, but the next write
/// into the directory cleans up after it.
fn remove_stale_temporaries(dir: &Path) {
    let mine = format!("{TEMP_PREFIX}{}-", host_tag());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(n) = name.to_str() else { continue };
        let Some(pid) = n
            .strip_prefix(&mine)
            .filter(|_| n.ends_with(".tmp"))
            .and_then(|r| r.split('.').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let r = unsafe { libc::kill(pid, 0) };
        if r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn write_through(d: &Destination, bytes: &[u8]) -> std::io::Result<()> {
    let r = match d {
        Destination::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes).and_then(|()| out.flush())
        }
        Destination::Descriptor(fd) => {
            if *fd == 1 {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes).and_then(|()| out.flush())
            } else {
                let mut f = descriptor_file(*fd)?;
                f.write_all(bytes)
            }
        }
        Destination::Special(p) => {
            let mut f = std::fs::OpenOptions::new().write(true).open(p)?;
            f.write_all(bytes)
        }
        Destination::File(p) => write_atomic(p, bytes),
    };
    match r {
        // A closed pipe (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// A duplicate of this process's descriptor `fd`, as a file.
#[cfg(unix)]
fn descriptor_file(fd: i32) -> std::io::Result<std::fs::File> {
    use std::os::fd::{BorrowedFd, OwnedFd};
    if !(0..=i32::MAX).contains(&fd) {
        return Err(std::io::Error::from_raw_os_error(9));
    }
    // fcntl(F_GETFD) through a duplicate: borrowing a closed descriptor number is safe to
    // try (the duplicate fails with EBADF), and the duplicate is ours to close.
    // SAFETY: the borrow lasts only for the duplication; an invalid number makes
    // `try_clone_to_owned` fail with EBADF rather than touch another file.
    let owned: OwnedFd = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?;
    Ok(std::fs::File::from(owned))
}

#[cfg(not(unix))]
fn descriptor_file(_fd: i32) -> std::io::Result<std::fs::File> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Writes `contents` to a new file `path`, atomically, without ever replacing a file of that
/// name: a temporary file in the same directory (named `.NAME.*.tmp`, so an interrupted
/// write can be told from other files), flushed to disk, then linked into place. Returns
/// `false`, and leaves the existing file alone, when `path` already exists.
pub fn write_new(path: &Path, contents: &[u8]) -> std::io::Result<bool> {
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(missing_dir(dir));
    }
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
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_contents_and_leaves_no_temporary_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(names(d.path()), vec!["out.json"]);
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
    fn a_missing_directory_is_an_environment_error_that_names_it_and_creates_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("no/such/dir/out.json");
        let e = write_atomic(&p, b"x").unwrap_err();
        assert!(!p.exists());
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        assert!(e.to_string().contains("no/such/dir") && e.to_string().contains("mkdir -p"));
        assert_eq!(crate::kind::io_kind(&e), crate::ErrorKind::Environment);
        let e = write_new(&p, b"x").unwrap_err();
        assert_eq!(crate::kind::io_kind(&e), crate::ErrorKind::Environment);
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_stays_a_link_and_its_target_is_replaced() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("real.txt");
        std::fs::write(&target, b"old").unwrap();
        let link = d.path().join("link.txt");
        std::os::unix::fs::symlink("real.txt", &link).unwrap();
        // A chain of two links, the second relative to the first's directory.
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let link2 = sub.join("link2.txt");
        std::os::unix::fs::symlink("../link.txt", &link2).unwrap();
        write_atomic(&link2, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            std::fs::symlink_metadata(&link2)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // A dangling link creates its target.
        let dangling = d.path().join("dangling");
        std::os::unix::fs::symlink("created.txt", &dangling).unwrap();
        write_atomic(&dangling, b"c").unwrap();
        assert_eq!(std::fs::read(d.path().join("created.txt")).unwrap(), b"c");
        // A loop is an error, not a hang.
        let a = d.path().join("a");
        let b = d.path().join("b");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", &b).unwrap();
        assert!(write_atomic(&a, b"x").is_err());
        assert_eq!(
            names(d.path()),
            vec![
                "a",
                "b",
                "created.txt",
                "dangling",
                "link.txt",
                "real.txt",
                "sub"
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn special_files_are_written_through_never_replaced() {
        // /dev/null stays a character device.
        write_atomic(Path::new("/dev/null"), b"discarded").unwrap();
        let m = std::fs::symlink_metadata("/dev/null").unwrap();
        assert!(m.file_type().is_char_device());
        // A FIFO stays a FIFO and its reader gets the bytes.
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { mkfifo(c.as_ptr(), 0o600) }, 0);
        let f2 = fifo.clone();
        let reader = std::thread::spawn(move || std::fs::read(&f2).unwrap());
        write_atomic(&fifo, b"through the fifo").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the fifo");
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        assert_eq!(names(d.path()), vec!["fifo"]);
        // A directory is refused with a clear message.
        let e = write_atomic(d.path(), b"x").unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }

    #[cfg(unix)]
    unsafe extern "C" {
        fn mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
    }

    #[test]
    fn descriptor_paths_and_dash_are_recognised() {
        assert_eq!(
            Destination::of(Path::new("-")).unwrap(),
            Destination::Stdout
        );
        assert_eq!(
            Destination::of(Path::new("/dev/stdout")).unwrap(),
            Destination::Descriptor(1)
        );
        assert_eq!(
            Destination::of(Path::new("/dev/fd/2")).unwrap(),
            Destination::Descriptor(2)
        );
        assert_eq!(
            Destination::of(Path::new("/proc/self/fd/7")).unwrap(),
            Destination::Descriptor(7)
        );
        assert_eq!(
            Destination::of(Path::new("out.json")).unwrap(),
            Destination::File("out.json".into())
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_descriptor_is_written_at_its_offset() {
        use std::os::fd::AsRawFd;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .unwrap();
        std::fs::write(&p, b"first\n").unwrap();
        let path = PathBuf::from(format!("/dev/fd/{}", f.as_raw_fd()));
        write_atomic(&path, b"second\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"first\nsecond\n");
        assert!(
            write_atomic(Path::new("/dev/fd/987654"), b"x").is_err(),
            "a closed descriptor is an error"
        );
    }

    #[test]
    fn temporaries_left_by_a_killed_writer_are_removed_by_the_next_write() {
        let d = tempfile::tempdir().unwrap();
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        let left = d
            .path()
            .join(format!("{TEMP_PREFIX}{}-{dead}.Xy12Ab.tmp", host_tag()));
        std::fs::write(&left, b"half of a res").unwrap();
        // Another host's, or a live process's: kept.
        let other = d.path().join(".hpcscope-otherhost-1.Ab12Cd.tmp");
        std::fs::write(&other, b"x").unwrap();
        write_atomic(&d.path().join("out.json"), b"{}").unwrap();
        assert_eq!(
            names(d.path()),
            vec![".hpcscope-otherhost-1.Ab12Cd.tmp", "out.json"]
        );
    }

    #[test]
    fn preflight_finds_a_missing_directory_and_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        assert!(preflight(&d.path().join("nodir/x.toml")).is_err());
        preflight(&d.path().join("x.toml")).unwrap();
        preflight(Path::new("-")).unwrap();
        assert!(preflight(d.path()).is_err());
        assert!(names(d.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn an_output_that_is_an_input_or_another_output_is_refused_and_nothing_is_written() {
        let d = tempfile::tempdir().unwrap();
        let input = d.path().join("runs.db");
        std::fs::write(&input, b"SQLite format 3\0 the runs").unwrap();
        let hard = d.path().join("hard.db");
        std::fs::hard_link(&input, &hard).unwrap();
        let soft = d.path().join("soft.db");
        std::os::unix::fs::symlink("runs.db", &soft).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let spelled = d.path().join("sub/../runs.db");
        for out in [&input, &hard, &soft, &spelled] {
            let mut set = Outputs::reading([&input]);
            let e = set.add(out, b"csv".to_vec()).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
            assert_eq!(crate::kind::io_kind(&e), crate::ErrorKind::Input);
            let same = e.get_ref().unwrap().downcast_ref::<SameFile>().unwrap();
            assert!(same.input && same.other == input, "{same:?}");
            assert!(e.to_string().contains("same file as the input"), "{e}");
        }
        // The input given through a link is found too.
        let mut set = Outputs::reading([&soft]);
        assert!(set.add(&hard, b"x".to_vec()).is_err());
        // Two outputs naming one file, existing or not: the second is refused.
        for name in ["chart.svg", "runs.db"] {
            let p = d.path().join(name);
            let mut set = Outputs::new();
            set.add(&p, b"<svg/>".to_vec()).unwrap();
            let e = set.add(&d.path().join(format!("sub/../{name}")), b"x".to_vec());
            let e = e.unwrap_err();
            assert!(e.to_string().contains("same file as another output"), "{e}");
        }
        // Special files are written through, never replaced: not refused.
        let mut set = Outputs::reading(["/dev/null"]);
        set.add(Path::new("/dev/null"), b"x".to_vec()).unwrap();
        set.add(Path::new("/dev/null"), b"y".to_vec()).unwrap();
        set.commit().unwrap();
        // Another file is fine; nothing else was written, the input is intact.
        let mut set = Outputs::reading([&input]);
        set.add(&d.path().join("runs.csv"), b"csv".to_vec())
            .unwrap();
        set.commit().unwrap();
        assert_eq!(
            std::fs::read(&input).unwrap(),
            b"SQLite format 3\0 the runs"
        );
        assert_eq!(
            names(d.path()),
            vec!["hard.db", "runs.csv", "runs.db", "soft.db", "sub"]
        );
    }

    #[test]
    fn noted_inputs_are_absolute_and_listed_once() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("noted.toml");
        note_input(&p);
        note_input(&p);
        assert_eq!(inputs().iter().filter(|i| **i == p).count(), 1);
        note_input(Path::new("relative-noted.toml"));
        assert!(inputs().iter().all(|i| i.is_absolute()));
    }

    #[test]
    fn a_set_of_outputs_fails_before_any_is_written() {
        let d = tempfile::tempdir().unwrap();
        let svg = d.path().join("chart.svg");
        let mut set = Outputs::new();
        set.add(&svg, b"<svg/>".to_vec()).unwrap();
        let e = set.add(&d.path().join("missing/out.json"), b"{}".to_vec());
        assert!(e.is_err());
        drop(set);
        assert!(names(d.path()).is_empty(), "{:?}", names(d.path()));
        let mut set = Outputs::new();
        set.add(&svg, b"<svg/>".to_vec()).unwrap();
        set.add(&d.path().join("out.json"), b"{}".to_vec()).unwrap();
        set.commit().unwrap();
        assert_eq!(names(d.path()), vec!["chart.svg", "out.json"]);
    }
}
