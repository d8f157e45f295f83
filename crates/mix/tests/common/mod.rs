//! What the mix tests share: whether a tool runs, and the plugin built for them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `cmd --version` runs.
pub fn have(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The plugin, built into this test binary's profile directory and handed to `mix`.
pub fn plugin() -> PathBuf {
    static SO: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    SO.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>/deps/<test>");
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "hpcscope-qemu-plugin", "--manifest-path"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../qemu-plugin/Cargo.toml"));
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().expect("run cargo build").success());
        dir.join("libhpcscope_qemu_plugin.so")
    })
    .clone()
}
