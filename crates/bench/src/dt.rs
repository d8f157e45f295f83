//! The data-throughput (DT) kernel of seed 003 (Owenson 2020, section 5.5.1): the indirect
//! access pattern of an unstructured-grid edge loop with minimal arithmetic. Its time per
//! edge at `t` threads is the memory-bound cap `T_t,DT` of a strong-scaling prediction, and
//! the clock at each thread count is measured beside it (`Hz_t` of eq. 5.2).
//!
//! The mesh is a 3-D lattice of nodes, each joined to its +x, +y and +z neighbours: three
//! edges per node in node order, the locality of a bandwidth-reordered unstructured mesh.
//! Each node holds 5 variables (the conserved variables of a 3-D Euler code). One edge
//! `(a, b)` does, per variable `k`: `d = v[a][k] - v[b][k]; out[a][k] += d; out[b][k] -= d`
//! (15 FLOPs; 2 index loads, 10 gathers and 10 read-modify-writes: 22 loads and 10 stores,
//! 248 bytes of its own traffic). The thesis's DT kernel does 13 FP operations, 20 loads and
//! 10 stores per (AVX2) iteration; this one is written from that description, not copied.
//!
//! Bandwidth is reported twice: `gbs`, the compulsory memory traffic of a pass (each index,
//! variable and increment moved once: about 48 B per edge on a large lattice, since a node's
//! data is reused by its edges from cache), which is what compares with STREAM; and
//! `gbs_own`, the kernel's own loads and stores (248 B per edge, cache hits included).
//!
//! Weak-scaled as the thesis runs MG-CFD: each thread traverses its own copy of the mesh,
//! pinned to its own CPU, all threads started together. The result is seconds per edge per
//! thread at `t` threads, so a prediction multiplies it by its own iterations per thread.
//!
//! The clock at `t` threads: `scaling_cur_freq` of the CPUs used, read while `t` threads run
//! a dependent-add chain, where cpufreq is readable; otherwise the chain itself (one add per
//! cycle, [`crate::topology::measure_frequency_ghz`]) timed on each of the `t` threads at
//! once, the slowest thread's clock kept.

use std::sync::{Barrier, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::BenchError;
use crate::stats::Summary;

/// Variables per node.
pub const VARS: usize = 5;
/// FLOPs per edge.
pub const FLOPS_PER_EDGE: f64 = 15.0;
/// Load instructions per edge (2 indices, 10 gathers, 10 read-modify-write reads).
pub const LOADS_PER_EDGE: f64 = 22.0;
/// Store instructions per edge.
pub const STORES_PER_EDGE: f64 = 10.0;
/// The kernel's own bytes per edge: two 4-byte indices, 2 x 5 gathered f64, and 2 x 5 f64
/// read and written back.
pub const BYTES_PER_EDGE: f64 = 8.0 + 80.0 + 160.0;
/// Format tag of a saved DT report.
pub const FORMAT: &str = "hpcscope-dt";

/// An edge list over `nodes` nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Mesh {
    /// Number of nodes.
    pub nodes: usize,
    /// Edges `(a, b)`, `a < b`, in order of `a`.
    pub edges: Vec<[u32; 2]>,
}

/// A lattice mesh of about `nodes` nodes (the cube root rounded up): each node joined to its
/// +x, +y, +z neighbours.
pub fn lattice_mesh(nodes: usize) -> Mesh {
    let n = (nodes.max(8) as f64).cbrt().ceil() as usize;
    let id = |x: usize, y: usize, z: usize| (x + n * (y + n * z)) as u32;
    let mut edges = Vec::with_capacity(3 * n * n * n);
    for z in 0..n {
        for y in 0..n {
            for x in 0..n {
                let a = id(x, y, z);
                if x + 1 < n {
                    edges.push([a, id(x + 1, y, z)]);
                }
                if y + 1 < n {
                    edges.push([a, id(x, y + 1, z)]);
                }
                if z + 1 < n {
                    edges.push([a, id(x, y, z + 1)]);
                }
            }
        }
    }
    Mesh {
        nodes: n * n * n,
        edges,
    }
}

impl Mesh {
    /// Bytes of one copy: indices, the node variables and the node increments.
    pub fn footprint_bytes(&self) -> u64 {
        (self.edges.len() * 8 + self.nodes * VARS * 8 * 2) as u64
    }

    /// Compulsory memory bytes of one pass per edge: the indices, the variables read once,
    /// the increments read and written once (a node's data is reused by its edges from
    /// cache, as in the thesis's reordered meshes).
    pub fn memory_bytes_per_edge(&self) -> f64 {
        let e = self.edges.len().max(1) as f64;
        (self.edges.len() * 8 + self.nodes * VARS * 8 * 3) as f64 / e
    }
}

/// One traversal of the DT kernel: for every edge `(a, b)` and variable `k`,
/// `d = v[a][k] - v[b][k]; out[a][k] += d; out[b][k] -= d`.
pub fn dt_pass(edges: &[[u32; 2]], v: &[[f64; VARS]], out: &mut [[f64; VARS]]) {
    for e in edges {
        let (a, b) = (e[0] as usize, e[1] as usize);
        let (va, vb) = (v[a], v[b]);
        for k in 0..VARS {
            let d = va[k] - vb[k];
            out[a][k] += d;
            out[b][k] -= d;
        }
    }
}

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct DtConfig {
    /// Thread counts, each run on the first `t` CPUs of `cpus`.
    pub threads: Vec<usize>,
    /// CPUs to pin threads to, in order.
    pub cpus: Vec<u32>,
    /// Nodes of each thread's mesh copy.
    pub nodes_per_thread: usize,
    /// Timed samples per thread count.
    pub reps: usize,
    /// Target duration of one sample, seconds.
    pub target_s: f64,
}

impl DtConfig {
    /// Nodes per thread whose copy is `bytes` large (at least 4096 nodes).
    pub fn nodes_for_bytes(bytes: u64) -> usize {
        // 3 edges x 8 B + 2 x 5 x 8 B per node.
        ((bytes / (24 + 80)) as usize).max(4096)
    }
}

/// The DT kernel and the clock at one thread count.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DtPoint {
    /// Threads run together.
    pub threads: usize,
    /// CPUs they were pinned to.
    pub cpus: Vec<u32>,
    /// Seconds per edge per thread (each thread traversing its own copy), over the samples.
    pub seconds_per_iter: Summary,
    /// Memory traffic of all threads, GB/s (median sample): each pass's compulsory bytes
    /// (indices, node variables read, node increments read and written once), the traffic
    /// comparable with STREAM.
    pub gbs: f64,
    /// The kernel's own load/store traffic of all threads (248 B per edge, cache hits
    /// included), GB/s.
    pub gbs_own: f64,
    /// Clock at this thread count, GHz.
    pub clock_ghz: f64,
    /// Where the clock comes from: `cpufreq` or `dependent-add loop`.
    pub clock_source: String,
}

/// A DT measurement at several thread counts.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DtReport {
    /// Always [`FORMAT`].
    pub format: String,
    /// Format version (1).
    pub version: u32,
    /// Host name.
    pub host: String,
    /// CPU model.
    pub cpu_model: String,
    /// UTC date of the run.
    pub date: String,
    /// Nodes of each thread's mesh copy.
    pub nodes_per_thread: usize,
    /// Edges (loop iterations) of each thread's copy.
    pub edges_per_thread: usize,
    /// Bytes of each thread's copy.
    pub bytes_per_thread: u64,
    /// FLOPs, loads, stores and own bytes per edge.
    pub per_edge: PerEdge,
    /// One entry per thread count, ascending.
    pub points: Vec<DtPoint>,
}

/// What one edge of the DT kernel does.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerEdge {
    /// FLOPs.
    pub flops: f64,
    /// Load instructions (as written; the compiler may merge some).
    pub loads: f64,
    /// Store instructions.
    pub stores: f64,
    /// Bytes of the kernel's own traffic.
    pub bytes: f64,
    /// Compulsory memory bytes per edge of this mesh: indices, variables read once,
    /// increments read and written once, over the edges.
    pub memory_bytes: f64,
}

impl DtReport {
    /// Reads a saved report (JSON), checking its format tag and values.
    pub fn from_json(text: &str, origin: &str) -> Result<DtReport, BenchError> {
        let bad = |what: String| {
            BenchError::bad_input(
                origin,
                what,
                "give a file written by `hpcscope model dt --format json -o FILE`",
            )
        };
        let r: DtReport =
            serde_json::from_str(text).map_err(|e| bad(format!("not a DT report: {e}")))?;
        if r.format != FORMAT {
            return Err(bad(format!(
                "format is '{}', expected '{FORMAT}'",
                r.format
            )));
        }
        if r.version != 1 {
            return Err(bad(format!(
                "version {} is not supported (1 is)",
                r.version
            )));
        }
        if r.points.is_empty() {
            return Err(bad("no thread counts measured".into()));
        }
        for p in &r.points {
            let s = p.seconds_per_iter.median;
            if !(s.is_finite() && s > 0.0 && p.clock_ghz.is_finite() && p.clock_ghz > 0.0) {
                return Err(bad(format!(
                    "at {} threads: seconds per edge {s} and clock {} GHz must be positive",
                    p.threads, p.clock_ghz
                )));
            }
        }
        Ok(r)
    }

    /// The point measured at `threads`.
    pub fn at(&self, threads: usize) -> Option<&DtPoint> {
        self.points.iter().find(|p| p.threads == threads)
    }
}

/// Mean `scaling_cur_freq` of `cpus` in GHz, when every one is readable.
pub fn cpufreq_ghz(cpus: &[u32]) -> Option<f64> {
    let mut sum = 0.0;
    for c in cpus {
        let p = format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq");
        let khz: f64 = std::fs::read_to_string(p).ok()?.trim().parse().ok()?;
        if !(khz.is_finite() && khz > 0.0) {
            return None;
        }
        sum += khz / 1e6;
    }
    (!cpus.is_empty()).then(|| sum / cpus.len() as f64)
}

/// Runs `body(index)` on each of `cpus` in a pinned thread, all released together; returns
/// each thread's result.
fn on_pinned<T: Send>(
    cpus: &[u32],
    body: impl Fn(usize) -> Result<T, BenchError> + Sync,
) -> Result<Vec<T>, BenchError> {
    let barrier = Barrier::new(cpus.len());
    let out: Mutex<Vec<Option<Result<T, BenchError>>>> =
        Mutex::new((0..cpus.len()).map(|_| None).collect());
    std::thread::scope(|sc| {
        for (i, &cpu) in cpus.iter().enumerate() {
            let (barrier, out, body) = (&barrier, &out, &body);
            sc.spawn(move || {
                let pinned = crate::affinity::pin_current_thread(cpu);
                barrier.wait();
                let r = pinned.and_then(|_| body(i));
                out.lock().expect("lock")[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .expect("lock")
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(BenchError::Internal("a DT thread ended early".into()))))
        .collect()
}

/// The clock at `cpus.len()` threads: cpufreq read while every thread runs the dependent-add
/// chain, else the chain's own timing (the slowest thread).
pub fn clock_at(cpus: &[u32], sample_s: f64) -> Result<(f64, String), BenchError> {
    let reading = Mutex::new(None);
    let ghz = on_pinned(cpus, |i| {
        if i == 0 {
            // Read cpufreq in the middle of the chain on thread 0's sibling run.
            let r = std::thread::scope(|sc| {
                let h = sc.spawn(|| {
                    std::thread::sleep(std::time::Duration::from_secs_f64(sample_s));
                    cpufreq_ghz(cpus)
                });
                let g = crate::topology::measure_frequency_ghz(sample_s, 5);
                (g, h.join().ok().flatten())
            });
            *reading.lock().expect("lock") = r.1;
            Ok(r.0)
        } else {
            Ok(crate::topology::measure_frequency_ghz(sample_s, 5))
        }
    })?;
    if let Some(f) = reading.into_inner().expect("lock") {
        return Ok((f, "cpufreq".into()));
    }
    let slowest = ghz.iter().copied().fold(f64::INFINITY, f64::min);
    if !(slowest.is_finite() && slowest > 0.0) {
        return Err(BenchError::Internal(format!(
            "the dependent-add loop gave no clock at {} threads",
            cpus.len()
        )));
    }
    Ok((slowest, "dependent-add loop".into()))
}

/// Measures the DT kernel and the clock at every thread count of `cfg`.
pub fn run(cfg: &DtConfig) -> Result<DtReport, BenchError> {
    let mut threads = cfg.threads.clone();
    threads.sort_unstable();
    threads.dedup();
    if threads.is_empty() || threads[0] == 0 {
        return Err(BenchError::bad_input(
            "--threads",
            "no thread count, or a count of 0",
            "give positive thread counts, e.g. --threads 1,2,4",
        ));
    }
    let max_t = *threads.last().expect("non-empty");
    if max_t > cfg.cpus.len() {
        return Err(BenchError::bad_input(
            "--threads",
            format!(
                "{max_t} threads asked, but only {} CPUs may be used",
                cfg.cpus.len()
            ),
            "give thread counts up to the number of CPUs this process may run on",
        ));
    }
    if cfg.reps == 0 || !(cfg.target_s.is_finite() && cfg.target_s > 0.0) {
        return Err(BenchError::Internal(
            "DT repetitions and sample time must be positive".into(),
        ));
    }
    let mesh = lattice_mesh(cfg.nodes_per_thread);
    let e = mesh.edges.len();
    let mut points = Vec::new();
    for &t in &threads {
        let cpus = &cfg.cpus[..t];
        let samples = measure_dt(&mesh, cpus, cfg.reps, cfg.target_s)?;
        let s = Summary::of(&samples)
            .ok_or_else(|| BenchError::Internal("no DT sample was finite".into()))?;
        let (clock_ghz, clock_source) = clock_at(cpus, (cfg.target_s / 4.0).clamp(0.005, 0.05))?;
        points.push(DtPoint {
            threads: t,
            cpus: cpus.to_vec(),
            seconds_per_iter: s,
            gbs: t as f64 * mesh.memory_bytes_per_edge() / s.median / 1e9,
            gbs_own: t as f64 * BYTES_PER_EDGE / s.median / 1e9,
            clock_ghz,
            clock_source,
        });
    }
    Ok(DtReport {
        format: FORMAT.into(),
        version: 1,
        host: hpcscope_host::facts::hostname().unwrap_or_else(|| "unknown-host".into()),
        cpu_model: crate::topology::Topology::detect().model_name,
        date: hpcscope_host::time::utc_now(),
        nodes_per_thread: mesh.nodes,
        edges_per_thread: e,
        bytes_per_thread: mesh.footprint_bytes(),
        per_edge: PerEdge {
            flops: FLOPS_PER_EDGE,
            loads: LOADS_PER_EDGE,
            stores: STORES_PER_EDGE,
            bytes: BYTES_PER_EDGE,
            memory_bytes: mesh.memory_bytes_per_edge(),
        },
        points,
    })
}

/// `reps` samples of seconds per edge per thread with `cpus.len()` threads, each on its own
/// mesh copy; a sample's time is the slowest thread's.
fn measure_dt(
    mesh: &Mesh,
    cpus: &[u32],
    reps: usize,
    target_s: f64,
) -> Result<Vec<f64>, BenchError> {
    let e = mesh.edges.len() as f64;
    // Passes per sample, from one warm-up pass on one thread.
    let passes = {
        let v = init_vars(mesh.nodes);
        let mut out = vec![[0.0; VARS]; mesh.nodes];
        dt_pass(&mesh.edges, &v, &mut out);
        let t0 = Instant::now();
        dt_pass(&mesh.edges, &v, &mut out);
        std::hint::black_box(&out);
        ((target_s / t0.elapsed().as_secs_f64().max(1e-9)).round() as usize).max(1)
    };
    let t = cpus.len();
    let barrier = Barrier::new(t);
    let times = on_pinned(cpus, |_| {
        // Each thread allocates and first-touches its own copy (its NUMA node).
        let edges = mesh.edges.clone();
        let v = init_vars(mesh.nodes);
        let mut out = vec![[0.0; VARS]; mesh.nodes];
        dt_pass(&edges, &v, &mut out);
        let mut ts = Vec::with_capacity(reps);
        for _ in 0..reps {
            barrier.wait();
            let t0 = Instant::now();
            for _ in 0..passes {
                dt_pass(&edges, &v, &mut out);
            }
            std::hint::black_box(&out);
            ts.push(t0.elapsed().as_secs_f64());
        }
        Ok(ts)
    })?;
    Ok((0..reps)
        .map(|r| times.iter().map(|ts| ts[r]).fold(0.0, f64::max) / (passes as f64 * e))
        .collect())
}

fn init_vars(nodes: usize) -> Vec<[f64; VARS]> {
    (0..nodes)
        .map(|i| {
            let x = i as f64;
            [1.0 + x * 1e-6, 0.5, -0.25 + x * 1e-7, 0.125, 2.5]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lattice_has_three_edges_per_interior_node() {
        let m = lattice_mesh(27);
        assert_eq!(m.nodes, 27);
        // 3 directions x 3 x 3 x 2 edges.
        assert_eq!(m.edges.len(), 54);
        assert!(
            m.edges
                .iter()
                .all(|e| e[0] < e[1] && (e[1] as usize) < m.nodes)
        );
        assert_eq!(m.footprint_bytes(), 54 * 8 + 27 * 80);
        assert_eq!(
            m.memory_bytes_per_edge(),
            (54.0 * 8.0 + 27.0 * 120.0) / 54.0
        );
    }

    #[test]
    fn dt_pass_conserves_the_sum_of_increments() {
        // Every edge adds d to one end and removes it from the other: the increments sum to
        // zero, and each node's increment is the sum of its edge differences.
        let m = lattice_mesh(64);
        let v = init_vars(m.nodes);
        let mut out = vec![[0.0; VARS]; m.nodes];
        dt_pass(&m.edges, &v, &mut out);
        for k in 0..VARS {
            let s: f64 = out.iter().map(|o| o[k]).sum();
            assert!(s.abs() < 1e-9, "variable {k}: sum {s}");
        }
        let mut expect = 0.0;
        for e in &m.edges {
            if e[0] == 0 {
                expect += v[0][0] - v[e[1] as usize][0];
            }
        }
        assert_eq!(out[0][0], expect);
        assert!(expect != 0.0);
    }

    #[test]
    fn a_small_run_measures_time_and_clock() {
        let cpus = crate::affinity::allowed_cpus().unwrap_or_else(|| vec![0]);
        let r = run(&DtConfig {
            threads: vec![1],
            cpus,
            nodes_per_thread: 4096,
            reps: 2,
            target_s: 0.002,
        })
        .unwrap();
        let p = &r.points[0];
        assert!(p.seconds_per_iter.median > 0.0 && p.clock_ghz > 0.0);
        let back = DtReport::from_json(&serde_json::to_string(&r).unwrap(), "x").unwrap();
        assert_eq!(back.points.len(), 1);
        assert!(DtReport::from_json("{}", "x").is_err());
    }

    #[test]
    fn more_threads_than_cpus_is_bad_input() {
        let e = run(&DtConfig {
            threads: vec![3],
            cpus: vec![0],
            nodes_per_thread: 4096,
            reps: 1,
            target_s: 0.001,
        })
        .unwrap_err();
        assert!(e.to_string().contains("only 1 CPUs"), "{e}");
    }
}

#[cfg(test)]
mod seed {
    /// Section 5.5.1: the thesis's DT kernel does 13 FLOPs over 20 loads and 10 stores of
    /// 8 bytes, 13 / 240 = 0.054 FLOP/byte; this one does 15 FLOPs over 248 bytes, 0.060:
    /// as memory-bound, within 12 %.
    #[test]
    fn dt_flop_per_byte_matches_section_5_5_1() {
        let thesis = 13.0 / (30.0 * 8.0);
        assert!((thesis - 0.054_f64).abs() < 0.0005);
        let ours = super::FLOPS_PER_EDGE / super::BYTES_PER_EDGE;
        assert!((ours / thesis - 1.0).abs() < 0.12, "{ours} vs {thesis}");
    }
}
