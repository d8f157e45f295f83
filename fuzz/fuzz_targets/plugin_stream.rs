//! The QEMU plugin's memory-access record stream (`HPCSMT03` header, 8-byte records and
//! thread markers), as `hpcscope mix` decodes it into the node cache simulation: never a
//! panic; every record is counted.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let m = hpcscope_core::library::builtin("thunderx2").expect("built-in machine");
    let Ok(n) = hpcscope_mix::node(&m) else {
        return;
    };
    let placement = hpcscope_cachesim::Placement::Compact;
    // With and without a valid header in front, so that the records themselves are fuzzed.
    let _ = hpcscope_mix::replay_stream(data, vec![n.clone()], &placement);
    let mut framed = b"HPCSMT03".to_vec();
    framed.extend_from_slice(data);
    if let Ok(r) = hpcscope_mix::replay_stream(&framed[..], vec![n], &placement) {
        assert!(
            r.records <= (data.len() / 8) as u64 + 1,
            "{} records from {} bytes",
            r.records,
            data.len()
        );
    }
});
