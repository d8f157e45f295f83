//! Ceilings at the binary's own vector width, intervals that carry the source's noise, the
//! point estimate and its fit, and the check against a measurement with its own spread.

use hpcscope_core::explore::{Transform, apply};
use hpcscope_core::library::builtin;
use hpcscope_core::machine::{WidthBandwidth, WidthPeak};
use hpcscope_core::point::{Calibration, ChangeKind, PointMethod, Sample, fit, miss_factor};
use hpcscope_core::project::{Inputs, Options, Side, Spread, project, project_with};
use hpcscope_core::roofline::{AccessWidths, Bound, Ceilings, Scope, analyze};
use hpcscope_core::{AppMetrics, Machine, Precision};

/// A core like the one this project is validated on (Zen 4: 512-bit instructions at the
/// 256-bit rate): per-width peaks and L1/L2/MM bandwidths, the level values being the best
/// (512-bit) kernel's.
fn machine() -> Machine {
    let src = r#"
format_version = 1
id = "zen4-like"
name = "Zen 4-like core"
isa = "x86_64"
simd = "avx512"
vector_bits = 512
fma = true
sockets = 1
cores_per_socket = 2
provenance = "test"

[[peaks]]
precision = "f64"
core_gflops = 56.0
provenance = "test"
[[peaks.widths]]
vector_bits = 64
core_gflops = 13.75
provenance = "test"
[[peaks.widths]]
vector_bits = 128
core_gflops = 27.5
provenance = "test"
[[peaks.widths]]
vector_bits = 256
core_gflops = 55.0
provenance = "test"
[[peaks.widths]]
vector_bits = 512
core_gflops = 56.0
provenance = "test"

[[levels]]
name = "L1"
kind = "cache"
core_gbs = 286.0
provenance = "test"
[[levels.widths]]
vector_bits = 64
core_gbs = 78.0
provenance = "test"
[[levels.widths]]
vector_bits = 128
core_gbs = 155.0
provenance = "test"
[[levels.widths]]
vector_bits = 256
core_gbs = 308.0
provenance = "test"

[[levels]]
name = "L2"
kind = "cache"
core_gbs = 112.0
provenance = "test"
[[levels.widths]]
vector_bits = 64
core_gbs = 77.0
provenance = "test"
[[levels.widths]]
vector_bits = 128
core_gbs = 115.0
provenance = "test"

[[levels]]
name = "MM"
kind = "memory"
core_gbs = 25.0
provenance = "test"
"#;
    Machine::from_toml_str(src, "test machine").unwrap()
}

fn app(flops: f64, fpi: f64, bytes: [f64; 3], time_s: Option<f64>) -> AppMetrics {
    AppMetrics {
        flops,
        fp_instructions: flops / fpi,
        levels: vec!["L1".into(), "L2".into(), "MM".into()],
        bytes: bytes.to_vec(),
        time_s,
    }
}

#[test]
fn per_width_entries_are_validated_with_their_field_path() {
    let mut m = machine();
    m.levels[0].widths.push(WidthBandwidth {
        vector_bits: 128,
        core_gbs: Some(1.0),
        node_gbs: None,
        provenance: "dup".into(),
    });
    m.levels[1].widths[0].provenance = " ".into();
    m.peaks[0].widths.push(WidthPeak {
        vector_bits: 48,
        core_gflops: Some(2e10),
        node_gflops: None,
        provenance: "x".into(),
    });
    let e = m.validate("m.toml").unwrap_err().to_string();
    assert!(
        e.contains("levels[0].widths[3].vector_bits") && e.contains("width 128 appears twice"),
        "{e}"
    );
    assert!(e.contains("levels[1].widths[0].provenance"), "{e}");
    assert!(
        e.contains("peaks[0].widths[4].vector_bits") && e.contains("multiple of 32"),
        "{e}"
    );
    assert!(e.contains("peaks[0].widths[4].core_gflops"), "{e}");
    // A machine file survives a round trip with its widths.
    let m = machine();
    let back = Machine::from_toml_str(&m.to_toml_string(), "round trip").unwrap();
    assert_eq!(back, m);
}

#[test]
fn the_width_entry_is_exact_else_the_widest_narrower_else_the_narrowest() {
    let m = machine();
    let l2 = m.level("L2").unwrap();
    assert_eq!(m.width_bandwidth_gbs(l2, 128, false).unwrap().0, 115.0);
    // 256-bit accesses on L2: no 256 entry, the 128-bit one stands in.
    assert_eq!(m.width_bandwidth_gbs(l2, 256, false).unwrap().2, 128);
    // Scalar f32 (32-bit) is narrower than every entry: the narrowest.
    assert_eq!(m.width_bandwidth_gbs(l2, 32, false).unwrap().2, 64);
    assert!(
        m.width_bandwidth_gbs(m.level("MM").unwrap(), 64, false)
            .is_none()
    );
    assert_eq!(
        m.width_peak_gflops(Precision::F64, 128, false).unwrap().0,
        27.5
    );
}

#[test]
fn ceilings_at_the_binary_width_mix_harmonically_and_fall_back_with_a_note() {
    let m = machine();
    let half = AccessWidths {
        parts: vec![
            hpcscope_core::roofline::WidthShare {
                vector_bits: 64,
                fraction: 0.5,
                instructions: 0.5,
                ..Default::default()
            },
            hpcscope_core::roofline::WidthShare {
                vector_bits: 128,
                fraction: 0.5,
                instructions: 0.5,
                ..Default::default()
            },
        ],
        from: "test".into(),
        chain_other: 0.0,
    };
    let c = Ceilings::at_widths(&m, Precision::F64, Scope::Core, &half).unwrap();
    // Time per byte adds up: 1 / (0.5/78 + 0.5/155).
    let l1 = 1.0 / (0.5 / 78.0 + 0.5 / 155.0);
    assert!((c.bandwidth("L1").unwrap() - l1).abs() < 1e-9);
    // MM has no per-width bandwidth: its own, and a note says so.
    assert_eq!(c.bandwidth("MM").unwrap(), 25.0);
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("no per-width bandwidth for MM"))
    );
    // FP instructions per second: 13.75/2 at 64 bits and 27.5/4 at 128, both 6.875 G/s.
    assert!((c.fp_instruction_rate.unwrap() - 6.875).abs() < 1e-9);
    // A machine without per-width values gives the seeds' ceilings.
    let tx2 = builtin("thunderx2").unwrap();
    let a = Ceilings::at_widths(&tx2, Precision::F64, Scope::Core, &half).unwrap();
    let b = Ceilings::of(&tx2, Precision::F64, Scope::Core).unwrap();
    assert_eq!(a.bandwidth_gbs, b.bandwidth_gbs);
    assert_eq!(a.fp_instruction_rate, None);
    assert!(a.access_widths.is_none());
}

/// The issue's example: an SSE2 STREAM triad (2 FLOPs and 24 bytes per element, FLOPs
/// per FP instruction 2, every byte from L1) is compute-bound against the seeds' ceilings
/// (the 512-bit peak weighted by eq. 6.2 allows 56/16 x 2 = 7 GFLOP/s, the best kernel's
/// L1 286 x 2/24 = 23.8) and memory-bound at its own width (SSE2 peak 27.5/4 x 2 = 13.75,
/// 128-bit L1 155 x 2/24 = 12.9).
#[test]
fn an_sse2_triad_is_bound_by_its_own_width_bandwidth() {
    let m = machine();
    let triad = app(2e9, 2.0, [24e9, 0.0, 0.0], Some(0.5));
    let seeds = Ceilings::of(&m, Precision::F64, Scope::Core).unwrap();
    let a = analyze(&seeds, &triad, "triad").unwrap();
    assert_eq!(a.binding_bound, Bound::Compute);
    assert!((a.binding_gflops - 7.0).abs() < 1e-9);
    let own = Ceilings::at_widths(
        &m,
        Precision::F64,
        Scope::Core,
        &AccessWidths::single(128, "test"),
    )
    .unwrap();
    let a = analyze(&own, &triad, "triad").unwrap();
    assert_eq!(a.binding_bound, Bound::Memory);
    assert_eq!(a.binding_level, "L1");
    assert!((a.binding_gflops - 155.0 * 2.0 / 24.0).abs() < 1e-9);
}

fn sides<'a>(m: &'a Machine, s: &'a [AppMetrics], t: &'a [AppMetrics]) -> (Side<'a>, Side<'a>) {
    (
        Side {
            machine: m,
            threads: s,
            origin: "source",
        },
        Side {
            machine: m,
            threads: t,
            origin: "target",
        },
    )
}

#[test]
fn the_source_spread_widens_the_interval_and_is_accounted_for() {
    let m = machine();
    let s = [app(1e10, 2.0, [1e10, 5e9, 1e9], Some(1.0))];
    let t = [app(1e10, 4.0, [1e10, 5e9, 1e9], None)];
    let (ss, ts) = sides(&m, &s, &t);
    let plain = project(ss, 10.0, ts, Precision::F64, Options::default()).unwrap();
    let spread = Spread::from_times(&[1.0, 1.02, 0.98, 1.04, 0.97]).unwrap();
    let p = project_with(
        ss,
        10.0,
        ts,
        Precision::F64,
        Options::default(),
        &Inputs {
            source_spread: Some(spread),
            ..Inputs::default()
        },
    )
    .unwrap();
    let n = p.widening.unwrap();
    assert_eq!(n.model_interval, plain.interval);
    assert!((p.interval.lo - plain.interval.lo * spread.low).abs() < 1e-12);
    assert!((p.interval.hi - plain.interval.hi * spread.high).abs() < 1e-12);
    let total = p.interval.hi / p.interval.lo;
    assert!((n.total_width - total).abs() < 1e-12);
    let share = (spread.high / spread.low).ln() / total.ln();
    assert!((n.noise_share - share).abs() < 1e-9, "{n:?}");
    assert!((n.model_share + n.noise_share - 1.0).abs() < 1e-9 && n.margin_share == 0.0);
    // A calibrated margin widens it further, on each side, and has its share.
    let mut cal = Calibration::bundled();
    cal.interval.margin = 0.05;
    let c = project_with(
        ss,
        10.0,
        ts,
        Precision::F64,
        Options::default(),
        &Inputs {
            source_spread: Some(spread),
            calibration: Some(&cal),
            ..Inputs::default()
        },
    )
    .unwrap();
    let w = c.widening.unwrap();
    assert!((c.interval.lo - plain.interval.lo * spread.low / 1.05).abs() < 1e-12);
    assert!((c.interval.hi - plain.interval.hi * spread.high * 1.05).abs() < 1e-12);
    assert!(
        (w.model_share + w.margin_share + w.noise_share - 1.0).abs() < 1e-9,
        "{w:?}"
    );
    assert!(c.point.is_some());
    // Taking in the same projection with inputs moved within their errors (analyze
    // --sample's bytes): the union, and the part of the width that adds is the sampling's.
    let mut moved = c.clone();
    moved.interval.lo *= 0.9;
    moved.interval.hi *= 1.02;
    let mut wide = c.clone();
    let inner = c.clone();
    let f = wide.take_in(&[inner, moved.clone()]);
    assert_eq!(wide.interval.lo, moved.interval.lo);
    assert_eq!(wide.interval.hi, moved.interval.hi);
    assert!((f - 1.0 / 0.9).abs() < 1e-12, "{f}");
    let ww = wide.widening.unwrap();
    assert!((ww.total_width - wide.interval.hi / wide.interval.lo).abs() < 1e-9);
    assert!(ww.sampling_share > 0.0, "{ww:?}");
    assert!(
        (ww.model_share + ww.margin_share + ww.noise_share + ww.sampling_share - 1.0).abs() < 1e-9,
        "{ww:?}"
    );
    let (t0, t1) = (c.target_time_s.unwrap(), wide.target_time_s.unwrap());
    assert!(t1.lo <= t0.lo && t1.hi >= t0.hi);
    // Nothing wider: nothing changes.
    let mut same = c.clone();
    assert_eq!(same.take_in(std::slice::from_ref(&c)), 1.0);
    assert_eq!(same, c);
    // Without inputs the projection is the seeds' one, plus the Kwack value beside it.
    let q = project_with(
        ss,
        10.0,
        ts,
        Precision::F64,
        Options::default(),
        &Inputs::default(),
    )
    .unwrap();
    assert_eq!(q.interval, plain.interval);
    assert_eq!(q.points, plain.points);
    assert!(q.widening.is_none() && q.point.is_none());
    // Same machine, raw peak, main memory: the Kwack value keeps the source's efficiency
    // against the MM roofline; here both are compute-bound on the raw peak, so it is the
    // source's own rate.
    assert!((q.kwack_gflops.unwrap() - 10.0).abs() < 1e-9);
}

#[test]
fn the_band_of_a_median_follows_the_interquartile_range() {
    // Rates 1/t: identical runs have no band.
    let s = Spread::from_times(&[2.0; 5]).unwrap();
    assert_eq!((s.low, s.high, s.min, s.max), (1.0, 1.0, 1.0, 1.0));
    // Rates 9, 10, 10, 10, 11 (median 10, IQR 0): a zero band inside a 20 % range.
    let s = Spread::from_rates(&[9.0, 10.0, 10.0, 10.0, 11.0]).unwrap();
    assert_eq!((s.low, s.high), (1.0, 1.0));
    assert!((s.relative() - 0.2).abs() < 1e-12);
    // Rates 8..12: IQR 2 (quartiles 9 and 11), h = 1.0805 x 0.2 / sqrt(5).
    let s = Spread::from_rates(&[8.0, 9.0, 10.0, 11.0, 12.0]).unwrap();
    let h = 1.0805 * 0.2 / 5f64.sqrt();
    assert!((s.low - (1.0 - h)).abs() < 1e-12 && (s.high - (1.0 + h)).abs() < 1e-12);
    // The band never goes beyond the runs: two runs 10 and 20 (median 15).
    let s = Spread::from_rates(&[10.0, 20.0]).unwrap();
    assert!(s.low >= 10.0 / 15.0 - 1e-12 && s.high <= 20.0 / 15.0 + 1e-12);
    assert!(Spread::from_times(&[1.0]).is_none());
    assert!(Spread::from_times(&[1.0, f64::NAN, -1.0]).is_none());
}

#[test]
fn a_measurement_is_inside_when_its_own_band_meets_the_interval() {
    let m = machine();
    let s = [app(1e10, 2.0, [1e10, 0.0, 0.0], Some(1.0))];
    let (ss, ts) = sides(&m, &s, &s);
    let p = project_with(
        ss,
        10.0,
        ts,
        Precision::F64,
        Options::default(),
        &Inputs::default(),
    )
    .unwrap();
    // Same binary, same machine: the interval is the source's rate.
    assert!((p.interval.lo - 10.0).abs() < 1e-9 && (p.interval.hi - 10.0).abs() < 1e-9);
    let wide = Spread::from_rates(&[9.0, 9.5, 10.5, 10.5, 11.0, 12.0]).unwrap();
    let v = p.validate(10.4, Some(wide));
    assert!(!v.check.inside && v.inside_within_noise, "{v:?}");
    assert_eq!(v.error_within_noise, 0.0);
    let v = p.validate(12.0, None);
    assert!(!v.inside_within_noise);
    assert!((v.error_within_noise - (10.0 - 12.0) / 12.0).abs() < 1e-9);
    assert!((v.kwack_error.unwrap() - (10.0 - 12.0) / 12.0).abs() < 1e-9);
}

#[test]
fn pairs_whose_roofline_the_source_exceeds_are_left_out() {
    let m = machine();
    // Half the bytes from MM: OI_L1 = 0.5 against the MM roofline allows 12.5 GFLOP/s,
    // below the measured 13: that pair (and OI_L2 x MM) is above its roofline.
    let s = [app(1e10, 4.0, [1e10, 0.0, 1e10], Some(1e10 / 13e9))];
    let t = [app(1e10, 8.0, [1e10, 0.0, 1e10], None)];
    let (ss, ts) = sides(&m, &s, &t);
    let all = project_with(
        ss,
        13.0,
        ts,
        Precision::F64,
        Options::default(),
        &Inputs::default(),
    )
    .unwrap();
    let kept = project_with(
        ss,
        13.0,
        ts,
        Precision::F64,
        Options::default(),
        &Inputs {
            drop_contradicted: true,
            ..Inputs::default()
        },
    )
    .unwrap();
    let over: Vec<_> = all.points.iter().filter(|p| p.efficiency > 1.0).collect();
    assert!(!over.is_empty());
    assert_eq!(
        kept.points.iter().filter(|p| p.excluded).count(),
        over.len()
    );
    let lo = kept
        .points
        .iter()
        .filter(|p| !p.excluded)
        .map(|p| p.gflops)
        .fold(f64::INFINITY, f64::min);
    assert!((kept.interval.lo - lo).abs() < 1e-12);
    assert!(kept.interval.lo >= all.interval.lo);
    assert!(
        kept.notes
            .iter()
            .any(|n| n.contains("left out of the interval"))
    );
}

/// The carried-time point of a pair: the source's time its roofline does not explain,
/// `(1 - e) x t_s`, carries over; it lies between "no change of time" and the efficiency
/// point.
#[test]
fn carried_time_points_join_the_interval() {
    let m = machine();
    // Compute-bound everywhere (L1 only), FPI 2 -> 4: the ceiling doubles.
    let s = [app(1e10, 2.0, [1e9, 0.0, 0.0], Some(2.0))];
    let t = [app(1e10, 4.0, [1e9, 0.0, 0.0], None)];
    let (ss, ts) = sides(&m, &s, &t);
    let seeds = project_with(
        ss,
        5.0,
        ts,
        Precision::F64,
        Options::default(),
        &Inputs::default(),
    )
    .unwrap();
    let p = project_with(
        ss,
        5.0,
        ts,
        Precision::F64,
        Options::default(),
        &Inputs {
            carried_time: true,
            ..Inputs::default()
        },
    )
    .unwrap();
    // Weighted peaks 56/16 x 2 = 7 and 14: efficiency 5/7, efficiency point 10.
    assert!((seeds.interval.lo - 10.0).abs() < 1e-9 && (seeds.interval.hi - 10.0).abs() < 1e-9);
    let e: f64 = 5.0 / 7.0;
    let t_s = 1e10 / 5.0;
    let carried = 1e10 / (1e10 / 14.0 + (1.0 - e) * t_s);
    assert!((p.points[0].carried_time_gflops.unwrap() - carried).abs() < 1e-9);
    assert!((p.interval.lo - carried).abs() < 1e-9 && (p.interval.hi - 10.0).abs() < 1e-9);
    assert!(carried > 5.0 && carried < 10.0);
    // With the instruction counts, the unexplained time also scales with them: the target
    // runs 30 % fewer instructions.
    let r = project_with(
        ss,
        5.0,
        ts,
        Precision::F64,
        Options::default(),
        &Inputs {
            carried_time: true,
            instructions: Some((1e10, 0.7e10)),
            ..Inputs::default()
        },
    )
    .unwrap();
    let rate = 1e10 / (1e10 / 14.0 + (1.0 - e) * t_s * 0.7);
    assert!((r.points[0].carried_rate_gflops.unwrap() - rate).abs() < 1e-9);
    assert!(rate > carried && rate < 10.0);
    assert!((r.interval.lo - carried).abs() < 1e-9 && (r.interval.hi - 10.0).abs() < 1e-9);
}

#[test]
fn the_fit_recovers_the_exponent_that_made_the_measurements() {
    let m = machine();
    let mut projections = Vec::new();
    let mut measured = Vec::new();
    for (i, fpi_t) in [2.0, 3.0, 4.0, 6.0, 8.0, 1.5, 2.5].iter().enumerate() {
        let s = [app(1e10, 2.0, [1e9, 0.0, 0.0], Some(1.0))];
        let t = [app(1e10, *fpi_t, [1e9, 0.0, 0.0], None)];
        let (ss, ts) = sides(&m, &s, &t);
        let p = project_with(
            ss,
            2.0 + 0.7 * i as f64,
            ts,
            Precision::F64,
            Options::default(),
            // With the carried-time point the interval spans from the source's time carried
            // over to the efficiency point, so the rule's value is not clamped.
            &Inputs {
                carried_time: true,
                ..Inputs::default()
            },
        )
        .unwrap();
        let b = p.binding[0];
        // The time the binding ceiling explains, efficiency^0.6 of it, scales (exponent 0 is
        // the efficiency point, 1 the carried-time point: 0.6 lies between them).
        let eff: f64 = b.source_gflops / b.source_ceiling_gflops;
        let f = eff.powf(0.6);
        let t_s = b.source_flops / b.source_gflops;
        let t_t = f * t_s * b.source_ceiling_gflops / b.target_ceiling_gflops + (1.0 - f) * t_s;
        measured.push(b.target_flops / t_t);
        projections.push(p);
    }
    let samples: Vec<Sample<'_>> = projections
        .iter()
        .zip(&measured)
        .map(|(p, m)| Sample {
            projection: p,
            source_spread: None,
            measured_gflops: *m,
            measured_spread: None,
        })
        .collect();
    let labels: Vec<String> = (0..samples.len()).map(|i| format!("pair {i}")).collect();
    let f = fit(&samples, 0.9, &labels, "test", ChangeKind::VectorWidth).unwrap();
    assert_eq!(f.point.method, PointMethod::ExplainedTime);
    assert!((f.point.parameter - 0.6).abs() < 1e-9, "{f:?}");
    assert!(f.point.error.median < 1e-9 && f.point.error.pairs == 7);
    // The margin is the 8th smallest miss of 7 (rank ceil(8 x 0.9) = 8, clamped to 7):
    // the largest; every interval widened by it holds its measurement.
    let mut misses: Vec<f64> = samples.iter().map(miss_factor).collect();
    misses.sort_by(f64::total_cmp);
    assert_eq!(f.interval.margin, misses[6]);
    assert_eq!(f.interval.fitted_coverage, 1.0);
    // Written and read back.
    let back = Calibration::from_toml_str(&f.to_toml_string(), "fit").unwrap();
    assert_eq!(back, f);
    // Its estimate states the fitted error for the kind it was fitted on, and none for
    // another kind: no figure is borrowed.
    let e = f
        .estimate(&projections[3], ChangeKind::VectorWidth)
        .unwrap();
    assert!((e.gflops - measured[3]).abs() < 1e-9 * measured[3]);
    assert_eq!(e.error.unwrap().pairs, 7);
    assert!(e.error_words().contains("on 7 measured vector width pairs"));
    for kind in ChangeKind::ALL.into_iter().skip(1) {
        let e = f.estimate(&projections[3], kind).unwrap();
        assert!(e.error.is_none(), "{kind}");
        assert_eq!(
            e.error_words(),
            format!("not validated for this kind of change ({kind})")
        );
        assert_eq!(e.error_suffix(), "");
    }
    // Pairs of another kind, held out, give that kind its own figure.
    let mut g = f.clone();
    g.measure_error(ChangeKind::Compiler, &samples[..3]);
    let c = g.error_for(ChangeKind::Compiler).unwrap();
    assert_eq!(c.pairs, 3);
    assert!(g.error_for(ChangeKind::CrossIsaMachine).is_none());
    let back = Calibration::from_toml_str(&g.to_toml_string(), "fit").unwrap();
    assert_eq!(back, g);
}

#[test]
fn calibrations_are_checked() {
    let ok = Calibration::bundled();
    assert!(
        ok.point.error.pairs > 0 && ok.point.error.pairs == ok.fitted_on.len(),
        "{ok:?}"
    );
    let mut bad = ok.clone();
    bad.point.parameter = 7.5;
    let e = Calibration::from_toml_str(&bad.to_toml_string(), "m.toml").unwrap_err();
    assert!(e.to_string().contains("point.parameter"), "{e}");
    let mut bad = ok.clone();
    bad.interval.margin = -0.1;
    let e = Calibration::from_toml_str(&bad.to_toml_string(), "m.toml").unwrap_err();
    assert!(e.to_string().contains("interval"), "{e}");
    let mut bad = ok.clone();
    bad.provenance = String::new();
    let e = Calibration::from_toml_str(&bad.to_toml_string(), "m.toml").unwrap_err();
    assert!(e.to_string().contains("provenance"), "{e}");
}

#[test]
fn transforms_keep_per_width_values_consistent() {
    let m = machine();
    let lookup = |id: &str| builtin(id);
    // A longer vector length extrapolates the peak: the measured per-width peaks no longer
    // describe the core.
    let v = apply(&m, &Transform::VectorBits(1024), &lookup).unwrap();
    assert!(v.peaks[0].widths.is_empty());
    // Scaling a level scales its per-width bandwidths.
    let s = apply(
        &m,
        &Transform::ScaleLevel {
            level: "L1".into(),
            factor: 2.0,
        },
        &lookup,
    )
    .unwrap();
    assert_eq!(s.levels[0].widths[1].core_gbs, Some(310.0));
    // Setting a level drops them.
    let s = apply(
        &m,
        &Transform::SetLevel {
            level: "L2".into(),
            core_gbs: Some(50.0),
            node_gbs: None,
        },
        &lookup,
    )
    .unwrap();
    assert!(s.levels[1].widths.is_empty());
}

/// Across machines of different clocks the source's time that the binding ceiling does not
/// explain carries over in core cycles: the point estimate scales it by the source's clock
/// over the target's, and the interval holds both the carried seconds and the carried
/// cycles. One machine (or a clock unknown): nothing changes.
#[test]
fn across_clocks_the_unexplained_time_carries_over_in_cycles() {
    let mut src = machine();
    src.frequency_ghz = Some(3.0);
    let mut tgt = src.clone();
    tgt.name = "the same core at a faster clock".into();
    tgt.frequency_ghz = Some(4.0);
    // Compute-bound (L1 only), the same binary on both: FPI 2.
    let s = [app(1e10, 2.0, [1e9, 0.0, 0.0], Some(2.0))];
    let t = [app(1e10, 2.0, [1e9, 0.0, 0.0], None)];
    let cal = Calibration::bundled();
    let inputs = Inputs {
        carried_time: true,
        calibration: Some(&cal),
        ..Inputs::default()
    };
    let side = |m, th, origin| Side {
        machine: m,
        threads: th,
        origin,
    };
    let p = project_with(
        side(&src, &s, "source"),
        5.0,
        side(&tgt, &t, "target"),
        Precision::F64,
        Options::default(),
        &inputs,
    )
    .unwrap();
    let k = 0.75;
    assert_eq!(p.clock_ratio, Some(k));
    // The point: efficiency^0.97 of t_s scales with the binding ceiling (equal on both:
    // the machine files give the same peak), the rest by the clocks.
    let b = p.binding[0];
    let e = (b.source_gflops / b.source_ceiling_gflops).clamp(0.0, 1.0);
    let f = e.powf(0.97);
    let t_s = 1e10 / 5.0;
    let expected =
        1e10 / (f * t_s * b.source_ceiling_gflops / b.target_ceiling_gflops + (1.0 - f) * t_s * k);
    let point = p.point.as_ref().unwrap();
    assert!(
        (point.gflops - expected.clamp(p.interval.lo, p.interval.hi)).abs() < 1e-9,
        "{point:?} {expected}"
    );
    assert!(point.gflops > 5.0, "a faster clock is faster: {point:?}");
    assert!(point.rule.contains("core cycles"), "{}", point.rule);
    // The carried-cycles point joins the interval beside the carried-seconds one.
    let pt = &p.points[0];
    let cycles = 1e10 / (1e10 / pt.roof_target_gflops + (1.0 - pt.efficiency) * t_s * k);
    assert!((pt.carried_cycles_gflops.unwrap() - cycles).abs() < 1e-9);
    assert!(p.interval.lo <= pt.carried_time_gflops.unwrap() + 1e-9);
    assert!(p.interval.hi >= cycles - 1e-9);
    // Every point that can set a bound is in the points table.
    let table = hpcscope_core::view::project::points_table(&p).text();
    assert!(table.contains("carried cycles GF/s"), "{table}");
    // One machine: no ratio, no carried-cycles point, the point rule as before.
    let same = project_with(
        side(&src, &s, "source"),
        5.0,
        side(&src, &t, "target"),
        Precision::F64,
        Options::default(),
        &inputs,
    )
    .unwrap();
    assert_eq!(same.clock_ratio, None);
    assert!(
        same.points
            .iter()
            .all(|p| p.carried_cycles_gflops.is_none())
    );
    assert!(!same.point.unwrap().rule.contains("cycles"));
}

#[test]
fn a_float_target_of_a_double_source_has_the_float_peaks() {
    let mut m = machine();
    let mut single = m.peaks[0].clone();
    single.precision = Precision::F32;
    single.core_gflops = single.core_gflops.map(|g| 2.0 * g);
    for w in &mut single.widths {
        w.core_gflops = w.core_gflops.map(|g| 2.0 * g);
    }
    m.peaks.push(single);
    // Compute-bound (little traffic): the float build does the same FLOPs with half the
    // instructions (8 lanes of 256 bits) and half the bytes.
    let s = [app(1e10, 4.0, [1e8, 1e7, 1e6], Some(1.0))];
    let t = [app(1e10, 8.0, [5e7, 5e6, 5e5], None)];
    let (ss, ts) = sides(&m, &s, &t);
    let with = |target_precision| {
        project_with(
            ss,
            10.0,
            ts,
            Precision::F64,
            Options::default(),
            &Inputs {
                target_precision,
                ..Inputs::default()
            },
        )
        .unwrap()
    };
    let same = with(None);
    let float = with(Some(Precision::F32));
    assert_eq!(same.target_precision, None);
    assert_eq!(float.target_precision, Some(Precision::F32));
    // The target's ceilings are the float peaks: twice the double ones.
    assert!(
        (float.target_peak_gflops - 2.0 * same.target_peak_gflops).abs() < 1e-9,
        "{} {}",
        float.target_peak_gflops,
        same.target_peak_gflops
    );
    assert_eq!(float.source_peak_gflops, same.source_peak_gflops);
    // The weighted roof follows the FLOPs per instruction (an instruction's lanes), which
    // the float build doubles: the interval does not depend on the precision's name...
    assert_eq!(float.interval, same.interval);
    assert!(
        (float.points[0].roof_target_gflops - 2.0 * float.points[0].roof_source_gflops).abs()
            < 1e-9
    );
    // ...while the Kwack baseline's peak-to-peak ratio does.
    let (kf, ks) = (float.kwack_gflops.unwrap(), same.kwack_gflops.unwrap());
    assert!((kf - 2.0 * ks).abs() < 1e-9, "{kf} {ks}");
    // Saying the target's precision is the source's changes nothing.
    assert_eq!(with(Some(Precision::F64)), same);
    let (_, tc) = float.ceilings(&m, &m).unwrap();
    assert!((tc.peak_gflops - float.target_peak_gflops).abs() < 1e-9);
}
