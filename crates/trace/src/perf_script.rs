//! CPU profiles other tools wrote, read into the same [`Profile`] as hpcscope's own sampler
//! (so the same folded stacks, hot-function table and flame graph): the text of
//! `perf script`, a `perf.data` file (through `perf script`, when perf is installed), folded
//! stacks (Brendan Gregg's format, as `hpcscope profile --out-prefix` writes them) and the
//! JSON of `hpcscope profile --format json`. Also the differential flame graph of two
//! profiles (inferno's differential mode) and the table of what moved.
//!
//! perf's stacks are collapsed by inferno's `perf script` collapser, which weighs each
//! sample by its period, as `perf report` does by default: for `cpu-clock` the weights are
//! nanoseconds of CPU time.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;
use std::process::Command;

use hpcscope_core::Failure;
use serde::Serialize;

use crate::profile::{Profile, StackSample};

/// What one unit of a stack's count is.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Weight {
    /// Samples taken at a fixed frequency (hpcscope's sampler, or folded stacks of counts).
    Samples {
        /// Sampling frequency, Hz, when known (0: unknown).
        hz: u64,
    },
    /// The sum of the samples' periods of a perf event (`cpu-clock`: nanoseconds).
    Period {
        /// The perf event, e.g. `cpu-clock`.
        event: String,
        /// The unit of its period: `nanoseconds` for the clock events, else `events`.
        unit: String,
    },
}

impl Weight {
    /// The unit of a count, in words (`samples`, `nanoseconds`).
    pub fn unit(&self) -> &str {
        match self {
            Weight::Samples { .. } => "samples",
            Weight::Period { unit, .. } => unit,
        }
    }

    /// Nanoseconds of CPU time one unit stands for, when the weight is a time.
    pub fn nanoseconds_per_unit(&self) -> Option<f64> {
        match self {
            Weight::Samples { hz } if *hz > 0 => Some(1e9 / *hz as f64),
            Weight::Period { unit, .. } if unit == "nanoseconds" => Some(1.0),
            _ => None,
        }
    }
}

/// The formats [`import`] reads.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceFormat {
    /// A `perf.data` file, read through `perf script`.
    PerfData,
    /// The text `perf script` prints.
    PerfScript,
    /// Folded stacks: `frame;frame;... count` per line.
    Folded,
    /// The JSON of `hpcscope profile --format json`.
    HpcscopeJson,
}

/// A profile read from a file, with what its counts mean.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    /// Where it was read from.
    pub origin: String,
    /// The format it was read as.
    pub format: SourceFormat,
    /// What a count is.
    pub weight: Weight,
    /// The stacks. The first frame of a folded line becomes the command name.
    pub profile: Profile,
    /// Remarks (events left out, lines that were not stacks).
    pub notes: Vec<String>,
}

/// Reads a profile from `path`, recognising the format from its content (see the module).
pub fn import(path: &Path) -> Result<Imported, Failure> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        Failure::new(
            hpcscope_core::kind::io_kind(&e),
            format!("cannot read {origin}: {e}"),
        )
    })?;
    if bytes.starts_with(b"PERFILE2") || bytes.starts_with(b"PERFFILE") {
        let text = perf_script_of(path)?;
        let mut imp = from_perf_script(&text, &origin)?;
        imp.format = SourceFormat::PerfData;
        return Ok(imp);
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        Failure::input(format!(
            "{origin}: not text (invalid UTF-8 at byte {}) and not a perf.data file; give perf \
             script output, folded stacks, hpcscope profile JSON or a perf.data file",
            e.utf8_error().valid_up_to()
        ))
    })?;
    from_text(&text, &origin)
}

/// Reads a profile from text: hpcscope JSON, `perf script` output or folded stacks.
pub fn from_text(text: &str, origin: &str) -> Result<Imported, Failure> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return from_hpcscope_json(text, origin);
    }
    if looks_like_perf_script(text) {
        return from_perf_script(text, origin);
    }
    from_folded(text, origin)
}

/// `perf script` output has indented frame lines under each sample's header line.
fn looks_like_perf_script(text: &str) -> bool {
    text.lines()
        .take(200)
        .any(|l| l.starts_with('\t') || (l.starts_with("  ") && !l.trim().is_empty()))
}

/// Runs `perf script` on a perf.data file and returns its text.
fn perf_script_of(path: &Path) -> Result<String, Failure> {
    let perf = hpcscope_host::tools::find_program("perf").map_err(|_| {
        Failure::environment(format!(
            "{} is a perf.data file and reading it needs `perf script`, but perf is not \
             installed: install it (Debian: apt-get install linux-perf) or run `perf script -i \
             {} > perf.script` where perf is and import that",
            path.display(),
            path.display()
        ))
    })?;
    let out = Command::new(perf)
        .arg("script")
        .arg("-i")
        .arg(path)
        .output()
        .map_err(|e| Failure::environment(format!("cannot run perf script: {e}")))?;
    if !out.status.success() {
        return Err(Failure::input(format!(
            "perf script -i {} failed ({}): {}",
            path.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The event of each sample header (`comm pid [cpu] time: period event:`), in order of
/// first appearance, with its sample count.
fn perf_events(text: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for l in text.lines() {
        if l.is_empty() || l.starts_with(char::is_whitespace) || l.starts_with('#') {
            continue;
        }
        // The event is the last `name:` of the header, after the period.
        let trimmed = l.trim_end().trim_end_matches(':');
        let Some(ev) = trimmed.rsplit([' ', '\t']).next() else {
            continue;
        };
        let ev = ev.split(':').next().unwrap_or(ev).to_string();
        if ev.is_empty() {
            continue;
        }
        match out.iter_mut().find(|(e, _)| *e == ev) {
            Some((_, n)) => *n += 1,
            None => out.push((ev, 1)),
        }
    }
    out
}

/// Reads `perf script` output (its default fields, with call chains from `perf record -g`).
/// Only the first event's samples are kept, as `perf report` shows one event at a time; the
/// others are counted in the notes.
pub fn from_perf_script(text: &str, origin: &str) -> Result<Imported, Failure> {
    use inferno::collapse::Collapse;
    let events = perf_events(text);
    let mut opts = inferno::collapse::perf::Options::default();
    opts.annotate_kernel = true;
    opts.nthreads = 1;
    let mut folder = inferno::collapse::perf::Folder::from(opts);
    let mut out = Vec::new();
    folder
        .collapse(text.as_bytes(), &mut out)
        .map_err(|e| Failure::input(format!("{origin}: not perf script output: {e}")))?;
    let folded = String::from_utf8_lossy(&out).into_owned();
    if folded.trim().is_empty() {
        return Err(Failure::input(format!(
            "{origin}: no sample with a call chain was found; record with `perf record -g` (or \
             --call-graph dwarf) and give the output of `perf script`"
        )));
    }
    let mut imp = from_folded(&folded, origin)?;
    imp.format = SourceFormat::PerfScript;
    let event = events
        .first()
        .map(|(e, _)| e.clone())
        .unwrap_or_else(|| "unknown".into());
    let unit = if event.ends_with("-clock") {
        "nanoseconds"
    } else {
        "events"
    };
    imp.weight = Weight::Period {
        event: event.clone(),
        unit: unit.into(),
    };
    imp.notes.clear();
    for (e, n) in events.iter().skip(1) {
        imp.notes.push(format!(
            "{n} samples of event {e} left out: only the first event ({event}) is read, as perf \
             report shows one event at a time"
        ));
    }
    Ok(imp)
}

/// Reads folded stacks: one `frame;frame;...;leaf count` per line (a differential line's
/// last count is taken). The first frame becomes the command name.
pub fn from_folded(text: &str, origin: &str) -> Result<Imported, Failure> {
    let mut agg: BTreeMap<(String, Vec<String>), u64> = BTreeMap::new();
    let mut lines = 0usize;
    for (i, l) in text.lines().enumerate() {
        let l = l.trim_end();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let bad = |why: &str| {
            Failure::input(format!(
                "{origin}:{}: {why}: `{}`; a folded stack line is `frame;frame;...;leaf COUNT` \
                 (from `hpcscope profile --out-prefix`, inferno-collapse-* or stackcollapse-*.pl)",
                i + 1,
                l.chars().take(80).collect::<String>()
            ))
        };
        let (stack, count) = l.rsplit_once(' ').ok_or_else(|| bad("no count"))?;
        let count: u64 = count
            .parse()
            .or_else(|_| count.parse::<f64>().map(|c| c.round() as u64))
            .map_err(|_| bad("the count is not a number"))?;
        // A differential line has two counts: keep the second (the `after` profile).
        let stack = match stack.rsplit_once(' ') {
            Some((s, c)) if c.parse::<u64>().is_ok() => s,
            _ => stack,
        };
        let mut frames = stack.split(';').map(str::to_string);
        let comm = frames.next().unwrap_or_default();
        if comm.is_empty() {
            return Err(bad("empty stack"));
        }
        *agg.entry((comm, frames.collect())).or_default() += count;
        lines += 1;
    }
    if lines == 0 {
        return Err(Failure::input(format!(
            "{origin}: no stack found; give perf script output, folded stacks, hpcscope profile \
             JSON or a perf.data file"
        )));
    }
    let samples = agg
        .into_iter()
        .filter(|(_, c)| *c > 0)
        .map(|((comm, frames), count)| StackSample {
            pid: 0,
            tid: 0,
            comm,
            frames,
            count,
        })
        .collect();
    Ok(Imported {
        origin: origin.to_string(),
        format: SourceFormat::Folded,
        weight: Weight::Samples { hz: 0 },
        profile: Profile {
            hz: 0,
            duration_s: 0.0,
            samples,
            missing_user_stacks: 0,
        },
        notes: Vec::new(),
    })
}

/// Reads the JSON of `hpcscope profile --format json` (its `profile` object), or a bare
/// profile object.
pub fn from_hpcscope_json(text: &str, origin: &str) -> Result<Imported, Failure> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        Failure::input(format!(
            "{origin}: not valid JSON ({e}); give the output of `hpcscope profile --format json`"
        ))
    })?;
    let p = v.get("profile").unwrap_or(&v);
    let profile: Profile = serde_json::from_value(p.clone()).map_err(|e| {
        Failure::input(format!(
            "{origin}: JSON without a profile ({e}); give the output of `hpcscope profile \
             --format json`"
        ))
    })?;
    Ok(Imported {
        origin: origin.to_string(),
        format: SourceFormat::HpcscopeJson,
        weight: Weight::Samples { hz: profile.hz },
        profile,
        notes: Vec::new(),
    })
}

/// One function's share of two profiles.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDelta {
    /// Function name.
    pub name: String,
    /// Self share in the first profile, percent of its total.
    pub before_self_pct: f64,
    /// Self share in the second profile, percent.
    pub after_self_pct: f64,
    /// Difference of the self shares, percentage points.
    pub delta_self_pct: f64,
    /// Inclusive share in the first profile, percent.
    pub before_total_pct: f64,
    /// Inclusive share in the second profile, percent.
    pub after_total_pct: f64,
}

/// The functions whose self share moved most between `before` and `after` (shares, so that
/// profiles of different lengths compare), largest movement first, at most `n`.
pub fn diff_functions(before: &Profile, after: &Profile, n: usize) -> Vec<FunctionDelta> {
    let shares = |p: &Profile| -> BTreeMap<String, (f64, f64)> {
        p.hot_functions(usize::MAX)
            .into_iter()
            .map(|h| (h.name, (h.self_pct, h.total_pct)))
            .collect()
    };
    let (a, b) = (shares(before), shares(after));
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    let mut out: Vec<FunctionDelta> = names
        .into_iter()
        .map(|name| {
            let (bs, bt) = a.get(name).copied().unwrap_or((0.0, 0.0));
            let (as_, at) = b.get(name).copied().unwrap_or((0.0, 0.0));
            FunctionDelta {
                name: name.clone(),
                before_self_pct: bs,
                after_self_pct: as_,
                delta_self_pct: as_ - bs,
                before_total_pct: bt,
                after_total_pct: at,
            }
        })
        .collect();
    out.sort_by(|x, y| {
        y.delta_self_pct
            .abs()
            .total_cmp(&x.delta_self_pct.abs())
            .then(x.name.cmp(&y.name))
    });
    out.truncate(n);
    out
}

/// The table of [`diff_functions`].
pub fn diff_table(rows: &[FunctionDelta]) -> hpcscope_report::Table {
    let mut t = hpcscope_report::Table::new(&[
        "function",
        "before_self_%",
        "after_self_%",
        "delta_self_pp",
        "before_total_%",
        "after_total_%",
    ]);
    for r in rows {
        t.row(vec![
            r.name.clone(),
            format!("{:.1}", r.before_self_pct),
            format!("{:.1}", r.after_self_pct),
            format!("{:+.1}", r.delta_self_pct),
            format!("{:.1}", r.before_total_pct),
            format!("{:.1}", r.after_total_pct),
        ]);
    }
    t
}

/// A differential flame graph (inferno): the frames of `after`, red where a frame's share
/// grew since `before`, blue where it shrank. With `normalize`, `before` is scaled to the
/// total of `after` first, so that profiles of different lengths compare.
pub fn diff_flamegraph_svg(
    before: &Profile,
    after: &Profile,
    title: &str,
    normalize: bool,
) -> Result<String, Failure> {
    let (a, b) = (before.folded(), after.folded());
    if b.is_empty() {
        return Err(Failure::input(
            "the second profile has no samples: nothing to draw",
        ));
    }
    let mut diff = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options {
            normalize,
            strip_hex: false,
        },
        a.as_bytes(),
        b.as_bytes(),
        &mut diff,
    )
    .map_err(|e| Failure::new(hpcscope_core::ErrorKind::Internal, e.to_string()))?;
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "samples".into();
    let mut out = Vec::new();
    let lines: Vec<String> = diff.lines().map_while(Result::ok).collect();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut out)
        .map_err(|e| Failure::new(hpcscope_core::ErrorKind::Internal, e.to_string()))?;
    String::from_utf8(out)
        .map_err(|e| Failure::new(hpcscope_core::ErrorKind::Internal, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERF_SCRIPT: &str = "\
w  9965  7898.091025:    1001001 cpu-clock: 
\t            1170 hot_a+0x27 (/tmp/w)
\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)

w  9965  7898.096061:    1001001 cpu-clock: 
\t            1170 hot_a+0x27 (/tmp/w)
\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)

w  9965  7898.097061:    1501501 cpu-clock: 
\t            1190 hot_b+0x7 (/tmp/w)
\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)

w  9965  7898.098061:    1001001 cpu-clock: 
\tffffffff8100 cp_new_stat+0x1 ([kernel.kallsyms])
\t            1190 hot_b+0x7 (/tmp/w)
";

    #[test]
    fn perf_script_is_weighed_by_period() {
        let imp = from_text(PERF_SCRIPT, "t").unwrap();
        assert_eq!(imp.format, SourceFormat::PerfScript);
        assert_eq!(
            imp.weight,
            Weight::Period {
                event: "cpu-clock".into(),
                unit: "nanoseconds".into()
            }
        );
        let p = &imp.profile;
        assert_eq!(p.total(), 4_504_504);
        let h = p.hot_functions(3);
        assert_eq!(h[0].name, "hot_a");
        assert_eq!(h[0].self_samples, 2_002_002);
        assert_eq!(h[1].name, "hot_b");
        assert_eq!(h[2].name, "cp_new_stat_[k]");
        assert_eq!(p.samples[0].comm, "w");
        assert!(
            p.folded()
                .contains("w;__libc_start_call_main;hot_a 2002002")
        );
    }

    #[test]
    fn folded_round_trips_and_bad_lines_are_named() {
        let imp = from_text("app;main;dot 60\napp;main 10\n", "f").unwrap();
        assert_eq!(imp.format, SourceFormat::Folded);
        assert_eq!(imp.profile.folded(), "app;main 10\napp;main;dot 60\n");
        let e = from_text("app;main;dot 60\napp;main x\n", "f.folded").unwrap_err();
        assert!(e.message.contains("f.folded:2"), "{e}");
        assert!(from_text("\n\n", "e").is_err());
    }

    #[test]
    fn a_differential_graph_and_table() {
        let a = from_text("app;main;dot 60\napp;main;io 40\n", "a")
            .unwrap()
            .profile;
        let b = from_text("app;main;dot 90\napp;main;io 10\n", "b")
            .unwrap()
            .profile;
        let d = diff_functions(&a, &b, 10);
        assert_eq!(d[0].name, "dot");
        assert!((d[0].delta_self_pct - 30.0).abs() < 1e-9);
        assert!((d[1].delta_self_pct + 30.0).abs() < 1e-9);
        let svg = diff_flamegraph_svg(&a, &b, "t", false).unwrap();
        assert!(svg.contains("<svg") && svg.contains("dot"));
        // inferno colours a grown frame red and a shrunk one blue.
        assert!(svg.contains("rgb(255,"), "no red frame");
        assert!(svg.contains(",255)"), "no blue frame");
    }
}
