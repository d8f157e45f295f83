//! `project`: the relative performance projection of a profiled binary from a source machine
//! to a target, with its validation against a measurement on the target.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use hpcscope_core::machine::PeakChoice;
use hpcscope_core::project::{Inputs, Options, ProjectResult, Side, Spread, project_with};
use hpcscope_core::roofline::AccessWidths;
use hpcscope_core::{AppMetrics, InputError, Machine, load};

use crate::analyze::{cross_compilers, isa_matches};

/// What to project, and how.
#[derive(Debug, Clone)]
pub struct ProjectOptions {
    /// Source machine: built-in id or file.
    pub source_machine: String,
    /// Profile of the source binary measured on the source machine.
    pub source_profile: PathBuf,
    /// Region of the source profile.
    pub source_region: Option<String>,
    /// Measured source GFLOP/s, overriding the profile's FLOPs / time.
    pub source_gflops: Option<f64>,
    /// Target machine: built-in id or file.
    pub target_machine: String,
    /// The peak of both machines.
    pub peak: PeakChoice,
    /// Profile of the target binary (default: the source profile).
    pub target_profile: Option<PathBuf>,
    /// Region of the target profile (default: the source region's name, or the only one).
    pub target_region: Option<String>,
    /// Pair rule, method and scope.
    pub options: Options,
    /// Node scope: the source ran alone on the source machine (one thread).
    pub source_alone: bool,
    /// Leave out the pairs whose roofline the measured source exceeds.
    pub drop_contradicted: bool,
    /// Keep the carried-time points.
    pub carried_time: bool,
    /// Use the calibration (point estimate and calibrated margin).
    pub calibrate: bool,
    /// Bandwidths and peaks at each binary's vector width (else each level's own).
    pub binary_width: bool,
    /// Times of the source's timed runs, seconds.
    pub source_times: Vec<f64>,
    /// The calibration file (default: the bundled one).
    pub calibration: Option<PathBuf>,
    /// Validation: the GFLOP/s measured on the target, one per run.
    pub measured: Vec<f64>,
    /// Validation: a profile measured on the target.
    pub measured_profile: Option<PathBuf>,
    /// Also draw source and target rooflines with the projected interval (SVG).
    pub svg: bool,
}

/// A projection with its validation, and its chart when asked for.
pub struct Projected {
    /// What `project` prints.
    pub result: ProjectResult,
    /// The projection chart.
    pub svg: Option<String>,
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
pub fn load_side(machine: &str, profile: &Path, region: Option<&str>) -> Result<Loaded> {
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

/// Projects as `o` says: loads both sides, projects, and validates against the measurement.
pub fn project(o: &ProjectOptions) -> Result<Projected> {
    let mut src = load_side(
        &o.source_machine,
        &o.source_profile,
        o.source_region.as_deref(),
    )?;
    if o.source_alone {
        src.machine = hpcscope_core::node::cores_alone(&src.machine);
    }
    src.machine = src.machine.with_peak(o.peak)?;
    let tprof = o
        .target_profile
        .clone()
        .unwrap_or_else(|| o.source_profile.clone());
    let treg = o.target_region.clone().or_else(|| o.source_region.clone());
    let mut tgt = load_side(&o.target_machine, &tprof, treg.as_deref())?;
    tgt.machine = tgt.machine.with_peak(o.peak)?;
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
    let source_gflops = match (o.source_gflops, src.gflops) {
        (Some(g), _) => positive(g, "--source-gflops")?,
        (None, Some(g)) => g,
        (None, None) => bail!(InputError::new(
            src.origin.clone(),
            "time_s",
            "the source profile has no time, so its performance is unknown",
            "measure the source binary natively (hpcscope mix records the time of a native run), or pass --source-gflops"
        )),
    };
    let source_spread = if o.source_times.is_empty() {
        None
    } else {
        for t in &o.source_times {
            if !(t.is_finite() && *t > 0.0) {
                bail!(InputError::new(
                    "--source-times",
                    "",
                    format!("{t} is not a positive number of seconds"),
                    "give the times of the source's runs: --source-times 1.02,0.98,1.01"
                ));
            }
        }
        let Some(sp) = Spread::from_times(&o.source_times) else {
            bail!(InputError::new(
                "--source-times",
                "",
                "one time has no spread",
                "give the times of at least two runs"
            ));
        };
        Some(sp)
    };
    let model = load::calibration(o.calibration.as_deref())?;
    let width = |l: &Loaded| {
        o.binary_width.then(|| {
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
        o.options,
        &Inputs {
            source_widths: width(&src),
            target_widths: width(&tgt),
            source_spread,
            calibration: o.calibrate.then_some(&model),
            drop_contradicted: o.drop_contradicted,
            carried_time: o.carried_time,
            instructions: src.instructions.zip(tgt.instructions),
            target_precision: None,
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
    let measured_runs: Vec<f64> = o
        .measured
        .iter()
        .map(|m| positive(*m, "--measured"))
        .collect::<Result<_>>()?;
    let measured = match (&measured_runs[..], &o.measured_profile) {
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
    let svg = if o.svg {
        let (sc, tc) = result.projection.ceilings(&src.machine, &tgt.machine)?;
        let title = format!("{} -> {}", src.machine.name, tgt.machine.name);
        Some(hpcscope_core::view::projection_svg(
            &result.projection,
            &sc,
            &tc,
            &title,
        ))
    } else {
        None
    };
    Ok(Projected { result, svg })
}
