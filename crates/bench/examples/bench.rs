//! `hpcscope bench` without the `hpcscope` binary: the same arguments and the same glue
//! (`crates/cli/src/cmd/bench.rs`), for trying the benchmarks from this crate alone.
//!
//! `cargo run --release -p hpcscope-bench --example bench -- --quick`

#[path = "../../cli/src/cmd/bench.rs"]
mod bench;

use std::process::ExitCode;

use clap::Parser;

/// Measures what this machine can sustain and writes a machine file.
#[derive(Parser, Debug)]
#[command(name = "bench")]
struct Cli {
    #[command(flatten)]
    args: bench::BenchArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match bench::run(&cli.args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
