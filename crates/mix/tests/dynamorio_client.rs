//! The DynamoRIO client build the native engine loads on this CPU. DynamoRIO reads the
//! client's `_DR_CLIENT_AVX512_CODE_IN_USE_` when it loads it and, when it is set, saves ZMM
//! registers whatever the CPU: on an AMD Zen 3 every program died of SIGILL before its first
//! instruction. scripts/build-dynamorio.sh builds the client twice; the engine must load the
//! one whose flag matches the CPU.

#![cfg(target_arch = "x86_64")]

use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol};

/// The value of the client's AVX-512 flag in the library at `path`.
fn flag(path: &Path) -> u8 {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sym = file
        .dynamic_symbols()
        .find(|s| s.name() == Ok("_DR_CLIENT_AVX512_CODE_IN_USE_"))
        .unwrap_or_else(|| panic!("{}: no _DR_CLIENT_AVX512_CODE_IN_USE_", path.display()));
    let section = file.section_by_index(sym.section_index().unwrap()).unwrap();
    let bytes = section.data().unwrap();
    bytes[(sym.address() - section.address()) as usize]
}

#[test]
fn the_client_for_this_cpu_asks_for_avx512_registers_only_where_they_exist() {
    let dir = hpcscope_host::tools::dynamorio_dir();
    let with = dir.join("client/libhpcscope_dr_client.so");
    if !with.is_file() {
        eprintln!("skipping: DynamoRIO is not built (scripts/build-dynamorio.sh)");
        return;
    }
    let without = dir.join("client/libhpcscope_dr_client_noavx512.so");
    assert!(
        without.is_file(),
        "{} is missing: scripts/build-dynamorio.sh builds both clients",
        without.display()
    );
    assert_eq!(flag(&with), 1);
    assert_eq!(flag(&without), 0);
    let chosen = hpcscope_host::tools::dynamorio_client(&dir);
    let avx512 = std::is_x86_feature_detected!("avx512f");
    assert_eq!(
        flag(&chosen),
        u8::from(avx512),
        "{} on a CPU {} AVX-512",
        chosen.display(),
        if avx512 { "with" } else { "without" }
    );
}
