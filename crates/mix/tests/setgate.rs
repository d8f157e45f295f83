//! Set sampling with the plugin's gate (`sample=`): the plugin leaves the accesses to
//! unsampled classes out of the stream, and the sampled simulation gives exactly what it
//! gives when every access is streamed and the reader drops them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use hpcscope_mix::emulate::{self, Ending, Request};
use hpcscope_mix::{Arch, Placement, SampleSpec};

const KERNEL: &str = include_str!("data/gate.c");

fn build(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("gate.c");
    std::fs::write(&src, KERNEL).ok()?;
    let out = dir.join("gate");
    let st = Command::new("gcc")
        .args(["-O2", "-march=x86-64", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .ok()?;
    st.success().then_some(out)
}

#[test]
fn gating_in_the_plugin_gives_the_reader_gated_result_exactly() {
    if !common::have("qemu-x86_64") || !common::have("gcc") {
        eprintln!("skipping: needs qemu-x86_64 and gcc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else {
        eprintln!("skipping: gcc cannot build the test program");
        return;
    };
    // 64, 256 and 64 classes; 64-, 64- and 256-byte lines: the plugin's classes are
    // 64-byte lines mod 256.
    let nodes: Vec<_> = ["cascadelake-8260", "graviton2", "a64fx"]
        .iter()
        .map(|id| hpcscope_mix::node(&hpcscope_core::library::builtin(id).unwrap()).unwrap())
        .collect();
    let spec = SampleSpec::sets(8).unwrap();
    let run = |gate: bool| {
        emulate::run(&Request {
            qemu: "qemu-x86_64".into(),
            plugin: common::plugin(),
            program: bin.clone(),
            args: vec!["100000".into()],
            arch: Arch::X86_64,
            sve_bits: None,
            regions: Vec::new(),
            scopes: Vec::new(),
            nodes: nodes.clone(),
            placement: Placement::Compact,
            env: Vec::new(),
            tbs: false,
            timeout: None,
            sample: Some(spec),
            plugin_gate: gate,
        })
        .unwrap()
    };
    let gated = run(true);
    let all = run(false);
    for o in [&gated, &all] {
        assert_eq!(o.ending, Ending::Success, "{}", o.stderr_tail);
    }
    let (cg, ca) = (gated.counts.unwrap(), all.counts.unwrap());
    // The gate thinned the stream: about a quarter of the accesses are in a class one of
    // the machines samples.
    let (wg, wa) = (
        cg.mem_stream.as_ref().unwrap().records,
        ca.mem_stream.as_ref().unwrap().records,
    );
    assert!(wg * 2 < wa, "records written: gated {wg}, all {wa}");
    // Accesses, those left out by the plugin included.
    assert_eq!(gated.records, all.records);
    assert_eq!(cg.totals.flops, ca.totals.flops);
    assert_eq!(cg.totals.bytes_loaded, ca.totals.bytes_loaded);
    // Instruction counts differ by a few tens between any two emulations of a program.
    let (ig, ia) = (cg.totals.instructions, ca.totals.instructions);
    assert!(ig.abs_diff(ia) * 100_000 < ia, "instructions {ig} and {ia}");
    for (k, (g, a)) in gated.caches.iter().zip(&all.caches).enumerate() {
        assert!(a.levels.iter().all(|l| l.hits + l.misses > 0), "{a:?}");
        for (lg, la) in g.levels.iter().zip(&a.levels) {
            assert_eq!(
                (lg.hits, lg.misses, lg.bytes_served, lg.writebacks),
                (la.hits, la.misses, la.bytes_served, la.writebacks),
                "node {k} {}",
                lg.name
            );
        }
        assert_eq!(g.memory.bytes_served, a.memory.bytes_served, "node {k}");
    }
    let (sg, sa) = (gated.sampling.unwrap(), all.sampling.unwrap());
    assert_eq!(sg, sa);
}
