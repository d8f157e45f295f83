//! `regress check --github`: the check as GitHub Actions sees it. Workflow commands
//! (`::error title=...::message`) put one annotation per regressed, improved or undecided
//! metric and per worsening change point on the run's page; the Markdown report goes to the
//! job's step summary (the file `$GITHUB_STEP_SUMMARY` names).

use crate::check::CheckReport;
use crate::gate::Verdict;

/// Escapes the message of a workflow command.
fn message(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property (`title=`) of a workflow command.
fn property(s: &str) -> String {
    message(s).replace(':', "%3A").replace(',', "%2C")
}

/// The workflow-command lines of `report`: `::error` for a regression, `::notice` for an
/// improvement, `::warning` for a metric without enough runs and for a change point in the
/// worse direction. Empty when there is nothing to annotate.
pub fn annotations(report: &CheckReport) -> String {
    let mut out = String::new();
    for r in &report.results {
        let level = match r.verdict {
            Verdict::Regression => "error",
            Verdict::Improvement => "notice",
            Verdict::Insufficient => "warning",
            Verdict::Unchanged => continue,
        };
        let mut msg = format!(
            "{} {}: {} (median {} -> {}{}). {}",
            r.metric,
            r.verdict.label(),
            crate::gate::change_text(r.rel_change, r.baseline_median, r.candidate_median),
            r.baseline_median,
            r.candidate_median,
            if r.unit.is_empty() {
                String::new()
            } else {
                format!(" {}", r.unit)
            },
            r.reason
        );
        if let Some(c) = &r.context {
            msg.push_str(&format!("\n{}", c.summary));
        }
        out.push_str(&format!(
            "::{level} title={}::{}\n",
            property(&format!(
                "hpcscope regress: {} {}",
                r.metric,
                r.verdict.label()
            )),
            message(&msg)
        ));
    }
    for c in report.change_points.iter().filter(|c| c.worse) {
        out.push_str(&format!(
            "::warning title={}::{}\n",
            property(&format!("hpcscope: change point in {}", c.metric)),
            message(&format!(
                "{} changed by {:+.2}% at run #{}{} (mean {} -> {}, step {:.1} x noise, p = {:.2e})",
                c.metric,
                100.0 * c.rel_change,
                c.run_id,
                c.git_commit
                    .as_deref()
                    .map(|g| format!(" (commit {})", &g[..g.len().min(10)]))
                    .unwrap_or_default(),
                c.mean_before,
                c.mean_after,
                c.step_over_noise,
                c.pvalue
            ))
        ));
    }
    out
}

/// Appends `markdown` to the job's step summary (`$GITHUB_STEP_SUMMARY`); `Ok(false)` when
/// the variable is not set (not in a GitHub Actions step).
pub fn append_step_summary(markdown: &str) -> std::io::Result<bool> {
    use std::io::Write as _;
    let Some(p) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return Ok(false);
    };
    let p = std::path::PathBuf::from(p);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p)
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("opening the step summary {}: {e}", p.display()),
            )
        })?;
    f.write_all(markdown.as_bytes()).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("appending to the step summary {}: {e}", p.display()),
        )
    })?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_properties_are_escaped() {
        assert_eq!(message("50%\nnext"), "50%25%0Anext");
        assert_eq!(property("a: b, c"), "a%3A b%2C c");
    }
}
