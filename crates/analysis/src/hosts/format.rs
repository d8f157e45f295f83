//! A host record on disk: its measurements (`measurements.json`, schema `host-record`), each
//! field checked when read, and the record's directory with its machine file.

use super::*;

/// One timed run: the numbers of the kernel's own result line.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Run {
    /// FLOPs of the kernel loop.
    pub flops: f64,
    /// Bytes the kernel loop moves by its own count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<f64>,
    /// Wall time of the kernel loop, seconds.
    pub time_s: f64,
    /// CPU time of the kernel loop, seconds (the one-thread workloads give it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s: Option<f64>,
}

/// One binary measured on a host.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Measurement {
    /// The build: `-march` of `gcc -O3` (`x86-64`, `x86-64-v3`).
    pub build: String,
    /// The workload (its source is `workloads/src/<workload>.c`).
    pub workload: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Threads (`OMP_NUM_THREADS`, with `OMP_PROC_BIND=true`).
    pub threads: u32,
    /// SHA-256 of the binary.
    pub sha256: String,
    /// Every timed run, in the order run (rounds interleaved over the binaries).
    pub runs: Vec<Run>,
    /// Which time the median is over: `cpu_s` (one thread) or `time_s` (OpenMP runs).
    pub timed_by: String,
    /// FLOPs of one run (the first run's).
    pub flops: f64,
    /// Median of the runs' `timed_by` times, seconds.
    pub median_s: f64,
    /// (slowest - fastest) / median of those times.
    pub spread: f64,
    /// `flops / median_s / 1e9`.
    pub gflops_median: f64,
}

impl Measurement {
    /// The rate of each run, GFLOP/s (its FLOPs over its `timed_by` time).
    pub fn rates(&self) -> Vec<f64> {
        self.runs
            .iter()
            .filter_map(|r| {
                let t = if self.timed_by == "cpu_s" {
                    r.cpu_s?
                } else {
                    r.time_s
                };
                (t > 0.0).then(|| r.flops / t / 1e9)
            })
            .collect()
    }

    /// The band of the median over the runs ([`Spread::from_rates`]).
    pub fn band(&self) -> Option<Spread> {
        Spread::from_rates(&self.rates())
    }

    /// The measured rate by `stat`, GFLOP/s: the median's, or the fastest run's (the
    /// median's when no run gives a rate).
    pub fn gflops(&self, stat: Statistic) -> f64 {
        match stat {
            Statistic::Median => self.gflops_median,
            Statistic::Best => self
                .rates()
                .into_iter()
                .reduce(f64::max)
                .unwrap_or(self.gflops_median),
        }
    }

    /// The band of the rate by `stat`: the median's ([`Measurement::band`]), or for the
    /// fastest run the gap to the second fastest, both ways (`low` = second / fastest,
    /// `high` its inverse), with `min` and `max` relative to the fastest.
    pub fn band_of(&self, stat: Statistic) -> Option<Spread> {
        match stat {
            Statistic::Median => self.band(),
            Statistic::Best => {
                let mut r: Vec<f64> = self
                    .rates()
                    .into_iter()
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .collect();
                if r.len() < 2 {
                    return None;
                }
                r.sort_by(|a, b| b.total_cmp(a));
                let gap = r[1] / r[0];
                Some(Spread {
                    runs: r.len(),
                    min: r[r.len() - 1] / r[0],
                    max: 1.0,
                    low: gap,
                    high: 1.0 / gap,
                })
            }
        }
    }
}

/// What a record says of its host.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct HostInfo {
    /// `model name` of /proc/cpuinfo.
    pub cpu_model: String,
    /// `cpu family`.
    #[serde(default)]
    pub family: Option<String>,
    /// `model`.
    #[serde(default)]
    pub model: Option<String>,
    /// `stepping`.
    #[serde(default)]
    pub stepping: Option<String>,
    /// Whether the CPU has AVX-512F.
    #[serde(default)]
    pub flags_avx512: Option<bool>,
    /// Kernel release.
    #[serde(default)]
    pub kernel: Option<String>,
    /// First line of `gcc --version`.
    #[serde(default)]
    pub compiler: Option<String>,
    /// When the runs ended (RFC 3339, UTC).
    #[serde(default)]
    pub measured_at: Option<String>,
    /// Load average (1, 5, 15 min) after the runs, as /proc/loadavg writes it.
    #[serde(default)]
    pub loadavg_after: Option<Vec<String>>,
    /// Timed runs per binary.
    #[serde(default)]
    pub runs_per_binary: Option<u32>,
    /// Output of `lscpu`.
    #[serde(default)]
    pub lscpu: Option<String>,
}

impl HostInfo {
    /// Whether `other` was recorded on a CPU of the same kind: the same `model name`,
    /// family and model (and, when both say, the same AVX-512 flag). Two records of one
    /// kind are not two machines: their pairs measure how much the records differ, not a
    /// projection.
    pub fn same_cpu(&self, other: &HostInfo) -> bool {
        let known = |x: &Option<String>| x.as_deref().is_some_and(|v| !v.is_empty());
        known(&self.family)
            && known(&self.model)
            && self.cpu_model == other.cpu_model
            && self.family == other.family
            && self.model == other.model
            && match (self.flags_avx512, other.flags_avx512) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

/// `measurements.json` of a host record.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MeasurementsFile {
    /// The host.
    pub host: HostInfo,
    /// Per key `<build>/<workload>@<threads>`.
    pub measurements: BTreeMap<String, Measurement>,
}

/// A host record, read.
#[derive(Debug, Clone)]
pub struct HostRecord {
    /// The directory's name (`amd-epyc-25-17`): what the pairs call the host.
    pub name: String,
    /// The directory.
    pub dir: PathBuf,
    /// `machine.toml`.
    pub machine: Machine,
    /// `measurements.json`.
    pub file: MeasurementsFile,
}

/// `<build>/<workload>@<threads>`.
pub fn key_of(build: &str, workload: &str, threads: u32) -> String {
    format!("{build}/{workload}@{threads}")
}

fn bad(path: &Path, field: &str, what: String, fix: &str) -> anyhow::Error {
    hpcscope_core::InputError::new(path.display().to_string(), field, what, fix).into()
}

/// Parses and checks `measurements.json` (`origin` names it in errors).
pub fn parse_measurements(text: &str, origin: &Path) -> Result<MeasurementsFile> {
    let f: MeasurementsFile = serde_json::from_str(text).map_err(|e| {
        bad(
            origin,
            "",
            format!("not a host record's measurements: {e}"),
            "give the measurements.json written by hpcscope hosts record (format: docs/hosts.md)",
        )
    })?;
    let fix = "record the host again (hpcscope hosts record DIR), or correct the entry";
    for (k, m) in &f.measurements {
        let field = |x: &str| format!("measurements.{k}.{x}");
        if *k != key_of(&m.build, &m.workload, m.threads) {
            return Err(bad(
                origin,
                &format!("measurements.{k}"),
                format!(
                    "the key does not match its entry ({})",
                    key_of(&m.build, &m.workload, m.threads)
                ),
                fix,
            ));
        }
        if m.threads == 0 {
            return Err(bad(origin, &field("threads"), "is 0".into(), fix));
        }
        if m.sha256.len() != 64 || !m.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad(
                origin,
                &field("sha256"),
                format!("'{}' is not a SHA-256 (64 hex digits)", m.sha256),
                fix,
            ));
        }
        if m.timed_by != "cpu_s" && m.timed_by != "time_s" {
            return Err(bad(
                origin,
                &field("timed_by"),
                format!("'{}' is neither cpu_s nor time_s", m.timed_by),
                fix,
            ));
        }
        for (x, v) in [
            ("flops", m.flops),
            ("median_s", m.median_s),
            ("gflops_median", m.gflops_median),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(bad(
                    origin,
                    &field(x),
                    format!("{v} is not a positive number"),
                    fix,
                ));
            }
        }
        if !(m.spread.is_finite() && m.spread >= 0.0) {
            return Err(bad(
                origin,
                &field("spread"),
                format!("{} is not a number >= 0", m.spread),
                fix,
            ));
        }
        if m.rates().len() != m.runs.len() || m.runs.is_empty() {
            return Err(bad(
                origin,
                &field("runs"),
                format!(
                    "{} of {} runs have a positive {} time",
                    m.rates().len(),
                    m.runs.len(),
                    m.timed_by
                ),
                fix,
            ));
        }
    }
    Ok(f)
}

/// Reads the host record in `dir`.
pub fn load_record(dir: &Path) -> Result<HostRecord> {
    if !dir.is_dir() {
        bail!(hpcscope_core::InputError::new(
            dir.display().to_string(),
            "",
            "is not a directory",
            "give a host record: a directory with machine.toml and measurements.json (hpcscope hosts record DIR writes one)"
        ));
    }
    let mp = dir.join("machine.toml");
    let machine = hpcscope_core::load::machine(&mp.display().to_string())
        .with_context(|| format!("host record {}", dir.display()))?;
    let jp = dir.join("measurements.json");
    let text = hpcscope_core::load::read(
        &jp,
        "a host record's measurements",
        "give a directory written by hpcscope hosts record (machine.toml and measurements.json)",
    )?;
    let file = parse_measurements(&text, &jp)?;
    let name = dir
        .canonicalize()
        .ok()
        .as_deref()
        .unwrap_or(dir)
        .file_name()
        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into());
    Ok(HostRecord {
        name,
        dir: dir.to_path_buf(),
        machine,
        file,
    })
}
