//! `hpcscope model kernel` and `model peak`: a binary's loops by class, and theoretical
//! peak from a DAG or a binary's main loop.

use hpcscope_core::range::option as number;
use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;
use hpcscope_analysis::model::{KernelOptions, PeakOptions, PeakSource};

// The arguments of `model kernel`.
#[derive(Args, Debug)]
pub struct KernelArgs {
    /// ELF binary (x86-64, or aarch64 with NEON/SVE).
    pub binary: PathBuf,
    /// Function symbol, e.g. kernel_triad.
    #[arg(long, short = 'f', required_unless_present_any = ["range", "hottest"])]
    pub function: Option<String>,
    /// Address range START:END (hex with 0x, or decimal) instead of a function.
    #[arg(long, conflicts_with = "function")]
    pub range: Option<String>,
    /// Run the binary natively (with the arguments after `--`) under CPU-clock sampling,
    /// as `hpcscope profile` does, and analyse the hottest function's hottest innermost
    /// loop.
    #[arg(long, conflicts_with_all = ["function", "range"])]
    pub hottest: bool,
    /// Sampling frequency of --hottest, Hz.
    #[arg(long, default_value_t = 4999, requires = "hottest")]
    pub hz: u64,
    /// The binary's arguments for --hottest.
    #[arg(last = true, value_name = "ARGS", requires = "hottest")]
    pub args: Vec<String>,
    /// Class table TOML (default: the built-in table of the binary's instruction set).
    #[arg(long)]
    pub classes: Option<PathBuf>,
    /// Show every loop, not only the innermost ones.
    #[arg(long)]
    pub all: bool,
    /// Print the disassembly of each loop (table format).
    #[arg(long)]
    pub listing: bool,
    /// Measured instructions per loop iteration (counted instructions / iterations):
    /// choose the innermost loop whose instruction count is closest, the thesis's
    /// criterion (section 5.3), shown beside the hottest sampled loop with --hottest.
    #[arg(long)]
    pub ins_per_iter: Option<f64>,
    /// Minimum loads per iteration the loop's data needs: loads beyond it are spills,
    /// the LOAD count of the difference model (section 5.3).
    #[arg(long)]
    pub min_loads: Option<f64>,
    /// Minimum stores per iteration: stores beyond it are spills.
    #[arg(long)]
    pub min_stores: Option<f64>,
}

// The arguments of `model peak`.
#[derive(Args, Debug)]
pub struct PeakArgs {
    /// DAG in the assignment language (`x = a + b`), one statement a line.
    #[arg(long, conflicts_with = "binary")]
    pub dag: Option<PathBuf>,
    /// ELF binary whose function's main loop to analyse.
    #[arg(long, requires = "function")]
    pub binary: Option<PathBuf>,
    /// Function symbol.
    #[arg(long, short = 'f')]
    pub function: Option<String>,
    /// Port model id or TOML file (binary mode).
    #[arg(long, default_value = "sapphirerapids")]
    pub ports: String,
    /// CPIs (binary mode): JSON from `model fit` or CLASS=CPI,... (default: 1 for every class).
    #[arg(long)]
    pub cpi: Option<String>,
    /// Clock, GHz.
    #[arg(long, default_value_t = 3.85, value_parser = number::ghz)]
    pub clock_ghz: f64,
}

/// The options of `model kernel`.
pub(super) fn kernel_options(a: &KernelArgs) -> KernelOptions {
    KernelOptions {
        binary: a.binary.clone(),
        function: a.function.clone(),
        range: a.range.clone(),
        hottest: a.hottest.then(|| (a.args.clone(), a.hz)),
        classes: a.classes.clone(),
        all: a.all,
        listing: a.listing,
        ins_per_iter: a.ins_per_iter,
        min_loads: a.min_loads,
        min_stores: a.min_stores,
    }
}

/// The options of `model peak`.
pub(super) fn peak_options(a: &PeakArgs) -> Result<PeakOptions> {
    let source = if let Some(d) = &a.dag {
        PeakSource::Dag(d.clone())
    } else if let (Some(b), Some(f)) = (&a.binary, &a.function) {
        PeakSource::Loop {
            binary: b.clone(),
            function: f.clone(),
            ports: a.ports.clone(),
            cpi: a.cpi.clone(),
        }
    } else {
        bail!("give --dag FILE, or --binary FILE --function NAME");
    };
    Ok(PeakOptions {
        source,
        clock_ghz: a.clock_ghz,
    })
}
