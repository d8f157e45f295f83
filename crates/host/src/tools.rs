//! Finding programs: like a shell does (`PATH`), and the tools hpcscope drives, each with
//! an `HPCSCOPE_*` variable that names it explicitly and wins over `PATH`.

use std::fmt;
use std::path::{Path, PathBuf};

/// Names the QEMU user-mode emulator explicitly (`hpcscope mix`, `doctor`).
pub const QEMU_ENV: &str = "HPCSCOPE_QEMU";
/// Names the hpcscope QEMU plugin library explicitly.
pub const PLUGIN_ENV: &str = "HPCSCOPE_QEMU_PLUGIN";

/// The first file called `name` in a directory of `PATH`.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The search path a shell uses when PATH is unset (glibc's `confstr(_CS_PATH)`).
pub const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// Whether `p` is a regular file this process may execute.
pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access() reads the NUL-terminated path only.
    p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
}

/// Why a program cannot be run.
#[derive(Debug)]
pub enum ProgramError {
    /// An empty name.
    Empty,
    /// A path (the name holds a `/`) that cannot be run: the OS error says why.
    Path(std::io::Error),
    /// A file of that name on PATH that is not executable.
    NotExecutable(PathBuf),
    /// Nothing of that name on PATH (the PATH searched).
    NotFound(String),
}

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgramError::Empty => f.write_str("the command is an empty string"),
            ProgramError::Path(e) => write!(f, "{e}"),
            ProgramError::NotExecutable(p) => write!(
                f,
                "{} is not executable; make it executable (chmod +x {})",
                p.display(),
                p.display()
            ),
            ProgramError::NotFound(path) => write!(
                f,
                "no such program in PATH ({path}); check the spelling, or give its path"
            ),
        }
    }
}

impl std::error::Error for ProgramError {}

/// The file `prog` names, found as a shell (and `execvp`) finds it: as given when it
/// contains a `/` (it must be an executable file), else the first executable file of that
/// name in the PATH directories (an empty entry is the current directory; PATH unset is
/// [`DEFAULT_PATH`]).
pub fn find_program(prog: &str) -> Result<PathBuf, ProgramError> {
    find_program_in(prog, std::env::var_os("PATH").as_deref())
}

/// [`find_program`] with `path` as PATH.
pub fn find_program_in(
    prog: &str,
    path: Option<&std::ffi::OsStr>,
) -> Result<PathBuf, ProgramError> {
    if prog.is_empty() {
        return Err(ProgramError::Empty);
    }
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        return match std::fs::metadata(&p) {
            Ok(m) if m.is_dir() => Err(ProgramError::Path(std::io::Error::from_raw_os_error(
                libc::EISDIR,
            ))),
            Ok(_) if !is_executable(&p) => Err(ProgramError::Path(
                std::io::Error::from_raw_os_error(libc::EACCES),
            )),
            Ok(_) => Ok(p),
            Err(e) => Err(ProgramError::Path(e)),
        };
    }
    let path = path.unwrap_or(std::ffi::OsStr::new(DEFAULT_PATH));
    let mut not_executable = None;
    for dir in std::env::split_paths(path) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let cand = dir.join(prog);
        if is_executable(&cand) {
            return Ok(cand);
        }
        if cand.is_file() && not_executable.is_none() {
            not_executable = Some(cand);
        }
    }
    Err(match not_executable {
        Some(p) => ProgramError::NotExecutable(p),
        None => ProgramError::NotFound(path.to_string_lossy().into_owned()),
    })
}

/// Resolves a program name like a shell does ([`find_program`]), `None` when it cannot be
/// run.
pub fn resolve_program(name: &str) -> Option<PathBuf> {
    find_program(name).ok()
}

/// Why a tool was not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The override variable names something that is not a file.
    BadOverride {
        /// The variable.
        var: String,
        /// Its value.
        value: String,
    },
    /// None of the names is on `PATH`.
    NotFound {
        /// The names looked for.
        names: Vec<String>,
    },
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::BadOverride { var, value } => write!(f, "{var}={value} is not a file"),
            ToolError::NotFound { names } => {
                write!(f, "{} is not on PATH", names.join(" or "))
            }
        }
    }
}

impl std::error::Error for ToolError {}

/// A tool: `$override_var` when set (it must name a file), else the first of `names` on
/// `PATH`.
pub fn find(names: &[&str], override_var: Option<&str>) -> Result<PathBuf, ToolError> {
    if let Some(var) = override_var
        && let Some(v) = std::env::var_os(var)
    {
        let p = PathBuf::from(&v);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(ToolError::BadOverride {
                var: var.to_string(),
                value: p.display().to_string(),
            })
        };
    }
    names
        .iter()
        .find_map(|n| on_path(n))
        .ok_or_else(|| ToolError::NotFound {
            names: names.iter().map(|s| s.to_string()).collect(),
        })
}

/// The QEMU user-mode emulator for `arch` (`x86_64`, `aarch64`): `$HPCSCOPE_QEMU`, else
/// `qemu-ARCH` or `qemu-ARCH-static` on `PATH`.
pub fn qemu(arch: &str) -> Result<PathBuf, ToolError> {
    let name = format!("qemu-{arch}");
    let stat = format!("{name}-static");
    find(&[&name, &stat], Some(QEMU_ENV))
}

/// The file name of the hpcscope QEMU plugin.
pub const PLUGIN_LIB: &str = "libhpcscope_qemu_plugin.so";

/// Where the plugin may be, in order, for an executable in `exe_dir`: beside it, in the
/// cargo target directory's `release` and `debug` (for tests in `target/debug/deps`), and
/// in an install prefix's `lib/hpcscope`.
pub fn plugin_candidates(exe_dir: &Path) -> Vec<PathBuf> {
    let mut candidates = vec![exe_dir.join(PLUGIN_LIB)];
    for up in [exe_dir.parent(), exe_dir.parent().and_then(Path::parent)]
        .into_iter()
        .flatten()
    {
        candidates.push(up.join("release").join(PLUGIN_LIB));
        candidates.push(up.join("debug").join(PLUGIN_LIB));
    }
    if let Some(prefix) = exe_dir.parent() {
        candidates.push(prefix.join("lib/hpcscope").join(PLUGIN_LIB));
    }
    candidates
}

/// The hpcscope QEMU plugin: `$HPCSCOPE_QEMU_PLUGIN`, else the first of
/// [`plugin_candidates`] of the running executable.
pub fn plugin() -> Result<PathBuf, ToolError> {
    if let Some(v) = std::env::var_os(PLUGIN_ENV) {
        let p = PathBuf::from(&v);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(ToolError::BadOverride {
                var: PLUGIN_ENV.into(),
                value: p.display().to_string(),
            })
        };
    }
    let exe = std::env::current_exe().ok();
    exe.as_deref()
        .and_then(Path::parent)
        .map(plugin_candidates)
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| ToolError::NotFound {
            names: vec![PLUGIN_LIB.into()],
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_like_resolution() {
        assert!(resolve_program("sh").is_some());
        assert_eq!(resolve_program("no-such-program-xyz"), None);
        assert_eq!(resolve_program("/no/such/file"), None);
        let e = find(&["no-such-tool-a", "no-such-tool-b"], None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no-such-tool-a or no-such-tool-b is not on PATH"
        );
        let c = plugin_candidates(Path::new("/x/target/debug/deps"));
        assert_eq!(c[0], Path::new("/x/target/debug/deps").join(PLUGIN_LIB));
        assert!(c.contains(&Path::new("/x/target/release").join(PLUGIN_LIB)));
    }
}
