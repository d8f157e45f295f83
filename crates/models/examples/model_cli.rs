//! A stand-alone `hpcscope model` for this crate's tests, built from the CLI's own glue file
//! and output module until the binary wires the subcommand.

use std::process::ExitCode;

use clap::Parser;

#[allow(dead_code)]
#[path = "../../cli/src/output.rs"]
mod output;

#[path = "../../cli/src/cmd/model.rs"]
mod model;

/// `hpcscope model` stand-alone.
#[derive(Parser, Debug)]
#[command(name = "hpcscope-model")]
struct Cli {
    #[command(flatten)]
    args: model::ModelArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match model::run(&cli.args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
