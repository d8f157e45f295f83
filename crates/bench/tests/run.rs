//! End to end on a fixture topology: a tiny run, its machine file loaded back, bad input
//! rejected with exit code 2 before anything is measured. Values are not checked (no
//! timing assertions), only their presence and consistency.

use hpcscope_core::Classify;

use hpcscope_bench::flops::FlopOp;
use hpcscope_bench::kernels::Width;
use hpcscope_bench::{BenchConfig, CpuRequest, MachineNames, Selection};
use hpcscope_core::machine::CeilingOp;
use hpcscope_core::{Machine, Precision};

fn fixture() -> std::path::PathBuf {
    hpcscope_test_support::test_data!("sysfs-2s-smt2")
}

fn tiny() -> BenchConfig {
    BenchConfig {
        quick: true,
        selection: Selection::parse("triad,copy").unwrap(),
        // L1, L2, L3 of the fixture (32 KiB, 1 MiB, 16.5 MiB) and > 4x its L3.
        sizes: Some(vec![16 << 10, 512 << 10, 8 << 20, 70 << 20]),
        repeat: Some(1),
        widths: Some(vec![Width::Scalar, Width::W512]),
        precisions: vec![hpcscope_core::Precision::F64],
        names: MachineNames {
            id: Some("tiny-test".into()),
            name: None,
        },
        progress: false,
        sysfs_root: fixture(),
        cpus: CpuRequest::Threads(1),
        ..BenchConfig::default()
    }
}

#[test]
fn tiny_run_writes_a_valid_machine_and_skips_missing_isa() {
    let mut cfg = tiny();
    // Pretend the CPU has no AVX-512: its kernels must be skipped with a note.
    let mut isa = hpcscope_bench::topology::Isa::detect();
    isa.avx512f = false;
    cfg.isa = Some(isa.clone());
    let r = match hpcscope_bench::run(&cfg) {
        Ok(r) => r,
        Err(e) if !isa.supports(Width::Scalar) => {
            eprintln!("skipping test - no kernel can run on this CPU/build: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(
        r.skipped
            .iter()
            .any(|s| s.contains("512") && s.contains("AVX-512F")),
        "{:?}",
        r.skipped
    );
    assert!(r.peaks.iter().all(|p| p.width != Width::W512));
    assert!(r.kernels.iter().all(|k| k.width == Width::Scalar));
    assert_eq!(r.sweep.len(), 4);
    assert!(
        r.sweep
            .iter()
            .all(|p| p.gbs.median > 0.0 && p.gbs_with_write_allocate > p.gbs.median)
    );
    // Levels follow the fixture's caches plus memory.
    let names: Vec<&str> = r.machine.levels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["L1", "L2", "L3", "MM"]);
    assert_eq!(
        r.machine.levels[2].cache.as_ref().unwrap().shared_by_cores,
        Some(4)
    );
    assert_eq!(
        (
            r.machine.sockets,
            r.machine.cores_per_socket,
            r.machine.threads_per_core
        ),
        (2, 4, Some(2))
    );
    assert_eq!(r.machine.id, "tiny-test");
    // Every number has a provenance naming the tool, the kernel and the settings.
    for l in &r.machine.levels {
        assert!(
            l.provenance.contains("hpcscope-bench") && l.provenance.contains("triad"),
            "{}",
            l.provenance
        );
        assert!(
            l.provenance.contains("STREAM convention"),
            "{}",
            l.provenance
        );
    }
    for p in &r.machine.peaks {
        assert!(
            p.provenance.contains("fma") && p.provenance.contains("repetitions"),
            "{}",
            p.provenance
        );
    }
    // TOML written by the machine loads back and validates.
    let toml = r.machine.to_toml_string();
    let back = Machine::from_toml_str(&toml, "bench output").unwrap();
    assert_eq!(back, r.machine);
    // The JSON report and the SVG render.
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"sweep\"") && json.contains("\"gbs_with_write_allocate\""));
    let svg = hpcscope_bench::report::sweep_svg(&r);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("GB/s") && svg.contains("L1"));
    // Atomic write to a file.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.toml");
    hpcscope_bench::report::write_atomic(&out, toml.as_bytes()).unwrap();
    Machine::from_toml_str(&std::fs::read_to_string(&out).unwrap(), "file").unwrap();
}

#[test]
fn bad_input_is_rejected_before_measuring() {
    let mut cfg = tiny();
    cfg.cpus = CpuRequest::List(vec![0, 4000]);
    let e = hpcscope_bench::run(&cfg).unwrap_err();
    assert_eq!(e.kind().exit_code(), 2);
    assert!(
        e.to_string().contains("4000") && e.to_string().contains("usable CPUs"),
        "{e}"
    );

    let mut cfg = tiny();
    cfg.sizes = Some(vec![1 << 50]);
    let e = hpcscope_bench::run(&cfg).unwrap_err();
    assert_eq!(e.kind().exit_code(), 2);
    assert!(e.to_string().contains("--sizes"), "{e}");

    let mut cfg = tiny();
    cfg.repeat = Some(0);
    assert_eq!(hpcscope_bench::run(&cfg).unwrap_err().kind().exit_code(), 2);

    let mut cfg = tiny();
    cfg.names.id = Some("my node".into());
    let e = hpcscope_bench::run(&cfg).unwrap_err();
    assert_eq!(e.kind().exit_code(), 2);
    assert!(e.to_string().starts_with("--id"), "{e}");

    let e = Selection::parse("triad,peakflops").unwrap_err();
    assert_eq!(e.kind().exit_code(), 2);
    assert!(e.to_string().contains("peakflops"));
}

#[test]
fn no_size_beyond_the_llc_is_explained() {
    let mut cfg = tiny();
    cfg.sizes = Some(vec![16 << 10, 512 << 10]);
    cfg.selection = Selection::parse("triad").unwrap();
    let isa = hpcscope_bench::topology::Isa::detect();
    if !isa.supports(Width::Scalar) {
        return;
    }
    let e = hpcscope_bench::run(&cfg).unwrap_err();
    assert_eq!(e.kind().exit_code(), 2);
    assert!(e.to_string().contains("beyond the last-level cache"), "{e}");
}

#[test]
fn dgemm_summary_labels_the_sustained_peak_beside_the_fma_kernel() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        println!("skipping: one CPU only, no node DGEMM to measure");
        return;
    }
    let cfg = BenchConfig {
        quick: true,
        selection: Selection::parse("fma,dgemm").unwrap(),
        repeat: Some(1),
        widths: Some(vec![Width::Scalar]),
        precisions: vec![hpcscope_core::Precision::F64],
        progress: false,
        cpus: CpuRequest::Threads(2),
        ..BenchConfig::default()
    };
    let r = hpcscope_bench::run(&cfg).unwrap();
    let d = r.dgemm.as_ref().expect("the DGEMM ran");
    let node = d.node.as_ref().expect("two CPUs: the node DGEMM ran");
    assert_eq!(node.threads, 2);
    assert!(node.gflops.median > 0.0 && d.gflops.median > 0.0);
    let s = hpcscope_bench::report::summary(&r);
    // The DGEMM lines follow the FMA kernel's peak, each labelled.
    let fma = s.find("peak fma-f64").expect(&s);
    let core = s
        .find("peak dgemm-f64 (sustained, blocked DGEMM")
        .expect(&s);
    let on_node = s.find("peak dgemm-f64 node (2 threads").expect(&s);
    assert!(fma < core && core < on_node, "{s}");
    assert!(s.contains("of the FMA-kernel peak"), "{s}");
    // The machine keeps it, or says why not.
    let kept = r.machine.peaks[0].dgemm.as_ref();
    match kept {
        Some(k) => {
            assert!(s.contains("keeps it as [peaks.dgemm]"), "{s}");
            assert!(k.provenance.contains("one independent product per CPU"));
            assert!(k.node_gflops.is_some());
        }
        None => assert!(s.contains("not kept in the machine file"), "{s}"),
    }
}

#[test]
fn latency_chains_reach_the_machine_file() {
    // Selecting sqrt brings the mul chain (its kernel subtracts the mul's latency).
    let cfg = BenchConfig {
        selection: Selection::parse("triad,add,sqrt").unwrap(),
        widths: Some(vec![Width::Scalar, Width::W128]),
        ..tiny()
    };
    let isa = hpcscope_bench::topology::Isa::detect();
    if !isa.supports(Width::Scalar) {
        eprintln!("skipping test - no kernel can run on this CPU/build");
        return;
    }
    let r = hpcscope_bench::run(&cfg).unwrap();
    let ran: Vec<(FlopOp, Width)> = r.op_latencies.iter().map(|l| (l.op, l.width)).collect();
    for w in isa.widths().into_iter().filter(|w| *w <= Width::W128) {
        for op in [FlopOp::Add, FlopOp::Mul, FlopOp::Sqrt] {
            assert!(ran.contains(&(op, w)), "{op} {w}: {ran:?}");
        }
    }
    assert!(
        r.op_latencies
            .iter()
            .all(|l| l.ns.median > 0.0 && l.cycles > 0.0)
    );
    let peak = &r.machine.peaks[0];
    assert_eq!(peak.latencies.len(), r.op_latencies.len());
    let keys: Vec<(u32, String)> = peak
        .latencies
        .iter()
        .map(|l| (l.vector_bits, l.op.to_string()))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    for l in &peak.latencies {
        assert!(
            l.provenance.contains("latency kernel") && l.provenance.contains("core cycles"),
            "{}",
            l.provenance
        );
    }
    for op in [CeilingOp::Add, CeilingOp::Mul, CeilingOp::Sqrt] {
        assert!(
            r.machine.latency_ns(Precision::F64, op, 64).is_some(),
            "{op}"
        );
    }
    assert!(r.machine.scalar_frequency_ghz.is_some());
    let back = Machine::from_toml_str(&r.machine.to_toml_string(), "bench output").unwrap();
    assert_eq!(back, r.machine);
    // The FP units' kernels have a unit count and an efficiency; the divider's kernels
    // their cycles per instruction instead (one square root every several cycles).
    for p in &r.peaks {
        if p.op.is_peak() {
            assert!(
                p.units.is_some() && p.efficiency.is_some() && p.cycles_per_instruction.is_none()
            );
        } else {
            assert!(p.units.is_none() && p.efficiency.is_none() && p.theoretical_gflops.is_none());
            let cpi = p.cycles_per_instruction.unwrap();
            assert!(cpi > 1.0 && cpi.is_finite(), "{} {}: {cpi}", p.op, p.width);
        }
    }
    assert!(r.peaks.iter().any(|p| p.op == FlopOp::Sqrt));
}

/// Where the sweep sees the last level's step into main memory far below sysfs's capacity
/// (a VM's share of the host's L3), the machine file's cache takes the sweep's capacity,
/// in whole sets, and says so in its provenance and notes.
#[test]
fn a_last_level_capacity_from_the_sweep_reaches_the_machine_file() {
    let cfg = tiny();
    let isa = hpcscope_bench::topology::Isa::detect();
    let mut r = match hpcscope_bench::run(&cfg) {
        Ok(r) => r,
        Err(e) if !isa.supports(Width::Scalar) => {
            eprintln!("skipping test - no kernel can run on this CPU/build: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let l3 = r.machine.levels[2].cache.clone().unwrap();
    assert!(l3.provenance.as_deref().unwrap().starts_with("sysfs"));
    let step = (5 << 20) + 12_345;
    r.levels[2].capacity_from_sweep = Some(hpcscope_bench::plateau::SweptCapacity {
        bytes: step,
        sysfs_bytes: l3.size_bytes,
    });
    let m = hpcscope_bench::report::build_machine(&r, &cfg.names).unwrap();
    let c = m.levels[2].cache.as_ref().unwrap();
    let set = u64::from(c.line_bytes) * u64::from(c.associativity);
    assert_eq!(c.size_bytes % set, 0, "{c:?}");
    assert!(c.size_bytes <= step && step - c.size_bytes < set, "{c:?}");
    assert_eq!(
        (c.line_bytes, c.associativity, c.shared_by_cores),
        (l3.line_bytes, l3.associativity, l3.shared_by_cores)
    );
    let prov = c.provenance.as_deref().unwrap();
    assert!(
        prov.contains("bandwidth sweep") && prov.contains("sysfs"),
        "{prov}"
    );
    assert!(
        m.notes
            .iter()
            .any(|n| n.starts_with("L3's capacity is the sweep's")),
        "{:?}",
        m.notes
    );
    // The other levels keep sysfs's capacities, and the file loads back.
    assert_eq!(m.levels[1].cache, r.machine.levels[1].cache);
    let back = Machine::from_toml_str(&m.to_toml_string(), "bench output").unwrap();
    assert_eq!(back, m);
    // The summary says it on L3's line.
    r.machine = m;
    let text = hpcscope_bench::report::summary(&r);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("L3"))
        .unwrap();
    assert!(line.contains("from the sweep's step into memory"), "{text}");
}

/// A ceiling kernel measured above the peak kernel (one of them disturbed on a busy
/// machine) is left out of the machine file with a note, instead of making an invalid
/// machine that fails the whole run.
#[test]
fn a_ceiling_above_the_peak_is_left_out_with_a_note() {
    let cfg = BenchConfig {
        selection: Selection::parse("triad,add").unwrap(),
        widths: Some(vec![Width::Scalar]),
        ..tiny()
    };
    let isa = hpcscope_bench::topology::Isa::detect();
    if !isa.supports(Width::Scalar) {
        eprintln!("skipping test - no kernel can run on this CPU/build");
        return;
    }
    let mut r = hpcscope_bench::run(&cfg).unwrap();
    let peak = r.machine.peaks[0].core_gflops.unwrap();
    let add = r
        .peaks
        .iter_mut()
        .find(|p| p.op == FlopOp::Add && p.precision == Precision::F64)
        .expect("the add kernel ran");
    for v in [
        &mut add.gflops.median,
        &mut add.gflops.max,
        &mut add.gflops.q3,
    ] {
        *v = 2.0 * peak;
    }
    let m = hpcscope_bench::report::build_machine(&r, &cfg.names).unwrap();
    assert!(
        m.peaks[0]
            .ceilings
            .iter()
            .all(|c| c.op != CeilingOp::Add || c.vector_bits != 64),
        "{:?}",
        m.peaks[0].ceilings
    );
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("add-f64-scalar") && n.contains("not kept as a ceiling")),
        "{:?}",
        m.notes
    );
}
