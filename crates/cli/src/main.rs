//! `hpcscope`: HPC performance engineering in one binary.
//!
//! This file only parses arguments, dispatches to a subcommand and turns an error into its
//! exit code through [`exit`] (0 success, 1 a finding, 2 bad input or usage, 3 an environment
//! limit).
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod args;
mod cmd;
mod exit;
mod output;

/// HPC performance engineering: machines, rooflines, projection between machines,
/// design-space exploration.
#[derive(Parser, Debug)]
#[command(name = "hpcscope", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List, show, validate and compare machine descriptions.
    #[command(subcommand)]
    Machine(cmd::machine::MachineCmd),
    /// Place an application profile on a machine's cache-aware rooflines.
    Roofline(cmd::roofline::RooflineArgs),
    /// Project measured performance from a source machine to a target machine as an interval.
    Project(cmd::project::ProjectArgs),
    /// Sweep a design space (vector length, memory, cache, compiler) from a scenario file.
    Explore(cmd::explore::ExploreArgs),
    /// Count FLOPs, FP instructions and bytes per memory level of a binary under emulation.
    Mix(cmd::mix::MixArgs),
    /// Measure what this machine sustains (bandwidth per level, peak FLOP rate) and write a machine file.
    Bench(cmd::bench::BenchArgs),
    /// From a binary to a projection report: rooflines here, intervals on other machines.
    Analyze(cmd::analyze::AnalyzeArgs),
    /// Build, analyse and project the bundled reference workloads into one HTML report.
    Demo(cmd::demo::DemoArgs),
    /// Check projections against measurements: builds of the bundled workloads (vector
    /// width, compiler, optimization level) or your own (--build), on this machine.
    Validate(cmd::validate::ValidateArgs),
    /// Host records (a machine file and the bundled workloads measured there): record this
    /// host, and check projections from one recorded host onto another.
    #[command(subcommand)]
    Hosts(cmd::hosts::HostsCmd),
    /// Portable hardware-counter metrics: collect, import, compare, validate.
    Counters(cmd::counters::CountersArgs),
    /// Run a command N times and keep each run in the history store.
    Record(cmd::record::RecordArgs),
    /// One result for a parallel job from its ranks' files (--run-dir): per-rank and
    /// per-node tables, POP efficiencies, the imbalance chart.
    Merge(cmd::merge::MergeArgs),
    /// List, export and chart the runs of the history store.
    History(cmd::history::HistoryArgs),
    /// Non-regression testing over the history store (exit 1 on a regression).
    Regress(cmd::regress::RegressArgs),
    /// Performance models: kernel classes, port model, difference model, CPI fits, scaling laws, POP metrics.
    Model(cmd::model::ModelArgs),
    /// Watch a job with eBPF: syscalls, scheduler, page faults, I/O, user functions.
    Trace(cmd::trace::TraceArgs),
    /// CPU stack sampling with eBPF: folded stacks, a flame graph, hot functions.
    Profile(cmd::profile::ProfileArgs),
    /// What this machine allows (BPF, BTF, kprobes, uprobes, perf events, QEMU, cross compilers).
    Doctor(cmd::doctor::DoctorArgs),
    /// The JSON Schema of a file format, of analyze's result, or of a command's --format json output (`hpcscope schema` lists them).
    Schema(cmd::schema::SchemaArgs),
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // A bad input limit is refused before any work, not after a run whose input it bounds.
    hpcscope_core::load::max_input_bytes()?;
    match cli.command {
        Command::Machine(c) => cmd::machine::run(c),
        Command::Roofline(a) => cmd::roofline::run(&a),
        Command::Project(a) => cmd::project::run(&a),
        Command::Explore(a) => cmd::explore::run(&a),
        Command::Mix(a) => cmd::mix::run(&a),
        Command::Bench(a) => cmd::bench::run(&a),
        Command::Analyze(a) => cmd::analyze::run(&a),
        Command::Demo(a) => cmd::demo::run(&a),
        Command::Validate(a) => cmd::validate::run(&a),
        Command::Hosts(c) => cmd::hosts::run(c),
        Command::Counters(a) => cmd::counters::run(&a),
        Command::Record(a) => cmd::record::run(&a),
        Command::Merge(a) => cmd::merge::run(&a),
        Command::History(a) => cmd::history::run(&a),
        Command::Regress(a) => cmd::regress::run(&a),
        Command::Model(a) => cmd::model::run(&a),
        Command::Trace(a) => cmd::trace::run(&a),
        Command::Profile(a) => cmd::profile::run(&a),
        Command::Doctor(a) => cmd::doctor::run(&a),
        Command::Schema(a) => cmd::schema::run(&a),
    }
}

fn main() -> ExitCode {
    // Like other command-line tools, end quietly when the reader of our output goes away
    // (`hpcscope ... | head`) instead of panicking on the failed write.
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", exit::message(&err));
            ExitCode::from(exit::code_of(&err))
        }
    };
    // Everything is written: uprobes still detaching are left to a child process, so that
    // the exit does not wait for their grace periods.
    hpcscope_trace::hand_over_detach();
    code
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
