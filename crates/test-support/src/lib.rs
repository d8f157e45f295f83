//! What the tests of the workspace share, defined once: float comparisons (each name says
//! which tolerance it applies), the output of a command as text, tools on PATH, the QEMU
//! plugin built for a test, QEMU 10 where `scripts/build-qemu.sh` installs it, and paths of
//! test data. Only a dev-dependency: nothing here reaches the `hpcscope` binary.
//!
//! The `hpcscope` binary of a test is `env!("CARGO_BIN_EXE_hpcscope")`, known only while
//! cargo compiles the binary crate's own tests: [`bin!`] expands there.
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Smallest divisor of the relative comparisons, so that an expected 0 does not divide by 0.
const FLOOR: f64 = 1e-300;

/// Relative error of `got` against `want`: `|got - want| / max(|want|, 1e-300)`.
pub fn rel_err(got: f64, want: f64) -> f64 {
    (got - want).abs() / want.abs().max(FLOOR)
}

/// Whether `got` is within `tol` of `want` relative to `want`:
/// `|got - want| <= tol * max(|want|, 1e-300)`.
pub fn close_rel(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want.abs().max(FLOOR)
}

/// Whether `a` and `b` are within `tol` relative to the larger of the two (symmetric):
/// `|a - b| <= tol * max(|a|, |b|, 1e-300)`.
pub fn close_rel_sym(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(FLOOR)
}

/// Whether `a` and `b` are within `tol` of each other: `|a - b| <= tol`.
pub fn close_abs(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// Asserts [`close_abs`]; the panic names the caller's line.
#[track_caller]
pub fn assert_close_abs(a: f64, b: f64, tol: f64) {
    assert!(close_abs(a, b, tol), "{a} != {b} (tol {tol})");
}

/// Standard output of a finished command, as text (invalid UTF-8 replaced).
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error of a finished command, as text (invalid UTF-8 replaced).
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The path of `name` on PATH, if any (a file there; not checked for being executable).
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// Whether `cmd --version` runs and succeeds.
pub fn have(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Whether the tests run as root (effective user id 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { geteuid() == 0 }
}

unsafe extern "C" {
    fn geteuid() -> u32;
}

/// The root of the repository (the directory of the workspace's Cargo.toml).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `<crate>/tests/data/<name>` of the crate whose test expands it (its `CARGO_MANIFEST_DIR`),
/// as a `PathBuf`.
#[macro_export]
macro_rules! test_data {
    ($name:expr) => {
        ::std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join($name)
    };
}

/// A `Command` for the `hpcscope` binary under test; expands only in the tests of the
/// binary crate (`crates/cli`), where cargo sets `CARGO_BIN_EXE_hpcscope`.
#[macro_export]
macro_rules! bin {
    () => {
        ::std::process::Command::new(env!("CARGO_BIN_EXE_hpcscope"))
    };
}

/// The QEMU plugin built beside the `hpcscope` binary `exe` (`target/<profile>/hpcscope`):
/// `$HPCSCOPE_QEMU_PLUGIN`, else the release or debug build in the target directory; `None`
/// when neither is built. Builds nothing.
pub fn plugin_beside(exe: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HPCSCOPE_QEMU_PLUGIN") {
        return Some(PathBuf::from(p));
    }
    let target = exe.parent()?.parent()?;
    ["release", "debug"]
        .iter()
        .map(|d| target.join(d).join("libhpcscope_qemu_plugin.so"))
        .find(|p| p.is_file())
}

/// The profile directory of the running test binary (`target/<profile>/deps/<test>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// `cargo build -p hpcscope-qemu-plugin` in the profile of the running test, with `extra`
/// arguments; panics with `what` when the build fails.
fn cargo_build_plugin(release: bool, extra: &[&std::ffi::OsStr], what: &str) {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-p", "hpcscope-qemu-plugin", "--manifest-path"])
        .arg(repo_root().join("crates/qemu-plugin/Cargo.toml"))
        .args(extra);
    if release {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("run cargo build");
    assert!(status.success(), "{what} failed");
}

/// The QEMU plugin, built (once per test binary) into the running test's profile directory:
/// cargo does not rebuild a cdylib for an integration test, so ask it to.
pub fn build_plugin() -> PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        let dir = profile_dir();
        let release = dir.file_name().is_some_and(|n| n == "release");
        cargo_build_plugin(release, &[], "cargo build -p hpcscope-qemu-plugin");
        let so = dir.join("libhpcscope_qemu_plugin.so");
        assert!(so.exists(), "plugin not found at {}", so.display());
        so
    })
    .clone()
}

/// The plugin built for plugin API v4 (QEMU 9.2 and later), once per test binary, into the
/// `plugin-v4` directory beside the running test's profile directory (the API features are
/// exclusive, so it is a build of its own).
pub fn build_plugin_v4() -> PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        let dir = profile_dir();
        let release = dir.file_name().is_some_and(|n| n == "release");
        let v4 = dir.parent().expect("target directory").join("plugin-v4");
        let extra: [&std::ffi::OsStr; 5] = [
            "--no-default-features".as_ref(),
            "--features".as_ref(),
            "api-v4".as_ref(),
            "--target-dir".as_ref(),
            v4.as_os_str(),
        ];
        cargo_build_plugin(release, &extra, "cargo build of the API v4 plugin");
        let so = v4
            .join(if release { "release" } else { "debug" })
            .join("libhpcscope_qemu_plugin.so");
        assert!(so.exists(), "plugin not found at {}", so.display());
        so
    })
    .clone()
}

/// QEMU 10's `qemu-ARCH` as `scripts/build-qemu.sh` installs it (`$HPCSCOPE_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/hpcscope`, else `~/.cache/hpcscope`, then `qemu-10.0.2/bin`), if there.
pub fn qemu10(arch: &str) -> Option<PathBuf> {
    let cache = std::env::var_os("HPCSCOPE_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("hpcscope")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/hpcscope")))?;
    let p = cache.join("qemu-10.0.2/bin").join(format!("qemu-{arch}"));
    p.is_file().then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_apply_their_own_tolerance() {
        // Relative to the expected value, not to the larger one.
        assert!(close_rel(1.1, 1.0, 0.1 + 1e-12));
        assert!(!close_rel(1.0, 1.1, 0.09));
        assert!(close_rel_sym(1.0, 1.1, 0.091));
        assert!(close_abs(1.0, 1.5, 0.5));
        assert!(!close_abs(1.0, 1.5, 0.49));
        assert_eq!(rel_err(3.0, 2.0), 0.5);
        // An expected 0 compares through the floor.
        assert!(close_rel(0.0, 0.0, 1e-12));
        assert!(!close_rel(1e-200, 0.0, 1e-12));
    }
}
