//! The cheap, deterministic part of the reference suite (`examples/reference/suite.rs`,
//! run whole by `bench/trace/reference.sh`): system-call counts of real programs (tar, a
//! shell loop of 200 forks, dd) exactly as `strace -f -c` counts them in the same run, no
//! process of the fork loop with anything lost, and dd's bytes on the right files.

#[path = "../examples/reference/suite.rs"]
mod suite;

#[test]
fn syscall_counts_and_file_bytes_agree_with_strace_and_dd() {
    if !hpcscope_trace::doctor::has_bpf_caps()
        || !std::path::Path::new("/sys/kernel/btf/vmlinux").exists()
    {
        println!("skipping: not root or no BTF");
        return;
    }
    if !suite::have("strace") {
        println!("skipping: strace not installed (apt-get install strace)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (checks, skipped) = suite::run(dir.path(), true, &[]);
    let table = suite::render(&checks);
    println!("{table}");
    for s in &skipped {
        println!("skipping: {s}");
    }
    assert!(
        checks.iter().all(|c| !c.verdict.failed()),
        "a check failed:\n{table}"
    );
    // Each workload was compared (strace's calibration line, then tar, forks and dd).
    for w in ["tar", "forks", "dd"] {
        assert!(
            checks
                .iter()
                .any(|c| c.workload == w && c.metric.starts_with("syscalls")),
            "{w} missing:\n{table}"
        );
    }
}
