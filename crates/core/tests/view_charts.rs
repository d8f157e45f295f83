//! Golden and structural tests of the charts, on the TX2 -> N1 worked example of the research
//! notes on seeds 000/002 (section 5B of the 002 notes): source binary FPI 3.2, B = 8e11,
//! local hit ratios 0.9 / 0.6, 1.04 GFLOP/s measured; target binary FPI 3.0, B = 1e12.
//!
//! Golden copies live in `tests/data/*.svg` and are compared byte for byte; run with
//! `HPCSCOPE_BLESS=1` to rewrite them after an intended change (then look at them).

use std::path::PathBuf;

use hpcscope_core::Precision;
use hpcscope_core::explore::DesignPoint;
use hpcscope_core::library::builtin;
use hpcscope_core::profile::{AppMetrics, bytes_from_local};
use hpcscope_core::project::{Interval, Method, Options, PairRule, Projection, Side, project};
use hpcscope_core::roofline::{Ceilings, RooflineAnalysis, Scope, analyze};
use hpcscope_core::view::*;
use hpcscope_report::*;

fn metrics(flops: f64, fp_instr: f64, bytes: &[f64], time_s: Option<f64>) -> AppMetrics {
    AppMetrics {
        flops,
        fp_instructions: fp_instr,
        levels: ["L1", "L2", "MM"][..bytes.len()]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        bytes: bytes.to_vec(),
        time_s,
    }
}

/// Source binary: 1e11 FLOPs in 1e11 / 1.04e9 s, so 1.04 GFLOP/s.
fn tx2_source() -> AppMetrics {
    let b = bytes_from_local(8.0e11, &[0.9, 0.6], 3);
    metrics(1.0e11, 3.125e10, &b, Some(1.0e11 / 1.04e9))
}

fn n1_target() -> AppMetrics {
    let b = bytes_from_local(1.0e12, &[0.9, 0.6], 3);
    metrics(1.0e11, 1.0e11 / 3.0, &b, None)
}

fn ceilings(id: &str, scope: Scope) -> Ceilings {
    Ceilings::of(&builtin(id).unwrap(), Precision::F64, scope).unwrap()
}

fn tx2_analysis() -> RooflineAnalysis {
    analyze(&ceilings("thunderx2", Scope::Core), &tx2_source(), "source").unwrap()
}

fn proj(
    src: &str,
    s: &[AppMetrics],
    perf: f64,
    tgt: &str,
    t: &[AppMetrics],
    scope: Scope,
) -> Projection {
    project(
        Side {
            machine: &builtin(src).unwrap(),
            threads: s,
            origin: "source",
        },
        perf,
        Side {
            machine: &builtin(tgt).unwrap(),
            threads: t,
            origin: "target",
        },
        Precision::F64,
        Options {
            pair_rule: PairRule::UpperTriangular,
            method: Method::Weighted,
            scope,
        },
    )
    .unwrap()
}

fn tx2_to_n1() -> Projection {
    proj(
        "thunderx2",
        &[tx2_source()],
        1.04,
        "neoverse-n1",
        &[n1_target()],
        Scope::Core,
    )
}

/// A synthetic sweep in the shape of the thesis' SVE study (Fig. 6.17): five vector lengths
/// on two hypothetical targets.
fn sweep() -> Vec<DesignPoint> {
    let base = tx2_to_n1();
    let mut out = Vec::new();
    for (i, vl) in [128u32, 256, 512, 1024, 2048].iter().enumerate() {
        for (target, gain) in [("N1-like + SVE", 1.0), ("TX2-like + SVE", 1.35)] {
            let g = gain * (1.0 + 0.35 * i as f64).min(2.0);
            let lo = base.interval.lo * g;
            let hi = base.interval.hi * g * (1.0 + 0.05 * i as f64);
            out.push(DesignPoint {
                variant: format!("gcc sve-{vl}"),
                target: target.to_string(),
                machine: format!("{target}+vl={vl}"),
                interval: Interval { lo, hi },
                speedup: Interval {
                    lo: lo / 1.04,
                    hi: hi / 1.04,
                },
                memory_bound_points: 3,
                points: 6,
                lower_bound_by: "OI L1 on MM roofline (memory)".into(),
                time_s: None,
                bytes: Default::default(),
                projection: base.clone(),
            });
        }
    }
    out
}

fn node_projection() -> (Projection, Ceilings, Ceilings) {
    // Four threads with some imbalance (work and locality), the same binary on an A64FX node
    // and a Cascade Lake node (section 7.2 style; common levels L1, L2 and MM).
    let threads: Vec<AppMetrics> = (0..4)
        .map(|t| {
            let w = 1.0 + 0.1 * t as f64;
            let l1 = 0.9 - 0.03 * t as f64;
            let b = bytes_from_local(8.0e10 * w, &[l1, 0.6, 0.5], 4);
            AppMetrics {
                flops: 2.0e10 * w,
                fp_instructions: 1.0e10 * w,
                levels: ["L1", "L2", "L3", "MM"].map(String::from).to_vec(),
                bytes: b,
                time_s: None,
            }
        })
        .collect();
    let p = proj(
        "a64fx-node",
        &threads,
        12.0,
        "cascadelake-8260",
        &threads,
        Scope::Node,
    );
    (
        p,
        ceilings("a64fx-node", Scope::Node),
        ceilings("cascadelake-8260", Scope::Node),
    )
}

fn charts() -> Vec<(&'static str, String)> {
    let (np, ns, nt) = node_projection();
    let bw: Vec<(f64, f64)> = (10..=30)
        .map(|k| {
            let size = 2f64.powi(k);
            let gbs = if size <= 32768.0 {
                36.0
            } else if size <= 262144.0 {
                29.0
            } else {
                25.0 - (k as f64 - 18.0) * 0.3
            };
            (size, gbs)
        })
        .collect();
    vec![
        ("roofline_tx2", roofline_svg(&tx2_analysis(), "ThunderX2: the source binary on its rooflines")),
        (
            "roofline_n1_no_time",
            roofline_svg(
                &analyze(&ceilings("neoverse-n1", Scope::Core), &n1_target(), "target").unwrap(),
                "Neoverse N1: the target binary (no time measured)",
            ),
        ),
        (
            "projection_tx2_n1",
            projection_svg(
                &tx2_to_n1(),
                &ceilings("thunderx2", Scope::Core),
                &ceilings("neoverse-n1", Scope::Core),
                "Projection ThunderX2 → Neoverse N1",
            ),
        ),
        (
            "projection_node",
            projection_svg(&np, &ns, &nt, "Node projection A64FX → Cascade Lake (4 threads)"),
        ),
        (
            "explore_sve",
            explore_svg(&sweep(), "Does a longer SVE vector help? (synthetic sweep)", 1.04),
        ),
        (
            "line_bandwidth",
            line_chart_svg(
                &[
                    Series {
                        name: "STREAM triad, one core".into(),
                        points: bw.clone(),
                        dashed: false,
                    },
                    Series {
                        name: "copy".into(),
                        points: bw.iter().map(|(x, y)| (*x, y * 0.8)).collect(),
                        dashed: true,
                    },
                ],
                &ChartOptions {
                    title: "Bandwidth vs working-set size".into(),
                    x_label: "Working-set size (bytes, log scale)".into(),
                    y_label: "Bandwidth (GB/s)".into(),
                    log_x: true,
                    log_y: false,
                    vertical_markers: vec![(32768.0, "L1 32 KiB".into()), (262144.0, "L2 256 KiB".into())],
                    caption: "Bandwidth drops at each cache capacity: the plateaus give each level's bandwidth.".into(),
                },
            ),
        ),
        (
            "validation",
            validation_svg(
                &[
                    ValidationRow {
                        label: "LULESH".into(),
                        lo: 0.69,
                        hi: 1.40,
                        measured: 1.1,
                        point: Some(1.0),
                    },
                    ValidationRow {
                        label: "MiniFE".into(),
                        lo: 2.1,
                        hi: 3.0,
                        measured: 3.6,
                        point: Some(2.6),
                    },
                    ValidationRow {
                        label: "Quicksilver <ref>".into(),
                        lo: 0.4,
                        hi: 0.5,
                        measured: 0.45,
                        point: None,
                    },
                ],
                "Projected intervals vs measured performance",
            ),
        ),
        (
            "speedup",
            speedup_svg(
                &[
                    ("triad", [(0.41, 1.37), (0.15, 0.53), (0.22, 0.53), (0.21, 0.32)]),
                    ("gemm", [(0.41, 1.20), (0.40, 0.99), (0.39, 0.98), (0.50, 0.51)]),
                    ("nbody", [(0.42, 0.42), (0.40, 0.40), (0.41, 0.41), (1.2, 1.3)]),
                ]
                .iter()
                .flat_map(|(w, iv)| {
                    ["A64FX (one core)", "ThunderX2 (one core)", "Neoverse N1 (one core)", "A64FX node"]
                        .iter()
                        .zip(iv)
                        .map(|(t, (lo, hi))| SpeedupRow {
                            workload: w.to_string(),
                            target: t.to_string(),
                            lo: *lo,
                            hi: *hi,
                            point: None,
                            model: None,
                        })
                })
                .collect::<Vec<_>>(),
                "Projected speed-up over this machine on published machines",
            ),
        ),
        (
            // More workloads than fit side by side: the labels slant instead of overlapping.
            "validation-many",
            validation_svg(
                &["triad", "stencil", "gemm", "cg", "edge", "montecarlo", "nbody"]
                    .iter()
                    .enumerate()
                    .flat_map(|(i, w)| {
                        let v = 2.0 + i as f64;
                        [
                            ValidationRow {
                                label: format!("{w} SSE2 -> AVX2"),
                                lo: v,
                                hi: 2.0 * v,
                                measured: 1.5 * v,
                                point: None,
                            },
                            ValidationRow {
                                label: format!("{w} AVX2 -> SSE2"),
                                lo: v / 2.0,
                                hi: v,
                                measured: 1.1 * v,
                                point: None,
                            },
                        ]
                    })
                    .collect::<Vec<_>>(),
                "Projected interval and measured performance, SSE2 <-> AVX2 builds",
            ),
        ),
    ]
}

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

#[test]
fn golden_svgs() {
    let bless = std::env::var_os("HPCSCOPE_BLESS").is_some_and(|v| v == "1");
    let mut mismatched = Vec::new();
    for (name, svg) in charts() {
        let path = data_dir().join(format!("{name}.svg"));
        if bless {
            std::fs::create_dir_all(data_dir()).unwrap();
            std::fs::write(&path, &svg).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run with HPCSCOPE_BLESS=1", path.display()));
        if expected != svg {
            mismatched.push(name);
        }
    }
    assert!(
        mismatched.is_empty(),
        "charts differ from tests/data: {mismatched:?}; look at them, then rerun with HPCSCOPE_BLESS=1"
    );
}

#[test]
fn rendering_is_deterministic() {
    let a = charts();
    let b = charts();
    for ((n, x), (_, y)) in a.iter().zip(&b) {
        assert_eq!(x, y, "{n}");
    }
}

/// Parses an SVG and checks what every chart must have.
fn check_common<'a>(name: &str, svg: &'a str) -> roxmltree::Document<'a> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{name}: {e}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg", "{name}");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    for n in doc.descendants().filter(|n| n.is_element()) {
        let tag = n.tag_name().name();
        assert!(
            !["script", "style", "image", "foreignObject", "a", "use"].contains(&tag),
            "{name}: <{tag}> is not allowed"
        );
        assert!(
            n.attribute("id").is_none(),
            "{name}: ids clash when inlined"
        );
        for a in n.attributes() {
            let v = a.value();
            assert!(
                !v.contains("NaN") && !v.contains("inf"),
                "{name}: <{tag} {}=\"{v}\">",
                a.name()
            );
            assert!(
                !v.contains("http") || a.name() == "xmlns",
                "{name}: external reference {v}"
            );
        }
    }
    assert!(svg.contains("<title>"), "{name}: no title");
    assert!(
        doc.descendants()
            .any(|n| n.attribute("class") == Some("legend")),
        "{name}: no legend"
    );
    assert!(
        doc.descendants()
            .any(|n| n.attribute("class") == Some("caption")),
        "{name}: no caption"
    );
    assert!(
        doc.descendants()
            .any(|n| n.attribute("class") == Some("axis-label")),
        "{name}: no axis label"
    );
    doc
}

fn count_class(doc: &roxmltree::Document<'_>, class: &str) -> usize {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some(class))
        .count()
}

fn texts(doc: &roxmltree::Document<'_>) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn every_chart_is_well_formed_and_self_contained() {
    for (name, svg) in charts() {
        check_common(name, &svg);
        assert!(svg.len() < 60_000, "{name} is {} bytes", svg.len());
    }
}

#[test]
fn roofline_structure() {
    let svg = roofline_svg(&tx2_analysis(), "t");
    let doc = check_common("roofline", &svg);
    assert_eq!(count_class(&doc, "roof"), 3, "one line per level");
    assert_eq!(count_class(&doc, "peak"), 1);
    assert_eq!(count_class(&doc, "peak-weighted"), 1);
    assert_eq!(count_class(&doc, "point-app"), 3, "one marker per level");
    let t = texts(&doc);
    for want in [
        "L1 36.2 GB/s",
        "L2 29.6 GB/s",
        "MM 25.4 GB/s",
        "OI L1",
        "OI L2",
        "OI MM",
        "0.01",
        "0.1",
        "1",
        "10",
        "100",
        "Operational intensity (FLOP/byte, log scale)",
        "Performance (GFLOP/s, log scale)",
    ] {
        assert!(
            t.iter().any(|s| s == want),
            "missing text {want:?} in {t:?}"
        );
    }
    assert!(t.iter().any(|s| s.contains("peak 17.5 GFLOP/s")));
    assert!(t.iter().any(|s| s.contains("weighted peak 14.0 GFLOP/s")));
    let caption = doc
        .descendants()
        .find(|n| n.has_tag_name("desc"))
        .and_then(|n| n.text())
        .unwrap();
    assert!(
        caption.contains("Each line is the best performance")
            || caption.contains("each line is the best performance")
    );
}

#[test]
fn roofline_skips_infinite_ois_and_says_so() {
    // No byte from MM: its OI is infinite.
    let app = metrics(1.0e11, 3.125e10, &[7.0e11, 5.0e10, 0.0], Some(100.0));
    let a = analyze(&ceilings("thunderx2", Scope::Core), &app, "x").unwrap();
    assert!(a.levels[2].oi.is_infinite());
    let svg = roofline_svg(&a, "inf");
    let doc = check_common("inf", &svg);
    assert_eq!(count_class(&doc, "point-app"), 2);
    assert!(svg.contains("No marker for MM"));
}

#[test]
fn projection_structure() {
    let p = tx2_to_n1();
    let svg = projection_svg(
        &p,
        &ceilings("thunderx2", Scope::Core),
        &ceilings("neoverse-n1", Scope::Core),
        "t",
    );
    let doc = check_common("projection", &svg);
    assert_eq!(count_class(&doc, "roof-source"), 3);
    assert_eq!(count_class(&doc, "roof-target"), 3);
    assert_eq!(count_class(&doc, "point-source"), 3, "one per OI level");
    assert_eq!(count_class(&doc, "point-projected"), 6, "n(n+1)/2 pairs");
    assert_eq!(count_class(&doc, "interval-bar"), 1);
    let t = texts(&doc);
    assert!(t.iter().any(|s| s == "hi 1.40"), "{t:?}");
    assert!(t.iter().any(|s| s == "lo 0.692"), "{t:?}");
    assert!(svg.contains("[0.692, 1.40] GFLOP/s"));
}

#[test]
fn node_projection_states_the_node_interval() {
    let (p, s, t) = node_projection();
    assert!(p.points.is_empty() && p.threads.len() == 4);
    let svg = projection_svg(&p, &s, &t, "node");
    let doc = check_common("node", &svg);
    let n: usize = p.threads.iter().map(|t| t.points.len()).sum();
    assert_eq!(count_class(&doc, "point-projected"), n);
    assert!(svg.contains("sum over the 4 threads"));
}

#[test]
fn explore_structure() {
    let pts = sweep();
    let svg = explore_svg(&pts, "sweep", 1.04);
    let doc = check_common("explore", &svg);
    assert_eq!(count_class(&doc, "range"), pts.len());
    assert_eq!(count_class(&doc, "source-line"), 1);
    assert_eq!(
        count_class(&doc, "band"),
        2,
        "ordered variants: one band per target"
    );
    let t = texts(&doc);
    for v in ["128", "512", "2048"] {
        assert!(
            t.iter().any(|s| s.contains(v)),
            "missing variant {v}: {t:?}"
        );
    }
    // The OI - ridge panel (thesis section 7.4.1): one ridge bar and one OI circle per
    // design point, each at its point's ridge diagnostic.
    assert_eq!(count_class(&doc, "ridge"), pts.len());
    assert_eq!(count_class(&doc, "oi"), pts.len());
    let r = hpcscope_core::explore::RidgeDiagnostic::of(&pts[0]).unwrap();
    assert!(svg.contains(&format!("OI at {}", r.level)), "{svg}");
    let below = pts
        .iter()
        .filter_map(hpcscope_core::explore::RidgeDiagnostic::of)
        .filter(|r| r.delta.is_some_and(|d| d < 0.0))
        .count();
    assert!(
        svg.contains(&format!(
            "{below} of {} design points have their OI below the ridge",
            pts.len()
        )),
        "{svg}"
    );
    // Empty input still gives a valid chart.
    check_common("explore-empty", &explore_svg(&[], "empty", 1.0));
}

#[test]
fn line_chart_handles_bad_values() {
    let svg = line_chart_svg(
        &[Series {
            name: "s".into(),
            points: vec![
                (1.0, 2.0),
                (f64::NAN, 3.0),
                (10.0, f64::INFINITY),
                (100.0, 5.0),
                (0.0, 1.0),
            ],
            dashed: false,
        }],
        &ChartOptions {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_x: true,
            log_y: true,
            vertical_markers: vec![(1e9, "outside".into())],
            caption: String::new(),
        },
    );
    let doc = check_common("line", &svg);
    assert_eq!(count_class(&doc, "series"), 1);
    check_common("line-empty", &line_chart_svg(&[], &ChartOptions::default()));
}

#[test]
fn html_page_is_self_contained() {
    let charts = charts();
    let page = html_page(
        "Report <1>",
        &[Section {
            title: "Roofline & projection".into(),
            summary: "The N1 should run the region at 0.69-1.40 GFLOP/s.".into(),
            body_html: html_table(&["level", "OI"], &[vec!["L1".into(), "0.125".into()]]),
            svgs: charts.iter().map(|(_, s)| s.clone()).collect(),
        }],
    );
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(!page.contains("<script"));
    assert!(!page.contains("http://") || !page.contains("src="));
    assert!(page.contains("Report &lt;1&gt;"));
    assert_eq!(page.matches("<figure").count(), charts.len());
    // The page body parses as XML (void-free markup).
    let body = &page[page.find("<html").unwrap()..];
    roxmltree::Document::parse(body).unwrap();
}

/// Gavoille 2024 thesis, Table 7.2 and section 7.4.1: kernel_1 at OI 4 FLOP/byte lies between
/// the DRAM ridge (15.66 FLOP/byte) and the MCDRAM ridge (2.80) of a KNL node: memory-bound
/// on DRAM (its circle below the ridge bar), compute-bound on MCDRAM (above it).
#[test]
fn table_7_2_ridge_marks_on_the_explore_chart() {
    let dram = builtin("knl-flat-dram").unwrap();
    let mcdram = builtin("knl-flat-mcdram").unwrap();
    let k = AppMetrics {
        flops: 4.0e9,
        fp_instructions: 4.0e9 / 16.0,
        levels: vec!["MM".into()],
        bytes: vec![1.0e9],
        time_s: None,
    };
    let threads = vec![k; 68];
    let point = |target: &hpcscope_core::Machine, label: &str| {
        let p = project(
            Side {
                machine: &dram,
                threads: &threads,
                origin: "kernel_1 in DRAM",
            },
            68.0 * 0.5,
            Side {
                machine: target,
                threads: &threads,
                origin: "kernel_1",
            },
            Precision::F64,
            Options {
                pair_rule: PairRule::UpperTriangular,
                method: Method::Weighted,
                scope: Scope::Node,
            },
        )
        .unwrap();
        DesignPoint::from_projection("kernel_1 MB", label, p)
    };
    let pts = vec![point(&dram, "KNL DRAM"), point(&mcdram, "KNL MCDRAM")];
    let svg = explore_svg(&pts, "Table 7.2", 34.0);
    let doc = check_common("table-7-2", &svg);
    let ys = |tag: &str, class: &str, attr: &str| -> Vec<f64> {
        doc.descendants()
            .filter(|n| n.has_tag_name(tag) && n.attribute("class") == Some(class))
            .map(|n| n.attribute(attr).unwrap().parse().unwrap())
            .collect()
    };
    let (ridge, oi) = (ys("line", "ridge", "y1"), ys("circle", "oi", "cy"));
    assert_eq!((ridge.len(), oi.len()), (2, 2));
    // SVG y grows downwards: below the bar is a larger y.
    assert!(oi[0] > ridge[0], "DRAM: OI 4 below the 15.66 ridge");
    assert!(oi[1] < ridge[1], "MCDRAM: OI 4 above the 2.80 ridge");
    assert_eq!(oi[0], oi[1], "one OI, on both targets");
    // On the log axis the distances keep the ratios: log(15.66/4) against log(4/2.80).
    let measured = (oi[0] - ridge[0]) / (ridge[1] - oi[1]);
    let expected = (1300.0f64 / 83.0 / 4.0).ln() / (4.0f64 / (1300.0 / 463.0)).ln();
    assert!(
        (measured - expected).abs() < 0.02 * expected,
        "{measured} vs {expected}"
    );
    assert!(
        svg.contains("1 of 2 design points have their OI below the ridge at MM"),
        "{svg}"
    );
}
