//! `mix`'s tables: the summary (one row per vector length and machine) and the threads of
//! the first machine's profile, for `hpcscope_report`'s renderers.

use hpcscope_report::Table;
use hpcscope_report::fmt::num;

use hpcscope_core::Profile;
use hpcscope_core::profile::AppMetrics;

use crate::MixReport;

/// The summary table.
pub fn summary(r: &MixReport) -> hpcscope_core::Result<Table> {
    let mut t = Table::new(&[
        "vector",
        "machine",
        "FLOPs",
        "FP instr",
        "FLOPs/FP instr",
        "bytes",
        "bytes per level",
        "OI L1",
    ]);
    for v in &r.variants {
        for p in &v.profiles {
            // All threads: mix writes bytes per level for each.
            let th = all_threads(p)?;
            let total: f64 = th.bytes.iter().sum();
            let bpl = th
                .levels
                .iter()
                .zip(&th.bytes)
                .map(|(level, bytes)| {
                    format!(
                        "{level} {:.1}%",
                        if total > 0.0 {
                            100.0 * bytes / total
                        } else {
                            0.0
                        }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            t.row(vec![
                v.sve_bits
                    .map(|b| format!("SVE {b}"))
                    .unwrap_or_else(|| format!("{} bits", p.vector_bits)),
                p.machine.clone().unwrap_or_default(),
                num(th.flops, 4),
                num(th.fp_instructions, 4),
                if th.fp_instructions > 0.0 {
                    num(th.flops / th.fp_instructions, 4)
                } else {
                    "-".into()
                },
                num(total, 4),
                bpl,
                if total > 0.0 {
                    num(th.flops / total, 4)
                } else {
                    "-".into()
                },
            ]);
        }
    }
    Ok(t)
}

/// The threads of a profile's first region as one ([`Region::aggregate`]: counts and
/// bytes per level summed, the slowest thread's time).
///
/// [`Region::aggregate`]: hpcscope_core::profile::Region::aggregate
pub fn all_threads(p: &Profile) -> hpcscope_core::Result<AppMetrics> {
    p.regions[0].aggregate("the profile of mix")
}

/// One row per thread of the first machine's profile: counts and bytes per level.
pub fn thread_table(r: &MixReport) -> Option<Table> {
    let v = r.variants.first()?;
    let p = v.profiles.first()?;
    let ths = &p.regions[0].threads;
    if ths.len() < 2 {
        return None;
    }
    let levels: Vec<String> = ths[0]
        .memory
        .bytes_per_level
        .iter()
        .flatten()
        .map(|l| format!("bytes {}", l.level))
        .collect();
    let mut head = vec![
        "thread".to_string(),
        "core".into(),
        "FLOPs".into(),
        "FP instr".into(),
        "time (s)".into(),
    ];
    head.extend(levels);
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(&head);
    for th in ths {
        let core = v
            .thread_caches
            .first()
            .and_then(|c| c.iter().find(|x| x.thread == th.thread))
            .map_or("-".to_string(), |x| x.core.to_string());
        let mut row = vec![
            th.thread.to_string(),
            core,
            num(th.flops, 4),
            num(th.fp_instructions, 4),
            th.time_s.map_or("-".into(), |x| num(x, 4)),
        ];
        row.extend(
            th.memory
                .bytes_per_level
                .iter()
                .flatten()
                .map(|l| num(l.bytes, 4)),
        );
        t.row(row);
    }
    Some(t)
}

/// The lines above a mix report's summary: the program (architecture, hash, compiler) and
/// its native time.
pub fn preamble(r: &MixReport) -> Vec<String> {
    let mut pre = vec![format!(
        "{} ({}, {}){}",
        r.program,
        r.arch.name(),
        &r.sha256[..12],
        r.compiler
            .as_deref()
            .map(|c| format!(", built by {c}"))
            .unwrap_or_default()
    )];
    if let Some(m) = hpcscope_core::stats::median(&r.native_times_s) {
        pre.push(format!(
            "native time: median {} s over {} runs",
            num(m, 4),
            r.native_times_s.len()
        ));
    }
    pre
}

/// The lines under a mix report's summary: the per-thread table (with `thread_table_too`,
/// for the text format), the notes, sampling, excluded FLOPs, bytes by access width, and per
/// variant the threads, the `functions` counted (by name) and the hottest functions.
pub fn notes(r: &MixReport, functions: &[String], thread_table_too: bool) -> Vec<String> {
    let mut epi: Vec<String> = Vec::new();
    if let Some(t) = thread_table(r)
        && thread_table_too
    {
        epi.push(format!(
            "per thread ({} placement, on the caches of {}):",
            r.variants[0].placement,
            r.variants[0].profiles[0]
                .machine
                .as_deref()
                .unwrap_or("the first machine")
        ));
        epi.extend(t.text().lines().map(str::to_string));
    }
    epi.extend(r.notes.iter().map(|n| format!("note: {n}")));
    for v in &r.variants {
        for n in v
            .profiles
            .first()
            .map(|p| p.notes.clone())
            .unwrap_or_default()
        {
            let line = format!("note: {n}");
            if !epi.contains(&line) {
                epi.push(line);
            }
        }
        let t = &v.counts.totals;
        let key = v
            .sve_bits
            .map(|b| format!(" (SVE {b})"))
            .unwrap_or_default();
        if let Some(s) = &v.sampling {
            let lines = s.lines();
            if let Some((first, rest)) = lines.split_first() {
                epi.push(format!("{first}{key}"));
                epi.extend(rest.iter().cloned());
            }
        }
        if t.flops_excluded > 0 {
            epi.push(format!(
                "note{key}: {} lane FLOPs of reductions and unused lanes left out (docs/flop-counting.md)",
                t.flops_excluded
            ));
        }
        if t.bytes_unreported > 0 {
            epi.push(format!(
                "note{key}: {} bytes of accesses QEMU does not report (SVE loads and stores, DC ZVA) are counted but not in the cache simulation",
                t.bytes_unreported
            ));
        }
        if let Some(w) = crate::widths::describe(t) {
            epi.push(format!("bytes by access width{key}: {w}"));
        }
        if v.threads().len() > 1 {
            epi.push(format!("per guest thread{key}:"));
            for th in v.threads() {
                epi.push(format!(
                    "  thread {:<3} (vCPU {:<3}) {:>14} FLOPs {:>14} FP instructions {:>14} bytes",
                    th.thread,
                    th.vcpu,
                    th.totals.flops,
                    th.totals.fp_instructions,
                    th.totals.bytes_loaded + th.totals.bytes_stored
                ));
            }
        }
        if v.regions().len() > 1 {
            epi.push(format!("per function{key}:"));
            for (name, r) in functions.iter().zip(v.regions()) {
                epi.push(format!(
                    "  {name:<32} {:>14} FLOPs {:>14} instructions {:>14} bytes",
                    r.totals.flops,
                    r.totals.instructions,
                    r.totals.bytes_loaded + r.totals.bytes_stored
                ));
            }
        }
        if !v.functions.is_empty() {
            epi.push(format!(
                "hottest functions{}:",
                v.sve_bits
                    .map(|b| format!(" (SVE {b})"))
                    .unwrap_or_default()
            ));
            for f in v.functions.iter().take(8) {
                epi.push(format!(
                    "  {:<32} {:>14} FLOPs {:>14} instructions",
                    f.function, f.flops, f.instructions
                ));
            }
        }
    }
    epi
}

/// The numbers a mix run keeps in the history store: per variant (`native`, `sveBITS`)
/// FLOPs, FP instructions, instructions, bytes, per-thread FLOPs and bytes per level of each
/// machine, and the native time.
pub fn record_numbers(r: &MixReport) -> hpcscope_core::Result<serde_json::Value> {
    let mut numbers = serde_json::Map::new();
    for v in &r.variants {
        let key = v
            .sve_bits
            .map(|b| format!("sve{b}"))
            .unwrap_or_else(|| "native".into());
        let t = &v.counts.totals;
        numbers.insert(format!("{key}.flops"), t.flops.into());
        numbers.insert(format!("{key}.fp_instructions"), t.fp_instructions.into());
        numbers.insert(format!("{key}.instructions"), t.instructions.into());
        if v.threads().len() > 1 {
            numbers.insert(format!("{key}.threads"), v.threads().len().into());
            for th in v.threads() {
                numbers.insert(
                    format!("{key}.thread{}.flops", th.thread),
                    th.totals.flops.into(),
                );
            }
        }
        numbers.insert(
            format!("{key}.bytes"),
            (t.bytes_loaded + t.bytes_stored).into(),
        );
        for p in &v.profiles {
            let th = all_threads(p)?;
            for (level, bytes) in th.levels.iter().zip(&th.bytes) {
                numbers.insert(
                    format!(
                        "{key}.{}.bytes_{level}",
                        p.machine.as_deref().unwrap_or("machine"),
                    ),
                    (*bytes).into(),
                );
            }
            if let Some(ts) = th.time_s {
                numbers.insert("time_s".into(), ts.into());
            }
        }
    }
    Ok(serde_json::Value::Object(numbers))
}

/// File name of one profile: the application's and the machine's names (and the SVE
/// vector length), with every character but ASCII letters, digits, `-` and `.` as `_`.
pub fn profile_file(r: &MixReport, sve: Option<u32>, machine: &str) -> String {
    let clean = |s: &str| {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    match sve {
        Some(b) => format!("{}-sve{b}-{}.json", clean(&r.application), clean(machine)),
        None => format!("{}-{}.json", clean(&r.application), clean(machine)),
    }
}

/// Whether `mix -o OUT` writes one file (`OUT` a `.json` file that is not a directory) for
/// its `profiles` profiles (machines x vector lengths); an error when that file would have
/// to take more than one. `mix` asks before the program runs, with the profiles it expects.
pub fn one_file(out: &std::path::Path, profiles: usize) -> Result<bool, crate::MixError> {
    let file = out.extension().is_some_and(|e| e == "json") && !out.is_dir();
    if file && profiles != 1 {
        return Err(crate::MixError::Usage {
            message: format!(
                "-o {}: one file takes one profile, and there are {profiles} (machines x vector lengths)",
                out.display()
            ),
            fix: "give a directory with -o".into(),
        });
    }
    Ok(file)
}

/// The files `mix -o OUT` writes, with their text: one profile's JSON when `out` is a
/// `.json` file that is not a directory (an error unless there is exactly one profile);
/// else, in the directory `out` (created here), one file per profile and `mix-report.json`.
pub fn output_files(
    r: &MixReport,
    out: &std::path::Path,
) -> Result<Vec<(std::path::PathBuf, String)>, crate::MixError> {
    let n: usize = r.variants.iter().map(|v| v.profiles.len()).sum();
    if one_file(out, n)? {
        let p = &r.variants[0].profiles[0];
        return Ok(vec![(out.to_path_buf(), p.to_json_string())]);
    }
    std::fs::create_dir_all(out).map_err(|e| {
        crate::MixError::Run(format!("cannot create directory {}: {e}", out.display()))
    })?;
    let mut files = Vec::new();
    for v in &r.variants {
        for p in &v.profiles {
            let machine = p.machine.as_deref().unwrap_or("machine");
            files.push((
                out.join(profile_file(r, v.sve_bits, machine)),
                p.to_json_string(),
            ));
        }
    }
    let report = serde_json::to_string_pretty(r)
        .map_err(|e| crate::MixError::Run(format!("serializing the report: {e}")))?;
    files.push((out.join("mix-report.json"), report + "\n"));
    Ok(files)
}
