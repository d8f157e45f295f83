//! `model strong` and `model dt`: strong scaling capped by the data-throughput kernel
//! (eqs. 5.1, 5.2, section 5.5.1), the BSP model (eqs. 3.1, 3.2) and the error against
//! measured runtimes (eq. 5.13).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use hpcscope_bench::dt::{DtConfig, DtReport};
use hpcscope_models::inputs;
use hpcscope_models::output::{ActualPoint, StrongBsp, StrongMeasured, StrongOutput};
use hpcscope_models::strong::{
    Halo, Measured, bsp_run, inputs_from_measured, pct_error, stats_of, strong_scaling,
};
use hpcscope_models::view::{self, Report, View};
use hpcscope_report::Table;
use hpcscope_report::fmt::num;

use super::read;

/// Where `model strong` takes the clock and the memory time at each thread count from.
#[derive(Debug, Clone, PartialEq)]
pub enum StrongSource {
    /// A CSV `threads,clock_ghz,iters,memory_s[,proxy_cycles | ,stall_cycles]`.
    Table(PathBuf),
    /// Measure the data-throughput kernel and the clock now.
    Measure {
        /// Thread counts (empty: 1, 2, 4... up to the CPUs this process may use).
        threads: Vec<usize>,
        /// MiB of each thread's mesh copy (default: twice the last-level cache).
        dt_mib: Option<f64>,
    },
    /// A measurement saved by `model dt --format json -o FILE`.
    Saved(PathBuf),
}

/// `model strong`.
#[derive(Debug, Clone, PartialEq)]
pub struct StrongOptions {
    /// The clock and the memory time at each thread count.
    pub source: StrongSource,
    /// Cycles per iteration of the target loop.
    pub cycles: f64,
    /// Loop iterations of each thread (weak-scaled).
    pub iters: Option<f64>,
    /// Loop iterations of the whole problem, split evenly.
    pub total_iters: Option<f64>,
    /// Measured runtimes to compare with: CSV `threads,seconds`.
    pub actual: Option<PathBuf>,
    /// Partition of the BSP model: CSV `[ranks,]level,rank,n_indep,n_dep[,actual_s]`.
    pub partition: Option<PathBuf>,
    /// Halo-exchange latency alpha of eq. 3.2, microseconds.
    pub alpha_us: f64,
    /// Halo-exchange bandwidth 1/beta of eq. 3.2, GB/s (none: no transfer cost).
    pub bandwidth_gbs: Option<f64>,
    /// Bytes per halo element B of eq. 3.2.
    pub bytes_per_element: f64,
    /// A program to run at each thread count (OMP_NUM_THREADS=t): its wall time is the
    /// measured runtime.
    pub program: Vec<String>,
}

/// Runs `model strong`.
pub fn strong(o: &StrongOptions) -> Result<Report<StrongOutput<DtReport>>> {
    let measured = match &o.source {
        StrongSource::Table(_) => None,
        StrongSource::Measure { threads, dt_mib } => Some(measure_dt(threads, *dt_mib, 5)?),
        StrongSource::Saved(f) => Some(DtReport::from_json(&read(f)?, &f.display().to_string())?),
    };
    let points: Vec<Measured> = measured
        .as_ref()
        .map(|r| {
            r.points
                .iter()
                .map(|p| Measured {
                    threads: p.threads as u32,
                    clock_hz: p.clock_ghz * 1e9,
                    memory_s_per_iter: p.seconds_per_iter.median,
                })
                .collect()
        })
        .unwrap_or_default();
    let mut pre = Vec::new();
    if let Some(r) = &measured {
        pre.push(measurement_line(r));
    }
    if let Some(part) = &o.partition {
        let halo = Halo {
            alpha_s: o.alpha_us * 1e-6,
            beta_s_per_byte: match o.bandwidth_gbs {
                Some(b) if b > 0.0 && b.is_finite() => 1.0 / (b * 1e9),
                Some(b) => bail!("--bandwidth-gbs must be positive, got {b}"),
                None => 0.0,
            },
            bytes_per_element: o.bytes_per_element,
        };
        let origin = part.display().to_string();
        let mut runs = Vec::new();
        for (n, rs) in inputs::partition(&read(part)?, &origin)? {
            let m = points.iter().find(|p| p.threads == n).with_context(|| {
                format!(
                    "{origin}: {n} ranks, but the clock and the memory benchmark were measured at {} threads only; measure at {n} too (--threads)",
                    points.iter().map(|p| p.threads.to_string()).collect::<Vec<_>>().join(", ")
                )
            })?;
            runs.push(bsp_run(o.cycles, m, &halo, &rs)?);
        }
        let errs: Vec<f64> = runs.iter().filter_map(|r| r.error_pct).collect();
        let stats = if errs.is_empty() {
            None
        } else {
            Some(stats_of(&errs))
        };
        let text = view::bsp(&runs, stats.as_ref(), pre);
        return Ok(Report::sorted(
            StrongOutput::Bsp(StrongBsp {
                bsp: runs,
                error_stats: stats,
                measurement: measured,
            }),
            text,
        ));
    }
    let inputs = match &o.source {
        StrongSource::Table(table) => {
            inputs::scaling_table(&read(table)?, &table.display().to_string())?
        }
        _ => {
            let per_thread = |t: u32| match (o.iters, o.total_iters) {
                (Some(n), _) => n,
                (None, Some(n)) => (n / t as f64).ceil(),
                (None, None) => f64::NAN,
            };
            if o.iters.is_none() && o.total_iters.is_none() {
                bail!(
                    "give the loop's iterations: --iters (per thread) or --total-iters (split over threads)"
                );
            }
            inputs_from_measured(&points, per_thread)?
        }
    };
    let s = strong_scaling(o.cycles, &inputs)?;
    // Measured runtimes to compare with: a CSV, or the program run at each count.
    let actual: Option<Vec<(u32, f64)>> = match (&o.actual, o.program.is_empty()) {
        (Some(a), _) => Some(inputs::actual_table(&read(a)?, &a.display().to_string())?),
        (None, false) => Some(run_program(
            &o.program,
            &s.points.iter().map(|p| p.threads).collect::<Vec<_>>(),
        )?),
        (None, true) => None,
    };
    // Each point's measured runtime and error, where one was measured at its thread count.
    let compared: Option<Vec<Option<(f64, f64)>>> = actual.as_ref().map(|a| {
        s.points
            .iter()
            .map(|p| {
                a.iter()
                    .find(|x| x.0 == p.threads)
                    .map(|&(_, v)| (v, pct_error(p.predicted_s, v)))
            })
            .collect()
    });
    let errors: Vec<ActualPoint> = compared
        .iter()
        .flatten()
        .zip(&s.points)
        .filter_map(|(c, p)| {
            c.map(|(v, e)| ActualPoint {
                actual_s: v,
                error_pct: e,
                threads: p.threads,
            })
        })
        .collect();
    let stats = if errors.is_empty() {
        None
    } else {
        Some(stats_of(
            &errors.iter().map(|e| e.error_pct).collect::<Vec<_>>(),
        ))
    };
    let text = view::strong(&s, compared.as_deref(), stats.as_ref(), pre);
    let out = if measured.is_some() || actual.is_some() {
        StrongOutput::Measured(StrongMeasured {
            actual: errors,
            error_stats: stats,
            measurement: measured,
            prediction: s,
        })
    } else {
        StrongOutput::Prediction(s)
    };
    Ok(Report::sorted(out, text))
}

/// The line that says what was measured: the kernel's size, the CPU and the clock sources.
fn measurement_line(r: &DtReport) -> String {
    format!(
        "data-throughput kernel: {} edges per thread ({} MiB per thread copy) on {}; clock from {}",
        r.edges_per_thread,
        num(r.bytes_per_thread as f64 / 1048576.0, 4),
        r.cpu_model,
        r.points
            .iter()
            .map(|p| p.clock_source.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `model dt`: the data-throughput kernel and the clock at each thread count.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct DtOptions {
    /// Thread counts (default: 1, 2, 4... up to the CPUs this process may use).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ','))]
    pub threads: Vec<usize>,
    /// MiB of each thread's mesh copy (default: twice the last-level cache).
    #[cfg_attr(feature = "clap", arg(long))]
    pub dt_mib: Option<f64>,
    /// Timed samples per thread count.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 5))]
    pub reps: usize,
}

/// Runs `model dt`.
pub fn dt(o: &DtOptions) -> Result<Report<DtReport>> {
    let r = measure_dt(&o.threads, o.dt_mib, o.reps)?;
    let text = dt_view(&r);
    Ok(Report::plain(r, text))
}

/// The view of a data-throughput measurement.
pub fn dt_view(r: &DtReport) -> View {
    let mut t = Table::new(&[
        "threads",
        "ns_per_iter",
        "spread_pct",
        "gbs",
        "gbs_own",
        "clock_ghz",
        "clock_source",
    ]);
    for p in &r.points {
        t.row(vec![
            p.threads.to_string(),
            num(p.seconds_per_iter.median * 1e9, 4),
            num(p.seconds_per_iter.spread() * 100.0, 3),
            num(p.gbs, 4),
            num(p.gbs_own, 4),
            num(p.clock_ghz, 4),
            p.clock_source.clone(),
        ]);
    }
    let pre = vec![format!(
        "data-throughput kernel on {}: {} edges per thread, {} MiB per thread copy; per edge {} FLOPs, {} loads, {} stores, {} B of its own, {} B from memory",
        r.cpu_model,
        r.edges_per_thread,
        num(r.bytes_per_thread as f64 / 1048576.0, 4),
        r.per_edge.flops,
        r.per_edge.loads,
        r.per_edge.stores,
        r.per_edge.bytes,
        num(r.per_edge.memory_bytes, 4)
    )];
    let post = vec!["ns_per_iter: nanoseconds per edge per thread, all threads running (median of the samples); gbs: compulsory memory traffic (comparable with STREAM), gbs_own: the kernel's own loads and stores; save with --format json -o FILE for `model strong --dt FILE`".to_string()];
    View {
        preamble: pre,
        table: t,
        epilogue: post,
    }
}

/// Thread counts 1, 2, 4... up to `n` (the last one included).
fn default_threads(n: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut t = 1;
    while t < n {
        v.push(t);
        t *= 2;
    }
    v.push(n.max(1));
    v
}

/// Runs the data-throughput kernel and the clock at each thread count.
fn measure_dt(threads: &[usize], mib: Option<f64>, reps: usize) -> Result<DtReport> {
    let cpus = hpcscope_bench::affinity::allowed_cpus()
        .filter(|c| !c.is_empty())
        .context("cannot tell which CPUs this process may use (sched_getaffinity failed)")?;
    let threads = if threads.is_empty() {
        default_threads(cpus.len())
    } else {
        threads.to_vec()
    };
    let bytes = match mib {
        Some(m) if m.is_finite() && m > 0.0 => (m * 1048576.0) as u64,
        Some(m) => bail!("--dt-mib must be positive, got {m}"),
        None => hpcscope_bench::topology::Topology::detect()
            .llc()
            .map_or(64 << 20, |c| 2 * c.size_bytes),
    };
    let max_t = threads.iter().copied().max().unwrap_or(1) as u64;
    if let Some(avail) = hpcscope_host::facts::mem_available_bytes()
        && bytes.saturating_mul(max_t) > avail / 2
    {
        bail!(
            "--dt-mib: {} threads x {} MiB is more than half the available memory ({} MiB); give a smaller --dt-mib",
            max_t,
            bytes >> 20,
            avail >> 20
        );
    }
    Ok(hpcscope_bench::dt::run(&DtConfig {
        threads,
        cpus,
        nodes_per_thread: DtConfig::nodes_for_bytes(bytes),
        reps: reps.max(1),
        target_s: 0.1,
    })?)
}

/// Runs `program` once per thread count with OMP_NUM_THREADS set; its wall time is the
/// measured runtime.
fn run_program(program: &[String], threads: &[u32]) -> Result<Vec<(u32, f64)>> {
    let mut out = Vec::new();
    for &t in threads {
        let mut cmd = std::process::Command::new(&program[0]);
        cmd.args(&program[1..])
            .env("OMP_NUM_THREADS", t.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        hpcscope_host::child::die_with_parent(&mut cmd);
        let t0 = std::time::Instant::now();
        let st = cmd
            .status()
            .with_context(|| format!("cannot run '{}'", program[0]))?;
        let dt = t0.elapsed().as_secs_f64();
        if !st.success() {
            bail!(
                "'{}' failed at {t} threads ({st}); its runtime is not a measurement",
                program.join(" ")
            );
        }
        out.push((t, dt));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_threads_double_up_to_the_cpus() {
        assert_eq!(default_threads(1), vec![1]);
        assert_eq!(default_threads(6), vec![1, 2, 4, 6]);
        assert_eq!(default_threads(8), vec![1, 2, 4, 8]);
        assert_eq!(default_threads(0), vec![1]);
    }

    fn table_options(actual: Option<PathBuf>) -> StrongOptions {
        StrongOptions {
            source: StrongSource::Table(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../models/tests/data/strong.csv"),
            ),
            cycles: 20.0,
            iters: None,
            total_iters: None,
            actual,
            partition: None,
            alpha_us: 0.0,
            bandwidth_gbs: None,
            bytes_per_element: 0.0,
            program: Vec::new(),
        }
    }

    #[test]
    fn strong_from_a_table_compares_with_the_runtimes_given() {
        let r = strong(&table_options(None)).unwrap();
        let StrongOutput::Prediction(s) = &r.output else {
            panic!("a table alone is a prediction");
        };
        assert_eq!(r.view.table.rows.len(), s.points.len());
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("actual.csv");
        let first = s.points[0].threads;
        std::fs::write(&a, format!("threads,seconds\n{first},1.0\n")).unwrap();
        let r = strong(&table_options(Some(a))).unwrap();
        let StrongOutput::Measured(m) = &r.output else {
            panic!("measured runtimes make a comparison");
        };
        assert_eq!(m.actual.len(), 1);
        assert_eq!(m.actual[0].threads, first);
        assert_eq!(m.error_stats.as_ref().unwrap().n, 1);
        if s.points.len() > 1 {
            assert!(
                r.view
                    .epilogue
                    .iter()
                    .any(|l| l.starts_with("no measured runtime at ")),
                "{:?}",
                r.view.epilogue
            );
        }
    }
}
