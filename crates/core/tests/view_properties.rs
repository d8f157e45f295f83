//! Property tests of the charts of `view`: whatever the numbers and names, they are
//! well-formed XML with finite coordinates.

use hpcscope_core::view::*;
use proptest::prelude::*;

/// Parses `svg` and checks every attribute is free of NaN/inf.
fn well_formed(svg: &str) -> Result<(), TestCaseError> {
    let doc =
        roxmltree::Document::parse(svg).map_err(|e| TestCaseError::fail(format!("{e}\n{svg}")))?;
    for n in doc.descendants().filter(|n| n.is_element()) {
        for a in n.attributes() {
            prop_assert!(
                !a.value().contains("NaN") && !a.value().contains("inf"),
                "{}={}",
                a.name(),
                a.value()
            );
        }
    }
    Ok(())
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => 1e-3f64..1e4,
        1 => Just(0.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => -10.0f64..0.0,
    ]
}

proptest! {
    #[test]
    fn validation_charts_are_well_formed(
        rows in prop::collection::vec(("[A-Za-z0-9 <>&\"]{0,20}", value(), value(), value()), 0..6),
    ) {
        let rows: Vec<ValidationRow> = rows
            .into_iter()
            .map(|(label, lo, hi, measured)| ValidationRow { label, lo: lo.min(hi), hi: hi.max(lo), measured, point: None })
            .collect();
        well_formed(&validation_svg(&rows, "v"))?;
    }

    #[test]
    fn speedup_charts_are_well_formed(
        rows in prop::collection::vec(("[a-z <&]{0,12}", "[A-Z0-9 >\"]{0,10}", value(), value()), 0..12),
    ) {
        let rows: Vec<SpeedupRow> = rows
            .into_iter()
            .map(|(workload, target, lo, hi)| SpeedupRow { workload, target, lo: lo.min(hi), hi: hi.max(lo), point: None, model: None })
            .collect();
        well_formed(&speedup_svg(&rows, "s"))?;
    }
}

fn base_projection() -> hpcscope_core::project::Projection {
    use hpcscope_core::Precision;
    use hpcscope_core::library::builtin;
    use hpcscope_core::profile::{AppMetrics, bytes_from_local};
    use hpcscope_core::project::{Options, Side, project};
    let app = AppMetrics {
        flops: 1.0e11,
        fp_instructions: 3.125e10,
        levels: ["L1", "L2", "MM"].map(String::from).to_vec(),
        bytes: bytes_from_local(8.0e11, &[0.9, 0.6], 3),
        time_s: None,
    };
    let m = builtin("thunderx2").unwrap();
    let t = [app];
    let side = Side {
        machine: &m,
        threads: &t,
        origin: "x",
    };
    project(side, 1.0, side, Precision::F64, Options::default()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn explore_charts_are_well_formed(
        pts in prop::collection::vec(("[a-c] sve-[0-9]{1,4}", "[xy<&]{1,3}", value(), value()), 0..12),
        source in value(),
    ) {
        let base = base_projection();
        let pts: Vec<hpcscope_core::explore::DesignPoint> = pts
            .into_iter()
            .map(|(variant, target, a, b)| {
                let interval = hpcscope_core::project::Interval { lo: a.min(b), hi: a.max(b) };
                hpcscope_core::explore::DesignPoint {
                    variant,
                    target: target.clone(),
                    machine: target,
                    interval,
                    speedup: interval,
                    memory_bound_points: 0,
                    points: 1,
                    lower_bound_by: String::new(),
                    time_s: None,
                    bytes: Default::default(),
                    projection: base.clone(),
                }
            })
            .collect();
        well_formed(&explore_svg(&pts, "e", source))?;
    }
}
