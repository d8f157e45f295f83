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
    /// Only design point I (0-based, variants outer, targets inner), e.g. one task of a job
    /// array; with --run-dir its result goes to the run directory for `hpcscope merge`.
    #[arg(long, value_name = "I")]
    pub point: Option<usize>,
    /// With --point: where the design point's result goes (one file per point).
    #[command(flatten)]
    pub rank: crate::job::RankFlags,
    /// Write a Slurm job-array script instead: one task per design point, then the merge.
    #[command(flatten)]
    pub slurm: crate::slurm::SlurmFlags,
}

/// The result of an exploration.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
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

/// The table of design points.
pub fn points_table(points: &[DesignPoint]) -> Table {
    let mut t = Table::new(&[
        "variant",
        "target",
        "lo GF/s",
        "hi GF/s",
        "speed-up",
        "memory-bound points",
        "lower bound set by",
    ]);
    for p in points {
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
    t
}

/// `--slurm`: the job-array script, one task per design point.
fn write_slurm(a: &ExploreArgs, name: &str, n: usize) -> Result<ExitCode> {
    let run_dir = a.rank.run_dir.as_deref().ok_or_else(|| {
        anyhow::anyhow!(
            "--slurm: give --run-dir DIR, a directory every node can write, for the design points' results"
        )
    })?;
    if a.point.is_some() {
        anyhow::bail!("--slurm writes one task per design point; leave out --point");
    }
    let scenario = crate::slurm::absolute(&a.scenario)?;
    let plan = crate::slurm::Plan {
        what: "explore".into(),
        summary: format!("the {n} design points of {} ({name})", scenario.display()),
        tasks: n as u32,
        workdir: std::env::current_dir()?,
        run_dir: crate::slurm::absolute(run_dir)?,
        task: format!(
            r#"exec "$HPCSCOPE" explore {} --point "$SLURM_ARRAY_TASK_ID" --run-dir "$RUN" --job-id points"#,
            crate::slurm::quote(&scenario)
        ),
        merge: String::new(),
    };
    crate::slurm::write(&plan, &a.slurm)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `explore`.
pub fn run(a: &ExploreArgs) -> Result<ExitCode> {
    let (s, mut r) = resolve(&a.scenario)?;
    let n = r.variants.len() * r.targets.len();
    if a.slurm.slurm.is_some() {
        return write_slurm(a, &s.name, n);
    }
    if let Some(i) = a.point {
        if i >= n {
            anyhow::bail!(
                "--point {i}: {} has {n} design points ({} variant(s) x {} target(s)), numbered 0 to {}",
                a.scenario.display(),
                r.variants.len(),
                r.targets.len(),
                n.saturating_sub(1)
            );
        }
        // Sweep order: variants outer, targets inner.
        let nt = r.targets.len();
        r.variants = vec![r.variants.swap_remove(i / nt)];
        r.targets = vec![r.targets.swap_remove(i % nt)];
    }
    let session = match a.point {
        Some(i) => a
            .rank
            .begin_task("explore", &[a.scenario.display().to_string()], i, n)?,
        None if a.rank.run_dir.is_some() => anyhow::bail!(
            "--run-dir: explore writes one design point per task there; give --point I (or --slurm SCRIPT to make the tasks)"
        ),
        None => None,
    };
    let started = std::time::Instant::now();
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
    if let Some(session) = session {
        let mut data = serde_json::to_value(&result)?;
        data["point_index"] = a.point.into();
        return session.finish(crate::job::Outcome {
            wall_s: started.elapsed().as_secs_f64(),
            exit: crate::job::Exit {
                code: Some(0),
                signal: None,
            },
            data,
            ..crate::job::Outcome::default()
        });
    }
    let t = points_table(&result.points);
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
