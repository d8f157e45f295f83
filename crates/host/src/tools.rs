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

/// The QEMU user-mode emulator for `arch` (`x86_64`, `aarch64`), as [`emulator`] picks it.
pub fn qemu(arch: &str) -> Result<PathBuf, ToolError> {
    emulator(arch).map(|e| e.qemu)
}

/// `qemu-ARCH` or `qemu-ARCH-static` on `PATH` (or `$HPCSCOPE_QEMU`).
fn system_qemu(arch: &str) -> Result<PathBuf, ToolError> {
    let name = format!("qemu-{arch}");
    let stat = format!("{name}-static");
    find(&[&name, &stat], Some(QEMU_ENV))
}

/// The QEMU release `scripts/build-qemu.sh` builds (with plugins) into the cache directory.
pub const CACHED_QEMU_VERSION: &str = "10.0.2";

/// Where `scripts/build-qemu.sh` installs its emulators: `<cache>/qemu-10.0.2/bin`.
pub fn cached_qemu_dir() -> PathBuf {
    crate::dirs::cache_dir()
        .join(format!("qemu-{CACHED_QEMU_VERSION}"))
        .join("bin")
}

/// The cached QEMU for `arch`, when built.
pub fn cached_qemu(arch: &str) -> Option<PathBuf> {
    let p = cached_qemu_dir().join(format!("qemu-{arch}"));
    p.is_file().then_some(p)
}

/// A QEMU release number from `qemu-ARCH --version` output ("qemu-x86_64 version 7.2.0
/// (Debian 1:7.2+dfsg-7+deb12u7)").
pub fn parse_qemu_version(text: &str) -> Option<(u32, u32, u32)> {
    let rest = text.split("version ").nth(1)?;
    let v: Vec<u32> = rest
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .next()?
        .split('.')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    Some((
        *v.first()?,
        *v.get(1).unwrap_or(&0),
        *v.get(2).unwrap_or(&0),
    ))
}

/// The plugin API level of hpcscope's plugin a QEMU release loads: 1 up to QEMU 8.2, 4 from
/// 9.2 (QEMU 9.0 and 9.1 load neither build: they need API 2 or 3).
pub fn plugin_api_for(version: (u32, u32, u32)) -> Option<u32> {
    match (version.0, version.1) {
        (a, _) if a < 9 => Some(1),
        (9, m) if m < 2 => None,
        _ => Some(4),
    }
}

/// The release of a QEMU binary (runs `--version`).
pub fn qemu_version(qemu: &Path) -> Option<(u32, u32, u32)> {
    let o = std::process::Command::new(qemu)
        .arg("--version")
        .output()
        .ok()?;
    parse_qemu_version(&String::from_utf8_lossy(&o.stdout))
}

/// The emulator `hpcscope mix` runs, and the build of the plugin it loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emulator {
    /// The QEMU binary.
    pub qemu: PathBuf,
    /// Its release, when `--version` tells.
    pub version: Option<(u32, u32, u32)>,
    /// The plugin API the plugin must speak (1 or 4).
    pub api: u32,
    /// Where the emulator came from: `HPCSCOPE_QEMU`, `cache` (scripts/build-qemu.sh) or
    /// `PATH`.
    pub source: &'static str,
}

impl Emulator {
    /// "QEMU 10.0.2" (or "QEMU (version unknown)").
    pub fn describe(&self) -> String {
        match self.version {
            Some((a, b, c)) => format!("QEMU {a}.{b}.{c}"),
            None => "QEMU (version unknown)".into(),
        }
    }
}

/// The emulator for `arch`: `$HPCSCOPE_QEMU` when set; else QEMU 10 built into the cache
/// by `scripts/build-qemu.sh` when it and the API v4 plugin are there (and
/// `$HPCSCOPE_QEMU_PLUGIN` does not name a plugin of unknown API); else `qemu-ARCH` on
/// `PATH`. The API comes from the release (API 1 when `--version` does not tell).
pub fn emulator(arch: &str) -> Result<Emulator, ToolError> {
    let pick = |qemu: PathBuf, source: &'static str| {
        let version = qemu_version(&qemu);
        Emulator {
            api: version.and_then(plugin_api_for).unwrap_or(1),
            qemu,
            version,
            source,
        }
    };
    if std::env::var_os(QEMU_ENV).is_some() {
        return system_qemu(arch).map(|q| pick(q, "HPCSCOPE_QEMU"));
    }
    if std::env::var_os(PLUGIN_ENV).is_none()
        && let Some(q) = cached_qemu(arch)
        && plugin_for_api(4).is_ok()
    {
        let e = pick(q, "cache");
        if e.api == 4 {
            return Ok(e);
        }
    }
    system_qemu(arch).map(|q| pick(q, "PATH"))
}

/// The directory of the API v4 build of the plugin, under a cargo target directory.
pub const PLUGIN_V4_TARGET: &str = "plugin-v4";

/// The plugin built for plugin API `api`: `$HPCSCOPE_QEMU_PLUGIN` when set; API 1, the
/// default build ([`plugin`]); API 4, the build in the `plugin-v4` target directory
/// (`cargo build --release -p hpcscope-qemu-plugin --no-default-features --features api-v4
/// --target-dir target/plugin-v4`) or an install prefix's `lib/hpcscope/api-v4`.
pub fn plugin_for_api(api: u32) -> Result<PathBuf, ToolError> {
    if api != 4 || std::env::var_os(PLUGIN_ENV).is_some() {
        return plugin();
    }
    let exe = std::env::current_exe().ok();
    exe.as_deref()
        .and_then(Path::parent)
        .map(plugin_v4_candidates)
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| ToolError::NotFound {
            names: vec![format!("{PLUGIN_V4_TARGET}/release/{PLUGIN_LIB}")],
        })
}

/// Where the API v4 plugin may be for an executable in `exe_dir`: the `plugin-v4` target
/// directory beside the executable's (`target/release` -> `target/plugin-v4/release`, and
/// from `target/debug/deps` too), and an install prefix's `lib/hpcscope/api-v4`.
pub fn plugin_v4_candidates(exe_dir: &Path) -> Vec<PathBuf> {
    let mut candidates = vec![exe_dir.join(PLUGIN_V4_TARGET).join(PLUGIN_LIB)];
    for up in [exe_dir.parent(), exe_dir.parent().and_then(Path::parent)]
        .into_iter()
        .flatten()
    {
        for profile in ["release", "debug"] {
            candidates.push(up.join(PLUGIN_V4_TARGET).join(profile).join(PLUGIN_LIB));
        }
    }
    if let Some(prefix) = exe_dir.parent() {
        candidates.push(prefix.join("lib/hpcscope/api-v4").join(PLUGIN_LIB));
    }
    candidates
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

/// The DynamoRIO release the native engine is built against (`scripts/build-dynamorio.sh`).
pub const DYNAMORIO_VERSION: &str = "11.90";

/// Where `scripts/build-dynamorio.sh` installs DynamoRIO and hpcscope's client.
pub fn dynamorio_dir() -> PathBuf {
    crate::dirs::cache_dir().join(format!("dynamorio-{DYNAMORIO_VERSION}"))
}

/// hpcscope's DynamoRIO client in `dir` for this CPU: the client tells DynamoRIO whether
/// to keep the program's AVX-512 registers, and on a CPU without them the build that says
/// so makes every program die of SIGILL (scripts/build-dynamorio.sh builds both).
pub fn dynamorio_client(dir: &Path) -> PathBuf {
    #[cfg(target_arch = "x86_64")]
    let avx512 = std::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    let avx512 = false;
    if avx512 {
        dir.join("client/libhpcscope_dr_client.so")
    } else {
        dir.join("client/libhpcscope_dr_client_noavx512.so")
    }
}

/// The files of the native engine in `dir` (DynamoRIO's core, its preload library and
/// hpcscope's client for this CPU), in the order they are checked.
pub fn dynamorio_files(dir: &Path) -> [PathBuf; 3] {
    [
        dynamorio_client(dir),
        dir.join("lib64/release/libdynamorio.so"),
        dir.join("lib64/release/libdrpreload.so"),
    ]
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
        let v4 = plugin_v4_candidates(Path::new("/x/target/release"));
        assert!(v4.contains(&Path::new("/x/target/plugin-v4/release").join(PLUGIN_LIB)));
        let v4 = plugin_v4_candidates(Path::new("/x/target/debug/deps"));
        assert!(v4.contains(&Path::new("/x/target/plugin-v4/release").join(PLUGIN_LIB)));
    }

    #[test]
    fn qemu_release_and_plugin_api() {
        let v = parse_qemu_version(
            "qemu-x86_64 version 7.2.0 (Debian 1:7.2+dfsg-7+deb12u7)\nCopyright",
        );
        assert_eq!(v, Some((7, 2, 0)));
        assert_eq!(plugin_api_for((7, 2, 0)), Some(1));
        let v = parse_qemu_version("qemu-aarch64 version 10.0.2\nCopyright (c) 2003-2025");
        assert_eq!(v, Some((10, 0, 2)));
        assert_eq!(plugin_api_for((10, 0, 2)), Some(4));
        assert_eq!(plugin_api_for((9, 1, 0)), None);
        assert_eq!(plugin_api_for((8, 2, 1)), Some(1));
        assert_eq!(parse_qemu_version("no version here"), None);
    }
}
