//! `regress check` end to end on a store: a regression is found and explained, noise is not
//! flagged, a machine change is reported instead of being taken for a code change, and the
//! reports render.

use hpcscope_history::check::{CheckOptions, check};
use hpcscope_history::gate::Verdict;
use hpcscope_history::record::{Fingerprint, GitInfo, Metric, RunRecord};
use hpcscope_history::store::Store;

fn machine(kernel: &str) -> Fingerprint {
    Fingerprint {
        cpu_model: "Test CPU".into(),
        cpu_count: 4,
        kernel: kernel.into(),
        governor: Some("performance".into()),
        ..Fingerprint::default()
    }
}

/// Seed 004 Table 3.2 time ratios: the run-to-run noise of the baseline.
const TABLE_3_2: [f64; 16] = [
    1.006, 1.003, 0.998, 1.011, 1.009, 0.994, 1.005, 1.009, 0.998, 1.015, 0.999, 1.009, 1.006,
    1.013, 1.009, 1.009,
];

fn run(i: usize, time: f64, l2: f64, kernel: &str) -> RunRecord {
    let mut r = RunRecord::new("./qe.x -in ausurf.in", "record");
    r.started_at = 1_750_000_000.0 + 60.0 * i as f64;
    r.fingerprint = machine(kernel);
    r.git = Some(GitInfo {
        commit: format!("{i:040x}"),
        dirty: false,
        branch: None,
    });
    r.metrics = vec![
        Metric::new("time_s", time, "s"),
        Metric::new("l2_bytes", l2, "B"),
        Metric::new("instructions", 5e9, "count"),
    ];
    r
}

fn store_with_baseline(dir: &std::path::Path) -> Store {
    let mut s = Store::open(dir.join("h.sqlite")).unwrap();
    for (i, &r) in TABLE_3_2.iter().enumerate() {
        s.record(&run(i, 2.0 * r, 1e9 * r, "6.1")).unwrap();
    }
    s
}

#[test]
fn table_3_2_regression_is_flagged_and_explained() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_baseline(dir.path());
    // Research note §6.10: ratio 1.030 is the regression (M = 5.06, +2.23%).
    s.record(&run(16, 2.0 * 1.030, 1.4e9, "6.1")).unwrap();
    let rep = check(&s, &CheckOptions::default()).unwrap();
    assert!(rep.regression);
    assert_eq!(rep.results[0].verdict, Verdict::Regression);
    assert_eq!(rep.baseline_runs.len(), 16);
    let e = rep.explanation.as_ref().unwrap();
    assert!(
        e.summary.starts_with("time_s +2.2%, l2_bytes +39."),
        "{}",
        e.summary
    );
    assert!(
        e.summary.ends_with("instructions unchanged"),
        "{}",
        e.summary
    );
    let md = rep.to_markdown();
    assert!(
        md.contains("REGRESSION") && md.contains("**regression**"),
        "{md}"
    );
    let xml = rep.to_junit_xml();
    assert!(
        xml.contains("failures=\"1\"") && xml.contains("<failure"),
        "{xml}"
    );
    let json = serde_json::to_value(&rep).unwrap();
    assert_eq!(json["regression"], true);
}

#[test]
fn table_3_2_noise_run_is_not_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_baseline(dir.path());
    // 1.020 is within the noise by the §6.10 rule (M = 2.81 < 3.5).
    s.record(&run(16, 2.0 * 1.020, 1e9, "6.1")).unwrap();
    // A failed run, however slow, is not a measurement.
    let mut failed = run(17, 9.0, 1e9, "6.1");
    failed.exit_status = Some(1);
    s.record(&failed).unwrap();
    let rep = check(&s, &CheckOptions::default()).unwrap();
    assert!(!rep.regression, "{}", rep.to_markdown());
    assert_eq!(rep.results[0].verdict, Verdict::Unchanged);
    assert!(rep.to_junit_xml().contains("failures=\"0\""));
    assert!(rep.notes.iter().any(|n| n.contains("non-zero status")));
}

#[test]
fn machine_change_is_reported_not_compared() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_baseline(dir.path());
    // Same code, new kernel: 10% slower. Not a code regression.
    s.record(&run(16, 2.2, 1e9, "6.8")).unwrap();
    let rep = check(&s, &CheckOptions::default()).unwrap();
    assert!(!rep.regression);
    assert_eq!(rep.results[0].verdict, Verdict::Insufficient);
    let mc = rep.machine_change.as_ref().unwrap();
    assert_eq!(
        mc.fields,
        vec![("kernel".to_string(), "6.1".to_string(), "6.8".to_string())]
    );
    assert_eq!(rep.other_machine_runs, 16);
    assert!(rep.notes.iter().any(|n| n.contains("--mix-machines")));
    // Asked to mix, the comparison happens.
    let mixed = check(
        &s,
        &CheckOptions {
            mix_machines: true,
            ..CheckOptions::default()
        },
    )
    .unwrap();
    assert!(mixed.regression);
}

#[test]
fn history_change_points_are_tied_to_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(dir.path().join("h.sqlite")).unwrap();
    let mut ids = Vec::new();
    for i in 0..60 {
        let noise = TABLE_3_2[i % 16];
        let t = if i < 55 { 2.0 } else { 2.2 } * noise;
        ids.push(s.record(&run(i, t, 1e9, "6.1")).unwrap());
    }
    let rep = check(
        &s,
        &CheckOptions {
            candidates: 5,
            ..CheckOptions::default()
        },
    )
    .unwrap();
    assert!(rep.regression);
    assert_eq!(rep.change_points.len(), 1, "{:?}", rep.change_points);
    assert_eq!(rep.change_points[0].run_id, ids[55]);
    assert!(rep.change_points[0].worse);
    assert!(rep.results[0].p_worse.unwrap() < 0.01);
}

#[test]
fn empty_store_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(dir.path().join("h.sqlite")).unwrap();
    let e = check(&s, &CheckOptions::default()).unwrap_err();
    assert!(e.to_string().contains("hpcscope record"), "{e}");
}

#[test]
fn change_points_are_explained_and_false_discoveries_controlled() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(dir.path().join("h.sqlite")).unwrap();
    // time_s steps up by 3 % at run 40; l2_bytes is pure noise.
    for i in 0..80 {
        let noise = TABLE_3_2[i % 16];
        let t = if i < 40 { 2.0 } else { 2.06 } * noise;
        s.record(&run(i, t, 1e9 * TABLE_3_2[(i * 7) % 16], "6.1"))
            .unwrap();
    }
    let opts = CheckOptions {
        metrics: vec!["time_s".into(), "l2_bytes".into(), "instructions".into()],
        ..CheckOptions::default()
    };
    let rep = check(&s, &opts).unwrap();
    let cps: Vec<_> = rep
        .change_points
        .iter()
        .filter(|c| c.metric == "time_s")
        .collect();
    assert_eq!(cps.len(), 1, "{:?}", rep.change_points);
    let c = cps[0];
    assert!((c.mean_before - 2.0 * 1.005_812_5).abs() < 0.01, "{c:?}");
    assert!((c.step - 0.06).abs() < 0.01, "{c:?}");
    assert!(c.pvalue > 0.0, "{c:?}");
    assert!(c.step_over_noise > 5.0 && !c.trend && c.worse, "{c:?}");
    assert!(rep.change_points.iter().all(|c| c.metric == "time_s"));
    // The constant metric says why it has no change point.
    assert!(
        rep.notes
            .iter()
            .any(|n| n.contains("`instructions`") && n.contains("constant")),
        "{:?}",
        rep.notes
    );
    let md = rep.to_markdown();
    assert!(
        md.contains("step / noise") && md.contains("no trend"),
        "{md}"
    );
    // With a false-discovery rate below its series p-value (p x 80 positions), the change
    // is withheld and the note says so.
    let strict = check(
        &s,
        &CheckOptions {
            fdr: c.pvalue * 80.0 / 10.0,
            ..opts.clone()
        },
    )
    .unwrap();
    assert!(strict.change_points.is_empty());
    assert!(
        strict
            .notes
            .iter()
            .any(|n| n.contains("withheld") && n.contains("`time_s`")),
        "{:?}",
        strict.notes
    );
}

/// Issue 38, item 7: a metric at 0 in every baseline run and 0.001 now had a z-score of
/// +infinity (null in the JSON, against the schema's number), a change of "+0.00%", the
/// verdict "unchanged" and an anomaly flag. A constant baseline has no z-score; any
/// departure beyond the floor (anything, from 0) is a change, the same in text, JSON and
/// the regression flag that decides the exit code.
#[test]
fn a_departure_from_a_constant_baseline_is_a_change_without_a_z_score() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(dir.path().join("h.sqlite")).unwrap();
    let with = |i: usize, t: f64, misses: f64, level: f64| {
        let mut r = run(i, t, 1e9, "6.1");
        r.metrics.push(Metric::new("misses", misses, "count"));
        r.metrics.push(Metric::new("level", level, "count"));
        r
    };
    for (i, &r) in TABLE_3_2.iter().enumerate() {
        s.record(&with(i, 2.0 * r, 0.0, 100.0)).unwrap();
    }
    let opts = CheckOptions {
        metrics: vec!["misses".into(), "level".into()],
        ..CheckOptions::default()
    };
    // Still 0 and 100: unchanged, no z-score, nothing flagged.
    s.record(&with(16, 2.0, 0.0, 100.0)).unwrap();
    let rep = check(&s, &opts).unwrap();
    assert!(!rep.regression, "{}", rep.to_markdown());
    for r in &rep.results {
        assert_eq!(r.verdict, Verdict::Unchanged, "{}", r.reason);
        assert_eq!(r.robust_z, None);
    }
    assert_eq!(rep.results[0].rel_change, Some(0.0));
    let a = rep.anomalies.as_ref().unwrap();
    assert!(a.metrics.iter().all(|m| !m.flagged), "{a:?}");

    // 0 -> 0.001 and 100 -> 100.5 (0.5 %, below the 2 % floor).
    s.record(&with(17, 2.0, 0.001, 100.5)).unwrap();
    let rep = check(&s, &opts).unwrap();
    let md = rep.to_markdown();
    let misses = &rep.results[0];
    assert_eq!(misses.verdict, Verdict::Regression, "{md}");
    assert_eq!(misses.robust_z, None);
    assert_eq!(misses.rel_change, None);
    assert!(
        misses
            .reason
            .contains("baseline constant at 0 over 17 runs; now 0.001"),
        "{}",
        misses.reason
    );
    assert_eq!(rep.results[1].verdict, Verdict::Unchanged, "{md}");
    assert!(rep.regression, "{md}");
    assert!(
        md.contains("0 -> 0.001") && md.contains("none (constant baseline)"),
        "{md}"
    );
    assert!(
        md.contains("`misses` (baseline constant at 0; now 0.001)"),
        "{md}"
    );
    let a = rep.anomalies.as_ref().unwrap();
    let m = a.metrics.iter().find(|m| m.metric == "misses").unwrap();
    assert!(
        m.flagged && m.z.is_none() && m.rel_change.is_none(),
        "{m:?}"
    );
    let l = a.metrics.iter().find(|m| m.metric == "level").unwrap();
    assert!(!l.flagged && l.z.is_none(), "{l:?}");
    assert!(a.max_abs_z.is_finite() && a.rms_z.is_finite(), "{a:?}");
    // Never an infinity or a NaN in any rendering.
    let json = serde_json::to_string(&rep).unwrap();
    let xml = rep.to_junit_xml();
    for text in [&md, &json, &xml] {
        for bad in ["inf", "NaN"] {
            assert!(!text.contains(bad), "{bad} in {text}");
        }
    }
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["regression"], true);
    assert!(v["results"][0]["robust_z"].is_null());
    assert!(xml.contains("failures=\"1\""), "{xml}");

    // Once the baseline has a spread again, the modified z-score decides as before.
    s.record(&with(18, 2.0, 0.0, 103.0)).unwrap();
    let rep = check(&s, &opts).unwrap();
    assert_eq!(rep.results[0].verdict, Verdict::Unchanged);
    assert_eq!(
        rep.results[1].verdict,
        Verdict::Regression,
        "{}",
        rep.to_markdown()
    );
}
