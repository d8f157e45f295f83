//! The time a rank spent inside MPI calls, summed from the uprobes of `trace --mpi`: what
//! the POP metrics of a job need from each rank.

use serde::{Deserialize, Serialize};

use crate::report::MessageTotals;

/// Time inside MPI calls of one rank, from the uprobes of `trace --mpi`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MpiTime {
    /// The library probed.
    pub library: Option<String>,
    /// Seconds inside MPI calls other than initialization and finalization.
    pub time_s: f64,
    /// Calls counted in `time_s`.
    pub calls: u64,
    /// Seconds in MPI_Init / MPI_Init_thread.
    pub init_s: f64,
    /// Seconds in MPI_Finalize.
    pub finalize_s: f64,
    /// Whether MPI_Init (or MPI_Init_thread) returned in the rank.
    pub initialized: bool,
    /// Whether MPI_Finalize returned.
    pub finalized: bool,
    /// From MPI_Init's return to MPI_Finalize's call, s (the region POP looks at), when the
    /// probes saw both.
    #[serde(default)]
    pub region_s: Option<f64>,
    /// The MPI process's life, from its exec to its exit, s, when the probes saw both.
    #[serde(default)]
    pub process_s: Option<f64>,
    /// Per MPI function: (name, calls, seconds).
    pub functions: Vec<MpiCall>,
    /// Messages of the calls counted in `time_s`, summed over the functions whose
    /// arguments give them (None when no message was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<MessageTotals>,
}

/// Calls and time of one MPI function in one rank.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MpiCall {
    /// Function name.
    pub name: String,
    /// Calls that returned.
    pub calls: u64,
    /// Seconds inside.
    pub time_s: f64,
    /// Its messages (calls, elements, bytes), when its arguments give them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<MessageTotals>,
}

impl MpiTime {
    /// Sums the probed MPI functions over the processes of a trace.
    pub fn from_trace(r: &crate::TraceReport) -> Option<MpiTime> {
        if !r.probes.iter().any(|p| p == "mpi") {
            return None;
        }
        let mut m = MpiTime::default();
        type Sums = (u64, u64, Option<MessageTotals>);
        let mut per: std::collections::BTreeMap<String, Sums> = Default::default();
        for p in &r.processes {
            for f in &p.functions {
                if !crate::linux::MPI_FUNCTIONS.contains(&f.symbol.as_str()) {
                    continue;
                }
                m.library.get_or_insert_with(|| f.binary.clone());
                let e = per.entry(f.symbol.clone()).or_default();
                e.0 += f.count;
                e.1 += f.total_ns;
                if let Some(t) = f.message_totals() {
                    e.2.get_or_insert_with(MessageTotals::default).add(&t);
                }
            }
        }
        for (name, (calls, ns, messages)) in per {
            let s = ns as f64 * 1e-9;
            match name.as_str() {
                "MPI_Init" | "MPI_Init_thread" => {
                    m.init_s += s;
                    m.initialized |= calls > 0;
                }
                "MPI_Finalize" => {
                    m.finalize_s += s;
                    m.finalized |= calls > 0;
                }
                _ => {
                    m.time_s += s;
                    m.calls += calls;
                    if let Some(t) = &messages {
                        m.messages.get_or_insert_with(MessageTotals::default).add(t);
                    }
                }
            }
            m.functions.push(MpiCall {
                name,
                calls,
                time_s: s,
                messages,
            });
        }
        // The region's bounds, from the timeline of the process that initialized MPI.
        let tl = &r.timeline;
        if let Some(init) = tl
            .iter()
            .filter(|e| e.name == "MPI_Init" || e.name == "MPI_Init_thread")
            .min_by_key(|e| e.start_ns)
        {
            let pid = init.pid;
            let ns = |v: u64| v as f64 * 1e-9;
            let init_end = init.start_ns + init.dur_ns;
            if let Some(fin) = tl
                .iter()
                .filter(|e| e.pid == pid && e.name == "MPI_Finalize")
                .max_by_key(|e| e.start_ns)
            {
                m.region_s = Some(ns(fin.start_ns.saturating_sub(init_end)));
            }
            let exec = tl
                .iter()
                .filter(|e| e.pid == pid && e.name.starts_with("exec"))
                .map(|e| e.start_ns)
                .min();
            let exit = tl
                .iter()
                .filter(|e| e.pid == pid && e.tid == pid && e.name == "exit")
                .map(|e| e.start_ns)
                .max();
            if let (Some(a), Some(b)) = (exec, exit) {
                m.process_s = Some(ns(b.saturating_sub(a)));
            }
        }
        Some(m)
    }

    /// The timeline events [`MpiTime::from_trace`] needs: MPI's start and end, the
    /// process's exec and exit.
    pub fn timeline_events() -> Vec<String> {
        [
            "MPI_Init",
            "MPI_Init_thread",
            "MPI_Finalize",
            "exec",
            "exit",
        ]
        .map(String::from)
        .to_vec()
    }
}
