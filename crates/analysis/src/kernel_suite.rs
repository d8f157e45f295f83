//! The counter validation suite's kernels counted by `mix` instead of perf: what
//! `counters validate --counted-by mix` does. The kernels run in a binary that has them
//! (hpcscope itself, `counters kernel NAME...`), under the engine `mix` chooses, one run per
//! batch of distinct functions (the libm kernels one run each, counted with their callees).

use std::path::Path;

use anyhow::{Context, Result};
use hpcscope_counters::suite::{self, Kernel};
use hpcscope_counters::validate::{self, SuiteReport};

/// Counts the suite under `mix`: the plan for the widths the engine counts here (`quick`:
/// the short plan), limited to the kernel `groups` (every group when empty). `exe` is the
/// binary whose `counters kernel` runs the kernels.
pub fn suite_under_mix(exe: &Path, quick: bool, groups: &[String]) -> Result<SuiteReport> {
    let native = hpcscope_mix::engine::avx512_counted_here();
    let widths = suite::mix_widths(native);
    let omitted = suite::crunch_omissions(&widths, !native);
    let plan = if quick {
        suite::Plan::quick(widths)
    } else {
        suite::Plan::emulated(widths)
    };
    let mut rep = count(exe, &suite::select(&plan, groups))?;
    if suite::selects(groups, "fp") {
        rep.notes = [omitted, std::mem::take(&mut rep.notes)].concat();
    }
    Ok(rep)
}

/// Runs the kernels under `mix` and compares each one's counts with its analytical ones.
fn count(exe: &Path, kernels: &[Kernel]) -> Result<SuiteReport> {
    let (mut checks, mut notes) = (Vec::new(), Vec::<String>::new());
    for b in &suite::batches(kernels) {
        let mut args = vec!["counters".to_string(), "kernel".into()];
        args.extend(b.iter().map(|k| k.arg()));
        let symbols: Vec<String> = b.iter().map(|k| k.symbol()).collect();
        let callees = b[0].has_callees();
        let opts = hpcscope_mix::MixOptions {
            run: hpcscope_mix::RunSpec {
                program: exe.to_path_buf(),
                args,
                functions: if callees { Vec::new() } else { symbols.clone() },
                scope: if callees { symbols.clone() } else { Vec::new() },
                ..Default::default()
            },
            native_runs: 0,
            application: Some("validation-kernels".into()),
            ..Default::default()
        };
        let rep = hpcscope_mix::analyze(&opts)?;
        // Which engine counted (libm kernels with their callees: QEMU, for --scope).
        if let Some(n) = rep.notes.first().filter(|n| !notes.contains(n)) {
            notes.push(n.clone());
        }
        let v = rep
            .variants
            .first()
            .context("the emulator returned no counts")?;
        if v.partial {
            notes.push(format!(
                "{}: the emulation ended early ({:?}): counts partial",
                symbols.join(", "),
                v.ending
            ));
        }
        for (i, k) in b.iter().enumerate() {
            let t = if callees {
                Some(&v.counts.totals)
            } else {
                v.regions().get(i).map(|r| &r.totals)
            };
            let Some(t) = t else {
                checks.extend(validate::compare(
                    k,
                    &Default::default(),
                    Some("the emulator reported no region for this function"),
                ));
                continue;
            };
            let c = validate::EmulatorCounts {
                flops: t.flops,
                fp_instructions: t.fp_instructions,
                fp_by_width: t
                    .fp_by_width
                    .iter()
                    .map(|(w, c)| (w.clone(), c.instructions))
                    .collect(),
                bytes_loaded: t.bytes_loaded,
                bytes_stored: t.bytes_stored,
            };
            checks.extend(validate::compare(
                k,
                &validate::counted_from_emulator(k, &c),
                None,
            ));
        }
    }
    Ok(SuiteReport::new("mix", notes, checks))
}
