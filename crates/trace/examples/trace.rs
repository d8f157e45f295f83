//! Minimal driver for the tracer, for trying probes by hand before the CLI wires it:
//! `cargo run -p hpcscope-trace --example trace -- [--profile HZ] [--fn SYM] [--usdt P:N]
//! [--interval SECONDS] [--json] -- CMD ARGS`. As `hpcscope trace`, it keeps a rate series
//! of 1 s intervals unless `--interval 0`.

use hpcscope_core::Classify;
use hpcscope_trace::{Probes, Target, TraceOptions, install_signal_handlers, trace};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let (flags, cmd) = (&args[..split], args.get(split + 1..).unwrap_or(&[]));
    let mut probes = Probes {
        syscalls: true,
        sched: true,
        faults: true,
        files: true,
        ..Probes::default()
    };
    let mut it = flags.iter();
    let mut quiet = false;
    let mut json = false;
    let mut interval = Some(std::time::Duration::from_secs(1));
    while let Some(f) = it.next() {
        match f.as_str() {
            "--profile" => probes.profile_hz = it.next().and_then(|v| v.parse().ok()),
            "--fn" => probes
                .functions
                .extend(it.next().and_then(|v| v.parse().ok())),
            "--timeline" => probes.timeline = true,
            "--openmp" => probes.openmp = true,
            "--usdt" => probes.usdt.extend(it.next().and_then(|v| v.parse().ok())),
            "--interval" => {
                interval = it
                    .next()
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|v| *v > 0.0)
                    .map(std::time::Duration::from_secs_f64)
            }
            "--all" => {
                let hz = probes.profile_hz;
                probes = Probes {
                    profile_hz: hz,
                    ..Probes::all(99)
                };
                probes.profile_hz = hz;
            }
            "--probes" => {
                let list = it.next().cloned().unwrap_or_default();
                probes = Probes {
                    profile_hz: probes.profile_hz,
                    ..Probes::default()
                };
                for p in list.split(',') {
                    match p {
                        "syscalls" => probes.syscalls = true,
                        "sched" => probes.sched = true,
                        "faults" => probes.faults = true,
                        "block" => probes.block = true,
                        "files" => probes.files = true,
                        "" => {}
                        _ => eprintln!("unknown probe {p}"),
                    }
                }
            }
            "--quiet" => quiet = true,
            "--json" => json = true,
            other => eprintln!("ignored: {other}"),
        }
    }
    probes.kernel_stacks = true;
    probes.rate_interval = interval;
    install_signal_handlers();
    let opts = TraceOptions {
        target: Target::Command(cmd.to_vec()),
        probes,
        duration: None,
        quiet: false,
    };
    match trace(&opts) {
        Ok(out) if quiet => eprintln!("traced {:.3} s", out.report.duration_s),
        Ok(out) if json => println!("{}", serde_json::to_string_pretty(&out).unwrap()),
        Ok(out) => {
            for t in out.report.tables() {
                println!("== {}\n{}", t.title, t.headers.join("\t"));
                for r in t.rows {
                    println!("{}", r.join("\t"));
                }
            }
            println!("notes: {:?}", out.report.notes);
            if let Some(p) = out.profile {
                print!("{}", p.folded());
                for h in p.hot_functions(10) {
                    println!("{:6.2}% {:6.2}% {}", h.self_pct, h.total_pct, h.name);
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(i32::from(e.kind().exit_code()));
        }
    }
}
