//! The CLI glue (`hpcscope bench` arguments) turns flags into a configuration and rejects
//! bad ones with exit code 2 and a fix.

#[path = "../../cli/src/cmd/bench.rs"]
#[allow(dead_code)]
mod bench;

use clap::Parser;

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    args: bench::BenchArgs,
}

fn parse(args: &[&str]) -> bench::BenchArgs {
    let mut v = vec!["bench"];
    v.extend_from_slice(args);
    Cli::try_parse_from(v).unwrap().args
}

#[test]
fn flags_become_a_configuration() {
    let a = parse(&[
        "--quick",
        "--kernels",
        "triad,fma",
        "--sizes",
        "32k,1MB,1g",
        "--cpus",
        "0",
        "--repeat",
        "5",
        "--widths",
        "scalar,512",
        "--precision",
        "f64",
        "--id",
        "x",
    ]);
    let c = bench::config(&a).unwrap();
    assert!(c.quick);
    assert_eq!(c.sizes, Some(vec![32768, 1_000_000, 1 << 30]));
    assert_eq!(c.cpus, hpcscope_bench::CpuRequest::List(vec![0]));
    assert_eq!(c.repeat, Some(5));
    assert_eq!(c.precisions, vec![hpcscope_core::Precision::F64]);
    assert_eq!(c.names.id.as_deref(), Some("x"));
}

#[test]
fn bad_flags_are_input_errors() {
    for args in [
        &["--kernels", "triad,nope"][..],
        &["--sizes", "12q"],
        &["--cpus", "3-1"],
        &["--widths", "1024"],
    ] {
        let e = bench::config(&parse(args)).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
        assert!(e.to_string().contains("fix:"), "{e}");
    }
    // --threads and --cpus exclude each other.
    assert!(Cli::try_parse_from(["bench", "--threads", "2", "--cpus", "0"]).is_err());
}
