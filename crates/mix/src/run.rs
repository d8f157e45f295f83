//! One characterization run: an [`Engine`] runs the program, and its record stream is read
//! on another thread and fed to the cache simulation as it arrives (never held in memory
//! whole, [`crate::simulate`]).

use std::path::PathBuf;
use std::time::Duration;

use hpcscope_cachesim::{HierarchyStats, NodeConfig, NodeSim, Placement, ThreadStats};

use crate::elf::Arch;
use crate::engine::{Ending, Engine, Launch, PluginOutput, StreamRequest};
use crate::error::MixError;
use crate::partition::Simulated;
use crate::sampling::{SampleMethod, SampleSpec, SamplingReport};

/// One run to make and simulate.
#[derive(Debug, Clone)]
pub struct Request {
    /// The program.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Architecture.
    pub arch: Arch,
    /// Statically linked (no dynamic loader).
    pub static_binary: bool,
    /// SVE vector length, bits (aarch64).
    pub sve_bits: Option<u32>,
    /// In-function regions (link-time ranges).
    pub regions: Vec<(u64, u64)>,
    /// Start/stop scopes, callees included (link-time ranges).
    pub scopes: Vec<(u64, u64)>,
    /// Nodes whose caches to simulate (empty: no memory stream).
    pub nodes: Vec<NodeConfig>,
    /// How the guest's threads are placed on each node's cores.
    pub placement: Placement,
    /// Variables set in the program's environment.
    pub env: Vec<(String, String)>,
    /// Per-TB breakdown.
    pub tbs: bool,
    /// Time limit.
    pub timeout: Option<Duration>,
    /// Simulate the caches in sampled windows (None: every access).
    pub sample: Option<SampleSpec>,
    /// With set sampling, the engine leaves the accesses to unsampled classes out of the
    /// stream (normally; `false` streams every access and the reader drops them, which
    /// gives the same result more slowly).
    pub stream_gate: bool,
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The engine's counts (None when it counted nothing: the program could not start).
    pub counts: Option<PluginOutput>,
    /// Cache statistics of each node, all threads (same order as the request).
    pub caches: Vec<HierarchyStats>,
    /// Cache statistics of each node, per thread (same order).
    pub thread_caches: Vec<Vec<ThreadStats>>,
    /// Memory records read from the stream.
    pub records: u64,
    /// How the program ended.
    pub ending: Ending,
    /// Wall time of the run, seconds.
    pub wall_s: f64,
    /// Last lines the program and the engine printed on standard error.
    pub stderr_tail: String,
    /// With a sampled simulation: what it measured and how sure it is (`caches` and
    /// `thread_caches` then hold the extrapolated counters).
    pub sampling: Option<SamplingReport>,
}

/// Runs `req` under `engine`, its stream simulated while it runs.
pub fn run(engine: &dyn Engine, req: &Request) -> Result<Outcome, MixError> {
    let stream = (!req.nodes.is_empty()).then(|| StreamRequest {
        // Repeated accesses inside the smallest simulated line share a record.
        coalesce: req
            .nodes
            .iter()
            .filter_map(|h| h.levels.first().map(|l| l.cache.line_bytes))
            .min()
            .unwrap_or(64),
        gate: match req.sample {
            Some(spec) if spec.method == SampleMethod::Sets && req.stream_gate => {
                crate::sampling::sets::plugin_gate(&spec, &req.nodes)
            }
            _ => None,
        },
    });
    let sims = if stream.is_some() {
        req.nodes
            .iter()
            .map(|n| NodeSim::new(n.clone(), req.placement.clone()))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let mut running = engine.start(&Launch {
        program: req.program.clone(),
        args: req.args.clone(),
        arch: req.arch,
        static_binary: req.static_binary,
        sve_bits: req.sve_bits,
        regions: req.regions.clone(),
        scopes: req.scopes.clone(),
        env: req.env.clone(),
        tbs: req.tbs,
        timeout: req.timeout,
        stream,
    })?;
    let reader = running.take_stream().map(|source| {
        let (sample, busy) = (req.sample, engine.busy_cpus());
        std::thread::spawn(move || crate::simulate::read_source(source, sims, busy, sample))
    });
    let finished = running.finish()?;
    let (nodes, records, sampled) = match reader {
        Some(h) => h
            .join()
            .map_err(|_| MixError::Run("the stream reader panicked".into()))??,
        None => (Vec::new(), 0, None),
    };
    let (caches, thread_caches, sampling) = match sampled {
        Some((est, report)) => {
            let (c, t) = est.into_iter().unzip();
            (c, t, Some(report))
        }
        None => (
            nodes.iter().map(Simulated::stats).collect(),
            nodes.iter().map(Simulated::thread_stats).collect(),
            None,
        ),
    };
    Ok(Outcome {
        counts: finished.counts,
        caches,
        thread_caches,
        records,
        ending: finished.ending,
        wall_s: finished.wall_s,
        stderr_tail: finished.stderr_tail,
        sampling,
    })
}

/// Runs `req` under `engine`, and once more when the engine says the ending was its own
/// fault ([`Engine::rerun_note`], whose note goes into `notes`). A second such ending is
/// reported as it is.
pub fn run_rerun(
    engine: &dyn Engine,
    notes: &mut Vec<String>,
    req: &Request,
) -> Result<Outcome, MixError> {
    let o = run(engine, req)?;
    match engine.rerun_note(&req.program, &o.ending) {
        None => Ok(o),
        Some(note) => {
            notes.push(note);
            run(engine, req)
        }
    }
}
