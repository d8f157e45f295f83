//! Replays a recorded memory-access stream of the hpcscope plugin through the cache
//! simulator the way `hpcscope mix` does (each thread on its core of each machine's node,
//! placed compactly), and reports the time of each stage: the simulator's speed on a real
//! program's stream, without QEMU in the measurement.
//!
//! Record a stream (the plugin writes it to file descriptor 3 here):
//!
//! ```sh
//! qemu-x86_64 -plugin target/release/libhpcscope_qemu_plugin.so,mem=on,memfd=3,coalesce=64 ./prog 3>stream.bin
//! cargo run --release -p hpcscope-mix --example replay -- stream.bin cascadelake-8260 graviton2
//! ```
//!
//! `--json FILE` first writes every counter (each machine's, all threads and per thread) to
//! FILE as JSON, to compare two builds of the simulator count for count. `--sample K`
//! replays it through the set-sampled simulation of `mix --sample K` instead (a stream the
//! native engine's client gated with `sample=` included), and prints its time and estimates.

use std::io::Read;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let json = if args.first().map(String::as_str) == Some("--json") && args.len() > 1 {
        let file = args.remove(1);
        args.remove(0);
        Some(file)
    } else {
        None
    };
    let sample = if args.first().map(String::as_str) == Some("--sample") && args.len() > 1 {
        let k: u64 = args.remove(1).parse()?;
        args.remove(0);
        Some(hpcscope_mix::SampleSpec::sets(k)?)
    } else {
        None
    };
    let Some((path, machines)) = args.split_first() else {
        return Err("usage: replay [--json FILE] [--sample K] STREAM MACHINE...".into());
    };
    let configs = machines
        .iter()
        .map(|id| {
            let m = hpcscope_core::library::builtin(id)?;
            Ok(hpcscope_mix::node(&m)?)
        })
        .collect::<Result<Vec<_>, Box<dyn std::error::Error>>>()?;
    let t0 = Instant::now();
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    let read_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    if let Some(spec) = sample {
        let placement = hpcscope_cachesim::Placement::Compact;
        let (caches, _, _) = hpcscope_mix::replay_sampled(&bytes[..], configs, &placement, spec)?;
        println!(
            "sampled replay: read {read_s:.3} s; decode + simulate {:.3} s",
            t1.elapsed().as_secs_f64()
        );
        for c in &caches {
            let levels: Vec<String> = c
                .levels
                .iter()
                .map(|l| format!("{} {} hits / {} misses", l.name, l.hits, l.misses))
                .collect();
            println!("{}: {} accesses; {}", c.name, c.accesses, levels.join(", "));
        }
        return Ok(());
    }
    let r =
        hpcscope_mix::replay_stream(&bytes[..], configs, &hpcscope_cachesim::Placement::Compact)?;
    let sim_s = t1.elapsed().as_secs_f64();
    if let Some(file) = json {
        let all = serde_json::json!({
            "records": r.records,
            "caches": r.caches,
            "thread_caches": r.thread_caches,
        });
        std::fs::write(file, serde_json::to_string_pretty(&all)?)?;
    }
    let (stats, records) = (r.caches, r.records);
    println!(
        "{records} records; read {read_s:.3} s; decode + simulate {sim_s:.3} s ({:.1} M records/s, {:.2} ns per record and hierarchy)",
        records as f64 / sim_s / 1e6,
        sim_s * 1e9 / records as f64 / stats.len().max(1) as f64
    );
    for (i, s) in stats.iter().enumerate() {
        let levels: Vec<String> = s
            .levels
            .iter()
            .map(|l| format!("{} {} hits / {} misses", l.name, l.hits, l.misses))
            .collect();
        println!(
            "{}: {} accesses ({} threads); {}; MM {} reads, {} write-backs",
            s.name,
            s.accesses,
            r.thread_caches[i].len(),
            levels.join(", "),
            s.memory.accesses,
            s.memory.writebacks
        );
    }
    Ok(())
}
