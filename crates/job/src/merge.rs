//! One result for a parallel job from the files its ranks wrote with `--run-dir`: per rank
//! and per node, the POP efficiencies (seed 004, eqs. 3.7 to 3.13, computed by
//! `hpcscope-models`); [`crate::render`] prints and draws it.
//!
//! Missing ranks, failed or killed ranks, ranks whose hpcscope died before writing, corrupt
//! files and two results for one rank are each reported; the surviving ranks' data is kept
//! and nothing from one job is ever mixed into another.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, bail};
use hpcscope_models::pop::{
    ComputationFactors, CounterSums, HybridEfficiency, PopMetrics, computation_factors,
    hybrid_efficiency, pop_metrics,
};
use hpcscope_trace::report::MessageTotals;
use serde::{Deserialize, Serialize};

use crate::rank::{RESULT_FORMAT, RankResult, RankStart, START_FORMAT, VERSION};

pub use crate::jobs::{JobDir, choose_jobs, list_jobs};

/// Format tag of a merged job.
pub const MERGED_FORMAT: &str = "hpcscope-merged-job";

/// What became of one rank.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RankStatus {
    /// Its command ran to the end with exit code 0.
    Ok,
    /// Its command failed or was killed; what it measured until then is kept.
    Failed,
    /// hpcscope was told to stop (the launcher aborted the job); the data is partial.
    Interrupted,
    /// hpcscope started but wrote no result (killed, node lost, time limit).
    Lost,
    /// Its file cannot be read (truncated, corrupt, not a result).
    Unreadable,
    /// Two or more results claim this rank (two jobs with one job id): none is used.
    Conflict,
    /// Nothing from this rank at all.
    Missing,
}

impl RankStatus {
    /// The status in words (`ok`, `lost`...).
    pub fn name(self) -> &'static str {
        match self {
            RankStatus::Ok => "ok",
            RankStatus::Failed => "failed",
            RankStatus::Interrupted => "interrupted",
            RankStatus::Lost => "lost",
            RankStatus::Unreadable => "unreadable",
            RankStatus::Conflict => "conflict",
            RankStatus::Missing => "missing",
        }
    }

    /// Whether the rank's numbers can be used.
    pub(crate) fn has_data(self) -> bool {
        matches!(
            self,
            RankStatus::Ok | RankStatus::Failed | RankStatus::Interrupted
        )
    }
}

/// One row of the per-rank table.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankRow {
    /// Rank.
    pub rank: u32,
    /// Node, when known.
    pub node: Option<String>,
    /// Local rank on the node.
    pub local_rank: Option<u32>,
    /// What became of it.
    pub status: RankStatus,
    /// How its command ended, in words.
    pub exit: Option<String>,
    /// Elapsed time of its command, s.
    pub wall_s: Option<f64>,
    /// User CPU, s.
    pub user_s: Option<f64>,
    /// System CPU, s.
    pub sys_s: Option<f64>,
    /// Time in MPI calls (start-up and shut-down excepted), s.
    pub mpi_s: Option<f64>,
    /// MPI calls (start-up and shut-down excepted).
    pub mpi_calls: Option<u64>,
    /// Messages of those calls, where their arguments give them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi_messages: Option<MessageTotals>,
    /// Time outside the region: start-up until MPI_Init returns, shut-down from
    /// MPI_Finalize's call, s.
    pub outside_s: Option<f64>,
    /// The region POP looks at: elapsed minus MPI_Init and MPI_Finalize, s.
    pub region_s: Option<f64>,
    /// Useful computation: the region minus the time in MPI, s.
    pub comp_s: Option<f64>,
    /// OpenMP threads of its program (traced with `--openmp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Their useful computation, s, per thread (the main thread first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_comp_s: Option<Vec<f64>>,
    /// Instructions its command retired (hardware counters, when the node has them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<f64>,
    /// Cycles its command ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<f64>,
    /// The file it came from.
    pub file: Option<String>,
}

/// One row of the per-node table.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRow {
    /// Node name.
    pub node: String,
    /// Ranks on it with data.
    pub ranks: Vec<u32>,
    /// Longest elapsed time of its ranks, s.
    pub wall_max_s: f64,
    /// Mean computation time of its ranks, s.
    pub comp_mean_s: Option<f64>,
    /// Longest computation time, s.
    pub comp_max_s: Option<f64>,
    /// Mean time in MPI, s.
    pub mpi_mean_s: Option<f64>,
    /// Load balance within the node: mean / max computation.
    pub load_balance: Option<f64>,
}

/// Calls and time of one MPI function across the ranks.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MpiFunctionRow {
    /// Function.
    pub name: String,
    /// Ranks that called it.
    pub ranks: u32,
    /// Calls in all.
    pub calls: u64,
    /// Fewest calls of a rank (over the ranks with MPI data).
    pub calls_min: u64,
    /// Most calls of a rank.
    pub calls_max: u64,
    /// Seconds in all.
    pub time_s: f64,
    /// Most seconds of a rank.
    pub time_max_s: f64,
    /// Messages in all, where the function's arguments give them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<MessageTotals>,
    /// Fewest bytes of a rank (of known size; over the ranks with MPI data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_min: Option<u64>,
    /// Most bytes of a rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_max: Option<u64>,
}

/// One number of the ranks' own results, across ranks.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricStat {
    /// JSON path in the rank's result (`functions.MPI_Barrier.time_s`).
    pub name: String,
    /// Ranks that have it.
    pub ranks: u32,
    /// Smallest value.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Largest value.
    pub max: f64,
    /// The rank with the largest value.
    pub max_rank: u32,
    /// max / mean (1 when balanced).
    pub imbalance: Option<f64>,
}

/// Something wrong with a rank or a file, and what to do.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    /// The rank concerned, when known.
    pub rank: Option<u32>,
    /// The file concerned, when any.
    pub file: Option<String>,
    /// What is wrong.
    pub what: String,
}

/// The reference of the scaling metrics.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceInfo {
    /// Where it came from.
    pub source: String,
    /// Its job id.
    pub job_id: String,
    /// Its ranks with a computation time.
    pub ranks: usize,
    /// Their computation times, s.
    pub comp_s: Vec<f64>,
    /// Their computation, instructions and cycles summed, when every rank counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<CounterSums>,
}

/// The MPI + OpenMP split of a job's parallel efficiency (eqs. 3.14 to 3.16), over every
/// thread of every rank.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HybridSplit {
    /// Threads in all.
    pub threads: usize,
    /// Eq. 3.7 over the threads, eq. 3.15 and eq. 3.16.
    pub efficiency: HybridEfficiency,
}

/// One job, merged.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedJob {
    /// [`MERGED_FORMAT`].
    pub format: String,
    /// Format version.
    pub version: u32,
    /// Job id.
    pub job_id: String,
    /// The job's directory.
    pub directory: String,
    /// The hpcscope command of the ranks (`trace`, `record`, ...).
    pub command: String,
    /// The measured command.
    pub argv: Vec<String>,
    /// Launcher, as the ranks saw it.
    pub launcher: String,
    /// Ranks the job had.
    pub size: u32,
    /// Ranks whose numbers are used.
    pub ranks_with_data: u32,
    /// Every rank ended well and every file was read.
    pub complete: bool,
    /// Elapsed time of the job, s: the longest region (with MPI data) or the longest rank.
    pub runtime_s: Option<f64>,
    /// How `runtime_s` was obtained.
    pub runtime_definition: String,
    /// POP efficiencies (eqs. 3.7 to 3.13) when the ranks measured their time in MPI.
    pub pop: Option<PopMetrics>,
    /// The ranks the efficiencies are over.
    pub pop_ranks: Vec<u32>,
    /// The reference run, with `--reference`.
    pub reference: Option<ReferenceInfo>,
    /// The MPI / OpenMP split, when every rank was traced with `--openmp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridSplit>,
    /// Eq. 3.12's factors against the reference, when every rank and the reference counted
    /// instructions and cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factors: Option<ComputationFactors>,
    /// Per rank, every rank of the job.
    pub ranks: Vec<RankRow>,
    /// Per node.
    pub nodes: Vec<NodeRow>,
    /// MPI calls across ranks.
    pub mpi_functions: Vec<MpiFunctionRow>,
    /// Messages of the job's MPI calls (start-up and shut-down excepted), where their
    /// arguments give them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi_messages: Option<MessageTotals>,
    /// The ranks' own numbers across ranks.
    pub metrics: Vec<MetricStat>,
    /// The sweep of an `explore` job: one design point per task, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<hpcscope_core::explore::ExploreResult>,
    /// Hot functions of the whole job (profile jobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_functions: Option<serde_json::Value>,
    /// What is missing or wrong.
    pub problems: Vec<Problem>,
    /// What the reader should know.
    pub notes: Vec<String>,
}

/// Several jobs merged each on its own (`--all`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergedRuns {
    /// `hpcscope-merged-runs`.
    pub format: String,
    /// The run directory.
    pub directory: String,
    /// One per job, oldest first.
    pub jobs: Vec<MergedJob>,
    /// The runtime across the complete jobs (repetitions of one job), when there are two.
    pub runtime: Option<Spread>,
}

/// A runtime across repetitions.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Complete jobs with a runtime.
    pub jobs: usize,
    /// Mean, s.
    pub mean_s: f64,
    /// Smallest, s.
    pub min_s: f64,
    /// Largest, s.
    pub max_s: f64,
    /// Sample standard deviation, s.
    pub stdev_s: f64,
}

impl Spread {
    /// The runtime across the complete jobs, when there are two or more.
    pub fn of(jobs: &[MergedJob]) -> Option<Spread> {
        let v: Vec<f64> = jobs
            .iter()
            .filter(|j| j.complete)
            .filter_map(|j| j.runtime_s)
            .collect();
        if v.len() < 2 {
            return None;
        }
        let m = mean(&v);
        let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
        Some(Spread {
            jobs: v.len(),
            mean_s: m,
            min_s: v.iter().copied().fold(f64::INFINITY, f64::min),
            max_s: maxf(&v),
            stdev_s: var.sqrt(),
        })
    }
}

/// The most ranks one merge lists (2^21: more than the largest MPI jobs run).
pub const MAX_RANKS: u32 = 1 << 21;

pub(crate) fn is_rank_file(name: &str) -> bool {
    name.starts_with("rank-") && name.ends_with(".json")
}

fn rank_of_name(name: &str) -> Option<u32> {
    let n = name.trim_start_matches('.').strip_prefix("rank-")?;
    n.split('.').next()?.parse().ok()
}

/// What a job directory holds, file by file.
#[derive(Debug, Default)]
struct Scan {
    results: BTreeMap<u32, Vec<(String, RankResult)>>,
    starts: BTreeMap<u32, (String, RankStart)>,
    /// (file, rank from its name, why).
    unreadable: Vec<(String, Option<u32>, String)>,
    /// Temporary files of writes that never finished.
    temps: Vec<(String, Option<u32>)>,
}

fn read_error(e: &serde_json::Error, len: usize) -> String {
    if len == 0 {
        "the file is empty (the rank's write never happened or was cut)".into()
    } else if e.is_eof() {
        format!("the file ends early ({len} bytes, {e}): it was cut while being written or copied")
    } else if e.is_syntax() {
        format!("not valid JSON ({e}): the file is corrupt")
    } else {
        format!("not an hpcscope rank result ({e})")
    }
}

fn scan(dir: &Path) -> Result<Scan> {
    let mut s = Scan::default();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for n in names {
        let path = dir.join(&n);
        if n.starts_with(".rank-") && n.ends_with(".tmp") {
            s.temps.push((n.clone(), rank_of_name(&n)));
            continue;
        }
        if !is_rank_file(&n) {
            continue;
        }
        let text = match hpcscope_core::load::read_bytes(&path) {
            Ok(b) => b,
            Err(e) => {
                s.unreadable
                    .push((n.clone(), rank_of_name(&n), format!("cannot be read: {e}")));
                continue;
            }
        };
        let v: serde_json::Value = match serde_json::from_slice(&text) {
            Ok(v) => v,
            Err(e) => {
                s.unreadable
                    .push((n.clone(), rank_of_name(&n), read_error(&e, text.len())));
                continue;
            }
        };
        let format = v["format"].as_str().unwrap_or("");
        let version = v["version"].as_u64().unwrap_or(0);
        if version > u64::from(VERSION) {
            s.unreadable.push((
                n.clone(),
                rank_of_name(&n),
                format!("written by a newer hpcscope (format version {version}); merge with that version"),
            ));
            continue;
        }
        if format == START_FORMAT {
            match serde_json::from_value::<RankStart>(v) {
                Ok(st) => {
                    s.starts.insert(st.context.rank, (n, st));
                }
                Err(e) => s.unreadable.push((
                    n.clone(),
                    rank_of_name(&n),
                    format!("a start record with missing fields ({e})"),
                )),
            }
        } else if format == RESULT_FORMAT {
            match serde_json::from_value::<RankResult>(v) {
                Ok(r) => s
                    .results
                    .entry(r.head.context.rank)
                    .or_default()
                    .push((n, r)),
                Err(e) => s.unreadable.push((
                    n.clone(),
                    rank_of_name(&n),
                    format!("a rank result with missing fields ({e})"),
                )),
            }
        } else {
            s.unreadable.push((
                n.clone(),
                rank_of_name(&n),
                format!("not an hpcscope rank result (format '{format}')"),
            ));
        }
    }
    Ok(s)
}

/// Ranks as ranges: `0-3,5,7-9`.
pub(crate) fn compact_ranks(v: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

pub(crate) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

pub(crate) fn maxf(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// Numeric leaves of a JSON value (arrays left out: stacks and histograms), by path.
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, f64)>) {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.push((prefix.to_string(), x));
            }
        }
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, x, out);
            }
        }
        _ => {}
    }
}

/// Merges one job directory. `reference` holds the reference run's computation times.
#[allow(clippy::too_many_lines)]
pub fn merge_job(dir: &Path, reference: Option<ReferenceInfo>) -> Result<MergedJob> {
    let s = scan(dir)?;
    let job_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut problems: Vec<Problem> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let all_results: Vec<&RankResult> = s.results.values().flatten().map(|(_, r)| r).collect();
    let contexts = all_results
        .iter()
        .map(|r| &r.head.context)
        .chain(s.starts.values().map(|(_, st)| &st.context));
    let sizes: BTreeSet<u32> = contexts.clone().map(|c| c.size).collect();
    let ids: BTreeSet<&str> = contexts.clone().map(|c| c.job_id.as_str()).collect();
    if sizes.len() > 1 {
        problems.push(Problem {
            rank: None,
            file: None,
            what: format!(
                "the ranks disagree on the job's size ({}): files from different jobs share this directory; the largest is used",
                sizes.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    if ids.len() > 1 {
        problems.push(Problem {
            rank: None,
            file: None,
            what: format!(
                "the files name several job ids ({}): they were copied together by hand?",
                ids.into_iter().collect::<Vec<_>>().join(", ")
            ),
        });
    }
    let mut size = sizes
        .iter()
        .copied()
        .max()
        .or_else(|| {
            s.unreadable
                .iter()
                .filter_map(|u| u.1)
                .max()
                .map(|r| r.saturating_add(1))
        })
        .unwrap_or(0);
    // The size comes from the files: a damaged or forged one must not make the merge list
    // (and hold in memory) billions of missing ranks.
    if size > MAX_RANKS {
        let seen = s
            .results
            .keys()
            .chain(s.starts.keys())
            .copied()
            .chain(s.unreadable.iter().filter_map(|u| u.1))
            .max()
            .map_or(0, |r| r.saturating_add(1))
            .min(MAX_RANKS);
        problems.push(Problem {
            rank: None,
            file: None,
            what: format!(
                "the ranks say the job has {size} ranks, more than the {MAX_RANKS} a merge lists: a damaged file? ranks 0 to {} are listed",
                seen.saturating_sub(1)
            ),
        });
        size = seen;
    }
    let commands: BTreeSet<&str> = all_results
        .iter()
        .map(|r| r.head.command.as_str())
        .collect();
    if commands.len() > 1 {
        problems.push(Problem {
            rank: None,
            file: None,
            what: format!(
                "the ranks ran different hpcscope commands ({}); each rank's numbers are shown, the efficiencies need `trace` on every rank",
                commands.iter().copied().collect::<Vec<_>>().join(", ")
            ),
        });
    }
    let first = all_results.first().copied();
    let command = first.map_or_else(
        || {
            s.starts
                .values()
                .next()
                .map_or("?".to_string(), |(_, st)| st.command.clone())
        },
        |r| r.head.command.clone(),
    );
    let argv = first.map_or_else(
        || {
            s.starts
                .values()
                .next()
                .map_or(Vec::new(), |(_, st)| st.argv.clone())
        },
        |r| r.head.argv.clone(),
    );
    let launcher = contexts
        .clone()
        .next()
        .map_or("?".to_string(), |c| c.launcher.clone());

    let mut rows: Vec<RankRow> = Vec::new();
    let mut used: Vec<&RankResult> = Vec::new();
    for rank in 0..size {
        let unreadable: Vec<&(String, Option<u32>, String)> =
            s.unreadable.iter().filter(|u| u.1 == Some(rank)).collect();
        let row = |status: RankStatus, node: Option<String>, file: Option<String>| RankRow {
            rank,
            node,
            local_rank: None,
            status,
            exit: None,
            wall_s: None,
            user_s: None,
            sys_s: None,
            mpi_s: None,
            mpi_calls: None,
            mpi_messages: None,
            outside_s: None,
            region_s: None,
            comp_s: None,
            threads: None,
            thread_comp_s: None,
            instructions: None,
            cycles: None,
            file,
        };
        match s.results.get(&rank).map(Vec::as_slice) {
            Some([(file, r)]) => {
                let status = if r.interrupted.is_some() {
                    RankStatus::Interrupted
                } else if r.exit.ok() {
                    RankStatus::Ok
                } else {
                    RankStatus::Failed
                };
                match status {
                    RankStatus::Failed => problems.push(Problem {
                        rank: Some(rank),
                        file: Some(file.clone()),
                        what: format!(
                            "rank {rank} on {}: its command ended with {}; what it measured until then is kept",
                            r.head.context.node,
                            r.exit.describe()
                        ),
                    }),
                    RankStatus::Interrupted => problems.push(Problem {
                        rank: Some(rank),
                        file: Some(file.clone()),
                        what: format!(
                            "rank {rank} on {}: stopped by a signal to hpcscope after {:.3} s (its command: {}); the data covers the run up to then",
                            r.head.context.node,
                            r.wall_s,
                            r.exit.describe()
                        ),
                    }),
                    _ => {}
                }
                let mut x = row(
                    status,
                    Some(r.head.context.node.clone()),
                    Some(file.clone()),
                );
                x.local_rank = r.head.context.local_rank;
                x.exit = Some(r.exit.describe());
                x.wall_s = Some(r.wall_s);
                x.user_s = r.user_s;
                x.sys_s = r.sys_s;
                if let Some(m) = &r.mpi {
                    let region = m
                        .region_s
                        .unwrap_or(r.wall_s - m.init_s - m.finalize_s)
                        .clamp(0.0, r.wall_s);
                    x.mpi_s = Some(m.time_s);
                    x.mpi_calls = Some(m.calls);
                    x.mpi_messages = m.messages;
                    x.outside_s = Some(r.wall_s - region);
                    x.region_s = Some(region);
                    x.comp_s = Some((region - m.time_s).max(0.0));
                }
                if let Some(c) = x.comp_s
                    && let Some(t) = openmp_threads(&r.data, c)
                {
                    x.threads = Some(t.len() as u32);
                    x.thread_comp_s = Some(t);
                }
                let counter = |k: &str| r.data["counters"][k].as_f64().filter(|v| *v > 0.0);
                x.instructions = counter("instructions");
                x.cycles = counter("cycles");
                rows.push(x);
                used.push(r);
            }
            Some(many) if many.len() > 1 => {
                problems.push(Problem {
                    rank: Some(rank),
                    file: None,
                    what: format!(
                        "rank {rank} has {} results ({}): two runs used the job id '{job_id}'; none is used (give each job its own --job-id)",
                        many.len(),
                        many.iter()
                            .map(|(f, r)| format!("{f} from pid {} on {} at {}", r.head.pid, r.head.context.node, r.started_at))
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                });
                rows.push(row(RankStatus::Conflict, None, None));
            }
            _ if !unreadable.is_empty() => {
                for (f, _, why) in &unreadable {
                    problems.push(Problem {
                        rank: Some(rank),
                        file: Some(f.clone()),
                        what: format!("rank {rank}: {f}: {why}; this rank's data is lost"),
                    });
                }
                rows.push(row(
                    RankStatus::Unreadable,
                    None,
                    Some(unreadable[0].0.clone()),
                ));
            }
            _ => match s.starts.get(&rank) {
                Some((file, st)) => {
                    let temp = s.temps.iter().find(|t| t.1 == Some(rank));
                    problems.push(Problem {
                        rank: Some(rank),
                        file: Some(file.clone()),
                        what: format!(
                            "rank {rank} started on {} (hpcscope pid {}, at {}) but wrote no result{}: hpcscope was killed (SIGKILL, out of memory, the node lost, a time limit without warning)",
                            st.context.node,
                            st.pid,
                            hpcscope_host::time::format_rfc3339(st.started_unix),
                            temp.map(|t| format!(" ({} is a write that never finished)", t.0))
                                .unwrap_or_default()
                        ),
                    });
                    rows.push(row(
                        RankStatus::Lost,
                        Some(st.context.node.clone()),
                        Some(file.clone()),
                    ));
                }
                // Reported below, consecutive ranks together.
                None => rows.push(row(RankStatus::Missing, None, None)),
            },
        }
    }
    let missing: Vec<u32> = rows
        .iter()
        .filter(|r| r.status == RankStatus::Missing)
        .map(|r| r.rank)
        .collect();
    if !missing.is_empty() {
        let tasks = launcher == "tasks";
        problems.push(Problem {
            rank: (missing.len() == 1).then(|| missing[0]),
            file: None,
            what: format!(
                "{} {} of {size}: no file at all: {}",
                match (tasks, missing.len()) {
                    (true, 1) => "task",
                    (true, _) => "tasks",
                    (false, 1) => "rank",
                    (false, _) => "ranks",
                },
                compact_ranks(&missing),
                if tasks {
                    "the task did not run, or ended before it could write (see its Slurm output); run it again with its --point"
                } else {
                    "it did not run under `hpcscope ... --run-dir`, or its node could not write to the run directory (is it shared between nodes?)"
                }
            ),
        });
    }
    for (f, r) in s
        .results
        .iter()
        .filter(|(r, _)| **r >= size)
        .flat_map(|(_, v)| v)
    {
        problems.push(Problem {
            rank: Some(r.head.context.rank),
            file: Some(f.clone()),
            what: format!(
                "{f}: rank {} is outside the job's {size} ranks; not used",
                r.head.context.rank
            ),
        });
    }
    for r in &used {
        for n in &r.notes {
            // The job's note on message sizes sums the ranks' own.
            if n.starts_with(hpcscope_trace::mpi::UNKNOWN_SIZE_NOTE) {
                continue;
            }
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
    }

    // Nodes.
    let mut by_node: BTreeMap<String, Vec<&RankRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.status.has_data()) {
        by_node
            .entry(r.node.clone().unwrap_or_default())
            .or_default()
            .push(r);
    }
    let nodes: Vec<NodeRow> = by_node
        .into_iter()
        .map(|(node, rs)| {
            let comp: Vec<f64> = rs.iter().filter_map(|r| r.comp_s).collect();
            let mpi: Vec<f64> = rs.iter().filter_map(|r| r.mpi_s).collect();
            let cm = (!comp.is_empty()).then(|| maxf(&comp));
            NodeRow {
                node,
                ranks: rs.iter().map(|r| r.rank).collect(),
                wall_max_s: maxf(&rs.iter().filter_map(|r| r.wall_s).collect::<Vec<_>>()),
                comp_mean_s: (!comp.is_empty()).then(|| mean(&comp)),
                comp_max_s: cm,
                mpi_mean_s: (!mpi.is_empty()).then(|| mean(&mpi)),
                load_balance: cm.filter(|m| *m > 0.0).map(|m| mean(&comp) / m),
            }
        })
        .collect();

    // POP over the ranks that measured their time in MPI, when every rank with data ended
    // well: a rank stopped inside an MPI call never returned from it, so its time there is
    // not counted anywhere and would pass for computation.
    let with_data = rows.iter().filter(|r| r.status.has_data()).count() as u32;
    let unfinished = rows
        .iter()
        .filter(|r| matches!(r.status, RankStatus::Failed | RankStatus::Interrupted))
        .count();
    let pop_rows: Vec<&RankRow> = rows
        .iter()
        .filter(|r| r.status == RankStatus::Ok && r.comp_s.is_some())
        .collect();
    let region_rows: Vec<&RankRow> = rows
        .iter()
        .filter(|r| r.status.has_data() && r.region_s.is_some())
        .collect();
    let (runtime_s, runtime_definition) = if !region_rows.is_empty() {
        (
            Some(maxf(
                &region_rows.iter().filter_map(|r| r.region_s).collect::<Vec<_>>(),
            )),
            "the longest rank's time from MPI_Init's return to MPI_Finalize's call (to its end when it never called MPI_Finalize)".to_string(),
        )
    } else if with_data > 0 {
        (
            Some(maxf(
                &rows.iter().filter_map(|r| r.wall_s).collect::<Vec<_>>(),
            )),
            "the longest rank's elapsed time".to_string(),
        )
    } else {
        (None, "no rank has data".to_string())
    };
    let mut pop = None;
    let mut hybrid = None;
    let mut factors = None;
    let mut pop_ranks: Vec<u32> = Vec::new();
    if region_rows.is_empty() {
        if with_data > 0 {
            let why = used
                .iter()
                .find_map(|r| r.data.get("bpf_unavailable").and_then(|v| v.as_str()));
            notes.push(match why {
                Some(w) => format!(
                    "no POP efficiencies: no rank could measure its time in MPI, because eBPF is not available ({w}); the per-rank times are what remains"
                ),
                None if command == "explore" => String::new(),
                None => format!(
                    "no POP efficiencies: they need each rank's time in MPI, which `{command}` does not measure; run the job under `hpcscope trace --run-dir DIR`"
                ),
            });
            notes.retain(|n| !n.is_empty());
        }
    } else if unfinished > 0 {
        notes.push(format!(
            "no POP efficiencies: the job did not finish ({unfinished} rank(s) failed or were stopped); a rank stopped inside an MPI call never returned from it, so that wait is missing from its time in MPI. The per-rank figures cover the run up to then"
        ));
    } else if pop_rows.is_empty() {
        notes.push("no POP efficiencies: no rank ended well with its time in MPI measured".into());
    } else {
        pop_ranks = pop_rows.iter().map(|r| r.rank).collect();
        if (pop_rows.len() as u32) < size {
            notes.push(format!(
                "the efficiencies are over the {} of {size} ranks that measured their time in MPI",
                pop_rows.len()
            ));
        }
        if used
            .iter()
            .any(|r| r.mpi.as_ref().is_some_and(|m| !m.initialized))
        {
            notes.push(
                "some ranks never returned from MPI_Init: not an MPI program, or a wrong libmpi was probed"
                    .into(),
            );
        }
        let comp: Vec<f64> = pop_rows.iter().filter_map(|r| r.comp_s).collect();
        let runtime = maxf(
            &pop_rows
                .iter()
                .filter_map(|r| r.region_s)
                .collect::<Vec<_>>(),
        );
        // Eq. 3.12: instructions and cycles in every rank and in the reference.
        let counted: Vec<(f64, f64, f64)> = pop_rows
            .iter()
            .filter_map(|r| Some((r.comp_s?, r.instructions?, r.cycles?)))
            .collect();
        let sums = (counted.len() == pop_rows.len()).then(|| CounterSums {
            comp_s: counted.iter().map(|c| c.0).sum(),
            instructions: counted.iter().map(|c| c.1).sum(),
            cycles: counted.iter().map(|c| c.2).sum(),
        });
        match (&sums, reference.as_ref().map(|r| &r.counters)) {
            (Some(a), Some(Some(b))) => match computation_factors(a, b) {
                Ok(f) => factors = Some(f),
                Err(e) => notes.push(format!("no eq. 3.12 factors: {e}")),
            },
            (Some(_), Some(None)) => notes.push(
                "no eq. 3.12 factors: the reference's ranks did not count instructions and cycles; computation scaling is eq. 3.10's".into(),
            ),
            (Some(_), None) => notes.push(
                "the ranks counted instructions and cycles: give a --reference run that did too for eq. 3.12's factors (instruction, IPC and frequency scaling)".into(),
            ),
            (None, _) if !counted.is_empty() => notes.push(format!(
                "no eq. 3.12 factors: {} of {} ranks counted instructions and cycles",
                counted.len(),
                pop_rows.len()
            )),
            _ => {}
        }
        match pop_metrics(
            &comp,
            runtime,
            reference.as_ref().map(|r| r.comp_s.as_slice()),
            factors.map(|f| (f.instruction, f.ipc, f.frequency)),
        ) {
            Ok(p) => pop = Some(p),
            Err(e) => notes.push(format!("no POP efficiencies: {e}")),
        }
        // Eqs. 3.14 to 3.16 when every rank's threads were traced.
        let with_threads: Vec<&&RankRow> = pop_rows
            .iter()
            .filter(|r| r.thread_comp_s.is_some())
            .collect();
        if with_threads.len() == pop_rows.len() {
            let threads: Vec<f64> = with_threads
                .iter()
                .flat_map(|r| r.thread_comp_s.clone().unwrap_or_default())
                .collect();
            match hybrid_efficiency(&threads, &comp, runtime) {
                Ok(e) => {
                    hybrid = Some(HybridSplit {
                        threads: threads.len(),
                        efficiency: e,
                    })
                }
                Err(e) => notes.push(format!("no MPI/OpenMP split: {e}")),
            }
        } else if !with_threads.is_empty() {
            notes.push(format!(
                "no MPI/OpenMP split (eqs. 3.14-3.16): {} of {} ranks were traced with --openmp and ran a parallel region",
                with_threads.len(),
                pop_rows.len()
            ));
        }
    }

    // MPI calls per function.
    type PerRank = (u64, f64, Option<MessageTotals>);
    let mut fns: BTreeMap<String, Vec<PerRank>> = BTreeMap::new();
    let mpi_ranks = used.iter().filter(|r| r.mpi.is_some()).count() as u32;
    for r in &used {
        if let Some(m) = &r.mpi {
            for f in &m.functions {
                fns.entry(f.name.clone())
                    .or_default()
                    .push((f.calls, f.time_s, f.messages));
            }
        }
    }
    let mpi_functions: Vec<MpiFunctionRow> = fns
        .into_iter()
        .map(|(name, v)| {
            let missing = v.len() < mpi_ranks as usize;
            let messages = sum_messages(v.iter().map(|x| x.2.as_ref()));
            let bytes: Vec<u64> = v.iter().filter_map(|x| x.2.map(|t| t.bytes)).collect();
            MpiFunctionRow {
                name,
                ranks: v.len() as u32,
                calls: v.iter().map(|x| x.0).sum(),
                calls_min: if missing {
                    0
                } else {
                    v.iter().map(|x| x.0).min().unwrap_or(0)
                },
                calls_max: v.iter().map(|x| x.0).max().unwrap_or(0),
                time_s: v.iter().map(|x| x.1).sum(),
                time_max_s: v.iter().map(|x| x.1).fold(0.0, f64::max),
                messages,
                bytes_min: messages.map(|_| {
                    if missing || bytes.len() < v.len() {
                        0
                    } else {
                        bytes.iter().copied().min().unwrap_or(0)
                    }
                }),
                bytes_max: messages.map(|_| bytes.iter().copied().max().unwrap_or(0)),
            }
        })
        .collect();
    let mpi_messages = sum_messages(rows.iter().map(|r| r.mpi_messages.as_ref()));
    if let Some(t) = mpi_messages.filter(|t| t.unknown_size_calls > 0) {
        let which: Vec<&str> = mpi_functions
            .iter()
            .filter(|f| f.messages.is_some_and(|m| m.unknown_size_calls > 0))
            .map(|f| f.name.as_str())
            .collect();
        notes.push(format!(
            "{} MPI call(s) ({}) used datatypes whose size the probes cannot know (derived datatypes): their {} elements are counted, their bytes are not in the totals",
            t.unknown_size_calls,
            which.join(", "),
            t.unknown_size_elements
        ));
    }

    // The ranks' own numbers.
    let mut per: BTreeMap<String, Vec<(u32, f64)>> = BTreeMap::new();
    for r in &used {
        let mut leaves = Vec::new();
        flatten("", &r.data, &mut leaves);
        for (k, v) in leaves {
            per.entry(k).or_default().push((r.head.context.rank, v));
        }
    }
    let metrics: Vec<MetricStat> = per
        .into_iter()
        .map(|(name, v)| {
            let vals: Vec<f64> = v.iter().map(|x| x.1).collect();
            let m = mean(&vals);
            let (max_rank, max) = v
                .iter()
                .copied()
                .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
            MetricStat {
                name,
                ranks: v.len() as u32,
                min: vals.iter().copied().fold(f64::INFINITY, f64::min),
                mean: m,
                max,
                max_rank,
                imbalance: (m > 0.0).then(|| max / m),
            }
        })
        .collect();

    let sweep = (command == "explore").then(|| {
        let mut points = Vec::new();
        let mut head: Option<hpcscope_core::explore::ExploreResult> = None;
        let mut resimulation: Option<hpcscope_core::explore::Resimulation> = None;
        for r in &used {
            match serde_json::from_value::<hpcscope_core::explore::ExploreResult>(r.data.clone()) {
                Ok(mut x) => {
                    points.append(&mut x.points);
                    if let Some(rs) = &x.resimulation {
                        resimulation.get_or_insert_with(Default::default).add(rs);
                    }
                    head.get_or_insert(x);
                }
                Err(e) => problems.push(Problem {
                    rank: Some(r.head.context.rank),
                    file: None,
                    what: format!(
                        "design point {}: not an explore result ({e}); left out",
                        r.head.context.rank
                    ),
                }),
            }
        }
        let mut h = head.unwrap_or(hpcscope_core::explore::ExploreResult {
            scenario: String::new(),
            description: String::new(),
            source_machine: String::new(),
            source_gflops: 0.0,
            points: Vec::new(),
            ridge: Vec::new(),
            approximate: Vec::new(),
            peak: Default::default(),
            resimulation: None,
        });
        h.resimulation = resimulation;
        h.ridge = hpcscope_core::explore::ridge_diagnostics(&points);
        h.points = points;
        h
    });
    let hot_functions = (command == "profile").then(|| {
        let p = job_profile(&used);
        serde_json::to_value(p.hot_functions(25)).unwrap_or_default()
    });
    for (f, rank) in &s.temps {
        if rank.is_none_or(|r| s.results.contains_key(&r)) {
            problems.push(Problem {
                rank: *rank,
                file: Some(f.clone()),
                what: format!(
                    "{f}: a write that never finished (its process died while writing); ignored"
                ),
            });
        }
    }
    for (f, rank, why) in s.unreadable.iter().filter(|u| u.1.is_none()) {
        problems.push(Problem {
            rank: *rank,
            file: Some(f.clone()),
            what: format!("{f}: {why}; ignored"),
        });
    }
    let complete = problems.is_empty() && with_data == size && size > 0;
    Ok(MergedJob {
        format: MERGED_FORMAT.into(),
        version: VERSION,
        job_id,
        directory: dir.display().to_string(),
        command,
        argv,
        launcher,
        size,
        ranks_with_data: with_data,
        complete,
        runtime_s,
        runtime_definition,
        pop,
        pop_ranks,
        reference,
        hybrid,
        factors,
        ranks: rows,
        nodes,
        mpi_functions,
        mpi_messages,
        metrics,
        sweep,
        hot_functions,
        problems,
        notes,
    })
}

/// The useful computation of each OpenMP thread of a rank traced with `--openmp` (the main
/// thread first), from the threads its trace found (`data.openmp`: the process with the
/// most threads) and the rank's time outside MPI, `out_mpi_s`: the main thread computes
/// that time less its time forking teams, plus its own share of the regions; a worker its
/// time in regions; less their waits in the runtime's synchronization. None when the rank
/// forked no team.
fn openmp_threads(data: &serde_json::Value, out_mpi_s: f64) -> Option<Vec<f64>> {
    let procs: Vec<hpcscope_trace::openmp::OpenMpProcess> =
        serde_json::from_value(data.get("openmp")?.clone()).ok()?;
    let p = procs.into_iter().max_by_key(|p| p.threads.len())?;
    if p.forks == 0 {
        return None;
    }
    let mut v: Vec<(bool, f64)> = p
        .threads
        .iter()
        .map(|t| {
            let c = if t.master {
                out_mpi_s - t.fork_s + t.region_s - t.sync_s
            } else {
                t.region_s - t.sync_s
            };
            (t.master, c.clamp(0.0, out_mpi_s.max(0.0)))
        })
        .collect();
    v.sort_by_key(|t| !t.0);
    Some(v.into_iter().map(|t| t.1).collect())
}

/// The sum of the messages that are there (None when none is).
fn sum_messages<'a>(v: impl Iterator<Item = Option<&'a MessageTotals>>) -> Option<MessageTotals> {
    v.flatten().fold(None, |acc, t| {
        let mut a = acc.unwrap_or_default();
        a.add(t);
        Some(a)
    })
}

/// The job's profile: every rank's stacks, each under a root frame naming its rank.
fn job_profile(used: &[&RankResult]) -> hpcscope_trace::Profile {
    let mut p = hpcscope_trace::Profile::default();
    for r in used {
        p.hz = r.data["hz"].as_u64().unwrap_or(p.hz);
        p.duration_s = p.duration_s.max(r.wall_s);
        p.missing_user_stacks += r.data["missing_user_stacks"].as_u64().unwrap_or(0);
        for s in r.data["stacks"].as_array().into_iter().flatten() {
            let mut frames = vec![s["comm"].as_str().unwrap_or("?").to_string()];
            frames.extend(
                s["frames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.as_str().map(str::to_string)),
            );
            p.samples.push(hpcscope_trace::StackSample {
                pid: s["pid"].as_u64().unwrap_or(0) as u32,
                tid: s["tid"].as_u64().unwrap_or(0) as u32,
                comm: format!("rank-{}", r.head.context.rank),
                frames,
                count: s["count"].as_u64().unwrap_or(0),
            });
        }
    }
    p
}

/// The reference of `--reference`: a run directory, a job directory or a merged JSON file.
/// Reads a reference run for the scaling metrics: a run directory with one job, a job
/// directory, or the JSON of `merge --format json`.
pub fn load_reference(p: &Path) -> Result<ReferenceInfo> {
    let merged: MergedJob = if p.is_dir() {
        let jobs = list_jobs(p)?;
        match jobs.as_slice() {
            [j] => merge_job(&j.path, None)?,
            [] => bail!(
                "--reference {}: no rank files in it; give the --run-dir of the reference run",
                p.display()
            ),
            many => bail!(
                "--reference {}: it holds {} jobs ({}); give one job's directory, e.g. --reference {}",
                p.display(),
                many.len(),
                many.iter()
                    .map(|j| j.id.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
                many[0].path.display()
            ),
        }
    } else {
        let text = hpcscope_core::load::read(
            p,
            "the reference",
            "give a run directory or the JSON of `hpcscope merge --format json`",
        )?;
        serde_json::from_str(&text).with_context(|| {
            format!(
                "--reference {}: not the JSON of `hpcscope merge --format json` (one job)",
                p.display()
            )
        })?
    };
    let comp: Vec<f64> = merged
        .ranks
        .iter()
        .filter(|r| r.status.has_data())
        .filter_map(|r| r.comp_s)
        .collect();
    if comp.is_empty() {
        bail!(
            "--reference {}: its ranks have no computation time (no time in MPI was measured); measure the reference with `hpcscope trace --run-dir` too",
            p.display()
        );
    }
    let with_data: Vec<&RankRow> = merged
        .ranks
        .iter()
        .filter(|r| r.status.has_data() && r.comp_s.is_some())
        .collect();
    let counted: Vec<(f64, f64, f64)> = with_data
        .iter()
        .filter_map(|r| Some((r.comp_s?, r.instructions?, r.cycles?)))
        .collect();
    Ok(ReferenceInfo {
        source: p.display().to_string(),
        job_id: merged.job_id,
        ranks: comp.len(),
        comp_s: comp,
        counters: (counted.len() == with_data.len()).then(|| CounterSums {
            comp_s: counted.iter().map(|c| c.0).sum(),
            instructions: counted.iter().map(|c| c.1).sum(),
            cycles: counted.iter().map(|c| c.2).sum(),
        }),
    })
}

/// The stacks of a `profile` job's ranks in one profile, each rank's under its rank (for
/// the job's flame graph); ranks with two results are left out.
pub fn job_flame_profile(m: &MergedJob) -> Result<hpcscope_trace::Profile> {
    let used: Vec<RankResult> = scan(Path::new(&m.directory))?
        .results
        .into_values()
        .filter(|v| v.len() == 1)
        .flatten()
        .map(|(_, r)| r)
        .collect();
    Ok(job_profile(&used.iter().collect::<Vec<_>>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_names_are_parsed() {
        assert_eq!(rank_of_name("rank-000012.cn1.json"), Some(12));
        assert_eq!(rank_of_name(".rank-000003.cn1.json.77.tmp"), Some(3));
        assert_eq!(rank_of_name("merged.json"), None);
    }

    /// A rank's result as `trace --run-dir --openmp` writes it, with the MPI times given,
    /// the main thread's and one worker's OpenMP times (fork, region, sync) and counters.
    fn rank_file(dir: &Path, rank: u32, mpi_s: f64, omp: [f64; 5], counters: (f64, f64)) {
        let [fork, region0, sync0, region1, sync1] = omp;
        let v = serde_json::json!({
            "format": RESULT_FORMAT, "version": VERSION,
            "context": {"job_id": "j", "launcher": "open-mpi", "rank": rank, "size": 2,
                        "local_rank": rank, "node": "n0", "evidence": []},
            "command": "trace", "argv": ["./app"], "pid": 1, "started_unix": 0.0,
            "started_at": "1970-01-01T00:00:00Z", "wall_s": 10.0, "user_s": null, "sys_s": null,
            "exit": {"code": 0, "signal": null}, "interrupted": null,
            "mpi": {"library": "libmpi", "time_s": mpi_s, "calls": 10, "init_s": 0.5,
                    "finalize_s": 0.5, "initialized": true, "finalized": true,
                    "region_s": 9.0, "functions": []},
            "notes": [],
            "data": {
                "openmp": [{"pid": 100, "comm": "app", "runtime_s": 10.0, "mpi_s": mpi_s + 1.0,
                    "forks": 1, "efficiency": null, "threads": [
                    {"tid": 100, "master": true, "regions": 1, "region_s": region0,
                     "sync_s": sync0, "fork_s": fork, "comp_s": 0.0},
                    {"tid": 101, "master": false, "regions": 1, "region_s": region1,
                     "sync_s": sync1, "fork_s": 0.0, "comp_s": 0.0}]}],
                "counters": {"instructions": counters.0, "cycles": counters.1, "scaled": false}
            }
        });
        std::fs::write(
            dir.join(format!("rank-{rank:06}.n0.json")),
            serde_json::to_string(&v).unwrap(),
        )
        .unwrap();
    }

    #[test]
    fn hybrid_split_eqs_3_14_to_3_16_and_factors_eq_3_12() {
        let d = tempfile::tempdir().unwrap();
        // comp (region 9 s minus MPI): 8 s and 7 s; runtime 9 s.
        rank_file(d.path(), 0, 1.0, [4.0, 3.0, 0.5, 3.5, 0.2], (2e10, 2.4e10));
        rank_file(d.path(), 1, 2.0, [3.0, 2.5, 0.0, 2.0, 0.5], (2e10, 2.1e10));
        let reference = ReferenceInfo {
            source: "ref".into(),
            job_id: "r".into(),
            ranks: 1,
            comp_s: vec![14.0],
            counters: Some(CounterSums {
                comp_s: 14.0,
                instructions: 3.8e10,
                cycles: 4.2e10,
            }),
        };
        let m = merge_job(d.path(), Some(reference)).unwrap();
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-9, "{a} != {b}");
        let p = m.pop.as_ref().unwrap();
        close(p.parallel_efficiency, 15.0 / 18.0); // eq. 3.7 over the ranks
        // Threads: rank 0 main 8 - 4 + 3 - 0.5 = 6.5, worker 3.3; rank 1 6.5 and 1.5.
        assert_eq!(m.ranks[0].thread_comp_s.as_deref(), Some(&[6.5, 3.3][..]));
        let h = &m.hybrid.as_ref().unwrap().efficiency;
        close(h.hybrid_parallel_efficiency, 17.8 / 36.0); // eq. 3.7 over the threads
        close(h.mpi_efficiency, 7.5 / 9.0); // eq. 3.15
        close(h.openmp_efficiency, (17.8 / 36.0) / (7.5 / 9.0)); // eq. 3.16
        close(
            h.mpi_efficiency * h.openmp_efficiency,
            h.hybrid_parallel_efficiency,
        ); // 3.14
        // Eq. 3.12: instructions 3.8e10 / 4e10, IPC (4 / 4.5) / (3.8 / 4.2), clock 3 GHz
        // both; the product is eq. 3.10's 14 / 15.
        let f = m.factors.as_ref().unwrap();
        close(f.instruction, 0.95);
        close(f.ipc, (4.0 / 4.5) / (3.8 / 4.2));
        close(f.frequency, 1.0);
        close(f.product(), 14.0 / 15.0);
        close(p.computation_scaling.unwrap(), 14.0 / 15.0);
        // Without the reference's counters: no factors, and a note says why.
        let mut bare = m.reference.clone().unwrap();
        bare.counters = None;
        let m2 = merge_job(d.path(), Some(bare)).unwrap();
        assert!(m2.factors.is_none());
        assert!(
            m2.notes
                .iter()
                .any(|n| n.contains("did not count instructions")),
            "{:?}",
            m2.notes
        );
    }

    #[test]
    fn flatten_keeps_numbers_by_path() {
        let v = serde_json::json!({"a": 1, "b": {"c": 2.5, "d": [1, 2], "e": "x"}});
        let mut out = Vec::new();
        flatten("", &v, &mut out);
        assert_eq!(out, [("a".to_string(), 1.0), ("b.c".to_string(), 2.5)]);
    }
}
