//! Native CPU-clock sampling of short programs: the region's share of samples, for PIE and
//! non-PIE builds, and programs too short to take many samples. These ran into races before
//! the events were set up ahead of the child's exec (a program that exited, or had not yet
//! exec'd, when its load address was read lost its region time).

mod common;

use std::path::Path;

use hpcscope_mix::elf::ElfInfo;
use hpcscope_mix::native;

const SPIN: &str = include_str!("data/spin.c");

/// Samples of the program with `n` iterations, and those inside `spin`.
fn sample_spin(bin: &Path, n: &str) -> Option<native::Sampled> {
    let info = ElfInfo::read(bin).unwrap();
    let f = info.function("spin", bin).unwrap();
    let s = native::run(
        bin,
        &[n.to_string()],
        &[(f.addr, f.addr + f.size)],
        info.lowest_vaddr,
        info.pie,
        10_000,
    )
    .unwrap();
    assert!(s.success);
    if !s.sampled && s.samples == 0 {
        eprintln!("skipping: CPU-clock sampling cannot be set up here (perf_event_paranoid?)");
        return None;
    }
    Some(s)
}

#[test]
fn region_share_is_measured_for_pie_and_fixed_address_programs() {
    let dir = tempfile::tempdir().unwrap();
    for (name, flags) in [("pie", &["-fPIE", "-pie"][..]), ("nopie", &["-no-pie"][..])] {
        let Some(bin) = common::gcc(dir.path(), name, SPIN, &[&["-O1"], flags].concat()) else {
            eprintln!("skipping: gcc cannot build the test program");
            return;
        };
        assert_eq!(ElfInfo::read(&bin).unwrap().pie, name == "pie");
        // About 0.1 s of CPU in `spin`: hundreds of samples at 10 kHz, nearly all inside.
        let Some(s) = sample_spin(&bin, "50000000") else {
            return;
        };
        assert!(s.sampled, "{name}: the load address was found: {s:?}");
        assert!(s.samples >= 100, "{name}: {s:?}");
        assert!(
            s.in_region as f64 >= 0.9 * s.samples as f64,
            "{name}: most samples in spin: {s:?}"
        );
    }
}

#[test]
fn a_program_that_ends_at_once_is_still_located() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = common::gcc(dir.path(), "short", SPIN, &["-O1", "-fPIE", "-pie"]) else {
        eprintln!("skipping: gcc cannot build the test program");
        return;
    };
    // A few microseconds: the program is gone before any /proc read could see it, yet its
    // load address comes from the kernel's mapping record, so the run counts as sampled.
    for _ in 0..20 {
        let Some(s) = sample_spin(&bin, "10") else {
            return;
        };
        assert!(s.sampled, "{s:?}");
        // A CPU-clock tick may still fall in those few microseconds on a busy machine.
        assert!(s.in_region <= 1, "{s:?}");
    }
}

/// `outer` does little itself and calls `inner`, where the time goes (twice, and once
/// recursively through itself): as a function region `outer` holds few samples; as a
/// scope (entry and return probed, callees included) it holds nearly all of them.
const CALLER: &str = r#"
#include <stdlib.h>
volatile double sink;
__attribute__((noipa)) double inner(long n) {
  double s = 0; for (long i = 0; i < n; i++) s += (double)i * 1e-9; return s; }
__attribute__((noipa)) double outer(long n, int depth) {
  double s = inner(n);
  if (depth > 0) s += outer(n, depth - 1);
  return s; }
int main(int c, char **v) {
  long n = atol(v[1]);
  for (long i = 0; i < n / 100; i++) sink += (double)i;
  sink += outer(n, 1);
  return 0; }
"#;

#[test]
fn a_scope_holds_the_time_of_its_callees() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = common::gcc(dir.path(), "caller", CALLER, &["-O1"]) else {
        eprintln!("skipping: gcc cannot build the test program");
        return;
    };
    let info = ElfInfo::read(&bin).unwrap();
    let f = info.function("outer", &bin).unwrap();
    let scope = native::Scope {
        file_offset: info.file_offset(f.addr).unwrap(),
    };
    let run = |regions: &[(u64, u64)], scopes: &[native::Scope]| {
        native::run_env(
            &bin,
            &["40000000".to_string()],
            &[],
            (regions, scopes),
            info.lowest_vaddr,
            info.pie,
            10_000,
            None,
        )
        .unwrap()
    };
    let s = run(&[], &[scope]);
    assert!(s.success);
    if !s.scopes_timed {
        // System-wide uprobes need root (or perf_event_paranoid <= 0 with CAP_PERFMON).
        assert!(
            !hpcscope_test_support::is_root(),
            "root, yet the scope's probes could not be set up: {s:?}"
        );
        println!("skipping: uprobes on the program need root here (perf_event_paranoid)");
        return;
    }
    assert!(s.samples >= 100, "{s:?}");
    assert!(
        s.in_region as f64 >= 0.9 * s.samples as f64,
        "the scope holds its callee's samples: {s:?}"
    );
    // The same function as a region: its own instructions only.
    let r = run(&[(f.addr, f.addr + f.size)], &[]);
    assert!(
        (r.in_region as f64) < 0.1 * r.samples as f64,
        "outer alone holds few samples: {r:?}"
    );
    assert!(!r.scopes_timed);
}

/// A scope entered a million times would take its native run tens of seconds under the
/// probes (each hit traps into the kernel): they are removed after `MAX_SCOPE_HITS`, and the
/// run says so and is not timed.
#[test]
fn a_scope_entered_too_often_loses_its_probes() {
    let dir = tempfile::tempdir().unwrap();
    let src = "#include <stdlib.h>\nvolatile double sink;\n\
        __attribute__((noipa)) double tiny(double x) { return x * 1.0000001; }\n\
        int main(int c, char **v) { long n = atol(v[1]); double s = 1;\n\
        for (long i = 0; i < n; i++) s = tiny(s); sink = s; return 0; }\n";
    let Some(bin) = common::gcc(dir.path(), "calls", src, &["-O2"]) else {
        eprintln!("skipping: gcc cannot build the test program");
        return;
    };
    let info = ElfInfo::read(&bin).unwrap();
    let f = info.function("tiny", &bin).unwrap();
    let scope = native::Scope {
        file_offset: info.file_offset(f.addr).unwrap(),
    };
    let s = native::run_env(
        &bin,
        &["1000000".to_string()],
        &[],
        (&[], &[scope]),
        info.lowest_vaddr,
        info.pie,
        10_000,
        None,
    )
    .unwrap();
    assert!(s.success);
    if !hpcscope_test_support::is_root() && !s.scopes_too_busy {
        println!("skipping: uprobes on the program need root here (perf_event_paranoid)");
        return;
    }
    assert!(s.scopes_too_busy && !s.scopes_timed, "{s:?}");
}
