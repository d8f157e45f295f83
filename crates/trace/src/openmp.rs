//! The OpenMP thread efficiency (seed 004, eqs. 3.14 to 3.16) from the probes of
//! `trace --openmp`: per thread, the time inside the program's outlined parallel-region
//! functions (what each thread of a team runs), the time waiting in the runtime's
//! synchronization calls, and, on the thread that forks the team, the time in the fork
//! call (the whole region, its own share of the work included).
//!
//! A thread's useful computation (POP's `comp`):
//! - a worker: its time in outlined regions minus its waits in synchronization calls;
//! - the thread that forks (the process's main thread): the process's time outside MPI
//!   (its whole life without MPI) minus its time in fork calls, plus its own time in
//!   outlined regions, minus its synchronization waits. Serial code is its computation;
//!   the end of a region, where it waits for the team, is not.
//!
//! Eq. 3.7 over the threads (`sum(comp) / (threads x runtime)`) is the hybrid parallel
//! efficiency; eq. 3.15 the MPI efficiency (`average(out_MPI) / runtime`, 1 without MPI);
//! eq. 3.16 the OpenMP efficiency, their ratio. Load balance (eq. 3.8) and the ratio of
//! the busiest thread to the runtime (eq. 3.9) split the thread efficiency further.

use serde::{Deserialize, Serialize};

/// What a probed OpenMP function is to the thread efficiency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Forks a team and returns when the region ends (GOMP_parallel*, __kmpc_fork_call).
    Fork,
    /// Waits for other threads or a lock (barriers, the end of a worksharing construct,
    /// taskwait, critical sections).
    Sync,
    /// An outlined parallel region: the code each thread of a team runs.
    Region,
    /// Anything else (GOMP_single_start: no wait).
    Other,
}

/// The role of `symbol`.
pub fn role(symbol: &str) -> Role {
    if is_outlined(symbol) {
        return Role::Region;
    }
    match symbol {
        s if s.starts_with("GOMP_parallel") => Role::Fork,
        "__kmpc_fork_call" | "__kmpc_fork_teams" => Role::Fork,
        "GOMP_barrier"
        | "GOMP_barrier_cancel"
        | "GOMP_critical_start"
        | "GOMP_critical_name_start"
        | "GOMP_taskwait"
        | "GOMP_taskgroup_end"
        | "GOMP_loop_end"
        | "GOMP_loop_end_cancel"
        | "GOMP_sections_end"
        | "GOMP_sections_end_cancel"
        | "GOMP_ordered_start"
        | "__kmpc_barrier"
        | "__kmpc_critical"
        | "__kmpc_critical_with_hint"
        | "__kmpc_omp_taskwait"
        | "__kmpc_end_taskgroup"
        | "__kmpc_ordered" => Role::Sync,
        _ => Role::Other,
    }
}

/// Whether `symbol` is a compiler-outlined parallel region: GCC's `main._omp_fn.0`,
/// Clang's `.omp_outlined.`, `main.omp_outlined`, `.omp_outlined._debug__`.
pub fn is_outlined(symbol: &str) -> bool {
    symbol.contains("._omp_fn.") || symbol.contains("omp_outlined")
}

/// One thread of an OpenMP process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OpenMpThread {
    /// Thread id.
    pub tid: u32,
    /// Whether it forks the teams (the process's main thread).
    pub master: bool,
    /// Outlined regions it ran.
    pub regions: u64,
    /// Time inside outlined regions, s.
    pub region_s: f64,
    /// Time waiting in synchronization calls, s.
    pub sync_s: f64,
    /// Time in fork calls (the main thread), s.
    pub fork_s: f64,
    /// Its useful computation, s (see the module documentation).
    pub comp_s: f64,
}

/// The thread efficiency of one process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ThreadEfficiency {
    /// Eq. 3.7 over the threads: the hybrid parallel efficiency.
    pub parallel_efficiency: f64,
    /// Eq. 3.8 over the threads: mean / max computation.
    pub load_balance: f64,
    /// Eq. 3.9 over the threads: max computation / runtime (serial code and region overhead
    /// lower it).
    pub communication_efficiency: f64,
    /// Eq. 3.15: `average(out_MPI) / runtime` (1 when the process makes no MPI calls).
    pub mpi_efficiency: f64,
    /// Eq. 3.16: parallel efficiency / MPI efficiency.
    pub openmp_efficiency: f64,
}

/// The OpenMP threads of one traced process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OpenMpProcess {
    /// Process id.
    pub pid: u32,
    /// Command name.
    pub comm: String,
    /// The process's life in the trace (from its last exec, or the start, to its exit, or
    /// the end), s: the runtime of the equations.
    pub runtime_s: f64,
    /// Its time inside MPI calls (probed with `--mpi`), s; its time outside MPI is the
    /// runtime minus this.
    pub mpi_s: f64,
    /// Teams forked (calls of the fork functions).
    pub forks: u64,
    /// The threads that ran an outlined region, and the main thread.
    pub threads: Vec<OpenMpThread>,
    /// Eqs. 3.7 to 3.9 over the threads and 3.14 to 3.16 (None when a figure is undefined:
    /// a zero runtime, no time outside MPI).
    pub efficiency: Option<ThreadEfficiency>,
}

/// Time of one probed function in one thread: (tid, role, calls, seconds).
pub type ThreadCall = (u32, Role, u64, f64);

/// Builds one process's threads and efficiency from its probed calls, per thread.
pub fn process(
    pid: u32,
    comm: &str,
    runtime_s: f64,
    mpi_s: f64,
    calls: &[ThreadCall],
) -> OpenMpProcess {
    let mut tids: Vec<u32> = calls.iter().map(|c| c.0).collect();
    tids.push(pid);
    tids.sort_unstable();
    tids.dedup();
    let out_mpi = (runtime_s - mpi_s).max(0.0);
    let mut threads = Vec::new();
    for tid in tids {
        let sum = |r: Role| -> (u64, f64) {
            calls
                .iter()
                .filter(|c| c.0 == tid && c.1 == r)
                .fold((0, 0.0), |a, c| (a.0 + c.2, a.1 + c.3))
        };
        let (regions, region_s) = sum(Role::Region);
        let (_, sync_s) = sum(Role::Sync);
        let (_, fork_s) = sum(Role::Fork);
        let master = tid == pid;
        // A thread that ran no region (a helper thread of MPI, say) is no OpenMP thread.
        if !master && regions == 0 {
            continue;
        }
        let comp_s = if master {
            out_mpi - fork_s + region_s - sync_s
        } else {
            region_s - sync_s
        }
        .clamp(0.0, runtime_s.max(0.0));
        threads.push(OpenMpThread {
            tid,
            master,
            regions,
            region_s,
            sync_s,
            fork_s,
            comp_s,
        });
    }
    let forks = calls
        .iter()
        .filter(|c| c.1 == Role::Fork)
        .map(|c| c.2)
        .sum();
    let comp: Vec<f64> = threads.iter().map(|t| t.comp_s).collect();
    let efficiency = efficiency(&comp, &[out_mpi], runtime_s);
    OpenMpProcess {
        pid,
        comm: comm.to_string(),
        runtime_s,
        mpi_s,
        forks,
        threads,
        efficiency,
    }
}

/// Eqs. 3.7 to 3.9 over threads and 3.14 to 3.16 from the threads' computation, the ranks'
/// time outside MPI and the runtime (None when undefined).
pub fn efficiency(
    thread_comp: &[f64],
    out_mpi: &[f64],
    runtime_s: f64,
) -> Option<ThreadEfficiency> {
    let p = hpcscope_models::pop::pop_metrics(thread_comp, runtime_s, None, None).ok()?;
    let h = hpcscope_models::pop::hybrid_efficiency(thread_comp, out_mpi, runtime_s).ok()?;
    Some(ThreadEfficiency {
        parallel_efficiency: h.hybrid_parallel_efficiency,
        load_balance: p.load_balance,
        communication_efficiency: p.communication_efficiency,
        mpi_efficiency: h.mpi_efficiency,
        openmp_efficiency: h.openmp_efficiency,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_of_the_runtime_and_outlined_functions() {
        assert_eq!(role("GOMP_parallel"), Role::Fork);
        assert_eq!(role("GOMP_parallel_loop_dynamic"), Role::Fork);
        assert_eq!(role("__kmpc_fork_call"), Role::Fork);
        assert_eq!(role("GOMP_barrier"), Role::Sync);
        assert_eq!(role("__kmpc_barrier"), Role::Sync);
        assert_eq!(role("main._omp_fn.0"), Role::Region);
        assert_eq!(role(".omp_outlined."), Role::Region);
        assert_eq!(role("main.omp_outlined"), Role::Region);
        assert_eq!(role("GOMP_single_start"), Role::Other);
    }

    #[test]
    fn eqs_3_14_to_3_16_for_two_threads_with_a_serial_part() {
        // 0.1 s serial, then a region where the main thread works 0.1 s and the worker
        // 0.2 s (the main thread waits 0.1 s at the region's end): runtime 0.3 s.
        let calls = [
            (10, Role::Fork, 1, 0.2),
            (10, Role::Region, 1, 0.1),
            (11, Role::Region, 1, 0.2),
            // A helper thread that runs no region is left out.
            (12, Role::Sync, 3, 0.05),
        ];
        let p = process(10, "app", 0.3, 0.0, &calls);
        assert_eq!(p.threads.len(), 2);
        let comp: Vec<f64> = p.threads.iter().map(|t| t.comp_s).collect();
        assert!((comp[0] - 0.2).abs() < 1e-12 && (comp[1] - 0.2).abs() < 1e-12);
        let e = p.efficiency.unwrap();
        assert!((e.parallel_efficiency - 0.4 / 0.6).abs() < 1e-12); // eq. 3.7
        assert!((e.load_balance - 1.0).abs() < 1e-12); // eq. 3.8
        assert!((e.mpi_efficiency - 1.0).abs() < 1e-12); // eq. 3.15 without MPI
        assert!((e.openmp_efficiency - e.parallel_efficiency).abs() < 1e-12); // eq. 3.16
        // Eq. 3.14: the product.
        assert!((e.mpi_efficiency * e.openmp_efficiency - e.parallel_efficiency).abs() < 1e-12);
        assert_eq!(p.forks, 1);
    }

    #[test]
    fn time_in_mpi_is_neither_computation_nor_openmp() {
        // Runtime 10 s, 2 s in MPI on the main thread, no parallel region yet: the main
        // thread computes 8 s; MPI efficiency 0.8 and OpenMP efficiency 1.
        let p = process(1, "rank", 10.0, 2.0, &[]);
        let e = p.efficiency.unwrap();
        assert!((p.threads[0].comp_s - 8.0).abs() < 1e-12);
        assert!((e.mpi_efficiency - 0.8).abs() < 1e-12);
        assert!((e.openmp_efficiency - 1.0).abs() < 1e-12);
    }
}
