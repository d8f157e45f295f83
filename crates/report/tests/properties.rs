//! Property tests: whatever the numbers and names, the charts are well-formed XML with finite
//! coordinates, and escaped text reads back unchanged.

use hpcscope_report::*;
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
    fn escaped_text_reads_back(s in "\\PC{0,40}") {
        let xml = format!("<a t=\"{}\">{}</a>", escape(&s), escape(&s));
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let root = doc.root_element();
        prop_assert_eq!(root.attribute("t").unwrap_or_default(), s.as_str());
        prop_assert_eq!(root.text().unwrap_or_default(), s.as_str());
    }

    #[test]
    fn line_charts_are_well_formed(
        series in prop::collection::vec(
            (any::<String>(), prop::collection::vec((value(), value()), 0..20), any::<bool>()),
            0..4,
        ),
        log_x in any::<bool>(),
        log_y in any::<bool>(),
        markers in prop::collection::vec((value(), "[a-z <&>]{0,12}"), 0..3),
        title in any::<String>(),
    ) {
        let series: Vec<Series> = series
            .into_iter()
            .map(|(name, points, dashed)| Series { name, points, dashed })
            .collect();
        let svg = line_chart_svg(&series, &ChartOptions {
            title,
            x_label: "x (unit)".into(),
            y_label: "y <unit>".into(),
            log_x,
            log_y,
            vertical_markers: markers,
            caption: "a & b".into(),
        });
        well_formed(&svg)?;
    }

    #[test]
    fn html_tables_are_well_formed(
        headers in prop::collection::vec("\\PC{0,10}", 1..4),
        rows in prop::collection::vec(prop::collection::vec("\\PC{0,10}", 1..4), 0..4),
    ) {
        let h: Vec<&str> = headers.iter().map(String::as_str).collect();
        let t = html_table(&h, &rows);
        prop_assert!(roxmltree::Document::parse(&t).is_ok(), "{}", t);
    }
}
