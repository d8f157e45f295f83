//! `hpcscope explore SCENARIO.toml`: sweep a design space and compare the intervals.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use hpcscope_core::explore::{DesignPoint, Resolved, Scenario, apply, sweep};
use hpcscope_core::project::Options;
use hpcscope_core::{InputError, Machine};
use serde::Serialize;

use crate::load;
use crate::output::{Format, Table, emit, num, render, write_atomic};

/// Arguments of `explore`.
#[derive(Args, Debug)]
pub struct ExploreArgs {
    /// Scenario TOML file (see docs/scenario-format.md and examples/scenarios/).
    pub scenario: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Write the result to this file instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Also draw the intervals across the sweep to this SVG file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Keep every design point's interval in the run history.
    #[command(flatten)]
    pub record: crate::recording::RecordFlags,
}

/// The result of an exploration.
#[derive(Debug, Serialize)]
pub struct ExploreResult {
    /// Scenario title.
    pub scenario: String,
    /// Scenario description.
    pub description: String,
    /// Source machine id.
    pub source_machine: String,
    /// Source GFLOP/s.
    pub source_gflops: f64,
    /// One design point per (variant, target).
    pub points: Vec<DesignPoint>,
}

/// Loads a scenario and every file it names.
pub fn resolve(path: &Path) -> Result<(Scenario, Resolved)> {
    let text = load::read(
        path,
        "scenario",
        "give a scenario TOML file (see examples/scenarios/)",
    )?;
    let origin = path.display().to_string();
    let s = Scenario::from_toml_str(&text, &origin)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let sm = load::machine_rel(&s.source.machine, base)?;
    let sp_path = load::rel(base, &s.source.profile);
    let sp = load::profile(&sp_path)?;
    let so = sp_path.display().to_string();
    let sr = sp.region(s.source.region.as_deref(), &so)?;
    let source_threads = sr.thread_metrics(&so)?;
    let source_gflops = match s.source.gflops {
        Some(g) if g.is_finite() && g > 0.0 => g,
        Some(g) => {
            return Err(InputError::new(
                &origin,
                "source.gflops",
                format!("must be positive, found {g}"),
                "give the measured source performance in GFLOP/s",
            )
            .into());
        }
        None => sr.aggregate(&so)?.gflops().ok_or_else(|| {
            InputError::new(
                &origin,
                "source.gflops",
                "is missing and the source profile has no time",
                "add gflops = <measured GFLOP/s> to [source], or use a profile of a native run",
            )
        })?,
    };
    if sp.precision != s.precision {
        return Err(InputError::new(
            &origin,
            "precision",
            format!(
                "is {} but the source profile is {}",
                s.precision, sp.precision
            ),
            "set precision to the profiles' precision",
        )
        .into());
    }
    let mut variants = Vec::new();
    for (i, v) in s.variants.iter().enumerate() {
        let vp = load::rel(base, &v.profile);
        let p = load::profile(&vp)?;
        let vo = vp.display().to_string();
        if p.precision != s.precision {
            return Err(InputError::new(
                &origin,
                format!("variants[{i}].profile"),
                format!(
                    "{vo} is {} but the scenario is {}",
                    p.precision, s.precision
                ),
                "use profiles of one precision",
            )
            .into());
        }
        let threads = p
            .region(
                v.region
                    .as_deref()
                    .or(s.source.region.as_deref())
                    .filter(|r| p.regions.iter().any(|x| &x.name == r)),
                &vo,
            )?
            .thread_metrics(&vo)?;
        variants.push((v.name.clone(), v.vector_bits, threads));
    }
    let lookup = |id: &str| -> hpcscope_core::Result<Machine> {
        load::machine_rel(id, base).map_err(|e| match e.downcast::<hpcscope_core::Error>() {
            Ok(ce) => ce,
            Err(e) => hpcscope_core::Error::Input(InputError::new(id, "", format!("{e:#}"), "")),
        })
    };
    let mut targets = Vec::new();
    for t in &s.targets {
        let mut m = load::machine_rel(&t.machine, base)?;
        for tr in &t.transforms {
            m = apply(&m, tr, &lookup)?;
        }
        targets.push((t.name.clone(), m));
    }
    let r = Resolved {
        source_machine: sm,
        source_threads,
        source_gflops,
        variants,
        targets,
    };
    Ok((s, r))
}

/// Runs `explore`.
pub fn run(a: &ExploreArgs) -> Result<ExitCode> {
    let (s, r) = resolve(&a.scenario)?;
    let opts = Options {
        pair_rule: s.pair_rule,
        method: Default::default(),
        scope: s.scope,
    };
    let points = sweep(&r, s.precision, opts)?;
    let result = ExploreResult {
        scenario: s.name.clone(),
        description: s.description.clone(),
        source_machine: r.source_machine.id.clone(),
        source_gflops: r.source_gflops,
        points,
    };
    let mut t = Table::new(&[
        "variant",
        "target",
        "lo GF/s",
        "hi GF/s",
        "speed-up",
        "memory-bound points",
        "lower bound set by",
    ]);
    for p in &result.points {
        t.row(vec![
            p.variant.clone(),
            p.target.clone(),
            num(p.interval.lo, 4),
            num(p.interval.hi, 4),
            format!("x{}-x{}", num(p.speedup.lo, 3), num(p.speedup.hi, 3)),
            format!("{}/{}", p.memory_bound_points, p.points),
            p.lower_bound_by.clone(),
        ]);
    }
    let pre = vec![
        s.name.clone(),
        format!(
            "source: {} at {} GFLOP/s",
            r.source_machine.name,
            num(r.source_gflops, 4)
        ),
    ];
    let text = render(a.format, &result, &pre, &t, &[])?;
    if let Some(svg) = &a.svg {
        write_atomic(
            svg,
            &hpcscope_report::explore_svg(&result.points, &s.name, r.source_gflops),
        )?;
    }
    emit(&text, a.output.as_deref())?;
    let mut numbers = serde_json::Map::new();
    numbers.insert("source_gflops".into(), result.source_gflops.into());
    for p in &result.points {
        let key = format!("{} @ {}", p.variant, p.target);
        numbers.insert(format!("{key}.lo_gflops"), p.interval.lo.into());
        numbers.insert(format!("{key}.hi_gflops"), p.interval.hi.into());
    }
    if let Some(line) = a.record.store(
        "explore",
        &a.scenario.display().to_string(),
        &serde_json::Value::Object(numbers),
    )? {
        eprintln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
