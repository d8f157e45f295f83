//! Writes a demonstration report of the TX2 -> N1 worked example (research notes on seed
//! 002, section 5B): `cargo run -p hpcscope-core --example demo_report -- OUT_DIR`
//! writes `OUT_DIR/report.html` and one `.svg` per chart.

use hpcscope_core::Precision;
use hpcscope_core::library::builtin;
use hpcscope_core::profile::{AppMetrics, bytes_from_local};
use hpcscope_core::project::{Options, Side, project};
use hpcscope_core::roofline::{Ceilings, Scope, analyze};
use hpcscope_core::view::{projection_svg, roofline_svg};
use hpcscope_report::{Section, html_page, html_table};

fn app(total_bytes: f64, fp_instructions: f64, time_s: Option<f64>) -> AppMetrics {
    AppMetrics {
        flops: 1.0e11,
        fp_instructions,
        levels: ["L1", "L2", "MM"].map(String::from).to_vec(),
        bytes: bytes_from_local(total_bytes, &[0.9, 0.6], 3),
        time_s,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: demo_report OUT_DIR")?,
    );
    std::fs::create_dir_all(&out)?;
    let (tx2, n1) = (builtin("thunderx2")?, builtin("neoverse-n1")?);
    let src = [app(8.0e11, 3.125e10, Some(1.0e11 / 1.04e9))];
    let tgt = [app(1.0e12, 1.0e11 / 3.0, None)];
    let sc = Ceilings::of(&tx2, Precision::F64, Scope::Core)?;
    let tc = Ceilings::of(&n1, Precision::F64, Scope::Core)?;
    let a = analyze(&sc, &src[0], "source")?;
    let p = project(
        Side {
            machine: &tx2,
            threads: &src,
            origin: "source",
        },
        1.04,
        Side {
            machine: &n1,
            threads: &tgt,
            origin: "target",
        },
        Precision::F64,
        Options::default(),
    )?;
    let roof = roofline_svg(&a, "ThunderX2: the source binary on its rooflines");
    let proj = projection_svg(&p, &sc, &tc, "Projection ThunderX2 → Neoverse N1");
    let rows: Vec<Vec<String>> = a
        .levels
        .iter()
        .map(|l| {
            vec![
                l.level.clone(),
                format!("{:.2}", l.bandwidth_gbs),
                format!("{:.3}", l.oi),
                format!("{:.2}", l.attainable_gflops),
                l.bound.to_string(),
            ]
        })
        .collect();
    let page = html_page(
        "hpcscope report: ThunderX2 → Neoverse N1",
        &[
            Section {
                title: "Where the source binary stands".into(),
                summary: format!(
                    "On ThunderX2 the region runs at 1.04 GFLOP/s, {:.0}% of what its binding ceiling (the {} roofline) allows.",
                    a.efficiency.unwrap_or(0.0) * 100.0,
                    a.binding_level
                ),
                body_html: html_table(
                    &[
                        "level",
                        "bandwidth (GB/s)",
                        "OI (FLOP/byte)",
                        "attainable (GFLOP/s)",
                        "bound",
                    ],
                    &rows,
                ),
                svgs: vec![roof.clone()],
            },
            Section {
                title: "Projection onto Neoverse N1".into(),
                summary: format!(
                    "The N1 binary should run the region at {:.2} to {:.2} GFLOP/s.",
                    p.interval.lo, p.interval.hi
                ),
                body_html: String::new(),
                svgs: vec![proj.clone()],
            },
        ],
    );
    std::fs::write(out.join("report.html"), page)?;
    std::fs::write(out.join("roofline.svg"), roof)?;
    std::fs::write(out.join("projection.svg"), proj)?;
    println!("wrote {}", out.join("report.html").display());
    Ok(())
}
