//! The reference suite of `hpcscope trace` and `profile` (see `suite.rs`): runs the
//! workloads under hpcscope and the reference tools side by side and prints one line per
//! metric with its verdict; exits 1 when a verdict fails.
//!
//! `cargo run --release -p hpcscope-trace --example reference -- [--quick] [--dir DIR]
//! [WORKLOAD...]` (needs root; run by `bench/trace/reference.sh`).

mod suite;

fn main() {
    let mut quick = false;
    let mut dir: Option<std::path::PathBuf> = None;
    let mut only = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--dir" => dir = args.next().map(Into::into),
            _ => only.push(a),
        }
    }
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let root = dir.unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&root).expect("the work directory");
    hpcscope_trace::install_signal_handlers();
    let (checks, skipped) = suite::run(&root, quick, &only);
    print!("{}", suite::render(&checks));
    for s in &skipped {
        println!("skipped: {s}");
    }
    let failed = checks.iter().filter(|c| c.verdict.failed()).count();
    println!(
        "{} checks: {} ok, {} failed, {} for information",
        checks.len(),
        checks
            .iter()
            .filter(|c| matches!(c.verdict, suite::Verdict::Pass(_)))
            .count(),
        failed,
        checks
            .iter()
            .filter(|c| matches!(c.verdict, suite::Verdict::Info(_)))
            .count()
    );
    std::process::exit(if failed > 0 { 1 } else { 0 });
}
