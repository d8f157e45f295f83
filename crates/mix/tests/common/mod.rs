//! What the mix tests share: whether a tool runs, and the plugin built for them.
// Each test binary uses some of these.
#![allow(dead_code)]

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

/// Whether qemu-x86_64 and gcc are installed; prints a `skipping:` line when not.
pub fn qemu_and_gcc() -> bool {
    let ok = have("qemu-x86_64") && have("gcc");
    if !ok {
        println!("skipping: needs qemu-x86_64 and gcc (apt-get install qemu-user gcc)");
    }
    ok
}

/// `src` written to `dir/NAME.c` and built by gcc into `dir/NAME` with `args` after the
/// source (optimisation, `-march`, libraries); `None` when gcc fails.
pub fn gcc(dir: &Path, name: &str, src: &str, args: &[&str]) -> Option<PathBuf> {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).ok()?;
    let out = dir.join(name);
    let st = Command::new("gcc")
        .arg("-o")
        .arg(&out)
        .arg(&c)
        .args(args)
        .status()
        .ok()?;
    st.success().then_some(out)
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

/// QEMU 10 for aarch64 as `scripts/build-qemu.sh` installs it.
pub fn qemu10() -> Option<PathBuf> {
    let cache = std::env::var_os("HPCSCOPE_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("hpcscope")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/hpcscope")))?;
    let p = cache.join("qemu-10.0.2/bin/qemu-aarch64");
    p.is_file().then_some(p)
}

/// The API v4 plugin, built into `plugin-v4` beside this test binary's profile directory.
pub fn plugin_v4() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>");
    let release = profile_dir.file_name().is_some_and(|n| n == "release");
    let v4 = profile_dir
        .parent()
        .expect("target directory")
        .join("plugin-v4");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-p", "hpcscope-qemu-plugin", "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../qemu-plugin/Cargo.toml"))
        .args([
            "--no-default-features",
            "--features",
            "api-v4",
            "--target-dir",
        ])
        .arg(&v4);
    if release {
        cmd.arg("--release");
    }
    assert!(cmd.status().expect("run cargo build").success());
    v4.join(if release { "release" } else { "debug" })
        .join("libhpcscope_qemu_plugin.so")
}

/// A stream of two threads over 48 MiB (a linear congruential walk, loads and stores), so
/// that every level of every bundled machine hits and misses.
pub fn two_thread_stream(n: u64) -> Vec<u8> {
    let mut s = hpcscope_plugin_format::MAGIC.to_vec();
    let mut x = 12345u64;
    for i in 0..n {
        if i % 1000 == 0 {
            let t = (i / 1000) % 2;
            s.extend_from_slice(&hpcscope_plugin_format::thread_marker(t as u32).to_le_bytes());
        }
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // Half the accesses walk a small array (hits), half anywhere in 48 MiB.
        let addr = if i % 2 == 0 {
            0x100_0000 + (i * 8) % (256 << 10)
        } else {
            0x400_0000 + (x >> 20) % (48 << 20)
        };
        let a = hpcscope_cachesim::PackedAccess::new(addr, 8, x & 1 == 1).unwrap();
        s.extend_from_slice(&a.0.to_le_bytes());
    }
    s
}
