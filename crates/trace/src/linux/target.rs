//! Targets: a command launched stopped before `exec` (so no event is missed), a running PID
//! and its descendants, a cgroup v2 directory; and the user functions to probe in them.

use std::ffi::CString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::TraceError;
use crate::mpi::Flavor;
use crate::symbolize::ElfSymbols;
use crate::{Target, TraceOptions};

/// A command forked and held before `exec` until the probes are attached.
pub struct Launched {
    /// Its PID.
    pub pid: u32,
    /// The program as given (for messages).
    command: String,
    go_w: i32,
    err_r: i32,
    reaped: bool,
    signal: Option<i32>,
}

impl Launched {
    /// Finds the program on PATH first (as a shell does: [`resolve_program`]), then forks;
    /// the child waits for [`Launched::release`] and then executes it, so that the only
    /// `execve` the probes see is the one that runs the program. A file without the ELF
    /// magic or `#!` (ENOEXEC) is run by `/bin/sh`, as `execvp` does.
    /// With `quiet`, the program's standard output goes to /dev/null.
    pub fn fork_stopped(cmd: &[String], quiet: bool) -> Result<Launched, TraceError> {
        let Some(prog) = cmd.first() else {
            return Err(TraceError::Invalid("no command given after `--`".into()));
        };
        let path = resolve_program(prog)?;
        let nul = |_| TraceError::Invalid("a command argument contains a NUL byte".into());
        let exe = CString::new(path.as_os_str().as_encoded_bytes()).map_err(nul)?;
        let argv: Vec<CString> = cmd
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(nul)?;
        let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        // `sh PROGRAM ARGS...` for a file the kernel cannot execute itself.
        let sh = c"/bin/sh";
        let mut sh_ptrs: Vec<*const libc::c_char> = vec![sh.as_ptr(), exe.as_ptr()];
        sh_ptrs.extend(argv.iter().skip(1).map(|a| a.as_ptr()));
        sh_ptrs.push(std::ptr::null());
        let mut go = [0i32; 2];
        let mut err = [0i32; 2];
        // SAFETY: plain pipe2 calls into valid two-int arrays.
        unsafe {
            if libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) != 0
                || libc::pipe2(err.as_mut_ptr(), libc::O_CLOEXEC) != 0
            {
                return Err(TraceError::Io {
                    context: "creating a pipe".into(),
                    source: std::io::Error::last_os_error(),
                });
            }
        }
        let null = if quiet {
            hpcscope_host::child::null_for_child()
        } else {
            None
        };
        let null_fd = null.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
        // The traced command dies with hpcscope (a `kill -9` of `trace` or `profile` must not
        // leave it running, reparented to init): the parent's pid, taken before the fork.
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child only calls async-signal-safe functions (prctl, getppid, read,
        // dup2, execv, write, _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(TraceError::Spawn {
                command: prog.clone(),
                reason: format!("fork failed: {}", std::io::Error::last_os_error()),
            });
        }
        if pid == 0 {
            unsafe {
                hpcscope_host::child::in_child_after_fork(parent);
                libc::close(go[1]);
                libc::close(err[0]);
                let mut b = 0u8;
                let n = libc::read(go[0], &mut b as *mut u8 as *mut libc::c_void, 1);
                if n == 1 {
                    if let Some(fd) = null_fd {
                        hpcscope_host::child::stdout_to_in_child(fd);
                    }
                    libc::execv(exe.as_ptr(), ptrs.as_ptr());
                    let mut e = *libc::__errno_location();
                    if e == libc::ENOEXEC {
                        libc::execv(sh.as_ptr(), sh_ptrs.as_ptr());
                        e = *libc::__errno_location();
                    }
                    libc::write(err[1], &e as *const i32 as *const libc::c_void, 4);
                }
                libc::_exit(127);
            }
        }
        // SAFETY: closing our copies of the child's ends.
        unsafe {
            libc::close(go[0]);
            libc::close(err[1]);
        }
        Ok(Launched {
            pid: pid as u32,
            command: prog.clone(),
            go_w: go[1],
            err_r: err[0],
            reaped: false,
            signal: None,
        })
    }

    /// Lets the child execute; reports an `exec` failure (e.g. command not found).
    pub fn release(&mut self) -> Result<(), TraceError> {
        let mut e = 0i32;
        // SAFETY: fds owned by self; e is 4 writable bytes.
        let n = unsafe {
            libc::write(self.go_w, b"g".as_ptr() as *const libc::c_void, 1);
            libc::close(self.go_w);
            self.go_w = -1;
            let n = libc::read(self.err_r, &mut e as *mut i32 as *mut libc::c_void, 4);
            libc::close(self.err_r);
            self.err_r = -1;
            n
        };
        if n == 4 {
            self.wait_for(Duration::from_secs(1));
            return Err(spawn_error(
                &self.command,
                std::io::Error::from_raw_os_error(e),
            ));
        }
        Ok(())
    }

    /// Setup failed: the child exits without running the command.
    pub fn abandon(&mut self) {
        // SAFETY: closing our fds makes the child's read return 0; it then _exits.
        unsafe {
            if self.go_w >= 0 {
                libc::close(self.go_w);
                self.go_w = -1;
            }
        }
        self.wait_for(Duration::from_secs(1));
    }

    /// Exit code when the child has exited (`Some(None)` when killed by a signal).
    pub fn try_wait(&mut self) -> Option<Option<i32>> {
        if self.reaped {
            return Some(None);
        }
        let mut st = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(self.pid as i32, &mut st, libc::WNOHANG) };
        if r == self.pid as i32 {
            self.reaped = true;
            if libc::WIFSIGNALED(st) {
                self.signal = Some(libc::WTERMSIG(st));
            }
            return Some(if libc::WIFEXITED(st) {
                Some(libc::WEXITSTATUS(st))
            } else {
                None
            });
        }
        if r < 0 {
            self.reaped = true;
            return Some(None);
        }
        None
    }

    /// The signal that ended the command, once reaped (None when it exited normally).
    pub fn signal(&self) -> Option<i32> {
        self.signal
    }

    /// Waits up to `d` for the child; its exit code if it exited normally.
    pub fn wait_for(&mut self, d: Duration) -> Option<i32> {
        let t = Instant::now();
        loop {
            if let Some(c) = self.try_wait() {
                return c;
            }
            if t.elapsed() >= d {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Ends the command: it gets a moment to exit on its own (a terminal's Ctrl-C reaches
    /// it too), then `first` (the signal hpcscope got, or SIGTERM at the end of a
    /// `--duration`), then SIGTERM, then SIGKILL; its exit code if it exited normally.
    pub fn stop(&mut self, first: i32) -> Option<i32> {
        for (sig, wait_ms) in [
            (0, 300),
            (first, 1000),
            (libc::SIGTERM, 1000),
            (libc::SIGKILL, 1000),
        ] {
            if sig != 0 && !self.reaped {
                // SAFETY: signalling our own unreaped child.
                unsafe { libc::kill(self.pid as i32, sig) };
            }
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(wait_ms) {
                if let Some(c) = self.try_wait() {
                    return c;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        None
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        // SAFETY: closing fds we own (if still open).
        unsafe {
            if self.go_w >= 0 {
                libc::close(self.go_w);
            }
            if self.err_r >= 0 {
                libc::close(self.err_r);
            }
        }
    }
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified`
/// on hybrid systems).
pub fn cgroup2_root() -> PathBuf {
    std::fs::read_to_string("/proc/self/mounts")
        .ok()
        .and_then(|m| {
            m.lines().find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() > 2 && f[2] == "cgroup2").then(|| PathBuf::from(f[1]))
            })
        })
        .unwrap_or_else(|| PathBuf::from("/sys/fs/cgroup"))
}

/// The cgroup v2 id of a cgroup directory (its inode number), given as a path or relative
/// to the cgroup2 mount.
pub fn cgroup_id(p: &Path) -> Result<u64, TraceError> {
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cgroup2_root().join(p)
    };
    match std::fs::metadata(&full) {
        Ok(m) if m.is_dir() => Ok(m.ino()),
        _ => Err(TraceError::NoSuchCgroup(p.display().to_string())),
    }
}

/// `pid` and every live process descending from it.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parent: Vec<(u32, u32)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Ok(s) = std::fs::read_to_string(format!("/proc/{p}/stat"))
                && let Some((_, rest)) = s.rsplit_once(')')
                && let Some(pp) = rest.split_whitespace().nth(1).and_then(|x| x.parse().ok())
            {
                parent.push((p, pp));
            }
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let cur = out[i];
        for (p, pp) in &parent {
            if *pp == cur && !out.contains(p) {
                out.push(*p);
            }
        }
        i += 1;
    }
    out
}

/// A function to probe, resolved to a file.
#[derive(Debug, Clone)]
pub struct ResolvedFn {
    /// Symbol.
    pub symbol: String,
    /// ELF file holding it.
    pub path: PathBuf,
    /// Its file offset, where the uprobe goes (resolved once here: asking aya to find each
    /// symbol parses the whole library again, about half a second per function for libmpi).
    pub offset: u64,
    /// For an MPI function whose arguments give a message, what its probe reads of them.
    pub message: Option<MessageProbe>,
}

/// What the probe of a message-passing call reads at its entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageProbe {
    /// Argument with the element count (from 1).
    pub count_arg: u8,
    /// Argument with the datatype handle.
    pub dtype_arg: u8,
    /// The MPI library's kind of handles.
    pub flavor: Flavor,
}

const LIB_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu/openmpi/lib",
    "/usr/lib/x86_64-linux-gnu/mpich/lib",
    "/usr/lib64",
    "/lib64",
    "/usr/lib",
    "/usr/local/lib",
];

/// Finds a library by name (`libmpi`, `mpi`, `libgomp.so.1`) in LD_LIBRARY_PATH and the
/// usual directories.
pub fn find_library(name: &str) -> Option<PathBuf> {
    let base = lib_base(name);
    let mut dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    dirs.extend(LIB_DIRS.iter().map(PathBuf::from));
    find_library_in(&base, &dirs)
}

/// The first ELF file named `base` or `base.so*` in the first directory of `dirs` holding one.
fn find_library_in(base: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(d) else {
            continue;
        };
        let mut hits: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|f| f.to_str())
                    .map(|f| f == base || f.starts_with(&format!("{base}.so")))
                    .unwrap_or(false)
            })
            .collect();
        hits.sort();
        // Only ELF files: `libc.so` in a development directory is a linker script.
        if let Some(h) = hits.into_iter().find(|p| is_elf(p)) {
            return Some(std::fs::canonicalize(&h).unwrap_or(h));
        }
    }
    None
}

/// `libmpi` for `mpi` or `libmpi`; a full file name (`libgomp.so.1`) stays as it is.
fn lib_base(name: &str) -> String {
    if name.starts_with("lib") {
        name.to_string()
    } else {
        format!("lib{name}")
    }
}

/// Whether `path` starts with the ELF magic number.
fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// The shared libraries `binary` loads, directly or through another library, as the
/// dynamic loader resolves them (`ldd`: DT_NEEDED, RUNPATH, LD_LIBRARY_PATH and the loader
/// cache): (soname, path). Empty for a script, a static binary, or when `ldd` is missing.
pub fn linked_libraries(binary: &Path) -> Vec<(String, PathBuf)> {
    match std::process::Command::new("ldd")
        .arg(binary)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    {
        Ok(out) => parse_ldd(&String::from_utf8_lossy(&out.stdout)),
        Err(_) => Vec::new(),
    }
}

/// The library named `base` (`libmpi`, `libgomp`) that `binary` loads (see
/// [`linked_libraries`]); `libmpi` matches `libmpi.so.40`, not `libmpi_mpifh.so.40`.
pub fn linked_library(binary: &Path, base: &str) -> Option<PathBuf> {
    pick(&linked_libraries(binary), base)
}

fn pick(libs: &[(String, PathBuf)], base: &str) -> Option<PathBuf> {
    let want = format!("{base}.so");
    libs.iter()
        .find(|(n, _)| n.starts_with(&want))
        .map(|(_, p)| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
}

/// The `name => path` lines of `ldd` output.
fn parse_ldd(text: &str) -> Vec<(String, PathBuf)> {
    text.lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" => ")?;
            let path = rest.rsplit_once(" (").map_or(rest, |(p, _)| p).trim();
            path.starts_with('/')
                .then(|| (name.to_string(), PathBuf::from(path)))
        })
        .collect()
}

/// The functions an ELF file imports (its undefined dynamic symbols).
fn imports(path: &Path) -> Vec<String> {
    use object::{Object, ObjectSymbol};
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return Vec::new();
    };
    file.dynamic_symbols()
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect()
}

/// Of `known`, the MPI functions that `binary` or one of its other libraries imports
/// (`PMPI_X` counts as `MPI_X`, the same code). Every uprobe costs about 0.1 s of kernel
/// time to remove, so only the functions the program can call are probed.
fn mpi_functions_called(
    binary: &Path,
    libs: &[(String, PathBuf)],
    libmpi: &Path,
    known: &[&str],
) -> Vec<String> {
    let mut called = std::collections::BTreeSet::new();
    let files = std::iter::once(binary.to_path_buf()).chain(
        libs.iter()
            .map(|(_, p)| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
            .filter(|p| p != libmpi),
    );
    for f in files {
        for name in imports(&f) {
            let name = name.strip_prefix('P').unwrap_or(&name).to_string();
            if known.contains(&name.as_str()) {
                called.insert(name);
            }
        }
    }
    known
        .iter()
        .filter(|k| called.contains(**k))
        .map(|k| k.to_string())
        .collect()
}

/// The file `prog` names, found as a shell (and `execvp`) finds it: as given when it
/// contains a `/`, else the first executable file of that name in the PATH directories
/// (an empty entry is the current directory).
pub fn resolve_program(prog: &str) -> Result<PathBuf, TraceError> {
    resolve_in(prog, std::env::var_os("PATH").as_deref())
}

fn resolve_in(prog: &str, path: Option<&std::ffi::OsStr>) -> Result<PathBuf, TraceError> {
    use hpcscope_host::tools::ProgramError;
    hpcscope_host::tools::find_program_in(prog, path).map_err(|e| match e {
        ProgramError::Empty => TraceError::Invalid("the command is an empty string".into()),
        ProgramError::Path(e) => spawn_error(prog, e),
        ProgramError::NotExecutable(p) => TraceError::Spawn {
            command: prog.to_string(),
            reason: format!(
                "{} is not executable; make it executable (chmod +x {})",
                p.display(),
                p.display()
            ),
        },
        ProgramError::NotFound(path) => TraceError::Spawn {
            command: prog.to_string(),
            reason: format!(
                "no such program in PATH ({path}); check the spelling, or give its path (./{prog} for one in this directory)"
            ),
        },
    })
}

/// The error for a program that cannot be run, with what to do about it.
fn spawn_error(prog: &str, e: std::io::Error) -> TraceError {
    let reason = match e.raw_os_error() {
        Some(libc::ENOENT) => "no such file; check the path".to_string(),
        Some(libc::EACCES) => {
            format!("permission denied; make it executable (chmod +x {prog})")
        }
        Some(libc::EISDIR) => "it is a directory; give the program inside it".to_string(),
        Some(libc::ENOEXEC) => {
            "not a program this machine can run (an executable of another architecture?)"
                .to_string()
        }
        _ => e.to_string(),
    };
    TraceError::Spawn {
        command: prog.to_string(),
        reason,
    }
}

/// MPI calls probed by `--mpi`: start-up and shut-down, point-to-point, completion and
/// collectives (28 of the 32 probe slots; `MPI_Test*` and `MPI_Iprobe` are left out, as
/// polling loops call them millions of times and a probe costs about a microsecond).
pub const MPI_FUNCTIONS: &[&str] = &[
    "MPI_Init",
    "MPI_Init_thread",
    "MPI_Finalize",
    "MPI_Barrier",
    "MPI_Allreduce",
    "MPI_Reduce",
    "MPI_Bcast",
    "MPI_Send",
    "MPI_Ssend",
    "MPI_Recv",
    "MPI_Isend",
    "MPI_Irecv",
    "MPI_Probe",
    "MPI_Wait",
    "MPI_Waitall",
    "MPI_Waitany",
    "MPI_Waitsome",
    "MPI_Sendrecv",
    "MPI_Sendrecv_replace",
    "MPI_Alltoall",
    "MPI_Alltoallv",
    "MPI_Allgather",
    "MPI_Allgatherv",
    "MPI_Gather",
    "MPI_Gatherv",
    "MPI_Scatter",
    "MPI_Scatterv",
    "MPI_Reduce_scatter",
];

/// OpenMP runtime entry points probed by `--openmp` (GNU libgomp, then LLVM libomp): the
/// calls that fork a team and those that wait. Of these, only those the program imports are
/// probed when that can be told (else the first eight).
pub const OPENMP_FUNCTIONS: &[(&str, &str)] = &[
    ("libgomp", "GOMP_barrier"),
    ("libgomp", "GOMP_parallel"),
    ("libgomp", "GOMP_critical_start"),
    ("libgomp", "GOMP_single_start"),
    ("libgomp", "GOMP_taskwait"),
    ("libgomp", "GOMP_loop_end"),
    ("libomp", "__kmpc_barrier"),
    ("libomp", "__kmpc_fork_call"),
    ("libgomp", "GOMP_parallel_loop_static"),
    ("libgomp", "GOMP_parallel_loop_dynamic"),
    ("libgomp", "GOMP_parallel_loop_guided"),
    ("libgomp", "GOMP_parallel_loop_runtime"),
    ("libgomp", "GOMP_parallel_loop_nonmonotonic_dynamic"),
    ("libgomp", "GOMP_parallel_loop_nonmonotonic_guided"),
    ("libgomp", "GOMP_parallel_loop_maybe_nonmonotonic_runtime"),
    ("libgomp", "GOMP_parallel_sections"),
    ("libgomp", "GOMP_sections_end"),
    ("libgomp", "GOMP_critical_name_start"),
    ("libgomp", "GOMP_taskgroup_end"),
    ("libomp", "__kmpc_critical"),
    ("libomp", "__kmpc_omp_taskwait"),
];

/// Functions probed by `--openmp` when the program's imports cannot be read (a script, a
/// static build): the first entries of [`OPENMP_FUNCTIONS`].
const OPENMP_DEFAULT: usize = 8;

/// The traced program's file, as an absolute path (a uprobe's target must be one).
pub(crate) fn main_binary(opts: &TraceOptions) -> Result<PathBuf, TraceError> {
    match &opts.target {
        Target::Command(c) => {
            let p = c.first().ok_or_else(|| TraceError::Invalid("no command given".into()))?;
            resolve_program(p).map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        }
        Target::Pid(pid) => std::fs::read_link(format!("/proc/{pid}/exe")).map_err(|_| TraceError::NoSuchProcess(*pid)),
        _ => Err(TraceError::Invalid(
            "with a cgroup or system-wide target, name the binary of each function: --function BIN:SYMBOL".into(),
        )),
    }
}

/// Resolves `--function`, `--mpi` and `--openmp` to (symbol, file) pairs; a symbol that is
/// not in its binary is an error, a missing MPI/OpenMP runtime only a note.
pub fn resolve_functions(
    opts: &TraceOptions,
    notes: &mut Vec<String>,
) -> Result<Vec<ResolvedFn>, TraceError> {
    let mut out: Vec<ResolvedFn> = Vec::new();
    for spec in &opts.probes.functions {
        let path = match &spec.binary {
            None => main_binary(opts)?,
            Some(b) if b.contains('/') => PathBuf::from(b),
            // A library name: the one the traced program loads, else the first in the
            // library path.
            Some(b) => main_binary(opts)
                .ok()
                .and_then(|bin| linked_library(&bin, &lib_base(b)))
                .or_else(|| find_library(b))
                .ok_or_else(|| TraceError::BinaryNotFound(b.clone()))?,
        };
        if !path.is_file() {
            return Err(TraceError::BinaryNotFound(path.display().to_string()));
        }
        let syms = ElfSymbols::load(&path);
        if let Some(prefix) = spec.symbol.strip_suffix('*') {
            let names = syms.with_prefix(prefix);
            if names.is_empty() {
                return Err(TraceError::SymbolNotFound {
                    symbol: spec.symbol.clone(),
                    binary: path.display().to_string(),
                });
            }
            out.extend(names.into_iter().filter_map(|symbol| {
                syms.offset(&symbol).map(|offset| ResolvedFn {
                    symbol,
                    path: path.clone(),
                    offset,
                    message: None,
                })
            }));
        } else if let Some(offset) = syms.offset(&spec.symbol) {
            out.push(ResolvedFn {
                symbol: spec.symbol.clone(),
                path,
                offset,
                message: None,
            });
        } else {
            return Err(TraceError::SymbolNotFound {
                symbol: spec.symbol.clone(),
                binary: path.display().to_string(),
            });
        }
    }
    if opts.probes.mpi {
        // The libmpi the program itself loads (its DT_NEEDED, resolved by the dynamic
        // loader's rules), else the first one in the usual directories.
        let bin = main_binary(opts).ok();
        let libs = bin.as_deref().map(linked_libraries).unwrap_or_default();
        let lib = match (pick(&libs, "libmpi"), &bin) {
            (Some(lib), Some(bin)) => {
                let called = mpi_functions_called(bin, &libs, &lib, MPI_FUNCTIONS);
                notes.push(format!(
                    "--mpi: probing {} (linked by {}): {}",
                    lib.display(),
                    bin.display(),
                    if called.is_empty() {
                        format!("the {} MPI functions hpcscope knows", MPI_FUNCTIONS.len())
                    } else {
                        format!(
                            "the {} it calls of the {} hpcscope knows",
                            called.len(),
                            MPI_FUNCTIONS.len()
                        )
                    }
                ));
                Some((lib, called))
            }
            _ => find_library("libmpi").map(|lib| {
                notes.push(format!(
                    "--mpi: the program does not link libmpi itself (a script or a static \
                     build?); probing {}, the first libmpi in LD_LIBRARY_PATH and the usual \
                     directories",
                    lib.display()
                ));
                (lib, Vec::new())
            }),
        };
        match lib {
            Some((lib, called)) => {
                let syms = ElfSymbols::load(&lib);
                out.extend(
                    MPI_FUNCTIONS
                        .iter()
                        .filter(|s| called.is_empty() || called.iter().any(|c| c == *s))
                        .filter_map(|s| {
                            syms.offset(s).map(|offset| ResolvedFn {
                                symbol: s.to_string(),
                                path: lib.clone(),
                                offset,
                                message: None,
                            })
                        }),
                );
            }
            None => notes.push("--mpi: no libmpi found (LD_LIBRARY_PATH and the usual directories); MPI calls not probed".into()),
        }
    }
    if opts.probes.openmp {
        openmp_functions(opts, &mut out, notes);
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert((f.symbol.clone(), f.path.clone())));
    add_message_probes(&mut out, notes);
    if out.len() > crate::linux::abi::UPROBE_SLOTS {
        return Err(TraceError::Invalid(format!(
            "{} functions to probe; at most {} at once",
            out.len(),
            crate::linux::abi::UPROBE_SLOTS
        )));
    }
    Ok(out)
}

/// The file a USDT probe or listing names: a path (with a `/`), a library name
/// (`libstdc++`: a name starting with `lib`, in the library path), or a program on PATH
/// (`python3.11`), each tried after the other when not found.
pub fn usdt_file(name: &str) -> Result<PathBuf, TraceError> {
    let program = || resolve_program(name).ok().filter(|p| p.is_file());
    let found = if name.contains('/') {
        Some(PathBuf::from(name)).filter(|p| p.is_file())
    } else if name.starts_with("lib") {
        find_library(name).or_else(program)
    } else {
        program().or_else(|| find_library(name))
    };
    found.ok_or_else(|| TraceError::BinaryNotFound(name.to_string()))
}

/// Resolves `--usdt`: each PROVIDER:NAME to the file holding it (the named binary, else the
/// traced program, then the libraries it loads), with its sites. A probe that is not found
/// is bad input, listing what the files hold.
pub fn resolve_usdt(opts: &TraceOptions) -> Result<Vec<crate::usdt::ResolvedUsdt>, TraceError> {
    let specs = &opts.probes.usdt;
    if specs.len() > crate::linux::abi::USDT_SLOTS {
        return Err(TraceError::Invalid(format!(
            "{} USDT probes asked for; at most {} at once",
            specs.len(),
            crate::linux::abi::USDT_SLOTS
        )));
    }
    let mut out = Vec::new();
    for spec in specs {
        let candidates: Vec<PathBuf> = match &spec.binary {
            // A library the program loads first, else as `usdt_file` finds it.
            Some(b) if !b.contains('/') => vec![
                main_binary(opts)
                    .ok()
                    .and_then(|bin| linked_library(&bin, &lib_base(b)))
                    .map_or_else(|| usdt_file(b), Ok)?,
            ],
            Some(b) => vec![usdt_file(b)?],
            None => {
                let bin = main_binary(opts).map_err(|_| {
                    TraceError::Invalid(format!(
                        "--usdt {spec}: with a cgroup or system-wide target, name the file that holds the probe: --usdt BINARY:{spec}"
                    ))
                })?;
                let mut c = vec![bin.clone()];
                c.extend(linked_libraries(&bin).into_iter().map(|(_, p)| p));
                c
            }
        };
        let r = crate::usdt::find(spec, &candidates)?;
        if let Some(site) = r
            .probe
            .sites
            .iter()
            .find(|s| s.semaphore != 0 && s.semaphore_offset.is_none())
        {
            return Err(TraceError::Invalid(format!(
                "USDT probe {} in {}: its semaphore at {:#x} is not in a loadable data segment of the file, so it cannot be raised; the note is corrupt or the file was rewritten",
                r.probe.id(),
                r.probe.binary.display(),
                site.semaphore
            )));
        }
        out.push(r);
    }
    Ok(out)
}

/// The probes of `--openmp`: the runtime's fork and wait calls the program imports (from
/// the libgomp or libomp it loads), and the program's outlined parallel regions (its
/// `._omp_fn.` or `omp_outlined` functions), within the probe slots left.
fn openmp_functions(opts: &TraceOptions, out: &mut Vec<ResolvedFn>, notes: &mut Vec<String>) {
    let bin = main_binary(opts).ok();
    let libs = bin.as_deref().map(linked_libraries).unwrap_or_default();
    let mut imported: std::collections::BTreeSet<String> = Default::default();
    if let Some(b) = &bin {
        imported.extend(imports(b));
    }
    for (_, p) in &libs {
        let base = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
        if !base.starts_with("libgomp") && !base.starts_with("libomp") {
            imported.extend(imports(p));
        }
    }
    let calls_any = OPENMP_FUNCTIONS.iter().any(|(_, s)| imported.contains(*s));
    let mut found = false;
    for lib in ["libgomp", "libomp"] {
        let Some(path) = pick(&libs, lib).or_else(|| find_library(lib)) else {
            continue;
        };
        let syms = ElfSymbols::load(&path);
        for (i, (l, s)) in OPENMP_FUNCTIONS.iter().enumerate() {
            let wanted = if calls_any {
                imported.contains(*s)
            } else {
                i < OPENMP_DEFAULT
            };
            if *l != lib || !wanted {
                continue;
            }
            if let Some(offset) = syms.offset(s) {
                found = true;
                out.push(ResolvedFn {
                    symbol: s.to_string(),
                    path: path.clone(),
                    offset,
                    message: None,
                });
            }
        }
    }
    if !found {
        notes.push("--openmp: neither libgomp nor libomp found; OpenMP runtime not probed".into());
        return;
    }
    let Some(bin) = bin else {
        notes.push("--openmp: no program to look for parallel regions in (a cgroup or the whole machine): the runtime calls are timed, the thread efficiency is not computed".into());
        return;
    };
    let syms = ElfSymbols::load(&bin);
    let mut regions: Vec<String> = syms
        .names()
        .filter(|n| crate::openmp::is_outlined(n))
        .map(str::to_string)
        .collect();
    regions.sort();
    let room = crate::linux::abi::UPROBE_SLOTS.saturating_sub(out.len());
    if regions.is_empty() {
        notes.push(format!(
            "--openmp: no outlined parallel region (GCC's `._omp_fn.`, Clang's `omp_outlined` functions) in {}: it is stripped, not an OpenMP program, or a launcher of one (trace the program itself, with OMP_NUM_THREADS in hpcscope's environment); the thread efficiency is not computed",
            bin.display()
        ));
    } else if regions.len() > room {
        notes.push(format!(
            "--openmp: {} outlined parallel regions in {} but room for {room} probes: the thread efficiency counts the regions probed ({}) and misses the others",
            regions.len(),
            bin.display(),
            regions[..room].join(", ")
        ));
        regions.truncate(room);
    }
    for r in regions {
        if let Some(offset) = syms.offset(&r) {
            out.push(ResolvedFn {
                symbol: r,
                path: bin.clone(),
                offset,
                message: None,
            });
        }
    }
}

/// Marks the MPI functions whose arguments give a message (see [`crate::mpi::MESSAGE_ARGS`])
/// in a library recognized as Open MPI or MPICH-like.
fn add_message_probes(fns: &mut [ResolvedFn], notes: &mut Vec<String>) {
    let mut flavors: std::collections::HashMap<PathBuf, Option<Flavor>> = Default::default();
    for f in fns.iter_mut() {
        let Some((count_arg, dtype_arg)) = crate::mpi::message_args(&f.symbol) else {
            continue;
        };
        let flavor = *flavors.entry(f.path.clone()).or_insert_with(|| {
            let fl = Flavor::detect(&ElfSymbols::load(&f.path));
            if fl.is_none() {
                notes.push(format!(
                    "message sizes not read: {} is neither Open MPI nor MPICH (nor of its ABI), so its datatype handles cannot be read",
                    f.path.display()
                ));
            }
            fl
        });
        f.message = flavor.map(|flavor| MessageProbe {
            count_arg,
            dtype_arg,
            flavor,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_name_finds_the_shared_object_not_a_linker_script() {
        let d = tempfile::tempdir().unwrap();
        // As in a development directory: libfoo.so is a linker script, libfoo.so.1 the ELF.
        std::fs::write(d.path().join("libfoo.so"), "GROUP ( libfoo.so.1 )\n").unwrap();
        std::fs::copy(
            std::env::current_exe().unwrap(),
            d.path().join("libfoo.so.1"),
        )
        .unwrap();
        std::fs::write(d.path().join("libfoobar.so.2"), "not this one").unwrap();
        let dirs = vec![d.path().join("missing"), d.path().to_path_buf()];
        assert_eq!(
            find_library_in("libfoo", &dirs),
            Some(d.path().join("libfoo.so.1").canonicalize().unwrap())
        );
        assert_eq!(lib_base("foo"), "libfoo");
        assert_eq!(find_library_in("libbar", &dirs), None);
    }

    #[test]
    fn programs_are_found_on_path_as_a_shell_finds_them() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        // In `a` a file that is not executable, in `b` the same name executable.
        std::fs::write(a.join("tool"), "#!/bin/sh\n").unwrap();
        std::fs::write(b.join("tool"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(b.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(a.join("plain"), "").unwrap();
        let path = std::env::join_paths([&a, &b]).unwrap();
        assert_eq!(resolve_in("tool", Some(&path)).unwrap(), b.join("tool"));
        // Only a non-executable one: say which file and how to fix it.
        let e = resolve_in("plain", Some(&path)).unwrap_err().to_string();
        assert!(
            e.contains("is not executable") && e.contains("chmod +x"),
            "{e}"
        );
        // None at all: the command, the PATH searched and the fix, once.
        let e = resolve_in("nosuchcmd", Some(&path))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cannot run `nosuchcmd`: no such program in PATH"),
            "{e}"
        );
        assert_eq!(e.matches("nosuchcmd").count(), 2, "{e}"); // the name and `./nosuchcmd`
        // A path is taken as given.
        let e = resolve_in("./no/such/file", Some(&path))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "cannot run `./no/such/file`: no such file; check the path"
        );
        assert_eq!(
            resolve_in(b.join("tool").to_str().unwrap(), None).unwrap(),
            b.join("tool")
        );
    }

    #[test]
    fn ldd_output_gives_the_library_itself() {
        let text = "\
\tlinux-vdso.so.1 (0x00007ffd6b5f7000)
\tlibmpi_mpifh.so.40 => /usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40 (0x00007f8a1c000000)
\tlibmpi.so.40 => /usr/lib/x86_64-linux-gnu/libmpi.so.40 (0x00007f8a1be00000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f8a1bc00000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f8a1c3d0000)
";
        let libs = parse_ldd(text);
        assert_eq!(libs.len(), 3);
        assert_eq!(
            libs.iter()
                .find(|l| l.0.starts_with("libmpi.so"))
                .unwrap()
                .1,
            PathBuf::from("/usr/lib/x86_64-linux-gnu/libmpi.so.40")
        );
        assert_eq!(pick(&libs, "libgomp"), None);
        assert!(parse_ldd("\tlibmpi.so.12 => not found\n").is_empty());
    }

    #[test]
    fn a_system_binary_links_libc() {
        let Some(ls) = resolve_program("ls").ok().filter(|p| p.is_file()) else {
            println!("skipping: no ls on PATH");
            return;
        };
        if resolve_program("ldd").is_err() {
            println!("skipping: no ldd on PATH");
            return;
        }
        let libc = linked_library(&ls, "libc").expect("ls links libc");
        // ls imports malloc from libc; of a list of names, only those it calls are kept.
        let libs = linked_libraries(&ls);
        let called = mpi_functions_called(&ls, &libs, &libc, &["malloc", "no_such_function"]);
        assert_eq!(called, ["malloc"]);
        assert!(libc.is_absolute() && libc.is_file(), "{}", libc.display());
        assert!(
            libc.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("libc"),
            "{}",
            libc.display()
        );
    }
}
