//! `bench mpi` results as IMB-like tables, CSV and Markdown, the Hockney fit in words, and
//! the time and bandwidth charts.

use hpcscope_report::fmt::num;
use hpcscope_report::{ChartOptions, Series, Table, line_chart_svg};

use super::{BenchmarkResult, MpiReport, Row};

fn t(v: f64) -> String {
    format!("{v:.2}")
}

/// One table per benchmark, IMB's columns plus the model's time.
pub fn bench_table(b: &BenchmarkResult) -> Table {
    let bw = b.bytes_factor.is_some();
    let mut h = vec![
        "#bytes",
        "#repetitions",
        "t_min[usec]",
        "t_max[usec]",
        "t_avg[usec]",
    ];
    if bw {
        h.push("Mbytes/sec");
    }
    if b.fit.is_some() {
        h.push("model[usec]");
    }
    let mut tab = Table::new(&h);
    for r in &b.rows {
        let mut row = vec![
            r.bytes.to_string(),
            r.repetitions.to_string(),
            t(r.t_min_us),
            t(r.t_max_us),
            t(r.t_avg_us),
        ];
        if bw {
            row.push(t(r.mbytes_per_s.unwrap_or(0.0)));
        }
        if let Some(m) = r.model_us {
            row.push(t(m));
        }
        tab.row(row);
    }
    tab
}

/// The Hockney fit of a benchmark in one line (or why there is none).
pub fn fit_line(b: &BenchmarkResult) -> Option<String> {
    if let Some(f) = &b.fit {
        let largest = b
            .rows
            .last()
            .and_then(|r| {
                r.mbytes_per_s
                    .map(|m| format!("; measured at {} B: {} MB/s", r.bytes, num(m, 5)))
            })
            .unwrap_or_default();
        Some(format!(
            "{} Hockney fit: t0 = {} µs, B = {} MB/s ({} GB/s), n_1/2 = {} B; {} sizes {} B .. {} B, {} weights; R² = {}, RMS relative error {}%, worst {}% at {} B{largest}",
            b.imb_name,
            num(f.t0_us, 4),
            num(f.bandwidth_mbs, 5),
            num(f.bandwidth_mbs / 1000.0, 4),
            num(f.n_half_bytes, 4),
            f.sizes_bytes.len(),
            f.sizes_bytes.first().copied().unwrap_or(0),
            f.sizes_bytes.last().copied().unwrap_or(0),
            f.weights.name(),
            num(f.r2, 4),
            num(f.rms_rel_error * 100.0, 3),
            num(f.max_rel_error * 100.0, 3),
            f.worst_bytes
        ))
    } else {
        b.fit_error
            .as_ref()
            .map(|e| format!("{}: no Hockney fit: {e}", b.imb_name))
    }
}

/// The whole report as text (`md` false) or Markdown: the run, one IMB-like table per
/// benchmark with its fit, the network link, the notes.
pub fn text_report(r: &MpiReport, md: bool) -> String {
    let mut s = String::new();
    let br = if md { "  \n" } else { "\n" };
    let head = [
        format!(
            "hpcscope bench mpi: {} ranks, ranks 0 and 1 {} ({}), {}",
            r.ranks,
            r.placement,
            r.hosts
                .iter()
                .take(2)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            r.mpi_library
        ),
        format!("launcher: {}", r.launcher),
    ];
    for l in head.iter().chain(&r.conventions) {
        s.push_str(l);
        s.push_str(br);
    }
    for b in &r.benchmarks {
        s.push('\n');
        if md {
            s.push_str(&format!("### {}\n\n", b.imb_name));
            s.push_str(&bench_table(b).md());
        } else {
            s.push_str(&format!("# Benchmarking {}\n", b.imb_name));
            s.push_str(&bench_table(b).text());
        }
        if let Some(l) = fit_line(b) {
            s.push('\n');
            s.push_str(&l);
            s.push('\n');
        }
    }
    if let Some(l) = &r.network {
        s.push('\n');
        s.push_str(&format!(
            "network link '{}': latency {} µs, bandwidth {} GB/s, n_1/2 = {} B (PingPong fit)\n",
            l.name,
            num(l.latency_us, 4),
            num(l.bandwidth_gbs, 4),
            num(l.n_half_bytes.unwrap_or(f64::NAN), 4)
        ));
    }
    for n in &r.notes {
        s.push_str(&format!("note: {n}{br}"));
    }
    s
}

/// Every row of every benchmark, for CSV.
pub fn csv_table(r: &MpiReport) -> Table {
    let mut tab = Table::new(&[
        "benchmark",
        "bytes",
        "repetitions",
        "t_min_us",
        "t_max_us",
        "t_avg_us",
        "mbytes_per_s",
        "model_us",
    ]);
    let opt = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    for b in &r.benchmarks {
        for row in &b.rows {
            tab.row(vec![
                b.benchmark.name().to_string(),
                row.bytes.to_string(),
                row.repetitions.to_string(),
                format!("{}", row.t_min_us),
                format!("{}", row.t_max_us),
                format!("{}", row.t_avg_us),
                opt(row.mbytes_per_s),
                opt(row.model_us),
            ]);
        }
    }
    tab
}

/// Two charts in one SVG: time and bandwidth against message size (log-log), each
/// benchmark's measurements solid and its Hockney model dashed.
pub fn chart_svg(r: &MpiReport) -> String {
    let mut time = Vec::new();
    let mut bw = Vec::new();
    for b in &r.benchmarks {
        // 0 B has no place on a log axis; it is in the tables.
        let pts = |f: &dyn Fn(&Row) -> Option<f64>| -> Vec<(f64, f64)> {
            b.rows
                .iter()
                .filter(|x| x.bytes > 0)
                .filter_map(|x| f(x).map(|y| (x.bytes as f64, y)))
                .collect()
        };
        time.push(Series {
            name: format!("{} t_avg", b.imb_name),
            points: pts(&|x| Some(x.t_avg_us)),
            dashed: false,
        });
        if b.bytes_factor.is_some() {
            bw.push(Series {
                name: format!("{} Mbytes/sec", b.imb_name),
                points: pts(&|x| x.mbytes_per_s),
                dashed: false,
            });
        }
        if let Some(f) = &b.fit {
            time.push(Series {
                name: format!("{} Hockney model", b.imb_name),
                points: pts(&|x| x.model_us),
                dashed: true,
            });
            bw.push(Series {
                name: format!("{} Hockney model", b.imb_name),
                points: pts(&|x| x.model_us.map(|m| f.bytes_factor * x.bytes as f64 / m)),
                dashed: true,
            });
        }
    }
    let who = format!(
        "{} ranks, {}, {}",
        r.ranks,
        r.placement,
        r.mpi_library.split(',').next().unwrap_or("")
    );
    let top = line_chart_svg(
        &time,
        &ChartOptions {
            title: format!("MPI time per message ({who})"),
            x_label: "message size [bytes]".into(),
            y_label: "time [µs]".into(),
            log_x: true,
            log_y: true,
            vertical_markers: Vec::new(),
            caption: "t_avg per operation as IMB-MPI1 reports it (PingPong: half the round trip); dashed: Hockney model t0 + k n / B".into(),
        },
    );
    let bottom = line_chart_svg(
        &bw,
        &ChartOptions {
            title: "MPI bandwidth".into(),
            x_label: "message size [bytes]".into(),
            y_label: "Mbytes/sec (MB = 10^6 B)".into(),
            log_x: true,
            log_y: true,
            vertical_markers: Vec::new(),
            caption: "IMB convention: k x bytes / t_max, k = 1 PingPong, 2 Sendrecv, 4 Exchange; dashed: the model's k n / t(n), which tends to B".into(),
        },
    );
    stack_svgs(&[top, bottom])
}

/// Puts standalone SVG documents one below the other in one document.
fn stack_svgs(parts: &[String]) -> String {
    let attr = |s: &str, name: &str| -> f64 {
        let key = format!(" {name}=\"");
        s.find(&key)
            .and_then(|i| {
                let rest = &s[i + key.len()..];
                rest[..rest.find('"')?].parse().ok()
            })
            .unwrap_or(0.0)
    };
    let width = parts.iter().map(|p| attr(p, "width")).fold(0.0, f64::max);
    let mut y = 0.0;
    let mut body = String::new();
    for p in parts {
        let h = attr(p, "height");
        body.push_str(&p.replacen("<svg ", &format!("<svg y=\"{y}\" "), 1));
        y += h;
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{y}\" viewBox=\"0 0 {width} {y}\">\n{body}</svg>\n"
    )
}

/// The network link fitted, in one line (`bench mpi`'s last line on standard error).
pub fn link_line(l: &hpcscope_core::machine::NetworkLink, mpi_library: &str) -> String {
    format!(
        "{} ({}): latency {} µs, bandwidth {} GB/s, n_1/2 {} B [{}]",
        l.name,
        l.placement,
        num(l.latency_us, 3),
        num(l.bandwidth_gbs, 3),
        num(l.n_half_bytes.unwrap_or(f64::NAN), 3),
        mpi_library
    )
}

/// The network link `l` written into the machine file at `path` (`bench mpi --update`).
pub fn link_written(path: &std::path::Path, l: &hpcscope_core::machine::NetworkLink) -> String {
    format!(
        "{}: network link '{}' written ({} µs, {} GB/s)",
        path.display(),
        l.name,
        num(l.latency_us, 3),
        num(l.bandwidth_gbs, 3)
    )
}

/// The forms of `bench mpi`'s report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Form {
    /// IMB-like tables, one per benchmark, and the fits.
    Table,
    /// The full report.
    Json,
    /// Every row of every benchmark.
    Csv,
    /// Markdown tables.
    Md,
    /// The `[[network]]` link, ready for a machine file.
    Toml,
}

impl Form {
    /// The form an output file's extension asks for (`.toml`, `.json`, `.csv`, `.md`); a
    /// table otherwise, and on standard output.
    pub fn of_path(path: Option<&std::path::Path>) -> Form {
        match path
            .and_then(std::path::Path::extension)
            .and_then(|e| e.to_str())
        {
            Some("toml") => Form::Toml,
            Some("json") => Form::Json,
            Some("csv") => Form::Csv,
            Some("md") => Form::Md,
            _ => Form::Table,
        }
    }
}

/// The report in `form`; the TOML form needs the network link ([`MpiReport::link`]).
pub fn rendered(r: &MpiReport, form: Form) -> Result<String, crate::BenchError> {
    Ok(match form {
        Form::Json => {
            let mut s = serde_json::to_string_pretty(r)
                .map_err(|e| crate::BenchError::Internal(format!("JSON: {e}")))?;
            s.push('\n');
            s
        }
        Form::Toml => super::machine_file::link_toml(&r.link()?)?,
        Form::Csv => csv_table(r).csv(),
        Form::Table => text_report(r, false),
        Form::Md => text_report(r, true),
    })
}
