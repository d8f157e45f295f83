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
//!
//! The format is recognised before any library sees the text: JSON starts with `{` or `[`;
//! `perf script` output has a sample header (`comm pid time: period event:`, read as inferno
//! reads it) before its first stack; anything else is read as folded stacks. Two faults of
//! inferno 0.12 (the latest release) are kept away from it: its collapser slices function
//! names by bytes (a name of 17 bytes or more whose last 17 bytes start inside a UTF-8
//! character, such as `计算密集型函数内核`, panicked), so every character outside ASCII is
//! handed to it escaped and restored in its output; and it asserts that the first stack
//! names an event, so the event of the first sample header is given to it. Any other panic
//! of the library becomes an error naming the file ([`LIBRARY_FAULT`]).

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
    // Bounded (HPCSCOPE_MAX_INPUT_MB), and noted as an input that no output may replace.
    let bytes = hpcscope_core::load::read_bytes(path)
        .map_err(|e| Failure::new(e.kind(), format!("cannot read {origin}: {e}")))?;
    if bytes.starts_with(b"PERFILE2") || bytes.starts_with(b"PERFFILE") {
        let text = perf_script_of(path)?;
        let mut imp = from_perf_script(&text, &origin)?;
        imp.format = SourceFormat::PerfData;
        return Ok(imp);
    }
    match String::from_utf8(bytes) {
        Ok(text) => from_text(&text, &origin),
        Err(e) => {
            // perf writes names as the bytes it has: a command name cut at 15 bytes can end
            // inside a UTF-8 character. Text with such bytes is read with each replaced by
            // U+FFFD; a NUL byte says the file is not text at all.
            let at = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            if bytes.contains(&0) {
                return Err(Failure::input(format!(
                    "{origin}: not text (invalid UTF-8 at byte {at}, NUL bytes) and not a \
                     perf.data file; give perf script output, folded stacks, hpcscope profile \
                     JSON or a perf.data file"
                )));
            }
            let text = String::from_utf8_lossy(&bytes);
            let mut imp = from_text(&text, &origin)?;
            imp.notes.push(format!(
                "bytes that are not UTF-8 (the first at byte {at}) were read as the \
                 replacement character U+FFFD: perf cuts command names at 15 bytes, which can split a character"
            ));
            Ok(imp)
        }
    }
}

/// Reads a profile from text: hpcscope JSON, `perf script` output or folded stacks.
pub fn from_text(text: &str, origin: &str) -> Result<Imported, Failure> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        return from_hpcscope_json(text, origin);
    }
    if looks_like_perf_script(text) {
        return from_perf_script(text, origin);
    }
    from_folded(text, origin)
}

/// `perf script` output: its first line that is neither a comment nor blank is a sample
/// header (as inferno reads one), and an indented frame line follows a header somewhere in
/// the first 200 lines.
fn looks_like_perf_script(text: &str) -> bool {
    let first = text
        .lines()
        .take(200)
        .find(|l| !l.starts_with('#') && !l.trim().is_empty());
    if first.is_none_or(|l| header_event(l.trim_end()).is_none()) {
        return false;
    }
    text.lines()
        .take(200)
        .any(|l| l.starts_with('\t') || (l.starts_with("  ") && !l.trim().is_empty()))
}

/// What marks an error that is a fault of inferno rather than of the input: a panic of the
/// library, caught.
pub const LIBRARY_FAULT: &str = "a fault of the flame graph library (inferno)";

/// The error for a panic of inferno on `origin`.
fn library_fault(origin: &str, what: &str, caught: crate::guard::Caught) -> Failure {
    Failure::new(
        hpcscope_core::ErrorKind::Internal,
        format!(
            "{origin}: {what} failed, {LIBRARY_FAULT}: {}; nothing was written. Check that \
             the input is unmodified `perf script` output, folded stacks or hpcscope profile \
             JSON; if it is, report it to hpcscope with this message",
            caught.0
        ),
    )
}

/// The event of a `perf script` sample header, read as inferno's collapser reads it: the
/// command name ends before the first word of digits (a thread id, or `pid/tid`) that a
/// space follows, and the event is the last word before the second colon after that word
/// (`comm 123/456 [001] 7.5: 250000 cpu-clock:` gives `cpu-clock`; `cycles:u:` gives
/// `cycles`). `None` for a line inferno does not take as a header with an event.
fn header_event(line: &str) -> Option<&str> {
    header_parts(line).map(|h| h.event)
}

/// A sample header, as inferno reads it (see [`header_event`]).
struct Header<'a> {
    /// The event.
    event: &'a str,
    /// The period: the word before the event, when it is a number.
    period: Option<u64>,
    /// What follows the colon after the event.
    rest: Option<&'a str>,
}

/// The parts of a sample header (see [`header_event`]).
fn header_parts(line: &str) -> Option<Header<'_>> {
    let mut all_digits = false;
    let mut last_was_space = false;
    let mut end = None;
    for (i, c) in line.char_indices() {
        if c == ' ' {
            if all_digits && !last_was_space {
                end = Some(i + 1);
                break;
            }
            all_digits = true;
        } else if !(c == '/' || c.is_ascii_digit()) {
            all_digits = false;
        }
        last_was_space = c == ' ';
    }
    let mut parts = line[end?..].splitn(3, ':').skip(1);
    let mut words = parts.next()?.rsplit(' ');
    let event = words.next()?;
    let period = words.next().and_then(|w| w.parse().ok());
    Some(Header {
        event,
        period,
        rest: parts.next(),
    })
}

/// Whether a header line carries its only frame after the event (`cycles:  ffff8 f ([k])`),
/// as inferno decides it.
fn header_has_frame(line: &str) -> bool {
    let Some(Header {
        rest: Some(post), ..
    }) = header_parts(line)
    else {
        return false;
    };
    let start = post.find([':', ' ']).map_or(0, |i| i + 1);
    !post[start..].trim().is_empty()
}

/// `text` with each character outside ASCII written as `%XX` per byte of its UTF-8 form and
/// each `%` as `%25`, lines stripped of trailing whitespace (as inferno strips them): what
/// inferno's collapser reads without slicing inside a character. [`unescape`] restores it.
fn escape_non_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end();
        for c in body.chars() {
            if c.is_ascii() && c != '%' {
                out.push(c);
            } else {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
        }
        if line.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The text [`escape_non_ascii`] escaped (any `%` not followed by two hex digits is kept).
fn unescape(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
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

/// An event of a `perf script` text: its samples and the sum of their periods (a sample
/// without one weighs 1, as in inferno), `None` when the sum passes 2^64 - 1.
struct EventCount {
    name: String,
    samples: u64,
    weight: Option<u64>,
}

/// The event of each sample header (`comm pid [cpu] time: period event:`), in order of
/// first appearance, with its samples and their weight. Headers and frame lines are told
/// apart as inferno tells them apart: after a header, every line up to a blank one is a
/// frame.
fn perf_events(text: &str) -> Vec<EventCount> {
    let mut out: Vec<EventCount> = Vec::new();
    let mut in_sample = false;
    for l in text.lines() {
        if l.starts_with('#') {
            continue;
        }
        let l = l.trim_end();
        if l.is_empty() {
            in_sample = false;
            continue;
        }
        if in_sample {
            continue;
        }
        let Some(h) = header_parts(l) else {
            continue;
        };
        // A header of the kept event (the first) may carry its only frame; inferno reads
        // the lines after any other header as its frames.
        let kept = out.first().is_none_or(|e| e.name == h.event);
        in_sample = !(kept && header_has_frame(l));
        let period = h.period.unwrap_or(1);
        match out.iter_mut().find(|e| e.name == h.event) {
            Some(e) => {
                e.samples += 1;
                e.weight = e.weight.and_then(|w| w.checked_add(period));
            }
            None => out.push(EventCount {
                name: h.event.to_string(),
                samples: 1,
                weight: Some(period),
            }),
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
    let Some(EventCount {
        name: first,
        weight,
        ..
    }) = events.first()
    else {
        return Err(Failure::input(format!(
            "{origin}: no perf script sample header (`comm pid time: period event:`) was \
             found; give the output of `perf script`, folded stacks, hpcscope profile JSON or \
             a perf.data file"
        )));
    };
    if weight.is_none() {
        return Err(Failure::input(format!(
            "{origin}: the periods of the {first} samples add up past 2^64 - 1, more than \
             perf writes for a recording: check that the file is unmodified `perf script` \
             output"
        )));
    }
    let mut opts = inferno::collapse::perf::Options::default();
    opts.annotate_kernel = true;
    // A frame without a symbol keeps its address (`[liblzma.so.5 <7f3a1c2b4e10>]`), as perf
    // report lists them: without it every address of a stripped library became one row.
    opts.include_addrs = true;
    opts.nthreads = 1;
    // The event to keep, given: inferno would otherwise take it from the first stack and
    // assert that it found one.
    opts.event_filter = Some(escape_non_ascii(first));
    let escaped = escape_non_ascii(text);
    let mut out = Vec::new();
    crate::guard::no_panic(|| {
        inferno::collapse::perf::Folder::from(opts).collapse(escaped.as_bytes(), &mut out)
    })
    .map_err(|c| library_fault(origin, "collapsing the perf script stacks", c))?
    .map_err(|e| Failure::input(format!("{origin}: not perf script output: {e}")))?;
    let folded = unescape(&String::from_utf8_lossy(&out));
    if folded.trim().is_empty() {
        return Err(Failure::input(format!(
            "{origin}: no sample with a call chain was found; record with `perf record -g` (or \
             --call-graph dwarf) and give the output of `perf script`"
        )));
    }
    let mut imp = from_folded(&folded, origin)?;
    imp.format = SourceFormat::PerfScript;
    let event = first.clone();
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
    for EventCount {
        name: e,
        samples: n,
        ..
    } in events.iter().skip(1)
    {
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
    // The sum of every count: no stack's, nor the profile's total, can pass it.
    let mut total = 0u64;
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
        total = total
            .checked_add(count)
            .ok_or_else(|| bad("the counts add up past 2^64 - 1 here"))?;
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
    if profile
        .samples
        .iter()
        .try_fold(0u64, |t, s| t.checked_add(s.count))
        .is_none()
    {
        return Err(Failure::input(format!(
            "{origin}: the sample counts add up past 2^64 - 1, more than a profile holds: \
             check that the file is unmodified `hpcscope profile --format json` output"
        )));
    }
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
    crate::guard::no_panic(|| {
        inferno::differential::from_readers(
            inferno::differential::Options {
                normalize,
                strip_hex: false,
            },
            a.as_bytes(),
            b.as_bytes(),
            &mut diff,
        )
    })
    .map_err(|c| library_fault("the two profiles", "comparing their stacks", c))?
    .map_err(|e| Failure::new(hpcscope_core::ErrorKind::Internal, e.to_string()))?;
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "samples".into();
    let mut out = Vec::new();
    let lines: Vec<String> = diff.lines().map_while(Result::ok).collect();
    crate::guard::no_panic(|| {
        inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut out)
    })
    .map_err(|c| {
        library_fault(
            "the two profiles",
            "drawing the differential flame graph",
            c,
        )
    })?
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

    /// Stripped code: every address of a library became one row (`[liblzma.so.5.4.1]` 93 %)
    /// where perf report lists the addresses; each keeps its own now.
    #[test]
    fn frames_without_a_symbol_keep_their_address() {
        let text = "\
xz 10/10 [000] 1.000000:     250000 cpu-clock:
\t    7f0000001000 [unknown] (/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1)
\t    5555000010a0 main (/usr/bin/xz)

xz 10/10 [000] 1.001000:     250000 cpu-clock:
\t    7f0000002000 [unknown] (/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1)
\t    5555000010a0 main (/usr/bin/xz)

xz 10/10 [000] 1.002000:     250000 cpu-clock:
\t    7f0000002000 [unknown] (/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1)
\t    5555000010a0 main (/usr/bin/xz)
";
        let imp = from_perf_script(text, "t").unwrap();
        let h = imp.profile.hot_functions(3);
        assert_eq!(h.len(), 3, "{h:?}");
        assert_eq!(h[0].name, "[liblzma.so.5.4.1 <7f0000002000>]");
        assert_eq!(h[0].self_samples, 500_000);
        assert_eq!(h[1].name, "[liblzma.so.5.4.1 <7f0000001000>]");
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

    fn fixture(name: &str) -> std::path::PathBuf {
        hpcscope_test_support::test_data!(name)
    }

    /// `perf record -e cpu-clock -g` of a C program whose functions are named
    /// `计算密集型函数内核` and `café_crème`, run as `./ab计算密集型` (perf cuts the command
    /// name at 15 bytes, inside `型`), then `perf script`, cut to 22 samples of 250000 ns:
    /// 4 of the start-up (loader and kernel), 10 with the first function on top, 7 with the
    /// second and one in the kernel.
    #[test]
    fn perf_script_with_utf8_names_imports() {
        let imp = import(&fixture("perf-script-utf8.txt")).unwrap();
        assert_eq!(imp.format, SourceFormat::PerfScript);
        let p = &imp.profile;
        assert_eq!(p.total(), 22 * 250_000);
        let h = p.hot_functions(3);
        assert_eq!(h[0].name, "计算密集型函数内核");
        assert_eq!(h[0].self_samples, 10 * 250_000);
        assert_eq!(h[1].name, "café_crème");
        assert_eq!(h[1].self_samples, 7 * 250_000);
        // The command name as perf wrote it, its cut character replaced (and said so).
        assert!(
            p.samples.iter().all(|s| s.comm == "ab计算密集\u{FFFD}"),
            "{:?}",
            p.samples[0].comm
        );
        assert!(
            imp.notes.iter().any(|n| n.contains("U+FFFD")),
            "{:?}",
            imp.notes
        );
        assert!(
            p.folded()
                .contains(";__libc_start_call_main;计算密集型函数内核 2500000\n"),
            "{}",
            p.folded()
        );
        // The flame graph of these names draws.
        assert!(p.flamegraph_svg("t").unwrap().contains("café_crème"));
    }

    /// inferno 0.12.8 panicked (`byte index 10 is not a char boundary`) on a function name
    /// whose last 17 bytes start inside a character: every length of such names, around a
    /// Rust hash too (which inferno still recognises and strips).
    #[test]
    fn names_that_inferno_sliced_inside_a_character() {
        for n in 1..=12 {
            for name in [
                "计".repeat(n),
                format!("x{}", "é".repeat(n)),
                format!("{}::h0123456789abcdef", "é".repeat(n)),
                format!("100%_{}", "€".repeat(n)),
            ] {
                let text = format!(
                    "app 1 1.0: 1000 cpu-clock:\n\t1 {name}+0x10 (/bin/app)\n\t2 main (/bin/app)\n\n"
                );
                let imp = from_text(&text, "t").unwrap_or_else(|e| panic!("{name}: {e}"));
                let want = name.strip_suffix("::h0123456789abcdef").unwrap_or(&name);
                assert_eq!(imp.profile.hot_functions(1)[0].name, want);
                assert_eq!(imp.profile.total(), 1000);
            }
        }
    }

    /// inferno asserted that the first stack names an event: text whose first content is
    /// an indented line, or JSON that does not parse, went to it and panicked.
    #[test]
    fn text_without_a_sample_header_is_an_error() {
        for text in [
            "\t",
            "\n  foo",
            "\n\n[\n  1,\n  2\n",
            "\n\n[\n  {\"a\": 1}\n]\n",
            "#c\n\n\tffff f (k)\n\nw 1 1.0: 1 cpu-clock:\n\t1 f (m)\n",
            "garbage\n\tffff f (k)\n",
        ] {
            let e = from_text(text, "in.txt").unwrap_err();
            assert!(e.message.starts_with("in.txt"), "{text:?}: {e}");
            assert!(!e.message.contains(LIBRARY_FAULT), "{text:?}: {e}");
        }
        // Given to the perf script reader directly, the same texts are refused, not passed
        // to inferno without an event.
        for text in ["\t", "\n  foo", "garbage\n\tffff f (k)\n", "\n\nx\n"] {
            let e = from_perf_script(text, "in.txt").unwrap_err();
            assert!(e.message.contains("no perf script sample header"), "{e}");
        }
        // A stray frame line before the first header: inferno gets the event of that
        // header, so its first stack need not name one.
        let imp = from_perf_script(
            "#c\n\n\tffff f (k)\n\nw 1 1.0: 1 cpu-clock:\n\t1 f (m)\n",
            "in.txt",
        )
        .unwrap();
        assert_eq!(imp.profile.folded(), "w;f 1\n");
    }

    #[test]
    fn events_are_read_as_inferno_reads_them() {
        assert_eq!(
            header_event("java 12688/12764 [002] 6544038.708352: 250000 cpu-clock:"),
            Some("cpu-clock")
        );
        assert_eq!(
            header_event("vote   913    72.176760:     257597 cycles:uppp:"),
            Some("cycles")
        );
        assert_eq!(
            header_event("V8 WorkerThread 25607 4794564.109216: cycles:"),
            Some("cycles")
        );
        assert_eq!(header_event("\t1170 hot_a+0x27 (/tmp/w)"), None);
        assert_eq!(header_event("no digits here: x:"), None);
        assert!(header_has_frame(
            "false 64414 20110.539270:      34467 cycles:u:  ffffffff9aa3c8de [unknown] ([unknown])"
        ));
        assert!(!header_has_frame(
            "vote   913    72.176760:     257597 cycles:uppp:"
        ));
        // Two events: the second is counted and left out, as perf report would.
        let text = format!(
            "{PERF_SCRIPT}\nw  9965  7898.099061:    7 page-faults: \n\t            1170 hot_a+0x27 (/tmp/w)\n"
        );
        let ev: Vec<(String, u64, Option<u64>)> = perf_events(&text)
            .into_iter()
            .map(|e| (e.name, e.samples, e.weight))
            .collect();
        assert_eq!(
            ev,
            vec![
                ("cpu-clock".to_string(), 4, Some(4_504_504)),
                ("page-faults".to_string(), 1, Some(7))
            ]
        );
        let imp = from_text(&text, "t").unwrap();
        assert_eq!(imp.profile.total(), 4_504_504);
        assert!(
            imp.notes[0].contains("1 samples of event page-faults"),
            "{:?}",
            imp.notes
        );
    }

    /// Counts whose sum passes 2^64 - 1 overflowed the total (a panic in a debug build, a
    /// wrong total in a release one): each format refuses them.
    #[test]
    fn counts_past_u64_are_refused() {
        let max = u64::MAX;
        for (text, want) in [
            (format!("a {max}\nb;c {max}\n"), "t:2: the counts add up"),
            (format!("a {max}\na 1\n"), "t:2: the counts add up"),
            (
                format!(
                    r#"{{"profile": {{"hz": 0, "duration_s": 0.0, "missing_user_stacks": 0, "samples": [
                    {{"pid": 1, "tid": 1, "comm": "a", "frames": [], "count": {max}}},
                    {{"pid": 1, "tid": 1, "comm": "b", "frames": [], "count": 1}}]}}}}"#
                ),
                "t: the sample counts add up",
            ),
            (
                format!(
                    "w 1 1.0: {max} cpu-clock:\n\t1 f (m)\n\nw 1 2.0: 1 cpu-clock:\n\t1 f (m)\n"
                ),
                "t: the periods of the cpu-clock samples add up",
            ),
        ] {
            let e = from_text(&text, "t").unwrap_err();
            assert!(e.message.starts_with(want), "{text}: {e}");
        }
        // Up to the limit, the total is exact.
        let imp = from_text(&format!("a {}\nb 1\n", max - 1), "t").unwrap();
        assert_eq!(imp.profile.total(), max);
    }

    #[test]
    fn escaping_round_trips() {
        for s in [
            "",
            "abc",
            "100%",
            "%25",
            "计算 café\n",
            "a%E8b",
            "%",
            "%4",
            "\u{10FFFF}",
        ] {
            assert_eq!(unescape(&escape_non_ascii(s)), s, "{s:?}");
            assert!(escape_non_ascii(s).is_ascii());
        }
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
