//! A guest that forks without exec: QEMU runs the child in a copy of its process, the
//! plugin included. The plugin characterizes the process started and says how many it
//! forked; the child adds nothing to its counts or stream and does not overwrite its
//! summary.

mod common;

use common::{compile, get, qemus, range, run};

#[test]
fn a_forked_child_is_left_out_and_counted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = compile("gcc", &["-O2"], "fork.c", dir.path());
    let region = format!("region={}", range(&bin, "work"));
    let n = 100_000u64;
    for qemu in qemus("x86_64") {
        let r = run(
            &[qemu.as_str()],
            &region,
            &bin,
            &[&n.to_string()],
            &[],
            true,
            dir.path(),
        );
        assert!(
            r.stdout.contains("child") && r.stdout.contains("parent"),
            "{}",
            r.stdout
        );
        let t = &r.json["totals"];
        // The parent runs the kernel twice (before and after the fork): 3 FLOPs an element
        // each time; the child's two runs are not counted.
        assert_eq!(get(t, "flops"), 2 * 3 * n, "{qemu}");
        assert_eq!(r.json["forked_processes"], 1, "{qemu}");
        // The stream carries the parent's accesses alone, as many bytes as it counted.
        assert_eq!(
            r.stream,
            Some((get(t, "bytes_loaded"), get(t, "bytes_stored"))),
            "{qemu}"
        );
        println!("{qemu}: parent counted, one forked child left out");
    }
}
