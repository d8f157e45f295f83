//! Scenario TOML: never a panic; a scenario that reads writes back to TOML that reads to the
//! same scenario.
#![no_main]
use hpcscope_core::explore::Scenario;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(s) = Scenario::from_toml_str(text, "fuzz.toml") {
        let again = toml::to_string(&s).expect("a scenario serializes");
        let s2 = Scenario::from_toml_str(&again, "again.toml")
            .unwrap_or_else(|e| panic!("a scenario written back does not read: {e}\n{again}"));
        assert_eq!(s, s2, "parse -> write -> parse changed the scenario");
    }
});
