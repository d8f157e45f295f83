//! Shared by the probe test binaries.

use std::path::PathBuf;
use std::process::Command;

/// Builds the test program (`tests/data/testee.c`) with the system C compiler into the
/// target's temporary directory as `name`; `None` without a compiler.
pub fn build_testee(name: &str) -> Option<PathBuf> {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/testee.c");
    Command::new("cc")
        .args(["-O0", "-g", "-fno-omit-frame-pointer", "-pthread"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .is_ok_and(|s| s.success())
        .then_some(out)
}
