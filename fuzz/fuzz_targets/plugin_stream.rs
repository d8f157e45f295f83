//! The QEMU plugin's memory-access record stream (`HPCSMT02` header, 8-byte records), as
//! `hpcscope mix` decodes it into the cache simulator: never a panic; every record is counted.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let m = hpcscope_core::library::builtin("thunderx2").expect("built-in machine");
    let Ok(h) = hpcscope_mix::hierarchy(&m) else {
        return;
    };
    // With and without a valid header in front, so that the records themselves are fuzzed.
    let _ = hpcscope_mix::replay_stream(data, vec![h.clone()]);
    let mut framed = b"HPCSMT02".to_vec();
    framed.extend_from_slice(data);
    if let Ok((_, n)) = hpcscope_mix::replay_stream(&framed[..], vec![h]) {
        assert!(n <= (data.len() / 8) as u64 + 1, "{n} records from {} bytes", data.len());
    }
});
