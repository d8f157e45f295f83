//! What several fuzz targets check.

use hpcscope_counters::import::{Format, import_str};
use hpcscope_counters::raw::RawData;

/// Imported counter data: finite, non-negative counts and times, and a round trip through
/// hpcscope's raw format (`counters run --save`) gives the same data.
pub fn check_raw(raw: &RawData) {
    for r in &raw.regions {
        for t in &r.threads {
            if let Some(s) = t.time_s {
                assert!(s.is_finite() && s >= 0.0, "time {s}");
            }
            for (k, c) in &t.counters {
                if let Some(v) = c.value {
                    assert!(v.is_finite() && v >= 0.0, "{k} = {v}");
                }
            }
        }
    }
    let json = serde_json::to_string(raw).expect("raw data serializes");
    let back = import_str(&json, Format::Raw, "again", &raw.label)
        .unwrap_or_else(|e| panic!("raw data written back does not read: {e}\n{json}"));
    assert_eq!(&back, raw, "raw data changed in a round trip");
}
