//! Kerncraft machine files (`machine import`): never a panic, nor a time quadratic in the
//! input (flow collections nested deep are refused before the YAML parser); a machine that
//! imports is one hpcscope's own machine files can hold: it writes to TOML that reads back
//! to the same machine, and exports to Kerncraft's format again. The first byte chooses
//! between no overrides (even) and every override (odd: id, vector extension and width, and
//! DP FLOPs per cycle, which the command line can give).
#![no_main]
use hpcscope_core::Machine;
use hpcscope_core::kerncraft::{ImportOverrides, export, import};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let ov = if choice % 2 == 0 {
        ImportOverrides::default()
    } else {
        ImportOverrides {
            id: Some("fuzz-node".into()),
            simd: Some("avx2".into()),
            vector_bits: Some(256),
            dp_flops_per_cycle: Some(16.0),
        }
    };
    if let Ok(c) = import(text, "fuzz.yml", "fuzz", &ov) {
        let toml = c.value.to_toml_string();
        let again = Machine::from_toml_str(&toml, "again.toml")
            .unwrap_or_else(|e| panic!("an imported machine does not read back: {e}\n{toml}"));
        assert_eq!(
            c.value, again,
            "import -> write -> parse changed the machine"
        );
        let _ = export(&c.value);
    }
});
