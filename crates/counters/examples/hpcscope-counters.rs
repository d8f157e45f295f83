//! Stand-in for `hpcscope counters` until the CLI wires it: the same argument parsing and
//! `run` as `crates/cli/src/cmd/counters.rs`, which this example compiles in.

use std::process::ExitCode;

use clap::Parser;

#[path = "../../cli/src/cmd/counters.rs"]
mod counters;

/// Portable hardware-counter metrics.
#[derive(Parser, Debug)]
#[command(name = "hpcscope-counters")]
struct Cli {
    #[command(flatten)]
    args: counters::CountersArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match counters::run(&cli.args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    fn data(f: &str) -> String {
        format!("{}/tests/data/import/{f}", env!("CARGO_MANIFEST_DIR"))
    }

    /// Runs the subcommand, output to a file; returns (exit code, output).
    fn run_cli(args: &[&str]) -> (u8, String) {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.txt");
        let mut v: Vec<String> = vec!["hpcscope-counters".into()];
        v.extend(args.iter().map(|s| s.to_string()));
        if !args.contains(&"--") && !matches!(args[0], "metrics" | "recipes" | "validate") {
            v.push("--output".into());
            v.push(out.display().to_string());
        }
        let cli = Cli::try_parse_from(&v).unwrap();
        let code = match counters::run(&cli.args) {
            Ok(c) => {
                if c == ExitCode::SUCCESS {
                    0
                } else if c == ExitCode::from(3) {
                    3
                } else {
                    1
                }
            }
            Err(e) => {
                eprintln!("{e:#}");
                2
            }
        };
        (code, std::fs::read_to_string(&out).unwrap_or_default())
    }

    #[test]
    fn import_perf_stat_csv_on_a_recipe() {
        let (code, out) = run_cli(&[
            "import",
            &data("perf-stat-clx.csv"),
            "--recipe",
            "clx",
            "--format",
            "csv",
        ]);
        assert_eq!(code, 0);
        // 2^20 elements x 100 reps x 2 flops; 24 bytes per element.
        let flops = out
            .lines()
            .find(|l| l.starts_with("Computation,flops,"))
            .unwrap();
        assert!(flops.ends_with(",2.097E8*"), "{flops}");
        let ai = out.lines().find(|l| l.contains(",AI,")).unwrap();
        assert!(ai.ends_with(",0.08333*"), "{ai}");
        let (code, md) = run_cli(&[
            "import",
            &data("perf-stat-clx.csv"),
            "--recipe",
            "clx",
            "--format",
            "md",
        ]);
        assert_eq!(code, 0);
        assert!(
            md.contains("| **Data Movement** |") && md.contains("* multiplexed"),
            "{md}"
        );
    }

    #[test]
    fn import_vm_output_says_why_hardware_is_na() {
        let (code, out) = run_cli(&["import", &data("perf-stat-vm.csv"), "--recipe", "clx"]);
        assert_eq!(code, 0);
        assert!(out.contains("CPU time (s)"), "{out}");
        assert!(
            out.contains("NA ipc: 'instructions' not available: <not supported>"),
            "{out}"
        );
    }

    #[test]
    fn bad_input_is_exit_2_with_line_and_column() {
        let (code, _) = run_cli(&["import", &data("bad.csv"), "--recipe", "clx"]);
        assert_eq!(code, 2);
        let (code, _) = run_cli(&["import", &data("perf-stat-vm.csv"), "--recipe", "nope"]);
        assert_eq!(code, 2);
    }

    #[test]
    fn compare_two_machines() {
        let (code, out) = run_cli(&[
            "compare",
            &data("perf-stat-clx.csv"),
            &data("perf-stat-vm.csv"),
            "--recipe",
            "clx",
            "--format",
            "csv",
        ]);
        assert_eq!(code, 0);
        assert!(
            out.lines()
                .next()
                .unwrap()
                .contains("perf-stat-vm / perf-stat-clx"),
            "{out}"
        );
    }

    #[test]
    fn profile_from_counters() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.json");
        let (code, _) = run_cli(&[
            "import",
            &data("perf-stat-clx.csv"),
            "--recipe",
            "clx",
            "--profile",
            p.to_str().unwrap(),
        ]);
        assert_eq!(code, 0);
        let prof = hpcscope_core::profile::Profile::from_json_str(
            &std::fs::read_to_string(&p).unwrap(),
            "p.json",
        )
        .unwrap();
        let t = &prof.regions[0].threads[0];
        assert_eq!(t.flops, 2.0 * 104857600.0);
        let levels = t.memory.bytes_per_level.as_ref().unwrap();
        assert_eq!(levels[0].level, "L1");
        assert_eq!(levels.last().unwrap().level, "MM");
    }

    #[test]
    fn validate_synthetic_is_exact() {
        let (code, _) = run_cli(&[
            "validate",
            "--recipe",
            "a64fx",
            "--synthetic",
            "--n",
            "1024",
            "--reps",
            "3",
        ]);
        assert_eq!(code, 0);
    }
}
