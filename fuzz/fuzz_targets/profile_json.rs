//! Profile JSON: never a panic; a profile that reads writes back to JSON that reads to the
//! same profile; the aggregates of a valid profile are finite.
#![no_main]
use hpcscope_core::Profile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = Profile::from_json_str(text, "fuzz.json") {
        let again = p.to_json_string();
        let p2 = Profile::from_json_str(&again, "again.json")
            .unwrap_or_else(|e| panic!("a profile written back does not read: {e}\n{again}"));
        assert_eq!(p, p2, "parse -> write -> parse changed the profile");
        for r in &p.regions {
            if let Ok(a) = r.aggregate("fuzz.json") {
                assert!(a.flops.is_finite() && a.flops >= 0.0);
                assert!(a.bytes.iter().all(|b| b.is_finite() && *b >= 0.0), "{a:?}");
                if let Some(g) = a.gflops() {
                    assert!(g.is_finite(), "{g}");
                }
            }
        }
    }
});
