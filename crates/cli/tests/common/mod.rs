//! Helpers shared by the CLI tests that need tools from the machine.

// Each test binary uses its own part of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

#[allow(unused_imports)] // each test binary uses its own part
pub use hpcscope_test_support::{is_root, which};

/// The QEMU plugin: `$HPCSCOPE_QEMU_PLUGIN`, else the release or debug build beside the binary.
pub fn plugin() -> Option<PathBuf> {
    hpcscope_test_support::plugin_beside(Path::new(env!("CARGO_BIN_EXE_hpcscope")))
}

/// `crates/models/tests/data/NAME`: the models crate's fixtures, which the model commands
/// read in these tests too.
pub fn models_data(name: &str) -> String {
    format!("{}/../models/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The QEMU plugin where qemu-x86_64 and gcc are installed too (what the tests that build a C
/// program and run it under the plugin need); `None` after printing a `skipping:` line saying
/// what is missing.
pub fn qemu_plugin_ready() -> Option<PathBuf> {
    for tool in ["qemu-x86_64", "gcc"] {
        if which(tool).is_none() {
            println!("skipping: {tool} is not installed (scripts/setup.sh installs it)");
            return None;
        }
    }
    built_plugin()
}

/// The QEMU plugin; `None` after a `skipping:` line saying how to build it.
pub fn built_plugin() -> Option<PathBuf> {
    let p = plugin();
    if p.is_none() {
        println!(
            "skipping: the QEMU plugin is not built (cargo build --release -p hpcscope-qemu-plugin)"
        );
    }
    p
}

/// The STREAM triad `a[i] = b[i] + 3.0 * c[i]` in a function `kernel`, arguments `N REPS`
/// (`tests/data/triad.c`, which bench/projection/resim_vs_cachegrind.sh also builds).
pub const TRIAD: &str = include_str!("../data/triad.c");

/// Writes `src` to `DIR/NAME.c` and builds `DIR/NAME` with `gcc -O2 -fno-tree-vectorize`
/// and `flags` after them; panics if gcc fails.
pub fn cc(dir: &Path, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let out = dir.join(name);
    let st = std::process::Command::new("gcc")
        .args(["-O2", "-fno-tree-vectorize"])
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&c)
        .status()
        .unwrap();
    assert!(st.success(), "gcc failed on {}", c.display());
    out
}

/// The MPI test program `tests/data/imbalance.c`, built once with mpicc into the target's
/// temporary directory; `Err` says why not (mpicc or mpirun missing, a failed build).
pub fn mpi_program() -> Result<PathBuf, String> {
    mpi_test_program("imbalance")
}

/// The MPI test program `tests/data/NAME.c`, built once with mpicc (see [`mpi_program`]).
pub fn mpi_test_program(name: &str) -> Result<PathBuf, String> {
    type Built = std::collections::HashMap<String, Result<PathBuf, String>>;
    static BUILT: std::sync::Mutex<Option<Built>> = std::sync::Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    built
        .get_or_insert_with(Default::default)
        .entry(name.to_string())
        .or_insert_with(|| {
            for tool in ["mpicc", "mpirun"] {
                if which(tool).is_none() {
                    return Err(format!(
                        "{tool} is not installed (scripts/setup.sh installs openmpi-bin and libopenmpi-dev)"
                    ));
                }
            }
            let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hpcscope-{name}"));
            let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/{name}.c"));
            let o = std::process::Command::new("mpicc")
                .args(["-O2", "-o"])
                .arg(&out)
                .arg(&src)
                .output()
                .map_err(|e| format!("cannot run mpicc: {e}"))?;
            if !o.status.success() {
                return Err(format!(
                    "mpicc failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
            Ok(out)
        })
        .clone()
}
