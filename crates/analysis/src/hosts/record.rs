//! `hosts record`: this host's record (the bundled workloads built, timed in interleaved
//! rounds, and the machine file), and the reading of a workload's result line.

use super::*;

/// `hosts record`: this host's record into a directory.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct RecordHost {
    /// The record's directory (created; refused when it already holds measurements.json).
    pub dir: PathBuf,
    /// Timed rounds: each round runs every binary once.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 11))]
    pub runs: u32,
    /// Take this machine file instead of measuring this host with `hpcscope bench
    /// --cpu-clock --statistic best`.
    #[cfg_attr(feature = "clap", arg(long, short, value_name = "FILE"))]
    pub machine: Option<String>,
    /// Only these workloads (comma-separated).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ','))]
    pub workloads: Vec<String>,
    /// Thread counts of the OpenMP workloads (comma-separated).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_delimiter = ',', default_value = "1,2")
    )]
    pub threads: Vec<u32>,
    /// Where the workloads are built.
    #[cfg_attr(feature = "clap", arg(long, default_value = "out/hosts/build"))]
    pub build_dir: PathBuf,
}

/// Records this host as `o` says: its files (`machine.toml` and `measurements.json` in
/// `o.dir`, which is created) with their text, to be written together, and what to print.
/// A directory that already holds a record is refused before anything runs, and so is a
/// machine file that cannot be read.
pub fn record_host(
    o: &RecordHost,
    progress: &dyn Fn(&str),
) -> Result<(Vec<(PathBuf, String)>, String)> {
    let mj = o.dir.join("measurements.json");
    if mj.exists() {
        anyhow::bail!(hpcscope_core::InputError::new(
            mj.display().to_string(),
            "",
            "already exists: a host record is not written over",
            "give a new directory, or remove the old record first"
        ));
    }
    // The machine first: a machine file that cannot be read is refused before the runs.
    let given = match &o.machine {
        Some(m) => Some(hpcscope_core::load::machine(m)?),
        None => None,
    };
    let file = record(
        &RecordOptions {
            build_dir: o.build_dir.clone(),
            runs: o.runs,
            workloads: o.workloads.clone(),
            threads: o.threads.clone(),
        },
        progress,
    )?;
    let machine = match given {
        Some(m) => m,
        None => {
            progress("measuring this host: hpcscope bench --cpu-clock --statistic best");
            bench_machine()?
        }
    };
    std::fs::create_dir_all(&o.dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", o.dir.display()))?;
    let json = serde_json::to_string_pretty(&file)? + "\n";
    let mt = o.dir.join("machine.toml");
    let text = record_text(&file, &mt, &mj);
    Ok((vec![(mt, machine.to_toml_string()), (mj, json)], text))
}

/// Options of [`record`].
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Where the binaries are built.
    pub build_dir: PathBuf,
    /// Timed rounds (each round runs every binary once).
    pub runs: u32,
    /// Only these workloads (all of [`RECORD_ARGS`] when empty).
    pub workloads: Vec<String>,
    /// Thread counts of the OpenMP workloads.
    pub threads: Vec<u32>,
}

/// The `key=value` numbers of the last line of a workload's output.
pub fn parse_result_line(stdout: &str) -> Option<Run> {
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty())?;
    let kv: BTreeMap<&str, f64> = last
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter_map(|(k, v)| v.parse::<f64>().ok().map(|v| (k, v)))
        .collect();
    let run = Run {
        flops: *kv.get("flops")?,
        bytes: kv.get("bytes").copied(),
        time_s: *kv.get("time_s")?,
        cpu_s: kv.get("cpu_s").copied(),
    };
    (run.flops.is_finite() && run.flops > 0.0 && run.time_s.is_finite() && run.time_s > 0.0)
        .then_some(run)
}

/// Median, spread and rate of `m`'s runs, as `measure.py` computes them: the median over
/// `cpu_s` for one thread (when every run gives it), `time_s` otherwise; spread (max - min)
/// / median.
pub fn finish(m: &mut Measurement) {
    let cpu = m.threads == 1 && m.runs.iter().all(|r| r.cpu_s.is_some());
    m.timed_by = if cpu { "cpu_s" } else { "time_s" }.into();
    let ts: Vec<f64> = m
        .runs
        .iter()
        .map(|r| {
            if cpu {
                r.cpu_s.unwrap_or(0.0)
            } else {
                r.time_s
            }
        })
        .collect();
    m.flops = m.runs.first().map_or(0.0, |r| r.flops);
    m.median_s = median(ts.clone());
    let (lo, hi) = ts
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &t| (a.min(t), b.max(t)));
    m.spread = if m.median_s > 0.0 {
        (hi - lo) / m.median_s
    } else {
        0.0
    };
    m.gflops_median = if m.median_s > 0.0 {
        m.flops / m.median_s / 1e9
    } else {
        0.0
    };
}

fn one_run(exe: &Path, args: &[String], threads: u32) -> Result<Run> {
    let o = Command::new(exe)
        .args(args)
        .env("OMP_NUM_THREADS", threads.to_string())
        .env("OMP_PROC_BIND", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    if !o.status.success() {
        bail!(
            "{} {} failed ({}):\n{}",
            exe.display(),
            args.join(" "),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let out = String::from_utf8_lossy(&o.stdout);
    parse_result_line(&out).with_context(|| {
        format!(
            "{}: its last line has no flops= and time_s= ({})\n  fix: the record runs the bundled workloads, whose last line gives them",
            exe.display(),
            out.trim()
        )
    })
}

fn cpuinfo_text(key: &str) -> Option<String> {
    let c = hpcscope_host::facts::cpuinfo();
    hpcscope_host::facts::cpuinfo_field(&c, key).map(str::to_string)
}

fn output_of(cmd: &str, args: &[&str]) -> Option<String> {
    let o = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// This host, as a record describes it (the runs' end time and load average are the
/// caller's to set after them).
pub fn this_host(runs: u32) -> HostInfo {
    let flags = cpuinfo_text("flags").unwrap_or_default();
    HostInfo {
        cpu_model: hpcscope_host::facts::cpu_model(),
        family: cpuinfo_text("cpu family"),
        model: cpuinfo_text("model"),
        stepping: cpuinfo_text("stepping"),
        flags_avx512: Some(flags.split_whitespace().any(|f| f == "avx512f")),
        kernel: hpcscope_host::facts::kernel_release(),
        compiler: output_of("gcc", &["--version"])
            .and_then(|s| s.lines().next().map(str::to_string)),
        measured_at: None,
        loadavg_after: None,
        runs_per_binary: Some(runs),
        lscpu: hpcscope_host::tools::on_path("lscpu").and_then(|_| output_of("lscpu", &[])),
    }
}

/// Builds the bundled workloads of the record ([`BUILDS`] x [`RECORD_ARGS`]), runs each
/// `o.runs` times in interleaved rounds (the OpenMP ones at each of `o.threads`) and returns
/// the measurements of this host.
pub fn record(o: &RecordOptions, progress: &dyn Fn(&str)) -> Result<MeasurementsFile> {
    if o.runs < 3 {
        bail!(hpcscope_core::InputError::new(
            "--runs",
            "",
            format!("{} rounds are too few for a median and a spread", o.runs),
            "give 3 or more (default 11)"
        ));
    }
    let known: Vec<&str> = RECORD_ARGS.iter().map(|(n, _)| *n).collect();
    check_workloads(&o.workloads, &known)?;
    let mut todo: Vec<(String, PathBuf, Vec<String>, u32)> = Vec::new();
    let mut entries: BTreeMap<String, Measurement> = BTreeMap::new();
    for build in BUILDS {
        for (name, args) in RECORD_ARGS {
            if !o.workloads.is_empty() && !o.workloads.iter().any(|w| w == name) {
                continue;
            }
            progress(&format!("build {build}/{name}"));
            let exe = crate::workloads::build_one(&o.build_dir, name, build)?;
            let sha = hpcscope_host::hash::sha256_file(&exe)
                .with_context(|| format!("cannot read {}", exe.display()))?;
            let threads: Vec<u32> = if name.ends_with("_omp") {
                o.threads.clone()
            } else {
                vec![1]
            };
            for t in threads {
                let key = key_of(build, name, t);
                let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
                entries.insert(
                    key.clone(),
                    Measurement {
                        build: build.to_string(),
                        workload: name.to_string(),
                        args: args.clone(),
                        threads: t,
                        sha256: sha.clone(),
                        runs: Vec::new(),
                        timed_by: String::new(),
                        flops: 0.0,
                        median_s: 0.0,
                        spread: 0.0,
                        gflops_median: 0.0,
                    },
                );
                todo.push((key, exe.clone(), args, t));
            }
        }
    }
    for round in 0..o.runs {
        progress(&format!(
            "round {}/{} over {} binaries",
            round + 1,
            o.runs,
            todo.len()
        ));
        for (key, exe, args, t) in &todo {
            let run = one_run(exe, args, *t)?;
            if let Some(m) = entries.get_mut(key) {
                m.runs.push(run);
            }
        }
    }
    for m in entries.values_mut() {
        finish(m);
    }
    let mut host = this_host(o.runs);
    host.measured_at = Some(hpcscope_host::time::utc_now());
    host.loadavg_after = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).map(str::to_string).collect());
    Ok(MeasurementsFile {
        host,
        measurements: entries,
    })
}

/// This host's machine file as a record takes it: `hpcscope bench --cpu-clock --statistic
/// best` (double and single precision).
pub fn bench_machine() -> Result<Machine> {
    let cfg = hpcscope_bench::BenchConfig {
        precisions: vec![hpcscope_core::Precision::F64, hpcscope_core::Precision::F32],
        progress: true,
        statistic: hpcscope_bench::stats::Statistic::Best,
        cpu_clock: true,
        ..Default::default()
    };
    Ok(hpcscope_bench::run(&cfg)
        .context("measuring this host (hpcscope bench --cpu-clock --statistic best)")?
        .machine)
}
