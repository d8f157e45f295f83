//! Linux pmu-events metric JSON: never a panic or a stack overflow; every metric evaluates
//! (to a number or an error) on made-up counts.
#![no_main]
use hpcscope_counters::import::pmu_events::{PmuMetrics, default_constants};
use hpcscope_counters::raw::{Count, ThreadData};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(set) = PmuMetrics::parse(text, "fuzz.json") else {
        return;
    };
    let mut t = ThreadData {
        thread: 0,
        time_s: Some(1.5),
        ..ThreadData::default()
    };
    for m in &set.metrics {
        for id in m.expr.identifiers() {
            t.counters.insert(id, Count::of(3.0));
        }
    }
    let consts = default_constants();
    for m in set.metrics.iter().take(64) {
        let _ = set.evaluate(&m.name, &t, &consts);
    }
});
