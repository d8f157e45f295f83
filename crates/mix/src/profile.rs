//! The profiles of a characterization: the counts report and the simulated caches of one
//! machine made into a [`Profile`] (bytes per level scaled to the counted bytes, per
//! thread), and the per-function breakdown. Which engine counted is only named (its
//! collector).

use hpcscope_cachesim::{HierarchyStats, NodeConfig, Placement, ThreadStats};
use hpcscope_core::machine::LevelKind;
use hpcscope_core::profile::{BinaryIdentity, LevelBytes, Memory, Region, ThreadMetrics};
use hpcscope_core::{Machine, Precision, Profile};

use crate::elf::ElfInfo;
use crate::engine::{PluginOutput, Totals};
use crate::error::MixError;
use crate::{FunctionCounts, MixOptions, widths};

/// The dominant precision and the widest vector width of the FP work.
pub(crate) fn precision_and_width(c: &PluginOutput) -> (Precision, Option<u32>, Vec<String>) {
    let mut f64f = 0u64;
    let mut f32f = 0u64;
    let mut width = None::<u32>;
    let mut notes = Vec::new();
    for (k, w) in &c.totals.fp_by_width {
        let (p, wd) = k.split_once('_').unwrap_or((k.as_str(), "scalar"));
        match p {
            "f64" => f64f += w.flops,
            "f32" => f32f += w.flops,
            _ => {}
        }
        if let Ok(b) = wd.parse::<u32>()
            && w.instructions > 0
        {
            width = Some(width.map_or(b, |x: u32| x.max(b)));
        }
    }
    let p = if f32f > f64f {
        Precision::F32
    } else {
        Precision::F64
    };
    let (major, minor) = if p == Precision::F64 {
        (f64f, f32f)
    } else {
        (f32f, f64f)
    };
    if minor > 0 && minor * 20 > major {
        notes.push(format!(
            "mixed precision: {minor} of {} FLOPs are not {p}",
            major + minor
        ));
    }
    (p, width, notes)
}

#[allow(clippy::too_many_arguments)]
#[allow(clippy::too_many_lines)]
pub(crate) fn profile(
    application: &str,
    opts: &MixOptions,
    info: &ElfInfo,
    c: &PluginOutput,
    m: &Machine,
    st: &HierarchyStats,
    per_thread: &[ThreadStats],
    records: u64,
    sve: Option<u32>,
    time_s: Option<f64>,
    thread_times: Option<&[f64]>,
    partial: bool,
    notes_in: &[String],
    collector: &str,
) -> Result<Profile, MixError> {
    let counted = (c.totals.bytes_loaded + c.totals.bytes_stored) as f64;
    let simulated: f64 = st.levels.iter().map(|l| l.bytes_served as f64).sum::<f64>()
        + st.memory.bytes_served as f64;
    let mut notes = notes_in.to_vec();
    let (precision, width, pnotes) = precision_and_width(c);
    notes.extend(pnotes);
    if let Some(p) = &c.predication
        && sve.is_some()
    {
        notes.push(format!("SVE predication counted as {p}"));
    }
    if counted > 0.0 && (records == 0 || simulated == 0.0) {
        return Err(MixError::Run(
            format!(
                "the memory stream is empty while the program moved {counted} bytes{}",
                if sve.is_some() {
                    " (QEMU 7.2 does not report SVE loads and stores to plugins)"
                } else {
                    ""
                }
            ) + "\n  fix: pass --cache-binary with a NEON or scalar build of the same source: its cache behaviour is simulated instead",
        ));
    }
    // Fractions from the simulation, applied to the counted bytes. The stream carries the
    // counted bytes exactly, except the SVE accesses QEMU does not report (counted apart),
    // or when it comes from another build.
    let scale = if simulated > 0.0 {
        counted / simulated
    } else {
        0.0
    };
    let unreported = c.totals.bytes_unreported as f64;
    let streamed = counted - unreported;
    if simulated > 0.0 {
        if opts.cache_binary.is_some() {
            if (scale - 1.0).abs() > 0.01 {
                notes.push(format!("simulated bytes ({simulated}, from the cache binary) differ from counted bytes ({counted}); the simulated fractions are applied to the counted bytes"));
            }
        } else if (simulated - streamed).abs() > 0.5 && opts.run.sample.is_none() {
            // (A sampled simulation's bytes are an estimate: its note says so.)
            notes.push(format!(
                "simulated bytes ({simulated}) differ from the bytes the memory stream should carry ({streamed}{}){}; the simulated fractions are applied to the counted bytes",
                if unreported > 0.0 {
                    format!(" of {counted} counted")
                } else {
                    String::new()
                },
                if partial {
                    ": the run ended early"
                } else {
                    ""
                }
            ));
        } else if unreported > 0.0 {
            notes.push(format!("{unreported} of the {counted} counted bytes are SVE loads and stores or DC ZVA zeroing, which QEMU 7.2 does not report to plugins: the cache simulation saw the other {streamed} bytes, and its fractions are applied to all"));
        }
    }
    if let Some(s) = &c.mem_stream
        && s.dropped > 0
    {
        notes.push(format!(
            "{} of {} memory-stream records were lost after a write error: the cache simulation misses them",
            s.dropped,
            s.records + s.dropped
        ));
    }
    if let Some(s) = &c.mem_stream
        && s.overflowed_buffers > 0
    {
        notes.push(format!(
            "{} buffers of the memory stream overflowed before the plugin emptied them: records were lost and the cache simulation misses them (run again with HPCSCOPE_MEMINLINE=off, and report the program)",
            s.overflowed_buffers
        ));
    }
    if c.forked_processes > 0 {
        notes.push(format!(
            "the program forked {} process(es) (a shell's commands among them): their instructions, FLOPs and memory accesses, before and after any exec, are not in these counts or the cache simulation (only the process started is characterized)",
            c.forked_processes
        ));
    }
    // (A few dozen iterations of start-up loops are left out of most programs: the
    // count says so; the note, from 1 % of the loops' iterations.)
    let left_out = c.totals.chain_iterations_left_out;
    if left_out > 0 && left_out * 100 >= left_out + c.totals.chain_iterations {
        notes.push(format!(
            "the dependency chains of loops with {left_out} iterations in all are not counted (against {} iterations counted on chains): the engine cannot tell how often they were entered (a loop closed by an unconditional jump leaves by branches inside it); the chains' ceiling misses them",
            c.totals.chain_iterations
        ));
    }
    if c.lost_executions > 0 {
        notes.push(format!(
            "{} block executions could not be counted (more translation blocks than the plugin's counters hold): counts are low",
            c.lost_executions
        ));
    }
    let mem_name = m
        .levels
        .iter()
        .rev()
        .find(|l| l.kind == LevelKind::Memory)
        .map(|l| l.name.clone())
        .unwrap_or_else(|| "MM".into());
    // Bytes per level: the simulated bytes each level served, scaled to the counted bytes
    // (`scale`, the whole node's; per thread, each thread's own when its accesses were
    // simulated).
    let served = |s: &HierarchyStats| -> Vec<f64> {
        s.all_levels().map(|l| l.bytes_served as f64).collect()
    };
    let names: Vec<String> = st
        .levels
        .iter()
        .map(|l| l.name.clone())
        .chain(std::iter::once(mem_name))
        .collect();
    let node_fractions: Vec<f64> = {
        let b = served(st);
        let t: f64 = b.iter().sum();
        b.iter()
            .map(|x| if t > 0.0 { x / t } else { 0.0 })
            .collect()
    };
    let threads = thread_list(c);
    let mut metrics = Vec::new();
    let mut borrowed = 0usize;
    for (i, (n, t)) in threads.iter().enumerate() {
        let counted_t = (t.bytes_loaded + t.bytes_stored) as f64;
        let sim = per_thread
            .iter()
            .find(|x| x.thread == *n)
            .map(|x| served(&x.stats));
        let sim_total: f64 = sim.as_ref().map_or(0.0, |b| b.iter().sum());
        let bytes: Vec<f64> = match sim {
            // One thread: the node's scale, as the notes above describe.
            Some(b) if threads.len() == 1 => b.iter().map(|x| x * scale).collect(),
            Some(b) if sim_total > 0.0 => b.iter().map(|x| x * counted_t / sim_total).collect(),
            _ => {
                if counted_t > 0.0 {
                    borrowed += 1;
                }
                node_fractions.iter().map(|f| f * counted_t).collect()
            }
        };
        let levels: Vec<LevelBytes> = names
            .iter()
            .zip(bytes)
            .map(|(level, bytes)| LevelBytes {
                level: level.clone(),
                bytes,
            })
            .collect();
        metrics.push(ThreadMetrics {
            thread: *n,
            time_s: match thread_times {
                Some(v) => v.get(i).copied().filter(|x| *x > 0.0),
                None => time_s,
            },
            flops: t.flops as f64,
            fp_instructions: t.fp_instructions as f64,
            memory: Memory {
                bytes_per_level: Some(levels),
                bytes_total: None,
                hit_ratios: None,
            },
            loads: Some(t.loads as f64),
            stores: Some(t.stores as f64),
            instructions: Some(t.instructions as f64),
        });
    }
    if borrowed > 0 && threads.len() > 1 {
        notes.push(format!(
            "{borrowed} of {} threads moved bytes that the simulation did not see (their stream came from another build or QEMU does not report them): the node's fractions per level are applied to their counted bytes",
            threads.len()
        ));
    }
    Ok(Profile {
        format_version: hpcscope_core::profile::FORMAT_VERSION,
        application: application.to_string(),
        binary: Some(BinaryIdentity {
            path: opts.run.program.display().to_string(),
            sha256: Some(info.sha256.clone()),
            compiler: info.compiler.clone(),
            flags: None,
        }),
        isa: info.arch.name().to_string(),
        vector_bits: sve.or(width).unwrap_or(64).max(64),
        precision,
        machine: Some(m.id.clone()),
        collector: Some(collector.into()),
        partial,
        regions: vec![Region {
            name: region_name(opts),
            threads: metrics,
            access_widths: widths::access_widths(&c.totals),
        }],
        notes,
    })
}

/// The counted threads (number, counts), in start order; the totals as thread 0 when the
/// plugin gave no per-thread counts.
pub(crate) fn thread_list(c: &PluginOutput) -> Vec<(u32, Totals)> {
    if c.threads.is_empty() {
        return vec![(0, c.totals.clone())];
    }
    let mut v: Vec<(u32, Totals)> = c
        .threads
        .iter()
        .map(|t| (t.thread, t.totals.clone()))
        .collect();
    v.sort_by_key(|(n, _)| *n);
    v
}

/// How the threads were placed on the node of `cfg`.
pub(crate) fn node_note(
    cfg: &NodeConfig,
    per_thread: &[ThreadStats],
    placement: &Placement,
) -> String {
    let cores: Vec<String> = per_thread
        .iter()
        .map(|t| format!("{}->{}", t.thread, t.core))
        .collect();
    let shared: Vec<String> = cfg
        .levels
        .iter()
        .map(|l| {
            if l.shared_by_cores > 1 {
                format!("{} shared by {} cores", l.cache.name, l.shared_by_cores)
            } else {
                format!("{} private", l.cache.name)
            }
        })
        .collect();
    let beyond = per_thread.iter().filter(|t| t.core >= cfg.cores).count();
    format!(
        "caches simulated as a node of {} cores ({}): threads on cores {} ({} placement){}",
        cfg.cores,
        shared.join(", "),
        if cores.is_empty() {
            "-".to_string()
        } else {
            cores.join(", ")
        },
        placement.label(),
        if beyond > 0 {
            format!(
                "; {beyond} thread(s) beyond the machine's {} cores ran on more cores of the same kind",
                cfg.cores
            )
        } else {
            String::new()
        }
    )
}

pub(crate) fn region_name(opts: &MixOptions) -> String {
    let mut parts: Vec<String> = opts.run.functions.clone();
    parts.extend(opts.run.scope.iter().map(|s| format!("{s}+callees")));
    if parts.is_empty() {
        "main".into()
    } else {
        parts.join(",")
    }
}

pub(crate) fn per_function(c: &PluginOutput, info: &ElfInfo) -> Vec<FunctionCounts> {
    let mut map: std::collections::BTreeMap<String, FunctionCounts> = Default::default();
    for tb in &c.tbs {
        let addr = tb.pc.wrapping_sub(c.load_bias);
        let name = info
            .function_at(addr)
            .map(|s| s.name.clone())
            .unwrap_or_else(|| "?".into());
        let e = map.entry(name.clone()).or_insert_with(|| FunctionCounts {
            function: name,
            ..Default::default()
        });
        e.instructions += tb.instructions;
        e.fp_instructions += tb.fp_instructions;
        e.flops += tb.flops;
        e.bytes += tb.bytes_loaded + tb.bytes_stored;
    }
    let mut v: Vec<FunctionCounts> = map.into_values().collect();
    v.sort_by(|a, b| {
        b.flops
            .cmp(&a.flops)
            .then(b.instructions.cmp(&a.instructions))
    });
    v
}
