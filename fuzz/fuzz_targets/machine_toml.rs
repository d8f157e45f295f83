//! Machine TOML: never a panic; a machine that reads writes back to TOML that reads to the
//! same machine.
#![no_main]
use hpcscope_core::Machine;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(m) = Machine::from_toml_str(text, "fuzz.toml") {
        let again = m.to_toml_string();
        let m2 = Machine::from_toml_str(&again, "again.toml")
            .unwrap_or_else(|e| panic!("a machine written back does not read: {e}\n{again}"));
        assert_eq!(m, m2, "parse -> write -> parse changed the machine");
        // Every derived number a command prints is finite.
        for p in [hpcscope_core::Precision::F64, hpcscope_core::Precision::F32] {
            for (v, _) in [m.core_peak_gflops(p), m.node_share_peak_gflops(p)]
                .into_iter()
                .flatten()
            {
                assert!(v.is_finite() && v > 0.0, "peak {v}");
            }
        }
        for l in &m.levels {
            for (v, _) in [m.core_bandwidth_gbs(l)].into_iter().flatten() {
                assert!(v.is_finite() && v > 0.0, "bandwidth {v}");
            }
        }
    }
});
