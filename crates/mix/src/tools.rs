//! Finding QEMU and the hpcscope plugin (through `hpcscope-host`, which `doctor` asks too).

use std::path::PathBuf;

use hpcscope_host::tools::{self, ToolError};
pub use hpcscope_host::tools::{PLUGIN_ENV, QEMU_ENV};

use crate::elf::Arch;
use crate::error::MixError;

/// The QEMU user-mode emulator for `arch`.
pub fn qemu(arch: Arch) -> Result<PathBuf, MixError> {
    tools::qemu(arch.name()).map_err(|e| match e {
        ToolError::BadOverride { .. } => MixError::Missing {
            message: e.to_string(),
            fix: format!(
                "unset {QEMU_ENV} or point it at a qemu-{} binary",
                arch.name()
            ),
        },
        ToolError::NotFound { .. } => MixError::Missing {
            message: format!(
                "qemu-{} (QEMU user-mode emulation) is not installed",
                arch.name()
            ),
            fix: "install the Debian package qemu-user (apt-get install qemu-user), or set HPCSCOPE_QEMU".into(),
        },
    })
}

/// The plugin library: `$HPCSCOPE_QEMU_PLUGIN`, else next to the running executable (the
/// cargo target directory or an install prefix's `lib/hpcscope`).
pub fn plugin() -> Result<PathBuf, MixError> {
    tools::plugin().map_err(|e| match e {
        ToolError::BadOverride { .. } => MixError::Missing {
            message: e.to_string(),
            fix: format!("unset {PLUGIN_ENV} or point it at {}", tools::PLUGIN_LIB),
        },
        ToolError::NotFound { .. } => MixError::Missing {
            message: format!(
                "the QEMU plugin {} was not found next to hpcscope",
                tools::PLUGIN_LIB
            ),
            fix: format!(
                "build it with `cargo build --release -p hpcscope-qemu-plugin`, or set {PLUGIN_ENV} to its path"
            ),
        },
    })
}
