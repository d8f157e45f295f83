//! `hpcscope project`: relative performance projection from a source to a target.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use hpcscope_analysis::analyze::{cross_compilers, isa_matches};
use hpcscope_core::point::Calibration;
use hpcscope_core::project::{
    Inputs, Method, Options, PairRule, Projection, Side, Spread, Validation, project_with,
};
use hpcscope_core::roofline::{AccessWidths, Scope};
use hpcscope_core::{AppMetrics, InputError, Machine};
use serde::Serialize;

use crate::output::{Table, emit_with, num, render};
use hpcscope_core::load;

/// Pair rule choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum PairRuleArg {
    /// Each OI against its own level's roofline and every slower level's (thesis default).
    #[default]
    UpperTriangular,
    /// Each OI against its own level's roofline only.
    Diagonal,
    /// Every OI against every roofline.
    All,
}

/// Method choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum MethodArg {
    /// Gavoille: peak weighted by each binary's instruction mix, every level.
    #[default]
    Weighted,
    /// Kwack et al.: raw peak, main memory only.
    Kwack,
}

/// Scope choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ScopeArg {
    /// Single core (thesis chapter 6).
    #[default]
    Core,
    /// Whole node, per thread then summed (thesis chapter 7).
    Node,
}

/// Arguments of `project`.
#[derive(Args, Debug)]
pub struct ProjectArgs {
    /// Source machine: built-in id or TOML file.
    #[arg(long)]
    pub source_machine: String,
    /// Profile of the source binary measured on the source machine (with its time).
    #[arg(long)]
    pub source_profile: PathBuf,
    /// Region of the source profile.
    #[arg(long)]
    pub source_region: Option<String>,
    /// Measured source GFLOP/s, overriding the profile's FLOPs / time.
    #[arg(long)]
    pub source_gflops: Option<f64>,
    /// Target machine: built-in id or TOML file.
    #[arg(long)]
    pub target_machine: String,
    /// The peak of both machines: the listed `[[peaks]]` values, or the DGEMM's
    /// (`[peaks.dgemm]`, what `bench --kernels dgemm` measures; the seeds use HPL).
    #[arg(long, value_enum, default_value_t)]
    pub peak: crate::args::PeakArg,
    /// Profile of the target binary, analysed for the target's caches (default: the source
    /// profile, i.e. the same binary and hit ratios).
    #[arg(long)]
    pub target_profile: Option<PathBuf>,
    /// Region of the target profile (default: the source region's name, or the only one).
    #[arg(long)]
    pub target_region: Option<String>,
    /// Which (OI, roofline) pairs give points.
    #[arg(long, value_enum, default_value_t)]
    pub pair_rule: PairRuleArg,
    /// Weighted peaks (Gavoille) or the Kwack baseline.
    #[arg(long, value_enum, default_value_t)]
    pub method: MethodArg,
    /// Single core or whole node.
    #[arg(long, value_enum, default_value_t)]
    pub scope: ScopeArg,
    /// Node scope: the source ran alone on the source machine (one thread), so its per-core
    /// share is the single-core values (e.g. projecting 1 thread to N on the same machine).
    #[arg(long)]
    pub source_alone: bool,
    /// Leave out of the interval the pairs whose roofline the measured source exceeds
    /// (efficiency above 1); the seeds keep them, and so does the default.
    #[arg(long)]
    pub drop_contradicted: bool,
    /// Leave out the carried-time points (the projection if the source's time a roofline
    /// does not explain carries over, rather than its efficiency).
    #[arg(long)]
    pub no_carried_time: bool,
    /// No calibration: no point estimate and no calibrated margin (the model's interval,
    /// widened by the source's noise only).
    #[arg(long, conflicts_with = "calibration")]
    pub no_calibration: bool,
    /// Bandwidths and peaks at each binary's vector width, or each level's own (the seeds').
    #[arg(long, value_enum, default_value_t)]
    pub bandwidths: crate::args::BandwidthsArg,
    /// Times of the source's timed runs, seconds (comma-separated): their spread widens the
    /// interval (only their spread is used; the rate comes from the profile).
    #[arg(long, value_delimiter = ',', value_name = "S,S,...")]
    pub source_times: Vec<f64>,
    /// The calibration (point-estimate rule and interval margin: a file `validate
    /// --calibrate` wrote); default: the bundled one.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Validation: the GFLOP/s measured on the target, one per run (comma-separated); the
    /// median is compared, their spread is the target's own; exit 1 if outside.
    #[arg(
        long,
        conflicts_with = "measured_profile",
        value_delimiter = ',',
        value_name = "G,G,..."
    )]
    pub measured: Vec<f64>,
    /// Validation: a profile measured on the target (FLOPs and time); exit 1 if outside.
    #[arg(long)]
    pub measured_profile: Option<PathBuf>,
    /// Format and destination of the result.
    #[command(flatten)]
    pub out: crate::args::OutputArgs,
    /// Also draw source and target rooflines with the projected interval to this SVG file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Keep the projected interval in the run history.
    #[command(flatten)]
    pub record: crate::args::RecordFlags,
}

/// A projection with its validation.
#[derive(Debug, Serialize)]
pub struct ProjectResult {
    /// The projection.
    #[serde(flatten)]
    pub projection: Projection,
    /// The validation, when a measurement was given.
    pub validation: Option<Validation>,
}

/// A loaded side: machine, metrics per thread, origin and measured GFLOP/s.
pub struct Loaded {
    /// The machine.
    pub machine: Machine,
    /// Per-thread metrics.
    pub threads: Vec<AppMetrics>,
    /// Origin for messages.
    pub origin: String,
    /// GFLOP/s from FLOPs / time, when the profile has a time.
    pub gflops: Option<f64>,
    /// Precision.
    pub precision: hpcscope_core::Precision,
    /// Vector width the binary was analysed at, bits.
    pub vector_bits: u32,
    /// ISA of the binary.
    pub isa: String,
    /// All instructions of the region's threads, when counted.
    pub instructions: Option<f64>,
    /// The region's split of bytes and FP instructions by width, when the profile has one.
    pub access_widths: Option<AccessWidths>,
}

/// Loads a machine and a region of a profile.
pub fn load_side(machine: &str, profile: &std::path::Path, region: Option<&str>) -> Result<Loaded> {
    let m = load::machine(machine)?;
    let p = load::profile(profile)?;
    let origin = profile.display().to_string();
    let r = p.region(region, &origin)?;
    let threads = r.thread_metrics(&origin)?;
    let agg = r.aggregate(&origin)?;
    Ok(Loaded {
        machine: m,
        threads,
        origin,
        gflops: agg.gflops(),
        precision: p.precision,
        vector_bits: p.vector_bits,
        isa: p.isa.clone(),
        instructions: r.instructions(),
        access_widths: r.access_widths.clone(),
    })
}

fn positive(v: f64, flag: &str) -> Result<f64> {
    match hpcscope_core::range::check(&hpcscope_core::range::MEASURED_GFLOPS, flag, "", v) {
        None => Ok(v),
        Some(e) => Err(e.into()),
    }
}

/// Runs `project`.
pub fn run(a: &ProjectArgs) -> Result<ExitCode> {
    let mut src = load_side(
        &a.source_machine,
        &a.source_profile,
        a.source_region.as_deref(),
    )?;
    if a.source_alone {
        src.machine = hpcscope_core::node::cores_alone(&src.machine);
    }
    src.machine = src.machine.with_peak(a.peak.choice())?;
    let tprof = a
        .target_profile
        .clone()
        .unwrap_or_else(|| a.source_profile.clone());
    let treg = a.target_region.clone().or_else(|| a.source_region.clone());
    let mut tgt = load_side(&a.target_machine, &tprof, treg.as_deref())?;
    tgt.machine = tgt.machine.with_peak(a.peak.choice())?;
    if src.precision != tgt.precision {
        bail!(InputError::new(
            tgt.origin.clone(),
            "precision",
            format!(
                "is {} while the source profile is {}",
                tgt.precision, src.precision
            ),
            "project binaries of the same precision"
        ));
    }
    let source_gflops = match (a.source_gflops, src.gflops) {
        (Some(g), _) => positive(g, "--source-gflops")?,
        (None, Some(g)) => g,
        (None, None) => bail!(InputError::new(
            src.origin.clone(),
            "time_s",
            "the source profile has no time, so its performance is unknown",
            "measure the source binary natively (hpcscope mix records the time of a native run), or pass --source-gflops"
        )),
    };
    let opts = Options {
        pair_rule: match a.pair_rule {
            PairRuleArg::UpperTriangular => PairRule::UpperTriangular,
            PairRuleArg::Diagonal => PairRule::Diagonal,
            PairRuleArg::All => PairRule::All,
        },
        method: match a.method {
            MethodArg::Weighted => Method::Weighted,
            MethodArg::Kwack => Method::Kwack,
        },
        scope: match a.scope {
            ScopeArg::Core => Scope::Core,
            ScopeArg::Node => Scope::Node,
        },
    };
    let source_spread = if a.source_times.is_empty() {
        None
    } else {
        for t in &a.source_times {
            if !(t.is_finite() && *t > 0.0) {
                bail!(InputError::new(
                    "--source-times",
                    "",
                    format!("{t} is not a positive number of seconds"),
                    "give the times of the source's runs: --source-times 1.02,0.98,1.01"
                ));
            }
        }
        let Some(sp) = Spread::from_times(&a.source_times) else {
            bail!(InputError::new(
                "--source-times",
                "",
                "one time has no spread",
                "give the times of at least two runs"
            ));
        };
        Some(sp)
    };
    let model = match &a.calibration {
        Some(p) => {
            let text = load::read(
                p,
                "calibration",
                "give a file written by hpcscope validate --calibrate",
            )?;
            Calibration::from_toml_str(&text, &p.display().to_string())?
        }
        None => Calibration::bundled(),
    };
    let width = |l: &Loaded| {
        (a.bandwidths == crate::args::BandwidthsArg::BinaryWidth).then(|| {
            l.access_widths.clone().unwrap_or_else(|| {
                AccessWidths::single(
                    l.vector_bits,
                    "the profile's vector width (the widest of its FP instructions)",
                )
            })
        })
    };
    let mut p = project_with(
        Side {
            machine: &src.machine,
            threads: &src.threads,
            origin: &src.origin,
        },
        source_gflops,
        Side {
            machine: &tgt.machine,
            threads: &tgt.threads,
            origin: &tgt.origin,
        },
        src.precision,
        opts,
        &Inputs {
            source_widths: width(&src),
            target_widths: width(&tgt),
            source_spread,
            calibration: (!a.no_calibration).then_some(&model),
            drop_contradicted: a.drop_contradicted,
            carried_time: !a.no_carried_time,
            instructions: src.instructions.zip(tgt.instructions),
        },
    )?;
    if !isa_matches(&tgt.isa, &tgt.machine.isa) {
        p.notes.push(format!(
            "the target profile is of an {} binary while {} is {}: its instruction mix and bytes stand for the {} build (an assumption). To do better, build for {} with {} and characterize that build (hpcscope mix --machine {}) for --target-profile",
            tgt.isa,
            tgt.machine.id,
            tgt.machine.isa,
            tgt.machine.isa,
            tgt.machine.isa,
            cross_compilers(&tgt.machine.isa, &tgt.machine.simd, tgt.machine.vector_bits),
            tgt.machine.id
        ));
    }
    let measured_runs: Vec<f64> = a
        .measured
        .iter()
        .map(|m| positive(*m, "--measured"))
        .collect::<Result<_>>()?;
    let measured = match (&measured_runs[..], &a.measured_profile) {
        ([_, ..], _) => hpcscope_core::stats::median(&measured_runs),
        ([], Some(mp)) => {
            let prof = load::profile(mp)?;
            let o = mp.display().to_string();
            let agg = prof.region(treg.as_deref(), &o)?.aggregate(&o)?;
            Some(agg.gflops().ok_or_else(|| {
                InputError::new(
                    o.clone(),
                    "time_s",
                    "the measured profile has no time",
                    "give a profile of a native run on the target",
                )
            })?)
        }
        _ => None,
    };
    let validation = measured.map(|m| p.validate(m, Spread::from_rates(&measured_runs)));
    let result = ProjectResult {
        projection: p,
        validation,
    };
    let text = render(
        a.out.format,
        &result,
        &preamble(&result),
        &points_table(&result.projection),
        &epilogue(&result),
    )?;
    let mut svg = None;
    if let Some(p) = &a.svg {
        let (sc, tc) = result.projection.ceilings(&src.machine, &tgt.machine)?;
        let title = format!("{} -> {}", src.machine.name, tgt.machine.name);
        svg = Some((
            p.as_path(),
            hpcscope_report::projection_svg(&result.projection, &sc, &tc, &title),
        ));
    }
    let files: Vec<(&std::path::Path, &str)> = svg.iter().map(|(p, s)| (*p, s.as_str())).collect();
    emit_with(&text, a.out.output.as_deref(), &files)?;
    let p = &result.projection;
    let numbers = serde_json::json!({
        "source_gflops": p.source_gflops,
        "projected_lo_gflops": p.interval.lo,
        "projected_hi_gflops": p.interval.hi,
        "measured_gflops": result.validation.map(|v| v.check.measured_gflops),
        "point_gflops": p.point.as_ref().map(|e| e.gflops),
    });
    let what = format!("{} -> {}", p.source_machine, p.target_machine);
    if let Some(line) = a.record.store("project", &what, &numbers)? {
        eprintln!("{line}");
    }
    Ok(match result.validation {
        Some(v) if !v.inside_within_noise => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}

fn preamble(r: &ProjectResult) -> Vec<String> {
    let p = &r.projection;
    let mut v = vec![
        format!(
            "{} -> {} ({} scope, {} pairs, {} peak)",
            p.source_machine,
            p.target_machine,
            match p.options.scope {
                Scope::Core => "single-core",
                Scope::Node => "node",
            },
            match p.options.pair_rule {
                PairRule::UpperTriangular => "upper-triangular",
                PairRule::Diagonal => "diagonal",
                PairRule::All => "all",
            },
            match p.options.method {
                Method::Weighted => "mix-weighted",
                Method::Kwack => "raw (Kwack)",
            }
        ),
        format!(
            "source: {} GFLOP/s measured; compute ceiling {} GFLOP/s (peak {}, FLOPs/FP instr {})",
            num(p.source_gflops, 4),
            num(p.source_ceiling_gflops, 4),
            num(p.source_peak_gflops, 4),
            p.source_flops_per_instruction
                .map(|x| num(x, 4))
                .unwrap_or_else(|| "-".into())
        ),
        format!(
            "target: compute ceiling {} GFLOP/s (peak {}, FLOPs/FP instr {})",
            num(p.target_ceiling_gflops, 4),
            num(p.target_peak_gflops, 4),
            p.target_flops_per_instruction
                .map(|x| num(x, 4))
                .unwrap_or_else(|| "-".into())
        ),
    ];
    if !p.threads.is_empty() {
        let scaling =
            p.threads.len() > 1 && p.threads.iter().all(|t| t.source_gflops == p.source_gflops);
        v.push(format!(
            "{} threads; per-thread intervals summed (eq. 7.5){}",
            p.threads.len(),
            if scaling {
                "; one source thread: each target thread keeps its efficiency per level"
            } else {
                ""
            }
        ));
    }
    v
}

fn points_table(p: &Projection) -> Table {
    let mut t = Table::new(&[
        "thread",
        "OI level",
        "roofline",
        "OI src",
        "OI tgt",
        "roof src GF/s",
        "roof tgt GF/s",
        "bound src",
        "bound tgt",
        "efficiency",
        "projected GF/s",
    ]);
    let mut add = |th: String, pt: &hpcscope_core::project::Point| {
        t.row(vec![
            th,
            pt.oi_level.clone(),
            pt.roof_level.clone(),
            num(pt.oi_source, 4),
            num(pt.oi_target, 4),
            num(pt.roof_source_gflops, 4),
            num(pt.roof_target_gflops, 4),
            pt.bound_source.to_string(),
            pt.bound_target.to_string(),
            num(pt.efficiency, 4),
            num(pt.gflops, 6),
        ]);
    };
    for pt in &p.points {
        add("-".into(), pt);
    }
    for th in &p.threads {
        for pt in &th.points {
            add(th.thread.to_string(), pt);
        }
    }
    t
}

fn epilogue(r: &ProjectResult) -> Vec<String> {
    let p = &r.projection;
    let mut v = vec![format!(
        "projected interval: [{}, {}] GFLOP/s (x{} to x{} the source)",
        num(p.interval.lo, 6),
        num(p.interval.hi, 6),
        num(p.interval.lo / p.source_gflops, 3),
        num(p.interval.hi / p.source_gflops, 3)
    )];
    match &p.widening {
        Some(w) => {
            v.push(format!(
                "width x{}: the model's interval [{}, {}] (x{}, {:.0} % of the width), widened by the calibrated margin of {:.1} % on each side ({:.0} %)",
                num(w.total_width, 4),
                num(w.model_interval.lo, 6),
                num(w.model_interval.hi, 6),
                num(w.model_width, 4),
                w.model_share * 100.0,
                w.margin * 100.0,
                w.margin_share * 100.0,
            ));
            v.push(match w.source {
                Some(s) => format!(
                    "and by the uncertainty of the source's median over {} runs ({:+.1} % / {:+.1} %): {:.0} % of the width is noise",
                    s.runs,
                    (s.low - 1.0) * 100.0,
                    (s.high - 1.0) * 100.0,
                    w.noise_share * 100.0
                ),
                None => "the source's run-to-run spread is unknown (give --source-times to include it)".into(),
            });
        }
        None => v.push(
            "the whole width is the model's: no calibration margin, and the source's run-to-run spread is unknown (give --source-times to include it)"
                .into(),
        ),
    }
    if let Some(e) = &p.point {
        v.push(format!(
            "point estimate: {} GFLOP/s (x{}), {}; rule: {}",
            num(e.gflops, 6),
            num(e.speedup, 3),
            e.error_words(),
            e.rule
        ));
    }
    if let Some(k) = p.kwack_gflops {
        v.push(format!(
            "Kwack baseline (raw peak, main memory only): {} GFLOP/s",
            num(k, 6)
        ));
    }
    for (side, w) in [
        ("source", &p.bandwidths.source),
        ("target", &p.bandwidths.target),
    ] {
        if let Some(w) = w {
            v.push(format!(
                "{side} ceilings at the binary's widths ({}; {})",
                w.describe(),
                w.from
            ));
        }
    }
    if let Some(t) = p.target_time_s {
        v.push(format!(
            "projected time of the target region: [{}, {}] s",
            num(t.lo, 4),
            num(t.hi, 4)
        ));
    }
    if let Some(val) = &r.validation {
        let c = &val.check;
        let spread = val
            .spread
            .map(|s| {
                format!(
                    " (the uncertainty of the median of its {} runs {:+.1} % / {:+.1} %)",
                    s.runs,
                    (s.low - 1.0) * 100.0,
                    (s.high - 1.0) * 100.0
                )
            })
            .unwrap_or_default();
        v.push(if val.inside_within_noise {
            format!(
                "measured {} GFLOP/s{spread}: inside the interval{}",
                num(c.measured_gflops, 4),
                if c.inside {
                    ""
                } else {
                    " within the measurement's own spread"
                }
            )
        } else {
            format!(
                "measured {} GFLOP/s{spread}: OUTSIDE the interval; off by {:+.1} % beyond the spreads ({})",
                num(c.measured_gflops, 4),
                val.error_within_noise * 100.0,
                if val.error_within_noise > 0.0 {
                    "over-prediction"
                } else {
                    "under-prediction"
                }
            )
        });
        if let Some(e) = val.point_error {
            v.push(format!("point estimate off by {:+.1} %", e * 100.0));
        }
        if let Some(e) = val.kwack_error {
            v.push(format!("Kwack baseline off by {:+.1} %", e * 100.0));
        }
    }
    v.extend(p.notes.iter().map(|n| format!("note: {n}")));
    v
}
