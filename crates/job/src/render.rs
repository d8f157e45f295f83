//! A merged job in print: text, Markdown, CSV and JSON tables, the imbalance chart, the
//! sections of an HTML report, and the numbers the run history keeps.

use hpcscope_report::fmt::num;
use hpcscope_report::{
    BarOptions, BarSeries, Format, Section, Table, bar_chart_svg, html_table, render,
};
use hpcscope_trace::report::MessageTotals;

use crate::merge::{MergedJob, MergedRuns, MetricStat, RankRow, compact_ranks, maxf, mean};

use hpcscope_report::fmt::opt;

/// The per-rank table.
pub fn rank_table(m: &MergedJob) -> Table {
    let mpi = m.ranks.iter().any(|r| r.mpi_s.is_some());
    let bytes = m.ranks.iter().any(|r| r.mpi_messages.is_some());
    let threads = m.ranks.iter().any(|r| r.threads.is_some());
    let mut h = vec!["rank", "node", "status", "wall_s"];
    if mpi {
        h.extend(["comp_s", "mpi_s", "mpi_calls", "outside_s"]);
        if bytes {
            h.push("mpi_bytes");
        }
        if threads {
            h.extend(["threads", "thread_comp_mean_s"]);
        }
    } else {
        h.extend(["user_s", "sys_s"]);
    }
    h.push("exit");
    let mut t = Table::new(&h);
    for r in &m.ranks {
        let mut row = vec![
            r.rank.to_string(),
            r.node.clone().unwrap_or_else(|| "-".into()),
            r.status.name().to_string(),
            opt(r.wall_s, 4),
        ];
        if mpi {
            row.extend([
                opt(r.comp_s, 4),
                opt(r.mpi_s, 4),
                r.mpi_calls.map_or("-".into(), |c| c.to_string()),
                opt(r.outside_s, 3),
            ]);
            if bytes {
                row.push(bytes_cell(r.mpi_messages.as_ref()));
            }
            if threads {
                row.push(r.threads.map_or("-".into(), |t| t.to_string()));
                row.push(opt(
                    r.thread_comp_s
                        .as_ref()
                        .filter(|v| !v.is_empty())
                        .map(|v| mean(v)),
                    4,
                ));
            }
        } else {
            row.extend([opt(r.user_s, 4), opt(r.sys_s, 4)]);
        }
        row.push(r.exit.clone().unwrap_or_else(|| "-".into()));
        t.row(row);
    }
    t
}

fn node_table(m: &MergedJob) -> Table {
    let mut t = Table::new(&[
        "node",
        "ranks",
        "wall_max_s",
        "comp_mean_s",
        "comp_max_s",
        "mpi_mean_s",
        "load_balance",
    ]);
    for n in &m.nodes {
        t.row(vec![
            n.node.clone(),
            compact_ranks(&n.ranks),
            num(n.wall_max_s, 4),
            opt(n.comp_mean_s, 4),
            opt(n.comp_max_s, 4),
            opt(n.mpi_mean_s, 4),
            opt(n.load_balance, 3),
        ]);
    }
    t
}

/// Bytes of known size, `+ ?` when some calls' sizes are unknown; `-` without messages.
fn bytes_cell(t: Option<&MessageTotals>) -> String {
    match t {
        None => "-".into(),
        Some(t) if t.unknown_size_calls > 0 => format!("{} + ?", t.bytes),
        Some(t) => t.bytes.to_string(),
    }
}

fn mpi_table(m: &MergedJob) -> Table {
    let mut t = Table::new(&[
        "function",
        "ranks",
        "calls",
        "calls/rank min",
        "calls/rank max",
        "time_s",
        "time_max_s",
        "bytes",
        "mean_msg_bytes",
    ]);
    for f in &m.mpi_functions {
        t.row(vec![
            f.name.clone(),
            f.ranks.to_string(),
            f.calls.to_string(),
            f.calls_min.to_string(),
            f.calls_max.to_string(),
            num(f.time_s, 4),
            num(f.time_max_s, 4),
            bytes_cell(f.messages.as_ref()),
            opt(f.messages.and_then(|x| x.mean_bytes()), 4),
        ]);
    }
    t
}

/// The headline lines: the job, the runtime, the efficiencies.
fn headline(m: &MergedJob) -> Vec<String> {
    let nodes = m.nodes.len();
    let mut v = vec![format!(
        "job {}: `{}` of `{}`, {} of {} {} with data on {} node{} ({}){}",
        m.job_id,
        m.command,
        m.argv.join(" "),
        m.ranks_with_data,
        m.size,
        if m.launcher == "tasks" {
            "tasks"
        } else {
            "ranks"
        },
        nodes,
        if nodes == 1 { "" } else { "s" },
        m.launcher,
        if m.complete { "" } else { ": INCOMPLETE" }
    )];
    if let Some(rt) = m.runtime_s {
        v.push(format!(
            "runtime {} s: {}",
            num(rt, 4),
            m.runtime_definition
        ));
    }
    if let Some(p) = &m.pop {
        v.push(format!(
            "POP: parallel efficiency {} = load balance {} x communication efficiency {} (eqs. 3.7-3.9, {} ranks)",
            num(p.parallel_efficiency, 3),
            num(p.load_balance, 3),
            num(p.communication_efficiency, 3),
            p.n
        ));
        if let (Some(c), Some(g), Some(r)) =
            (p.computation_scaling, p.global_efficiency, &m.reference)
        {
            v.push(format!(
                "against {} ({} ranks): computation scaling {} (eq. {}), global efficiency {} (eq. 3.13)",
                r.job_id,
                r.ranks,
                num(c, 3),
                if m.factors.is_some() { "3.12" } else { "3.10" },
                num(g, 3)
            ));
        }
        if let Some(f) = &m.factors {
            v.push(format!(
                "eq. 3.12: computation scaling {} = instruction scaling {} x IPC scaling {} x frequency scaling {} (IPC {} against {}, {} GHz against {} GHz)",
                num(f.product(), 3),
                num(f.instruction, 3),
                num(f.ipc, 3),
                num(f.frequency, 3),
                num(f.ipc_run, 3),
                num(f.ipc_reference, 3),
                num(f.frequency_ghz, 4),
                num(f.frequency_reference_ghz, 4)
            ));
        }
    }
    if let Some(h) = &m.hybrid {
        v.push(format!(
            "MPI + OpenMP ({} threads): hybrid parallel efficiency {} = MPI efficiency {} (eq. 3.15) x OpenMP efficiency {} (eq. 3.16)",
            h.threads,
            num(h.efficiency.hybrid_parallel_efficiency, 3),
            num(h.efficiency.mpi_efficiency, 3),
            num(h.efficiency.openmp_efficiency, 3)
        ));
    }
    v
}

fn tail_lines(m: &MergedJob, md: bool) -> Vec<String> {
    let mut v = Vec::new();
    let table = |t: &Table| if md { t.md() } else { t.text() };
    if !m.nodes.is_empty() && m.sweep.is_none() {
        v.push(String::new());
        v.push("per node:".into());
        v.extend(table(&node_table(m)).lines().map(str::to_string));
    }
    if !m.mpi_functions.is_empty() {
        v.push(String::new());
        v.push("MPI calls (uprobes on the MPI library; time includes waiting):".into());
        v.extend(table(&mpi_table(m)).lines().map(str::to_string));
        if let Some(t) = &m.mpi_messages {
            v.push(messages_line(t));
        }
    }
    if let Some(h) = m.hot_functions.as_ref().and_then(|h| h.as_array()) {
        v.push(String::new());
        v.push("hot functions of the whole job (self samples):".into());
        for f in h.iter().take(10) {
            v.push(format!(
                "  {:>6.1} %  {}",
                f["self_pct"].as_f64().unwrap_or(0.0),
                f["name"].as_str().unwrap_or("?")
            ));
        }
    }
    let uneven = most_uneven(m, 8);
    if !uneven.is_empty() && m.sweep.is_none() {
        v.push(String::new());
        v.push("the ranks' most uneven numbers (max / mean; all of them in --format json):".into());
        for x in uneven {
            v.push(format!(
                "  {}: min {}, mean {}, max {} at rank {} ({})",
                x.name,
                num(x.min, 4),
                num(x.mean, 4),
                num(x.max, 4),
                x.max_rank,
                opt(x.imbalance, 3)
            ));
        }
    }
    if !m.problems.is_empty() {
        v.push(String::new());
        v.push(format!("problems ({}):", m.problems.len()));
        v.extend(m.problems.iter().map(|p| format!("  - {}", p.what)));
    }
    v.extend(m.notes.iter().map(|n| format!("note: {n}")));
    v
}

/// Text, Markdown, CSV or JSON of one merged job.
pub fn render_job(m: &MergedJob, format: Format) -> Result<String, serde_json::Error> {
    let table = match &m.sweep {
        // A sweep's tasks are its design points: their table is the result.
        Some(sw) => hpcscope_core::view::points_table(&sw.points),
        None => rank_table(m),
    };
    render(
        format,
        m,
        &headline(m),
        &table,
        &tail_lines(m, format == Format::Md),
    )
}

/// The chart of a merged job: the design points of a sweep, else the time per rank.
pub fn job_svg(m: &MergedJob) -> Option<String> {
    match &m.sweep {
        Some(sw) if !sw.points.is_empty() => Some(hpcscope_core::view::explore_svg(
            &sw.points,
            &sw.scenario,
            sw.source_gflops,
        )),
        Some(_) => None,
        None => imbalance_svg(m),
    }
}

/// The imbalance chart: per rank, computation, MPI and start-up/shut-down stacked (or
/// user and system CPU time when no MPI time was measured); the mean and the largest
/// computation as lines.
pub fn imbalance_svg(m: &MergedJob) -> Option<String> {
    let rows: Vec<&RankRow> = m.ranks.iter().filter(|r| r.status.has_data()).collect();
    if rows.is_empty() {
        return None;
    }
    let cats: Vec<String> = rows.iter().map(|r| r.rank.to_string()).collect();
    let series_of = |f: &dyn Fn(&RankRow) -> Option<f64>| -> Vec<f64> {
        rows.iter().map(|r| f(r).unwrap_or(0.0)).collect()
    };
    let (series, lines, caption) = if rows.iter().any(|r| r.comp_s.is_some()) {
        let comp: Vec<f64> = rows.iter().filter_map(|r| r.comp_s).collect();
        let lb = m
            .pop
            .as_ref()
            .map(|p| format!(" Load balance {} = mean / max.", num(p.load_balance, 3)))
            .unwrap_or_default();
        (
            vec![
                BarSeries {
                    name: "computation (outside MPI)".into(),
                    values: series_of(&|r| r.comp_s),
                },
                BarSeries {
                    name: "in MPI calls".into(),
                    values: series_of(&|r| r.mpi_s),
                },
                BarSeries {
                    name: "start-up and shut-down (to MPI_Init's return, from MPI_Finalize's call)"
                        .into(),
                    values: series_of(&|r| r.outside_s),
                },
            ],
            vec![
                (
                    mean(&comp),
                    format!("mean computation {} s", num(mean(&comp), 3)),
                ),
                (
                    maxf(&comp),
                    format!("max computation {} s", num(maxf(&comp), 3)),
                ),
            ],
            format!(
                "Each bar is one rank's elapsed time: useful computation (outside MPI) at the bottom, time inside MPI calls (waiting included) above it, then start-up and shut-down. The gap between the mean and the largest computation is the load imbalance.{lb}"
            ),
        )
    } else {
        let wall: Vec<f64> = rows.iter().filter_map(|r| r.wall_s).collect();
        (
            vec![
                BarSeries {
                    name: "user CPU".into(),
                    values: series_of(&|r| r.user_s),
                },
                BarSeries {
                    name: "system CPU".into(),
                    values: series_of(&|r| r.sys_s),
                },
            ],
            vec![(maxf(&wall), format!("longest elapsed {} s", num(maxf(&wall), 3)))],
            "CPU time of each rank (no time in MPI was measured: MPI libraries often spin while they wait, so CPU time hides imbalance; measure with `hpcscope trace --run-dir`).".to_string(),
        )
    };
    Some(bar_chart_svg(
        &cats,
        &series,
        &BarOptions {
            title: format!("Time per rank, job {}", m.job_id),
            x_label: "MPI rank".into(),
            y_label: "time [s]".into(),
            lines,
            caption,
        },
    ))
}

/// The report sections of one merged job (for `--html`, and for other reports).
#[allow(clippy::too_many_lines)]
pub fn html_sections(m: &MergedJob, flame: Option<String>) -> Vec<Section> {
    let mut summary = match &m.pop {
        Some(p) => format!(
            "{} of {} ranks. Parallel efficiency {} = load balance {} × communication efficiency {}: {}.",
            m.ranks_with_data,
            m.size,
            num(p.parallel_efficiency, 3),
            num(p.load_balance, 3),
            num(p.communication_efficiency, 3),
            if p.load_balance < p.communication_efficiency {
                "the uneven work between ranks costs more than communication"
            } else {
                "communication and waiting cost more than the uneven work between ranks"
            }
        ),
        None => format!(
            "{} of {} ranks with data; no POP efficiencies (see the notes).",
            m.ranks_with_data, m.size
        ),
    };
    if !m.complete {
        summary.push_str(&format!(
            " Incomplete: {} problem(s) listed below.",
            m.problems.len()
        ));
    }
    let mut body = String::new();
    body.push_str(&format!(
        "<p>Job <code>{}</code>: <code>hpcscope {}</code> of <code>{}</code> under {}; runtime {} s ({}).</p>\n",
        hpcscope_report::escape(&m.job_id),
        hpcscope_report::escape(&m.command),
        hpcscope_report::escape(&m.argv.join(" ")),
        hpcscope_report::escape(&m.launcher),
        opt(m.runtime_s, 4),
        hpcscope_report::escape(&m.runtime_definition)
    ));
    if let Some(p) = &m.pop {
        let mut rows = vec![
            vec![
                "parallel efficiency".into(),
                num(p.parallel_efficiency, 4),
                "eq. 3.7: sum(comp) / (n × runtime)".into(),
            ],
            vec![
                "load balance".into(),
                num(p.load_balance, 4),
                "eq. 3.8: average(comp) / max(comp)".into(),
            ],
            vec![
                "communication efficiency".into(),
                num(p.communication_efficiency, 4),
                "eq. 3.9: max(comp) / runtime".into(),
            ],
        ];
        if let Some(f) = &m.factors {
            for (name, v, eq) in [
                (
                    "instruction scaling",
                    f.instruction,
                    "eq. 3.12: sum(instructions_ref) / sum(instructions)",
                ),
                ("IPC scaling", f.ipc, "eq. 3.12: IPC / IPC_ref"),
                (
                    "frequency scaling",
                    f.frequency,
                    "eq. 3.12: clock / clock_ref over the computation",
                ),
            ] {
                rows.push(vec![name.into(), num(v, 4), eq.into()]);
            }
        }
        if let Some(c) = p.computation_scaling {
            rows.push(vec![
                "computation scaling".into(),
                num(c, 4),
                if m.factors.is_some() {
                    "eq. 3.12: the product of the three factors (= eq. 3.10)"
                } else {
                    "eq. 3.10: sum(comp_ref) / sum(comp)"
                }
                .into(),
            ]);
        }
        if let Some(g) = p.global_efficiency {
            rows.push(vec![
                "global efficiency".into(),
                num(g, 4),
                "eq. 3.13: computation scaling × parallel efficiency".into(),
            ]);
        }
        if let Some(h) = &m.hybrid {
            rows.push(vec![
                format!("hybrid parallel efficiency ({} threads)", h.threads),
                num(h.efficiency.hybrid_parallel_efficiency, 4),
                "eq. 3.7 over every thread of every rank".into(),
            ]);
            rows.push(vec![
                "MPI efficiency".into(),
                num(h.efficiency.mpi_efficiency, 4),
                "eq. 3.15: average(out_MPI) / runtime".into(),
            ]);
            rows.push(vec![
                "OpenMP efficiency".into(),
                num(h.efficiency.openmp_efficiency, 4),
                "eq. 3.16: hybrid / MPI efficiency".into(),
            ]);
        }
        body.push_str(&html_table(&["metric", "value", "equation"], &rows));
        body.push('\n');
    }
    if !m.problems.is_empty() {
        body.push_str("<p><strong>Problems</strong></p>\n<ul>\n");
        for p in &m.problems {
            body.push_str(&format!("<li>{}</li>\n", hpcscope_report::escape(&p.what)));
        }
        body.push_str("</ul>\n");
    }
    for n in &m.notes {
        body.push_str(&format!("<p>Note: {}</p>\n", hpcscope_report::escape(n)));
    }
    let table_html = |t: &Table| {
        html_table(
            &t.headers.iter().map(String::as_str).collect::<Vec<_>>(),
            &t.rows,
        )
    };
    let mut sections = vec![
        Section {
            title: format!("Job {}", m.job_id),
            summary,
            body_html: body,
            svgs: Vec::new(),
        },
        Section {
            title: "Time per rank".into(),
            summary: "Where each rank's time went; the bars show the imbalance.".into(),
            body_html: table_html(&rank_table(m)),
            svgs: imbalance_svg(m).into_iter().collect(),
        },
        Section {
            title: "Per node".into(),
            summary: format!("{} node(s).", m.nodes.len()),
            body_html: table_html(&node_table(m)),
            svgs: Vec::new(),
        },
    ];
    if let Some(sw) = &m.sweep {
        sections.push(Section {
            title: format!("Design points: {}", sw.scenario),
            summary: format!(
                "{} of {} design points, from source {} at {} GFLOP/s.",
                sw.points.len(),
                m.size,
                sw.source_machine,
                num(sw.source_gflops, 4)
            ),
            body_html: table_html(&hpcscope_core::view::points_table(&sw.points)),
            svgs: job_svg(m).into_iter().collect(),
        });
        if !sw.ridge.is_empty() {
            let approx = if sw.approximate.is_empty() {
                String::new()
            } else {
                format!(" Approximate: {}.", sw.approximate.join("; "))
            };
            sections.push(Section {
                title: "OI - ridge diagnostic".into(),
                summary: format!(
                    "Each design point's OI at its first level with a roofline minus that roofline's ridge (thesis section 7.4.1): below 0 the level's bandwidth binds, so a faster memory can help; above 0 it cannot.{approx}"
                ),
                body_html: table_html(&hpcscope_core::view::ridge_table(&sw.ridge)),
                svgs: Vec::new(),
            });
        }
    }
    if !m.mpi_functions.is_empty() {
        sections.push(Section {
            title: "MPI calls".into(),
            summary: format!(
                "Calls and time per MPI function, from uprobes on the MPI library; bytes from the count and datatype arguments, read at each call's entry (receives count their buffer's capacity).{}",
                m.mpi_messages
                    .as_ref()
                    .map(|t| format!(" {}", messages_line(t)))
                    .unwrap_or_default()
            ),
            body_html: table_html(&mpi_table(m)),
            svgs: Vec::new(),
        });
    }
    if let Some(f) = flame {
        sections.push(Section {
            title: "Flame graph of the job".into(),
            summary: "Every rank's sampled stacks, each under its rank.".into(),
            body_html: String::new(),
            svgs: vec![f],
        });
    }
    let top = most_uneven(m, 30);
    if !top.is_empty() {
        let rows: Vec<Vec<String>> = top
            .iter()
            .map(|s| {
                vec![
                    s.name.clone(),
                    s.ranks.to_string(),
                    num(s.min, 4),
                    num(s.mean, 4),
                    num(s.max, 4),
                    s.max_rank.to_string(),
                    opt(s.imbalance, 3),
                ]
            })
            .collect();
        sections.push(Section {
            title: "The ranks' numbers".into(),
            summary: "The most uneven numbers of the ranks' own results (max / mean).".into(),
            body_html: html_table(
                &[
                    "number",
                    "ranks",
                    "min",
                    "mean",
                    "max",
                    "max at rank",
                    "max / mean",
                ],
                &rows,
            ),
            svgs: Vec::new(),
        });
    }
    sections
}

/// The `n` numbers of the ranks' results that differ most between ranks (max / mean), of
/// those more than one rank has.
fn most_uneven(m: &MergedJob, n: usize) -> Vec<&MetricStat> {
    let mut top: Vec<&MetricStat> = m
        .metrics
        .iter()
        .filter(|s| s.ranks > 1 && s.imbalance.is_some_and(|i| i > 1.0))
        .collect();
    top.sort_by(|a, b| {
        b.imbalance
            .unwrap_or(0.0)
            .total_cmp(&a.imbalance.unwrap_or(0.0))
            .then(a.name.cmp(&b.name))
    });
    top.truncate(n);
    top
}

/// The merged jobs of `run_dir` in `format`: every one with their runtime's spread (`all`),
/// or the first.
pub fn render_merged(
    merged: &[MergedJob],
    all: bool,
    run_dir: &std::path::Path,
    format: Format,
) -> Result<String, serde_json::Error> {
    if !all {
        return render_job(&merged[0], format);
    }
    let runs = MergedRuns {
        format: "hpcscope-merged-runs".into(),
        directory: run_dir.display().to_string(),
        jobs: merged.to_vec(),
        runtime: crate::merge::Spread::of(merged),
    };
    render_runs(&runs, format)
}

/// The HTML report of the merged jobs of `run_dir`, the first with `flame` (its flame graph).
pub fn html_report(
    merged: &[MergedJob],
    flame: Option<String>,
    run_dir: &std::path::Path,
) -> String {
    let mut sections = Vec::new();
    let mut flame = flame;
    for m in merged {
        sections.extend(html_sections(m, flame.take()));
    }
    hpcscope_report::html_page(&format!("hpcscope merge: {}", run_dir.display()), &sections)
}

/// The jobs of a run directory merged each on its own (`merge --all`): the runtime spread
/// over the complete jobs, one row per job, and every job's problems.
pub fn render_runs(runs: &MergedRuns, format: Format) -> Result<String, serde_json::Error> {
    let mut head = vec![format!("{} job(s) in {}", runs.jobs.len(), runs.directory)];
    if let Some(sp) = &runs.runtime {
        head.push(format!(
            "runtime over the {} complete jobs: mean {} s, min {} s, max {} s, standard deviation {} s ({} %)",
            sp.jobs,
            num(sp.mean_s, 4),
            num(sp.min_s, 4),
            num(sp.max_s, 4),
            num(sp.stdev_s, 3),
            num(100.0 * sp.stdev_s / sp.mean_s, 3)
        ));
    }
    let mut tail = Vec::new();
    for m in &runs.jobs {
        for p in &m.problems {
            tail.push(format!("{}: {}", m.job_id, p.what));
        }
    }
    render(format, runs, &head, &jobs_table(&runs.jobs), &tail)
}

/// One row per job of a run directory merged with `--all`.
pub fn jobs_table(jobs: &[MergedJob]) -> Table {
    let mut t = Table::new(&[
        "job",
        "command",
        "ranks",
        "complete",
        "runtime_s",
        "parallel_eff",
        "load_balance",
        "comm_eff",
    ]);
    for j in jobs {
        let p = j.pop.as_ref();
        t.row(vec![
            j.job_id.clone(),
            j.command.clone(),
            format!("{}/{}", j.ranks_with_data, j.size),
            if j.complete { "yes" } else { "no" }.into(),
            opt(j.runtime_s, 4),
            opt(p.map(|p| p.parallel_efficiency), 3),
            opt(p.map(|p| p.load_balance), 3),
            opt(p.map(|p| p.communication_efficiency), 3),
        ]);
    }
    t
}

/// The job's messages in one sentence.
fn messages_line(t: &MessageTotals) -> String {
    format!(
        "messages of the job: {} calls, {} elements, {} bytes{}{}",
        t.calls,
        t.elements,
        t.bytes,
        t.mean_bytes()
            .map(|b| format!(", {} bytes a call", num(b, 4)))
            .unwrap_or_default(),
        if t.unknown_size_calls > 0 {
            format!(
                " ({} calls of unknown size not in the bytes)",
                t.unknown_size_calls
            )
        } else {
            String::new()
        }
    )
}

/// The numbers `--record` keeps for a job.
pub fn record_numbers(m: &MergedJob) -> serde_json::Value {
    let mut v = serde_json::json!({
        "ranks": m.size,
        "ranks_with_data": m.ranks_with_data,
        "runtime_s": m.runtime_s,
    });
    if let Some(p) = &m.pop {
        v["pop"] = serde_json::to_value(p).unwrap_or_default();
    }
    if let Some(h) = &m.hybrid {
        v["hybrid"] = serde_json::to_value(h).unwrap_or_default();
    }
    if let Some(f) = &m.factors {
        v["factors"] = serde_json::to_value(f).unwrap_or_default();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_ranges_are_compact() {
        assert_eq!(compact_ranks(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(compact_ranks(&[]), "");
    }
}
