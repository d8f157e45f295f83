//! The QEMU plugin's memory-access record stream (`HPCSMT03` header, 8-byte records and
//! thread markers): its reader (`hpcscope_plugin_format::read`), which cuts the records into
//! thread runs, and `hpcscope mix`'s decoding into the node cache simulation: never a
//! panic; every record is counted, and the runs stay inside their buffer.
#![no_main]
use hpcscope_plugin_format::{Demux, Event, MAGIC, Record, read, read_words};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut framed = MAGIC.to_vec();
    framed.extend_from_slice(data);

    // The reader alone: every whole record once, in buffers the demultiplexer cuts into
    // runs inside them.
    let mut demux = Demux::default();
    let mut events = Vec::new();
    let mut seen = 0u64;
    let mut accesses = 0u64;
    let n = read_words(&framed[..], MAGIC, &mut |b: &[Record]| {
        seen += b.len() as u64;
        accesses += demux.split(b, &mut events);
        for e in &events {
            if let Event::Run(_, a, z) = *e {
                assert!(a <= z && z <= b.len(), "run {a}..{z} of {}", b.len());
            }
        }
    })
    .expect("a framed stream reads");
    assert_eq!(n, (data.len() / 8) as u64);
    assert_eq!(seen, n);
    assert!(accesses <= n);
    if let Ok(all) = read::records(&framed) {
        assert_eq!(all.len() as u64, n);
    }

    let m = hpcscope_core::library::builtin("thunderx2").expect("built-in machine");
    let Ok(node) = hpcscope_mix::node(&m) else {
        return;
    };
    let placement = hpcscope_cachesim::Placement::Compact;
    // With and without a valid header in front, so that the records themselves are fuzzed.
    let _ = hpcscope_mix::replay_stream(data, vec![node.clone()], &placement);
    if let Ok(r) = hpcscope_mix::replay_stream(&framed[..], vec![node], &placement) {
        assert!(
            r.records <= (data.len() / 8) as u64 + 1,
            "{} records from {} bytes",
            r.records,
            data.len()
        );
    }
});
