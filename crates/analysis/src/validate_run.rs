//! The `validate` workflow: the protocol's builds (bundled or the user's) characterized,
//! projected and timed ([`crate::validate`]), the node section at node scope
//! ([`crate::node_validate`]), an optional fit of the calibration, and what to write and
//! print. The command line checks its options and writes the files.

use std::path::PathBuf;

use anyhow::Result;
use hpcscope_core::point::Calibration;

use crate::node_validate::{
    node_validation_section, node_validation_text, node_values_check, summarize_node,
    validate_node, validate_node_builds,
};
use crate::validate::{self as v, Build, ProtocolOptions};
use crate::workloads::{Change, Workload, build, build_protocol};

/// What to validate.
#[derive(Debug, Clone)]
pub struct ValidateOptions {
    /// Output directory (the builds go under `build/`).
    pub output: PathBuf,
    /// The source machine (built-in id or file; None: this machine, measured once).
    pub machine: Option<String>,
    /// The bundled workloads (core scope) and the OpenMP ones (node scope).
    pub workloads: (Vec<&'static Workload>, Vec<&'static Workload>),
    /// Timed native runs per build.
    pub native_runs: u32,
    /// Threads of the node pairs (bundled protocol; None: this machine's CPUs).
    pub threads: Option<u32>,
    /// The user's builds (empty: the bundled protocol), their arguments and region.
    pub builds: Vec<Build>,
    /// The user's builds' arguments.
    pub args: Vec<String>,
    /// The user's builds' region (a function), if any.
    pub function: Option<String>,
    /// Whether that function is counted and timed with its callees (`mix --scope`).
    pub scope: bool,
    /// The calibration to check the pairs with.
    pub calibration: Calibration,
    /// Fit a calibration on this run's vector-width pairs too, to be written there.
    pub calibrate: Option<PathBuf>,
    /// Project the pairs of this earlier validation.json again with the current model:
    /// its builds' profiles and timed runs as recorded, nothing built or timed.
    pub replay: Option<PathBuf>,
}

/// The calibration fit asked for has no pair to fit on (the bundled protocol's gcc -O3
/// vector-width pairs).
#[derive(Debug)]
pub struct NoPairsToFit;

impl std::fmt::Display for NoPairsToFit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "no vector-width pair to fit on (they come from the bundled protocol's gcc -O3 builds)",
        )
    }
}

impl std::error::Error for NoPairsToFit {}

impl hpcscope_core::Classify for NoPairsToFit {
    fn kind(&self) -> hpcscope_core::ErrorKind {
        hpcscope_core::ErrorKind::Input
    }
}

/// What `validate` found: the files to write, in order, and the text to print.
#[derive(Debug, Clone)]
pub struct ValidateRun {
    /// The fitted calibration (TOML), with its path.
    pub calibration_file: Option<(PathBuf, String)>,
    /// `validation.json` and the charts, with their paths.
    pub files: Vec<(PathBuf, String)>,
    /// The summary to print.
    pub text: String,
}

/// Leaves out the precision pairs when machine `m` has no f32 peak (a float build's
/// ceilings), with a note saying how many and what to do.
fn drop_precision_pairs_without_f32(
    m: &hpcscope_core::Machine,
    groups: &mut [v::Group],
    notes: &mut Vec<String>,
) {
    if m.peak(hpcscope_core::Precision::F32).is_some() {
        return;
    }
    let before: usize = groups.iter().map(|g| g.pairs.len()).sum();
    for g in groups.iter_mut() {
        g.pairs.retain(|p| p.change != Change::Precision);
    }
    let left = before - groups.iter().map(|g| g.pairs.len()).sum::<usize>();
    if left > 0 {
        notes.push(format!(
            "the machine '{}' has no f32 peak: the {left} precision pairs (double <-> float builds) are left out; give a machine file measured in both precisions (hpcscope bench -o FILE, then -m FILE)",
            m.id
        ));
    }
}

/// The node section: the bundled OpenMP workloads from one thread to N and SSE2 <-> AVX2 at
/// N threads, or with `--threads` the user's builds (each from one thread to N, each pair at
/// N); its pairs, the warnings about the machine's node values, and N (0: no section).
fn node_section(
    o: &ValidateOptions,
    m: &hpcscope_core::Machine,
    nws: &[&'static Workload],
    notes: &mut Vec<String>,
    progress: &dyn Fn(&str),
) -> Result<(Vec<crate::node_validate::NodePair>, Vec<String>, u32)> {
    let model = Some(&o.calibration);
    let (nv, threads) = if !o.builds.is_empty() && o.threads.is_some() {
        let threads = crate::workloads::node_threads(o.threads)?;
        let (nv, untimed) = validate_node_builds(
            m,
            &o.builds,
            &o.args,
            (o.function.as_deref(), o.scope),
            threads,
            o.native_runs,
            model,
            progress,
        )?;
        notes.extend(untimed);
        (nv, threads)
    } else if o.builds.is_empty() && !nws.is_empty() {
        let threads = crate::workloads::node_threads(o.threads)?;
        let names: Vec<&str> = nws.iter().map(|w| w.name).collect();
        let nbuilds = build(&o.output.join("build"), &names, notes)?;
        let nv = validate_node(m, nws, &nbuilds, threads, o.native_runs, model, progress)?;
        (nv, threads)
    } else {
        return Ok((Vec::new(), Vec::new(), 0));
    };
    let warnings = if nv.is_empty() {
        Vec::new()
    } else {
        node_values_check(m)
    };
    Ok((nv, warnings, threads))
}

/// Runs the validation protocol; `progress` hears each step.
pub fn run(o: &ValidateOptions, progress: &dyn Fn(&str)) -> Result<ValidateRun> {
    if let Some(path) = &o.replay {
        return replay(o, path);
    }
    let (ws, nws) = &o.workloads;
    let model = &o.calibration;
    let mut notes = Vec::new();
    let mut groups = if o.builds.is_empty() {
        let builds = build_protocol(&o.output.join("build"), ws, &mut notes)?;
        v::bundled_groups(ws, &builds)
    } else {
        vec![v::user_group(
            o.builds.clone(),
            o.args.clone(),
            o.function.clone(),
            o.scope,
        )]
    };
    let m = &crate::host_machine::source_machine(o.machine.as_deref())?;
    drop_precision_pairs_without_f32(m, &mut groups, &mut notes);
    let load_before = hpcscope_host::facts::loadavg();
    let started = std::time::Instant::now();
    let protocol = v::run(
        m,
        &groups,
        &ProtocolOptions {
            runs: o.native_runs,
            calibration: Some(model.clone()),
        },
        progress,
    )?;
    let load_after = hpcscope_host::facts::loadavg();
    notes.extend(protocol.notes.iter().cloned());
    let (nv, warnings, threads) = node_section(o, m, nws, &mut notes, progress)?;
    // After the node section too (load_after closes the core protocol, which a fit uses).
    let load_end = hpcscope_host::facts::loadavg();
    finish(
        o,
        m,
        Outcome {
            protocol,
            node: (nv, warnings, threads),
            notes,
            load: [load_before, load_after, load_end],
            started,
        },
    )
}

/// What [`finish`] writes and prints.
struct Outcome {
    protocol: v::Protocol,
    /// The node pairs, the warnings about the machine's node values, their threads.
    node: (Vec<crate::node_validate::NodePair>, Vec<String>, u32),
    notes: Vec<String>,
    /// Load averages before, after the core protocol, and at the end.
    load: [Option<[f64; 3]>; 3],
    started: std::time::Instant,
}

/// `--replay`: the pairs of an earlier validation.json projected again with the current
/// model (and `o.calibration`), on its builds as recorded; its node pairs are not.
fn replay(o: &ValidateOptions, path: &std::path::Path) -> Result<ValidateRun> {
    let started = std::time::Instant::now();
    let origin = path.display().to_string();
    let text = hpcscope_core::load::read(
        path,
        "a validation to replay",
        "give the validation.json of an earlier `hpcscope validate -o DIR` run",
    )?;
    let r = v::replay(&text, &origin)?;
    let m = &crate::host_machine::source_machine(o.machine.as_deref())?;
    if m.id != r.machine {
        anyhow::bail!(hpcscope_core::InputError::new(
            origin,
            "machine",
            format!(
                "its pairs were projected from machine '{}', and the source machine given is '{}'",
                r.machine, m.id
            ),
            "give the machine the validation ran with (-m FILE, the same machine file)"
        ));
    }
    let mut pairs = Vec::new();
    let mut builds = Vec::new();
    for (g, c) in &r.groups {
        pairs.extend(v::validate_pairs(m, g, c, Some(&o.calibration))?);
        builds.extend(c.iter().cloned());
    }
    let notes = vec![format!(
        "replayed from {}: its {} pairs projected again on the builds' profiles, access widths and timed runs as recorded there (nothing built, emulated or timed); its node pairs are not",
        path.display(),
        pairs.len()
    )];
    finish(
        o,
        m,
        Outcome {
            protocol: v::Protocol {
                builds,
                pairs,
                notes: Vec::new(),
            },
            node: (Vec::new(), Vec::new(), 0),
            notes,
            load: [None, None, None],
            started,
        },
    )
}

/// The files and the text of a validation.
fn finish(o: &ValidateOptions, m: &hpcscope_core::Machine, out: Outcome) -> Result<ValidateRun> {
    let Outcome {
        protocol,
        node: (nv, warnings, threads),
        notes,
        load: [load_before, load_after, load_end],
        started,
    } = out;
    let model = &o.calibration;
    let s = v::summarize(&protocol.pairs);
    let ns = summarize_node(&nv);
    let fitted = match &o.calibrate {
        Some(path) => {
            let prov = format!(
                "fitted by hpcscope {} validate --calibrate on {} ({}), {}, {} timed runs per build; load average {} before, {} after",
                env!("CARGO_PKG_VERSION"),
                m.name,
                m.id,
                hpcscope_host::time::utc_now(),
                o.native_runs,
                load_text(load_before),
                load_text(load_after)
            );
            let Some(fit) = v::calibrate(&protocol.pairs, &prov) else {
                return Err(NoPairsToFit.into());
            };
            Some((path.clone(), fit))
        }
        None => None,
    };
    let mut files = Vec::new();
    files.push((
        o.output.join("validation.json"),
        // Keys sorted at every level, as validation.json has always been written.
        serde_json::to_string_pretty(&serde_json::to_value(v::ValidationFile {
            builds: protocol.builds.clone(),
            calibration: model.clone(),
            fitted_calibration: fitted.as_ref().map(|(_, f)| f.clone()),
            load_average_after: load_end,
            load_average_before: load_before,
            machine: m.id.clone(),
            node: v::NodeSection {
                results: nv.clone(),
                summary: ns.clone(),
                threads,
                warnings: warnings.clone(),
            },
            notes: notes.clone(),
            pairs: protocol.pairs.clone(),
            seconds: started.elapsed().as_secs_f64(),
            summary: s.clone(),
        })?)?
            + "\n",
    ));
    let sec = v::validation_section(&protocol.pairs, m);
    for (i, svg) in sec.svgs.iter().enumerate() {
        let name = if sec.svgs.len() == 1 {
            "validation.svg".to_string()
        } else {
            format!("validation-{}.svg", i + 1)
        };
        files.push((o.output.join(name), svg.clone()));
    }
    if !nv.is_empty() {
        let sec = node_validation_section(&nv, m);
        files.push((o.output.join("validation-node.svg"), sec.svgs[0].clone()));
    }
    let mut text = v::validation_text(&protocol.pairs, &s);
    if !nv.is_empty() {
        text.push_str(&node_validation_text(&nv, &ns));
    }
    for w in &warnings {
        text.push_str(&format!("warning: {w}\n"));
    }
    text.push_str(&format!(
        "load average (1, 5, 15 min): {} before, {} after; {:.0} s\n",
        load_text(load_before),
        load_text(load_end),
        started.elapsed().as_secs_f64()
    ));
    if let Some((path, f)) = &fitted {
        text.push_str(&format!(
            "fitted calibration: point rule {} on {} pairs, median error {:.1} %, 90 % within {:.1} %; interval margin {:.1} % for {:.0} % coverage: written to {}\n",
            f.point.method.describe(f.point.parameter),
            f.point.error.pairs,
            f.point.error.median * 100.0,
            f.point.error.p90 * 100.0,
            f.interval.margin * 100.0,
            f.interval.coverage * 100.0,
            path.display()
        ));
    }
    for n in &notes {
        text.push_str(&format!("note: {n}\n"));
    }
    Ok(ValidateRun {
        calibration_file: fitted.map(|(p, f)| (p, f.to_toml_string())),
        files,
        text,
    })
}

fn load_text(l: Option<[f64; 3]>) -> String {
    l.map_or("unknown".into(), |l| {
        format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::{PROTOCOL_BUILDS, WORKLOADS};

    /// A machine file without an f32 peak cannot hold a float build to its ceilings: the
    /// precision pairs are left out, with a note that counts them, and the others stay.
    #[test]
    fn precision_pairs_need_an_f32_peak() {
        let ws: Vec<&Workload> = WORKLOADS.iter().take(2).collect();
        let all: Vec<(usize, PathBuf)> = (0..PROTOCOL_BUILDS.len())
            .map(|i| (i, PathBuf::from(format!("b{i}"))))
            .collect();
        let groups = v::bundled_groups(&ws, &[all.clone(), all]);
        // The published machine files give f64 peaks only; a measured one has both.
        let mut m = hpcscope_core::library::builtin("cascadelake-8260").unwrap();
        let (mut left, mut notes) = (groups.clone(), Vec::new());
        let mut single = m.peaks[0].clone();
        single.precision = hpcscope_core::Precision::F32;
        m.peaks.push(single);
        let (mut kept, mut kept_notes) = (groups, Vec::new());
        drop_precision_pairs_without_f32(&m, &mut kept, &mut kept_notes);
        assert!(kept_notes.is_empty());
        assert_eq!(kept[0].pairs.len(), 18);
        m.peaks
            .retain(|p| p.precision != hpcscope_core::Precision::F32);
        drop_precision_pairs_without_f32(&m, &mut left, &mut notes);
        assert!(left.iter().all(|g| g.pairs.len() == 16));
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("no f32 peak: the 4 precision pairs"),
            "{}",
            notes[0]
        );
    }
}
