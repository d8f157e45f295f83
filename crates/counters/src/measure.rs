//! Measuring a command: the recipe chosen (named, from a file, or this CPU's), the command
//! run under its counters (whole, per marker region, or per function), and the metrics
//! computed. What `counters run` and `analyze` do; they only print.

use std::path::{Path, PathBuf};

use crate::catalogue::{Catalogue, Chosen, Recipe, Variant};
use crate::compute::{self, Options, Precision, Report};
use crate::cpu::CpuId;
use crate::error::{Error, Result};
use crate::perf;
use crate::raw::RawData;

/// Which recipe, which formulas, which precision.
#[derive(Debug, Clone, Default)]
pub struct RecipeChoice {
    /// Recipe id or alias (default: the one for this CPU).
    pub recipe: Option<String>,
    /// A recipe file of the user's own (TOML, the format of data/metrics/recipes/).
    pub recipe_file: Option<PathBuf>,
    /// Formula variant where the seed contradicts itself.
    pub variant: Variant,
    /// Precision of the FP work.
    pub precision: Precision,
}

impl RecipeChoice {
    /// The built-in catalogue, with the recipe file added when one is given.
    pub fn catalogue(&self) -> Result<Catalogue> {
        let mut cat = Catalogue::builtin();
        if let Some(f) = &self.recipe_file {
            cat.add_recipe_file(f)?;
        }
        Ok(cat)
    }

    /// The recipe: `id` when given, else the one named, else the recipe file's; `None`
    /// when the user chose none.
    fn named<'a>(&self, cat: &'a Catalogue, id: Option<&str>) -> Result<Option<&'a Recipe>> {
        if let Some(id) = id.or(self.recipe.as_deref()) {
            return cat.find(id).map(Some);
        }
        if self.recipe_file.is_some() {
            // A recipe file given without a recipe id is the one to use (added first).
            return Ok(Some(&cat.recipes[0].1));
        }
        Ok(None)
    }

    /// The recipe to count on this CPU: the user's choice, else this CPU's own, else the
    /// closest one its flags identify (see [`Catalogue::for_cpu_or_closest`]; the choice's
    /// note says which and why).
    pub fn pick<'a>(&self, cat: &'a Catalogue, id: Option<&str>) -> Result<Chosen<'a>> {
        Ok(match self.named(cat, id)? {
            Some(recipe) => Chosen {
                recipe,
                why: None,
                note: None,
            },
            None => cat.for_cpu_or_closest(&CpuId::detect()),
        })
    }

    /// The recipe to read counter data recorded elsewhere (`origin` names it): the user's
    /// choice, else the one the data's event names fit (see [`Catalogue::for_data`]); never
    /// the CPU that reads it.
    pub fn pick_for_data<'a>(
        &self,
        cat: &'a Catalogue,
        id: Option<&str>,
        raw: &RawData,
        origin: &str,
    ) -> Result<Chosen<'a>> {
        Ok(match self.named(cat, id)? {
            Some(recipe) => Chosen {
                recipe,
                why: None,
                note: None,
            },
            None => cat.for_data(raw, origin),
        })
    }

    /// Computes the metrics of counter data recorded elsewhere (`origin` names it) with the
    /// recipe chosen for it (`id`, else the user's, else the one its event names fit: never
    /// this CPU's); the choice's note leads the report's notes.
    pub fn compute_recorded(
        &self,
        cat: &Catalogue,
        id: Option<&str>,
        raw: &RawData,
        origin: &str,
        per_thread: bool,
    ) -> Result<Report> {
        let chosen = self.pick_for_data(cat, id, raw, origin)?;
        let compiled = cat.compile(chosen.recipe, self.variant)?;
        let mut rep = compute::compute(
            &compiled,
            &metric_order(cat),
            raw,
            &self.options(per_thread),
        );
        if let Some(n) = chosen.note {
            rep.notes.insert(0, n);
        }
        Ok(rep)
    }

    /// `counters compare`: the metrics of each recorded run in `runs` (read as `from`),
    /// labelled by `labels` (one per run, in order; by default each file's name), the first
    /// with recipe `recipe_a`, the others with `recipe_b` (each else chosen as
    /// [`RecipeChoice::compute_recorded`] chooses), with the catalogue they were computed
    /// with.
    pub fn compare_recorded(
        &self,
        runs: &[PathBuf],
        labels: &[String],
        from: Option<crate::import::Format>,
        [recipe_a, recipe_b]: [Option<&str>; 2],
    ) -> Result<(Catalogue, Vec<Report>)> {
        if !labels.is_empty() && labels.len() != runs.len() {
            return Err(Error::Input(format!(
                "--labels gives {} labels for {} runs: give one label per run, in the runs' order",
                labels.len(),
                runs.len()
            )));
        }
        let cat = self.catalogue()?;
        let mut reps = Vec::new();
        for (i, f) in runs.iter().enumerate() {
            let label = labels
                .get(i)
                .cloned()
                .unwrap_or_else(|| crate::import::label_of(f));
            let rid = if i == 0 { recipe_a } else { recipe_b };
            let raw = crate::import::import_file(f, from, &label)?;
            let mut rep =
                self.compute_recorded(&cat, rid, &raw, &f.display().to_string(), false)?;
            rep.label = label;
            reps.push(rep);
        }
        Ok((cat, reps))
    }

    /// The computation options.
    pub fn options(&self, per_thread: bool) -> Options {
        Options {
            precision: self.precision,
            per_thread,
            ..Options::default()
        }
    }
}

impl Regions {
    /// The regions asked for: `functions` when some are named, else the marker regions when
    /// `markers`, else the whole command; `events` to count in them (default the recipe's).
    pub fn of(functions: &[String], markers: bool, events: &[String]) -> Regions {
        if !functions.is_empty() {
            Regions::Functions {
                names: functions.to_vec(),
                events: events.to_vec(),
            }
        } else if markers {
            Regions::Markers {
                events: events.to_vec(),
            }
        } else {
            Regions::Whole
        }
    }
}

/// The catalogue's metrics, in the seed's order.
pub fn metric_order(cat: &Catalogue) -> Vec<String> {
    cat.metrics.metrics.iter().map(|m| m.id.clone()).collect()
}

/// What the regions of a measurement are.
#[derive(Debug, Clone, Default)]
pub enum Regions {
    /// The whole command is one region.
    #[default]
    Whole,
    /// The program's marker regions (it calls hpcscope_region_start/stop); `events` to
    /// count (perf names, rHEX, TYPE:CONFIG), default the recipe's.
    Markers {
        /// Events to count.
        events: Vec<String>,
    },
    /// Functions of the executable, by uprobes on entry and return (main thread, software
    /// events, or `events`).
    Functions {
        /// Function names.
        names: Vec<String>,
        /// Events to count.
        events: Vec<String>,
    },
}

/// How to measure a command.
#[derive(Debug, Clone)]
pub struct MeasureOptions {
    /// Recipe and formulas.
    pub recipe: RecipeChoice,
    /// Regions.
    pub regions: Regions,
    /// Open all event groups in one run (multiplexed, scaled and flagged) instead of one
    /// run per group.
    pub multiplex: bool,
    /// Hardware events per group.
    pub group_size: usize,
    /// Also compute per-thread metrics.
    pub per_thread: bool,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            recipe: RecipeChoice::default(),
            regions: Regions::Whole,
            multiplex: false,
            group_size: 4,
            per_thread: false,
        }
    }
}

/// A measured command.
#[derive(Debug)]
pub struct Measurement {
    /// The catalogue used.
    pub catalogue: Catalogue,
    /// The raw counters.
    pub raw: RawData,
    /// The metrics.
    pub report: Report,
    /// The column label (the program's file name).
    pub label: String,
    /// What the user should know about how it was measured (a fall-back recipe).
    pub notes: Vec<String>,
}

/// The label of a command: its program's file name.
pub fn label_of(command: &[String]) -> String {
    command
        .first()
        .and_then(|c| Path::new(c).file_name())
        .map_or("app".into(), |s| s.to_string_lossy().into_owned())
}

/// Runs `command` under its counters and computes the metrics.
pub fn measure_with(command: &[String], o: &MeasureOptions) -> Result<Measurement> {
    if command.is_empty() {
        return Err(Error::Input(
            "no command given: give it after `--` (hpcscope counters run -- COMMAND [ARGS])".into(),
        ));
    }
    let cat = o.recipe.catalogue()?;
    let mut notes = Vec::new();
    let chosen = o.recipe.pick(&cat, None)?;
    notes.extend(chosen.note.clone());
    let recipe = chosen.recipe;
    let compiled = cat.compile(recipe, o.recipe.variant)?;
    let label = label_of(command);
    let events = recipe.needed_events(&cat.metrics, o.recipe.variant);
    let copts = perf::CollectOptions {
        group_size: o.group_size,
        multiplex: o.multiplex,
        ..perf::CollectOptions::default()
    };
    let raw: RawData = match &o.regions {
        Regions::Functions {
            names,
            events: user,
        } => {
            let specs = if user.is_empty() {
                copts.software.clone()
            } else {
                user.clone()
            };
            let specs = specs
                .iter()
                .map(|e| perf::EventSpec::parse(e).map_err(Error::Input))
                .collect::<Result<Vec<_>>>()?;
            let mut r = crate::uprobe::collect_functions(command, names, &specs)?;
            r.label = label.clone();
            perf::note_pmu(&mut r);
            r
        }
        Regions::Markers { events: user } => {
            let dir = tempfile::tempdir().map_err(|e| Error::Io {
                path: std::env::temp_dir(),
                source: e,
            })?;
            perf::collect_markers(recipe, &events, command, &copts, user, dir.path())?
        }
        Regions::Whole => {
            let mut r = perf::collect(recipe, &events, command, &copts)?;
            r.label = label.clone();
            r
        }
    };
    let report = compute::compute(
        &compiled,
        &metric_order(&cat),
        &raw,
        &o.recipe.options(o.per_thread),
    );
    Ok(Measurement {
        catalogue: cat,
        raw,
        report,
        label,
        notes,
    })
}

/// One whole-command measurement with this CPU's recipe and the default formulas (software
/// events where the PMU is not available, or where this CPU has no recipe). The command's
/// standard output goes to /dev/null: this is the measurement other workflows (`analyze`)
/// embed in their own output.
pub fn measure(command: &[String]) -> Result<Report> {
    let o = MeasureOptions::default();
    let cat = o.recipe.catalogue()?;
    let recipe = o.recipe.pick(&cat, None)?.recipe;
    let compiled = cat.compile(recipe, o.recipe.variant)?;
    let events = recipe.needed_events(&cat.metrics, o.recipe.variant);
    let copts = perf::CollectOptions {
        quiet: true,
        ..perf::CollectOptions::default()
    };
    let mut raw = perf::collect(recipe, &events, command, &copts)?;
    raw.label = label_of(command);
    Ok(compute::compute(
        &compiled,
        &metric_order(&cat),
        &raw,
        &o.recipe.options(false),
    ))
}
