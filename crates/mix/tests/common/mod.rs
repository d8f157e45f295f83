//! What the mix tests share: whether a tool runs, and the plugin built for them.
// Each test binary uses some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use hpcscope_test_support::have;

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
