//! Reports as the seed lays them out: metric rows grouped by category, one column per
//! configuration (run, machine, region), as text, Markdown, CSV or JSON. Two columns get a
//! third with their ratio (`compare`); a ladder of versions, ratios to the first or to the
//! previous version on request.

use serde::Serialize;

use crate::catalogue::MetricSet;
use crate::compute::{MetricValue, Report};

pub use hpcscope_report::Format;
pub use hpcscope_report::fmt::metric as fmt_value;

/// One column: a configuration's region.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    /// Header.
    pub header: String,
    /// Values in catalogue order.
    pub values: Vec<MetricValue>,
}

/// Columns for the regions of the reports (all regions, or the one named).
pub fn columns(reports: &[Report], region: Option<&str>, per_thread: bool) -> Vec<Column> {
    let mut cols = Vec::new();
    for r in reports {
        let many = r.regions.len() > 1 || reports.len() == 1;
        for reg in &r.regions {
            if region.is_some_and(|n| n != reg.name) {
                continue;
            }
            let header = if reports.len() == 1 {
                reg.name.clone()
            } else if many {
                format!("{} {}", r.label, reg.name)
            } else {
                r.label.clone()
            };
            cols.push(Column {
                header,
                values: reg.total.clone(),
            });
            if per_thread {
                for t in &reg.threads {
                    cols.push(Column {
                        header: format!("{} t{}", reg.name, t.thread),
                        values: t.metrics.clone(),
                    });
                }
            }
        }
    }
    cols
}

fn cell(m: &MetricValue, scale: f64) -> String {
    match m.value {
        None => "NA".into(),
        Some(v) => {
            let mut s = fmt_value(v * scale);
            if m.multiplexed {
                s.push('*');
            }
            if m.warning.is_some() {
                s.push('!');
            }
            s
        }
    }
}

/// Which ratio columns a comparison of runs gets (one column per run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Ratios {
    /// Two runs: B / A; more runs: none.
    #[default]
    Auto,
    /// Every run over the first (a version ladder against its baseline).
    First,
    /// Every run over the one before it (what each step changed).
    Previous,
    /// No ratio column.
    None,
}

/// The ratio columns for `n` columns: `(numerator, denominator)` indices.
fn ratio_pairs(ratios: Ratios, reports: usize, n: usize) -> Vec<(usize, usize)> {
    // Ratios compare runs: only when each run gives one column.
    if reports != n || n < 2 {
        return Vec::new();
    }
    match ratios {
        Ratios::Auto if n == 2 => vec![(1, 0)],
        Ratios::Auto | Ratios::None => Vec::new(),
        Ratios::First => (1..n).map(|i| (i, 0)).collect(),
        Ratios::Previous => (1..n).map(|i| (i, i - 1)).collect(),
    }
}

/// Checks that `region`, when given, names a region of one of `reports` (the error lists
/// the regions there are).
pub fn check_region(reports: &[Report], region: Option<&str>) -> crate::Result<()> {
    let Some(r) = region else {
        return Ok(());
    };
    if reports
        .iter()
        .any(|x| x.regions.iter().any(|g| g.name == r))
    {
        return Ok(());
    }
    let names: Vec<String> = reports
        .iter()
        .flat_map(|x| x.regions.iter().map(|g| g.name.clone()))
        .collect();
    Err(crate::Error::Input(format!(
        "no region named '{r}'; regions: {}",
        names.join(", ")
    )))
}

/// `counters recipes [ID]` in `format`: recipe `id`, or every recipe of `cat`; the text
/// listing marks this CPU's and ends with what this machine's PMU offers.
pub fn recipes_listing(
    cat: &crate::catalogue::Catalogue,
    id: Option<&str>,
    format: Format,
) -> crate::Result<String> {
    if let Some(id) = id {
        let r = cat.find(id)?;
        return Ok(if format == Format::Json {
            json(r)
        } else {
            recipe_text(r)
        });
    }
    if format == Format::Json {
        // Keys sorted at every level, as this output has always been printed.
        return Ok(json(
            &serde_json::to_value(recipes_json(cat)).unwrap_or_default(),
        ));
    }
    Ok(format!(
        "{}{}\n",
        recipes_text(cat, &crate::cpu::CpuId::detect()),
        crate::perf::probe()
    ))
}

/// `v` as pretty JSON, with a newline.
fn json<T: Serialize + ?Sized>(v: &T) -> String {
    format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default())
}

/// The catalogue's recipes as `counters recipes --format json` lists them: id, name,
/// aliases, whether the seed gives them, and the file each comes from.
pub fn recipes_json(cat: &crate::catalogue::Catalogue) -> Vec<RecipeEntry<'_>> {
    (cat.recipes.iter())
        .map(|(o, r)| RecipeEntry {
            aliases: &r.recipe.aliases,
            file: o,
            from_seed: r.recipe.from_seed,
            id: &r.recipe.id,
            name: &r.recipe.name,
        })
        .collect()
}

/// One entry of `counters recipes --format json`.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RecipeEntry<'a> {
    /// Other names the recipe answers to.
    pub aliases: &'a [String],
    /// The file it was read from (`builtin` for the bundled ones).
    pub file: &'a str,
    /// Whether it was generated from a seed table.
    pub from_seed: bool,
    /// Recipe id.
    pub id: &'a str,
    /// Human name.
    pub name: &'a str,
}

/// Renders reports. `region` picks one region; `per_thread` adds per-thread columns.
pub fn render(
    reports: &[Report],
    set: &MetricSet,
    region: Option<&str>,
    per_thread: bool,
    format: Format,
) -> String {
    render_with(reports, set, region, per_thread, format, Ratios::Auto)
}

/// [`render`] with the ratio columns chosen (`counters compare --ratio`).
pub fn render_with(
    reports: &[Report],
    set: &MetricSet,
    region: Option<&str>,
    per_thread: bool,
    format: Format,
    ratios: Ratios,
) -> String {
    if format == Format::Json {
        return serde_json::to_string_pretty(reports).unwrap_or_default();
    }
    let cols = columns(reports, region, per_thread);
    let pairs = ratio_pairs(ratios, reports.len(), cols.len());
    let mut headers = vec!["metric".to_string()];
    headers.extend(cols.iter().map(|c| c.header.clone()));
    for &(i, j) in &pairs {
        headers.push(format!("{} / {}", cols[i].header, cols[j].header));
    }
    let mut table =
        hpcscope_report::Table::new(&headers.iter().map(String::as_str).collect::<Vec<_>>());
    for cat in &set.categories {
        let ms: Vec<_> = set
            .metrics
            .iter()
            .filter(|m| m.category == cat.id)
            .collect();
        // Software-event rows only when some column has one.
        let any = ms.iter().any(|m| {
            cols.iter()
                .any(|c| c.values.iter().any(|v| v.id == m.id && v.value.is_some()))
        });
        if cat.id == "software" && !any {
            continue;
        }
        table.group(cat.label.clone());
        for m in ms {
            let mut r = vec![m.label.clone()];
            let vals: Vec<Option<&MetricValue>> = cols
                .iter()
                .map(|c| c.values.iter().find(|v| v.id == m.id))
                .collect();
            for v in &vals {
                r.push(v.map_or("NA".into(), |v| cell(v, m.scale)));
            }
            for &(i, j) in &pairs {
                let q = match (vals[j].and_then(|v| v.value), vals[i].and_then(|v| v.value)) {
                    (Some(a), Some(b)) if a != 0.0 => fmt_value(b / a),
                    _ => "NA".into(),
                };
                r.push(q);
            }
            table.row(r);
        }
    }
    let mut out = match format {
        Format::Csv => table.csv(),
        Format::Md => table.md(),
        _ => table.text(),
    };
    if format != Format::Csv {
        out.push_str(&footnotes(reports, &cols));
    }
    out
}

/// The notes under a table: the PMU status once, NA reasons once each, multiplexing,
/// warnings and the recipes' caveats.
pub fn footnotes(reports: &[Report], cols: &[Column]) -> String {
    let mut out = String::new();
    let mut said: Vec<String> = Vec::new();
    let mut say = |out: &mut String, s: String| {
        if !said.contains(&s) {
            out.push_str(&s);
            out.push('\n');
            said.push(s);
        }
    };
    out.push('\n');
    for r in reports {
        say(
            &mut out,
            format!(
                "{}: recipe {} ({}), precision {}, source {}",
                r.label, r.recipe, r.variant, r.precision, r.source
            ),
        );
        if let Some(h) = &r.hardware_unavailable {
            say(&mut out, format!("NA hardware metrics: {h}"));
        }
        if !r.multiplexed_counters.is_empty() {
            say(
                &mut out,
                format!(
                    "* multiplexed (scaled by enabled/running time): {}",
                    r.multiplexed_counters.join(", ")
                ),
            );
        }
        for w in &r.warnings {
            say(&mut out, format!("warning: {w}"));
        }
        for n in &r.notes {
            say(&mut out, format!("note: {n}"));
        }
    }
    let hw_down = reports.iter().any(|r| r.hardware_unavailable.is_some());
    // NA reasons, each once, with the metrics it hides.
    let mut na: Vec<(String, Vec<String>)> = Vec::new();
    for c in cols {
        for v in &c.values {
            if let Some(w) = &v.warning {
                say(&mut out, format!("! {} {}: {w}", c.header, v.id));
            }
            if let Some(why) = &v.na
                && !(hw_down && (why.contains("not available") || why.contains("<not supported>")))
                && !why.contains("cannot be measured")
            {
                match na.iter_mut().find(|(r, _)| r == why) {
                    Some((_, ids)) => {
                        if !ids.contains(&v.id) {
                            ids.push(v.id.clone());
                        }
                    }
                    None => na.push((why.clone(), vec![v.id.clone()])),
                }
            }
        }
    }
    for (why, ids) in na {
        say(&mut out, format!("NA {}: {why}", ids.join(", ")));
    }
    for r in reports {
        let mut cm: Vec<String> = Vec::new();
        for reg in &r.regions {
            for v in &reg.total {
                if let Some(na) = &v.na
                    && let Some(p) = na.find("cannot be measured on ")
                {
                    let s = na[p..].to_string();
                    if !cm.contains(&s) {
                        cm.push(s);
                    }
                }
            }
        }
        for s in cm {
            say(&mut out, format!("NA: {s}"));
        }
    }
    out
}

/// The metrics of a whole-run report as a section of an HTML report: every metric with a
/// value (counts as integers), and how many hardware metrics this machine could not give.
pub fn html_section(r: &Report, title_prefix: &str) -> hpcscope_report::Section {
    let cat = crate::catalogue::Catalogue::builtin();
    let mut rows = Vec::new();
    let mut na = 0;
    for m in r.regions.iter().flat_map(|g| &g.total) {
        let def = cat.metrics.metrics.iter().find(|d| d.id == m.id);
        let (label, unit, scale) = def.map_or((m.id.as_str(), "", 1.0), |d| {
            (d.label.as_str(), d.unit.as_str(), d.scale)
        });
        match m.value {
            Some(v) => {
                let v = v / if scale > 0.0 { scale } else { 1.0 };
                // Counts (page faults, switches) read as integers, not `2.000`.
                rows.push(vec![
                    label.to_string(),
                    hpcscope_report::fmt::count(v),
                    unit.to_string(),
                ])
            }
            None => na += 1,
        }
    }
    let mut summary = format!(
        "{} metrics measured with the {} recipe",
        rows.len(),
        r.recipe
    );
    if let Some(why) = &r.hardware_unavailable {
        summary.push_str(&format!(
            "; {na} hardware metrics are not available here ({why})"
        ));
    }
    summary.push('.');
    let mut body = hpcscope_report::html_table(&["metric", "value", "unit"], &rows);
    body.push_str("<p>One native run of the whole program, counted with perf_event_open; `hpcscope counters run` gives the same per region and per thread.</p>");
    hpcscope_report::Section {
        title: format!("{title_prefix}Counters"),
        summary,
        body_html: body,
        svgs: vec![],
    }
}

/// The metrics by category: id, label, description and formula (`counters metrics`).
pub fn metrics_text(set: &MetricSet) -> String {
    let mut s = String::new();
    for c in &set.categories {
        s.push_str(&format!("{}\n", c.label));
        for m in set.metrics.iter().filter(|m| m.category == c.id) {
            s.push_str(&format!(
                "  {:<20} {:<20} {}  [{}]\n",
                m.id, m.label, m.description, m.formula
            ));
        }
    }
    s
}

/// One recipe in words: where it comes from, its formulas (both variants where the seed
/// contradicts itself), its events per collector, and what it cannot measure.
pub fn recipe_text(r: &crate::catalogue::Recipe) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({})\n  source: {}\n  events: {}",
        r.recipe.id, r.recipe.name, r.recipe.source, r.recipe.events_source
    );
    let _ = writeln!(
        out,
        "  from seed 001: {}",
        if r.recipe.from_seed { "yes" } else { "no" }
    );
    let _ = writeln!(out, "formulas:");
    for (k, f) in &r.formulas {
        match f {
            crate::catalogue::FormulaDef::One(s) => {
                let _ = writeln!(out, "  {k} = {s}");
            }
            crate::catalogue::FormulaDef::Variants {
                as_published,
                corrected,
                note,
            } => {
                let _ = writeln!(
                    out,
                    "  {k} (as_published) = {as_published}\n  {k} (corrected)    = {corrected}"
                );
                if let Some(n) = note {
                    let _ = writeln!(out, "      {n}");
                }
            }
        }
    }
    let _ = writeln!(out, "events:");
    for (k, e) in &r.events {
        let sp: Vec<String> = [
            ("perf", &e.perf),
            ("papi", &e.papi),
            ("likwid", &e.likwid),
            ("generic", &e.generic),
            ("raw", &e.raw),
            ("pmu", &e.pmu),
            ("reduce", &e.reduce),
            ("derived", &e.derived),
        ]
        .iter()
        .filter_map(|(n, v)| v.as_ref().map(|v| format!("{n}={v}")))
        .collect();
        let _ = writeln!(out, "  {k}: {}", sp.join("  "));
    }
    if !r.recipe.cannot_measure.is_empty() {
        let _ = writeln!(out, "cannot measure:");
        for (k, why) in &r.recipe.cannot_measure {
            let _ = writeln!(out, "  {k}: {why}");
        }
    }
    for n in &r.recipe.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The recipe list, and which recipe this CPU gets.
pub fn recipes_text(cat: &crate::catalogue::Catalogue, here: &crate::cpu::CpuId) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for (_, r) in &cat.recipes {
        let _ = writeln!(
            out,
            "{:<22} {}{}  [{}]",
            r.recipe.id,
            r.recipe.name,
            if r.recipe.from_seed {
                " (seed 001)"
            } else {
                ""
            },
            r.recipe.aliases.join(", ")
        );
    }
    let _ = writeln!(out);
    let c = cat.for_cpu_or_closest(here);
    match c.why {
        None => {
            let _ = writeln!(out, "this CPU ({here}): recipe {}", c.recipe.recipe.id);
        }
        Some(why) => {
            let _ = writeln!(
                out,
                "this CPU ({here}): no recipe of its own; takes {} ({why}); choose another with --recipe ID or --recipe-file FILE",
                c.recipe.recipe.id
            );
        }
    }
    out
}

/// `counters validate` in text (or CSV with `csv`): expected and measured value of each
/// metric of the triad, its error, and the seed's 0.5 % verdict on the FLOPs.
pub fn validation_text(
    n: u64,
    reps: u64,
    e: &crate::validate::Expected,
    checks: &[crate::validate::Check],
    rep: &Report,
    csv: bool,
) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let sep = if csv { "," } else { "  " };
    let _ = writeln!(
        out,
        "triad a[i] = b[i] + s*c[i], n = {}, reps = {} (DP): expected flops {:.4e}, LS bytes {:.4e}",
        n, reps, e.flops, e.ls_bytes
    );
    let _ = writeln!(
        out,
        "{}",
        ["metric", "expected", "measured", "error %"].join(sep)
    );
    for c in checks {
        let _ = writeln!(
            out,
            "{}",
            [
                c.metric.clone(),
                fmt_value(c.expected),
                c.measured.map_or("NA".into(), fmt_value),
                c.error_pct.map_or("NA".into(), |p| format!("{p:+.3}")),
            ]
            .join(sep)
        );
    }
    if let Some(r) = rep.regions.first() {
        for id in ["time", "cpu_time", "cpus_utilized", "page_faults"] {
            if let Some(v) = r.value(id) {
                let _ = writeln!(out, "{id}: {}", fmt_value(v));
            }
        }
    }
    if let Some(f) = checks
        .iter()
        .find(|c| c.metric == "flops")
        .and_then(|c| c.error_pct)
    {
        let _ = writeln!(
            out,
            "flops {} the seed's 0.5 % threshold",
            if f.abs() < 0.5 { "within" } else { "outside" }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(fmt_value(2581.04), "2581");
        assert_eq!(fmt_value(0.5312), "0.5312");
        assert_eq!(fmt_value(1.37e12), "1.370E12");
        assert_eq!(fmt_value(2.5e-5), "2.500E-5");
        assert_eq!(fmt_value(7.9997), "8.000");
        assert_eq!(fmt_value(393.0), "393");
        assert_eq!(fmt_value(0.0), "0");
    }
}
