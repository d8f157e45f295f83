//! `hpcscope model`: performance models. Kernel extraction from binaries, CPI fitting and the
//! difference model (seed 003), strong scaling with a memory cap, scaling laws, POP
//! efficiencies and the time-decomposition projection (seed 004), theoretical peak.
//!
//! The workflows live in `hpcscope_analysis::model` (the models themselves, their CSV inputs
//! and text views in `hpcscope-models`); this module runs one and prints its result, and its
//! children hold each subcommand's arguments and their conversion into the workflow's options.

pub mod kernel;
pub mod strong;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use hpcscope_analysis::model;
use hpcscope_models::view::Report;

use self::kernel::{KernelArgs, PeakArgs};
use self::strong::StrongArgs;
use crate::output::{Format, emit};

/// Arguments of `model`.
#[derive(Args, Debug)]
pub struct ModelArgs {
    /// What to model.
    #[command(subcommand)]
    pub command: ModelCmd,
    /// Output format.
    #[arg(long, value_enum, default_value_t, global = true)]
    pub format: Format,
    /// Write the result to this file instead of standard output.
    #[arg(long, short, global = true)]
    pub output: Option<PathBuf>,
}

/// Arguments of `model scaling`.
#[derive(Args, Debug)]
pub struct ScalingArgs {
    /// Runs: one CSV (p or threads or ranks, and time_s), or merged jobs at several rank
    /// counts: JSON written by `hpcscope merge --format json`, or run directories.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// The laws and predictions.
    #[command(flatten)]
    pub options: model::ScalingOptions,
}

/// Subcommands of `model`.
#[derive(Subcommand, Debug)]
pub enum ModelCmd {
    /// Find a function's innermost loops in a binary and count instructions per iteration by class.
    Kernel(KernelArgs),
    /// Fit CPIs per class to measured variants (CSV: name, cycles_per_iter, one column per class).
    Fit(model::FitOptions),
    /// Predict a target's cycles per iteration from a proxy (difference model, eqs. 5.8-5.11, with v1, v2 and baselines).
    Predict(model::PredictOptions),
    /// Strong scaling capped by a memory benchmark (eqs. 5.1, 5.2 and section 5.5.1):
    /// from a CSV threads,clock_ghz,iters,memory_s[,proxy_cycles | ,stall_cycles], or
    /// measured: --measure runs the data-throughput kernel and the clock at each thread
    /// count, --dt reads a saved measurement; --partition adds the BSP model (eqs. 3.1,
    /// 3.2), --actual or a program after `--` the error statistics (eq. 5.13).
    Strong(StrongArgs),
    /// Measure the data-throughput kernel of an unstructured-grid edge loop (seed 003's
    /// memory-bound cap) and the clock at each thread count; save it with --format json -o.
    Dt(model::DtOptions),
    /// Is a mini-app kernel representative of its parent? IPC-ratio invariance and
    /// counter-vector similarity (section 4.1) from counters files (`counters run --save`,
    /// perf stat CSV, PAPI, likwid) or profiles (`mix`, `counters --profile`).
    Similarity(model::SimilarityOptions),
    /// Fit Amdahl, Gustafson, USL and Extra-P-style laws to runs (CSV p,time_s, or merged
    /// parallel jobs) and choose one.
    Scaling(ScalingArgs),
    /// POP efficiencies of a run (CSV comp_s,runtime_s[,rank,out_mpi_s][,instructions,cycles
    /// or frequency_ghz]), optionally against a reference run (eq. 3.12's factors when both
    /// give instructions and cycles).
    Pop(model::PopOptions),
    /// The kernel-composition model of eq. 3.3: T = sigma (T_c + T_mem + T_MPI + T_IO) +
    /// T_other, each term given in seconds or from what it is made of.
    Compose(model::ComposeOptions),
    /// Fit the weights of the time decomposition (eq. 3.2) and project (CSV ratio + one column per resource).
    Decompose(model::DecomposeOptions),
    /// Theoretical single-core performance: a DAG file (habakkuk-style), or a binary's main loop.
    Peak(PeakArgs),
}

/// `report` in `format`.
fn render<T: serde::Serialize>(format: Format, report: &Report<T>) -> Result<String> {
    report.render(format).context("serializing the result")
}

/// Runs `model`.
pub fn run(args: &ModelArgs) -> Result<ExitCode> {
    let f = args.format;
    let text = match &args.command {
        ModelCmd::Kernel(a) => render(f, &model::kernel(&kernel::kernel_options(a))?)?,
        ModelCmd::Fit(a) => render(f, &model::fit(a)?)?,
        ModelCmd::Predict(a) => render(f, &model::predict(a)?)?,
        ModelCmd::Strong(a) => render(f, &model::strong(&strong::strong_options(a)?)?)?,
        ModelCmd::Dt(a) => render(f, &model::dt(a)?)?,
        ModelCmd::Similarity(a) => render(f, &model::similarity(a)?)?,
        ModelCmd::Scaling(a) => {
            let runs = hpcscope_job::scaling::scaling_runs(&a.runs)?;
            render(f, &model::scaling(&runs, &a.options)?)?
        }
        ModelCmd::Pop(a) => render(f, &model::pop(a)?)?,
        ModelCmd::Compose(a) => render(f, &model::compose(a)?)?,
        ModelCmd::Decompose(a) => render(f, &model::decompose(a)?)?,
        ModelCmd::Peak(a) => render(f, &model::peak(&kernel::peak_options(a)?)?)?,
    };
    emit(&text, args.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use hpcscope_analysis::model::{DtOptions, PeakSource, StrongSource};
    use hpcscope_models::ports::Scheduler;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        model: ModelArgs,
    }

    fn parse(args: &[&str]) -> ModelCmd {
        Cli::try_parse_from(std::iter::once("model").chain(args.iter().copied()))
            .unwrap()
            .model
            .command
    }

    #[test]
    fn kernel_arguments_become_options() {
        let ModelCmd::Kernel(a) = parse(&["kernel", "bin", "--hottest", "--hz", "99", "--", "x"])
        else {
            panic!()
        };
        let o = kernel::kernel_options(&a);
        assert_eq!(o.binary, PathBuf::from("bin"));
        assert_eq!(o.hottest, Some((vec!["x".to_string()], 99)));
        assert_eq!(o.function, None);
        let ModelCmd::Kernel(a) = parse(&["kernel", "bin", "-f", "k", "--min-loads", "3"]) else {
            panic!()
        };
        let o = kernel::kernel_options(&a);
        assert_eq!(o.hottest, None);
        assert_eq!(o.function.as_deref(), Some("k"));
        assert_eq!(o.min_loads, Some(3.0));
    }

    #[test]
    fn fit_and_predict_arguments_become_options() {
        let ModelCmd::Fit(a) = parse(&["fit", "v.csv", "--scheduler", "greedy-ext"]) else {
            panic!()
        };
        let o = a;
        assert_eq!(o.ports, "skylake");
        assert_eq!((o.seed, o.hops), (65432, 40));
        assert_eq!((o.cpi_min, o.cpi_max), (1.0, 100.0));
        assert_eq!(o.scheduler, Scheduler::GreedyExt);
        let ModelCmd::Predict(a) = parse(&[
            "predict",
            "v.csv",
            "--cpi",
            "FP=1",
            "--proxy",
            "p",
            "--target",
            "a",
            "--target",
            "b",
            "--validate",
        ]) else {
            panic!()
        };
        let o = a;
        assert_eq!(o.targets, vec!["a".to_string(), "b".to_string()]);
        assert!(o.validate);
        assert_eq!(o.scheduler, Scheduler::Waterfill);
    }

    #[test]
    fn strong_arguments_choose_the_source() {
        let ModelCmd::Strong(a) = parse(&["strong", "t.csv", "--cycles", "20"]) else {
            panic!()
        };
        let o = strong::strong_options(&a).unwrap();
        assert_eq!(o.source, StrongSource::Table("t.csv".into()));
        assert_eq!(o.cycles, 20.0);
        let ModelCmd::Strong(a) = parse(&[
            "strong",
            "--cycles",
            "20",
            "--measure",
            "--threads",
            "1,2",
            "--partition",
            "p.csv",
            "--bandwidth-gbs",
            "5",
        ]) else {
            panic!()
        };
        let o = strong::strong_options(&a).unwrap();
        assert_eq!(
            o.source,
            StrongSource::Measure {
                threads: vec![1, 2],
                dt_mib: None
            }
        );
        assert_eq!(o.bandwidth_gbs, Some(5.0));
        let ModelCmd::Strong(a) = parse(&["strong", "--cycles", "1", "--dt", "d.json"]) else {
            panic!()
        };
        assert_eq!(
            strong::strong_options(&a).unwrap().source,
            StrongSource::Saved("d.json".into())
        );
        let ModelCmd::Strong(mut a) = parse(&["strong", "--cycles", "1", "--dt", "d.json"]) else {
            panic!()
        };
        a.dt = None;
        assert_eq!(
            strong::strong_options(&a).unwrap_err().to_string(),
            "give a scaling table, --measure or --dt FILE"
        );
    }

    #[test]
    fn dt_similarity_and_scaling_arguments_become_options() {
        let ModelCmd::Dt(a) = parse(&["dt", "--threads", "1,4"]) else {
            panic!()
        };
        assert_eq!(
            a,
            DtOptions {
                threads: vec![1, 4],
                dt_mib: None,
                reps: 5
            }
        );
        let ModelCmd::Similarity(a) = parse(&["similarity", "k", "p", "--also", "a,b"]) else {
            panic!()
        };
        let o = a;
        assert_eq!(o.also, vec!["a,b".to_string()]);
        assert_eq!((o.threshold, o.tolerance), (0.1, 10.0));
        let ModelCmd::Scaling(a) = parse(&["scaling", "r.csv", "--law", "amdahl,usl", "--weak"])
        else {
            panic!()
        };
        let o = a.options;
        assert_eq!(o.laws, vec!["amdahl".to_string(), "usl".to_string()]);
        assert!(o.weak);
    }

    #[test]
    fn pop_compose_and_decompose_arguments_become_options() {
        let ModelCmd::Pop(a) = parse(&["pop", "r.csv", "--reference", "x.csv"]) else {
            panic!()
        };
        assert_eq!(a.reference, Some("x.csv".into()));
        let ModelCmd::Compose(a) = parse(&["compose", "--flops", "1e12", "--gflops", "50"]) else {
            panic!()
        };
        let o = a;
        assert_eq!((o.sigma, o.flops, o.gflops), (1.0, Some(1e12), Some(50.0)));
        assert_eq!(o.min_bytes, 1024.0);
        let ModelCmd::Decompose(a) = parse(&["decompose", "d.csv", "--project", "a=1"]) else {
            panic!()
        };
        assert_eq!(a.project.as_deref(), Some("a=1"));
    }

    #[test]
    fn peak_arguments_choose_the_dag_or_the_binary() {
        let ModelCmd::Peak(a) = parse(&["peak", "--dag", "d.dag"]) else {
            panic!()
        };
        let o = kernel::peak_options(&a).unwrap();
        assert_eq!(o.source, PeakSource::Dag("d.dag".into()));
        assert_eq!(o.clock_ghz, 3.85);
        let ModelCmd::Peak(a) = parse(&["peak", "--binary", "b", "-f", "k"]) else {
            panic!()
        };
        let PeakSource::Loop { ports, cpi, .. } = kernel::peak_options(&a).unwrap().source else {
            panic!()
        };
        assert_eq!((ports.as_str(), cpi), ("sapphirerapids", None));
        let ModelCmd::Peak(a) = parse(&["peak"]) else {
            panic!()
        };
        assert_eq!(
            kernel::peak_options(&a).unwrap_err().to_string(),
            "give --dag FILE, or --binary FILE --function NAME"
        );
    }
}
