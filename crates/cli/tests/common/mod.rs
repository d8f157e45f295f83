//! Helpers shared by the CLI tests that need tools from the machine.

use std::path::PathBuf;

/// The path of `name` on PATH, if any.
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// The QEMU plugin: `$HPCSCOPE_QEMU_PLUGIN`, else the release or debug build beside the binary.
pub fn plugin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HPCSCOPE_QEMU_PLUGIN") {
        return Some(PathBuf::from(p));
    }
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_hpcscope"));
    let target = exe.parent()?.parent()?;
    ["release", "debug"]
        .iter()
        .map(|d| target.join(d).join("libhpcscope_qemu_plugin.so"))
        .find(|p| p.is_file())
}
