//! `hpcscope model similarity`: counter-vector similarity and IPC-ratio invariance.

use std::path::PathBuf;

use clap::Args;
use hpcscope_analysis::model::SimilarityOptions;

// The arguments of `model similarity`.
#[derive(Args, Debug)]
pub struct SimilarityArgs {
    /// The kernel's (mini-app's) counters or profile.
    pub kernel: PathBuf,
    /// The parent code's counters or profile.
    pub parent: PathBuf,
    /// More environments: KERNEL,PARENT file pairs (another machine, ISA, compiler),
    /// for the IPC-ratio invariance.
    #[arg(long, value_name = "KERNEL,PARENT")]
    pub also: Vec<String>,
    /// Region to compare (default: every region summed).
    #[arg(long)]
    pub region: Option<String>,
    /// Relative difference above which a counter is dissimilar.
    #[arg(long, default_value_t = 0.1)]
    pub threshold: f64,
    /// Largest deviation of the IPC ratio from its mean still called invariant, percent.
    #[arg(long, default_value_t = 10.0)]
    pub tolerance: f64,
}

/// The options of `model similarity`.
pub(super) fn similarity_options(a: &SimilarityArgs) -> SimilarityOptions {
    SimilarityOptions {
        kernel: a.kernel.clone(),
        parent: a.parent.clone(),
        also: a.also.clone(),
        region: a.region.clone(),
        threshold: a.threshold,
        tolerance: a.tolerance,
    }
}
