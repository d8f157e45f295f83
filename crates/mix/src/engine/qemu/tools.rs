//! Finding QEMU and the hpcscope plugin (through `hpcscope-host`, which `doctor` asks too).

use std::path::PathBuf;

use hpcscope_host::tools::{self, ToolError};
pub use hpcscope_host::tools::{PLUGIN_ENV, QEMU_ENV};

use crate::elf::Arch;
use crate::error::MixError;

/// The QEMU user-mode emulator for `arch`.
pub fn qemu(arch: Arch) -> Result<PathBuf, MixError> {
    emulator(arch).map(|e| e.qemu)
}

/// The emulator for `arch` and the plugin API it loads (the cached QEMU 10 when built).
pub fn emulator(arch: Arch) -> Result<tools::Emulator, MixError> {
    tools::emulator(arch.name()).map_err(|e| match e {
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

/// The plugin library for `emu`'s plugin API: `$HPCSCOPE_QEMU_PLUGIN`, else next to the
/// running executable (the cargo target directory or an install prefix's `lib/hpcscope`;
/// the API v4 build in the `plugin-v4` target directory).
pub fn plugin(emu: &tools::Emulator) -> Result<PathBuf, MixError> {
    tools::plugin_for_api(emu.api).map_err(|e| match e {
        ToolError::BadOverride { .. } => MixError::Missing {
            message: e.to_string(),
            fix: format!("unset {PLUGIN_ENV} or point it at {}", tools::PLUGIN_LIB),
        },
        ToolError::NotFound { .. } => MixError::Missing {
            message: format!(
                "the QEMU plugin {} was not found next to hpcscope",
                tools::PLUGIN_LIB
            ),
            fix: if emu.api == 4 {
                format!(
                    "{} loads plugin API v4: build that plugin with `cargo build --release -p hpcscope-qemu-plugin --no-default-features --features api-v4 --target-dir target/plugin-v4`, or set {PLUGIN_ENV} to its path",
                    emu.describe()
                )
            } else {
                format!(
                    "build it with `cargo build --release -p hpcscope-qemu-plugin`, or set {PLUGIN_ENV} to its path"
                )
            },
        },
    })
}
