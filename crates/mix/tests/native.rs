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
