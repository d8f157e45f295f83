//! `hpcscope model fit` and `model predict`: CPIs fitted to measured variants, and the
//! difference model.

use hpcscope_core::range::option as number;
use std::path::PathBuf;

use clap::Args;
use hpcscope_analysis::model::{FitOptions, PredictOptions};
use hpcscope_models::ports::Scheduler;

// The arguments of `model fit`.
#[derive(Args, Debug)]
pub struct FitArgs {
    /// Variants CSV.
    pub variants: PathBuf,
    /// Port model: a built-in id (skylake, skylake-avx512, haswell, sandybridge, knl, sapphirerapids, zen5, a64fx) or a TOML file.
    #[arg(long, default_value = "skylake")]
    pub ports: String,
    /// Basin-hopping seed.
    #[arg(long, default_value_t = 65432)]
    pub seed: u64,
    /// Basin-hopping hops.
    #[arg(long, default_value_t = 40)]
    pub hops: usize,
    /// Lower bound of every CPI.
    #[arg(long, default_value_t = 1.0, value_parser = number::positive)]
    pub cpi_min: f64,
    /// Upper bound of every CPI.
    #[arg(long, default_value_t = 100.0, value_parser = number::positive)]
    pub cpi_max: f64,
    /// Scheduler placement rule.
    #[arg(long, value_enum, default_value_t)]
    pub scheduler: Scheduler,
}

// The arguments of `model predict`.
#[derive(Args, Debug)]
pub struct PredictArgs {
    /// Variants CSV holding the proxy (measured) and the target (cycles may be empty).
    pub variants: PathBuf,
    /// CPIs: JSON written by `model fit --format json`, or `CLASS=CPI,...`.
    #[arg(long)]
    pub cpi: String,
    /// Name of the proxy row.
    #[arg(long)]
    pub proxy: String,
    /// Name of the target row (repeatable; default: every row without cycles).
    #[arg(long)]
    pub target: Vec<String>,
    /// Port model id or TOML file.
    #[arg(long, default_value = "skylake")]
    pub ports: String,
    /// R_c of the constant-R_c baseline.
    #[arg(long, value_parser = number::positive)]
    pub rc: Option<f64>,
    /// Clock in GHz, to convert cycles to time (eq. 5.2).
    #[arg(long, value_parser = number::ghz)]
    pub clock_ghz: Option<f64>,
    /// Loop iterations of the busiest thread (eq. 5.1).
    #[arg(long, value_parser = number::count)]
    pub iters: Option<f64>,
    /// Scheduler placement rule.
    #[arg(long, value_enum, default_value_t)]
    pub scheduler: Scheduler,
    /// Compare with the measured rows instead: every row but the proxy that has
    /// cycles_per_iter (or the --target rows) is predicted, and each model's % error per
    /// variant and mean / SD / max over variants are printed side by side (Tables 5.2
    /// and 5.3).
    #[arg(long)]
    pub validate: bool,
}

/// The options of `model fit`.
pub(super) fn fit_options(a: &FitArgs) -> FitOptions {
    FitOptions {
        variants: a.variants.clone(),
        ports: a.ports.clone(),
        seed: a.seed,
        hops: a.hops,
        cpi_min: a.cpi_min,
        cpi_max: a.cpi_max,
        scheduler: a.scheduler,
    }
}

/// The options of `model predict`.
pub(super) fn predict_options(a: &PredictArgs) -> PredictOptions {
    PredictOptions {
        variants: a.variants.clone(),
        cpi: a.cpi.clone(),
        proxy: a.proxy.clone(),
        targets: a.target.clone(),
        ports: a.ports.clone(),
        rc: a.rc,
        clock_ghz: a.clock_ghz,
        iters: a.iters,
        scheduler: a.scheduler,
        validate: a.validate,
    }
}
