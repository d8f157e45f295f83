//! `hpcscope project`: relative performance projection from a source to a target.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use hpcscope_core::project::{Check, Method, Options, PairRule, Projection, Side, check, project};
use hpcscope_core::roofline::{Ceilings, Scope};
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
    /// Validation: the GFLOP/s measured on the target; exit 1 if outside the interval.
    #[arg(long, conflicts_with = "measured_profile")]
    pub measured: Option<f64>,
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
    pub validation: Option<Check>,
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
    let tprof = a
        .target_profile
        .clone()
        .unwrap_or_else(|| a.source_profile.clone());
    let treg = a.target_region.clone().or_else(|| a.source_region.clone());
    let tgt = load_side(&a.target_machine, &tprof, treg.as_deref())?;
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
    let p = project(
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
    )?;
    let measured = match (&a.measured, &a.measured_profile) {
        (Some(m), _) => Some(positive(*m, "--measured")?),
        (None, Some(mp)) => {
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
    let validation = measured.map(|m| check(p.interval, m));
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
        let sc = Ceilings::of(&src.machine, src.precision, opts.scope)?;
        let tc = Ceilings::of(&tgt.machine, tgt.precision, opts.scope)?;
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
        "measured_gflops": result.validation.map(|v| v.measured_gflops),
    });
    let what = format!("{} -> {}", p.source_machine, p.target_machine);
    if let Some(line) = a.record.store("project", &what, &numbers)? {
        eprintln!("{line}");
    }
    Ok(match result.validation {
        Some(v) if !v.inside => ExitCode::from(1),
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
    if let Some(t) = p.target_time_s {
        v.push(format!(
            "projected time of the target region: [{}, {}] s",
            num(t.lo, 4),
            num(t.hi, 4)
        ));
    }
    if let Some(c) = &r.validation {
        v.push(if c.inside {
            format!(
                "measured {} GFLOP/s: inside the interval",
                num(c.measured_gflops, 4)
            )
        } else {
            format!(
                "measured {} GFLOP/s: OUTSIDE the interval; nearest bound off by {:+.1} % ({})",
                num(c.measured_gflops, 4),
                c.error * 100.0,
                if c.error > 0.0 {
                    "over-prediction"
                } else {
                    "under-prediction"
                }
            )
        });
    }
    v.extend(p.notes.iter().map(|n| format!("note: {n}")));
    v
}
