//! Finding QEMU and the hpcscope plugin.

use std::path::{Path, PathBuf};

use crate::elf::Arch;
use crate::error::MixError;

/// Environment variable naming the plugin library explicitly.
pub const PLUGIN_ENV: &str = "HPCSCOPE_QEMU_PLUGIN";
/// Environment variable naming the QEMU binary explicitly.
pub const QEMU_ENV: &str = "HPCSCOPE_QEMU";

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The QEMU user-mode emulator for `arch`.
pub fn qemu(arch: Arch) -> Result<PathBuf, MixError> {
    if let Some(p) = std::env::var_os(QEMU_ENV) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(MixError::Missing {
            message: format!("{QEMU_ENV}={} is not a file", p.display()),
            fix: format!(
                "unset {QEMU_ENV} or point it at a qemu-{} binary",
                arch.name()
            ),
        });
    }
    let name = format!("qemu-{}", arch.name());
    on_path(&name)
        .or_else(|| on_path(&format!("{name}-static")))
        .ok_or_else(|| MixError::Missing {
            message: format!("{name} (QEMU user-mode emulation) is not installed"),
            fix: "install the Debian package qemu-user (apt-get install qemu-user), or set HPCSCOPE_QEMU".into(),
        })
}

/// The plugin library: `$HPCSCOPE_QEMU_PLUGIN`, else next to the running executable (the
/// cargo target directory or an install prefix's `lib/hpcscope`).
pub fn plugin() -> Result<PathBuf, MixError> {
    const LIB: &str = "libhpcscope_qemu_plugin.so";
    if let Some(p) = std::env::var_os(PLUGIN_ENV) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(MixError::Missing {
            message: format!("{PLUGIN_ENV}={} is not a file", p.display()),
            fix: format!("unset {PLUGIN_ENV} or point it at {LIB}"),
        });
    }
    let exe = std::env::current_exe().ok();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = exe.as_deref().and_then(Path::parent) {
        candidates.push(dir.join(LIB));
        // target/debug/deps/x (tests) -> target/{release,debug}
        for up in [dir.parent(), dir.parent().and_then(Path::parent)]
            .into_iter()
            .flatten()
        {
            candidates.push(up.join("release").join(LIB));
            candidates.push(up.join("debug").join(LIB));
        }
        if let Some(prefix) = dir.parent() {
            candidates.push(prefix.join("lib/hpcscope").join(LIB));
        }
    }
    candidates.into_iter().find(|p| p.is_file()).ok_or_else(|| MixError::Missing {
        message: format!("the QEMU plugin {LIB} was not found next to hpcscope"),
        fix: format!("build it with `cargo build --release -p hpcscope-qemu-plugin`, or set {PLUGIN_ENV} to its path"),
    })
}
