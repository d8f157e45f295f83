//! valgrind lackey traces: never a panic; a record that parses prints back to a line that
//! parses to the same record.
#![no_main]
use hpcscope_cachesim::lackey::{LackeyKind, parse_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for (i, line) in text.lines().enumerate() {
        if let Ok(Some(r)) = parse_line(line, i as u64 + 1) {
            let k = match r.kind {
                LackeyKind::Instr => "I ",
                LackeyKind::Load => " L",
                LackeyKind::Store => " S",
                LackeyKind::Modify => " M",
            };
            let again = format!("{k} {:x},{}", r.addr, r.size);
            let r2 = parse_line(&again, 1)
                .unwrap_or_else(|e| panic!("'{again}' does not parse: {e}"))
                .expect("a record");
            assert_eq!(r, r2, "'{line}' -> '{again}'");
            let _ = r.data_accesses().count();
        }
    }
});
