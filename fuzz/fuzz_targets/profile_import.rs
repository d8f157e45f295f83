//! The profile importers of `profile import`, `diff` and `export`: `perf script` text
//! (through inferno's collapser), folded stacks and hpcscope profile JSON. The first byte
//! chooses the input: even, the other bytes as text (invalid UTF-8 replaced, as the importer
//! reads a file); odd, `perf script` samples built around function names taken from the
//! other bytes, one per line, with characters of every UTF-8 length.
//!
//! Never a panic, and no panic of inferno caught by hpcscope's guard (an error that says
//! [`LIBRARY_FAULT`]); what imports draws a flame graph and a differential one, exports to
//! pprof, speedscope and Hatchet, and reads back from its folded stacks with the same total.
//! Built names come back as they were, each with its own weight.
#![no_main]
use std::collections::BTreeMap;

use hpcscope_trace::perf_script::{self, Imported, LIBRARY_FAULT};
use libfuzzer_sys::fuzz_target;

/// Characters the built names are made of: ASCII, and 2-, 3- and 4-byte UTF-8.
const ALPHABET: [char; 16] = [
    'a', 'Z', '0', '7', '_', 'x', 'é', 'ß', 'ж', '计', '算', '€', '\u{FFFD}', '😀', '𝔘', 'ǅ',
];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let text = String::from_utf8_lossy(rest);
        if let Some(imp) = outcome(perf_script::from_text(&text, "fuzz")) {
            check(&imp);
        }
        return;
    }
    // Built: names of up to 40 characters, at most 8 samples.
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    let mut text = String::new();
    for (i, line) in rest.split(|&b| b == b'\n').take(8).enumerate() {
        let name: String = line
            .iter()
            .take(40)
            .map(|&b| ALPHABET[(b % 16) as usize])
            .collect();
        if name.is_empty() {
            continue;
        }
        let count = 1000 + line.len() as u64;
        text.push_str(&format!(
            "app {} {i}.5: {count} cpu-clock:\n\t{:x} {name}+0x{i:x} (/bin/app)\n\t1 main (/bin/app)\n\n",
            100 + i,
            0x1000 + i
        ));
        *want.entry(name).or_default() += count;
    }
    if want.is_empty() {
        return;
    }
    let imp = outcome(perf_script::from_text(&text, "fuzz"))
        .unwrap_or_else(|| panic!("built perf script does not import:\n{text}"));
    let got: BTreeMap<String, u64> = imp
        .profile
        .hot_functions(usize::MAX)
        .into_iter()
        .filter(|h| h.name != "main")
        .map(|h| (h.name, h.self_samples))
        .collect();
    assert_eq!(got, want, "names or weights changed:\n{text}");
    check(&imp);
});

/// The import, or `None` for an error that is not a caught panic.
fn outcome(r: Result<Imported, hpcscope_core::Failure>) -> Option<Imported> {
    match r {
        Ok(imp) => Some(imp),
        Err(e) => {
            assert!(!e.message.contains(LIBRARY_FAULT), "{}", e.message);
            None
        }
    }
}

fn check(imp: &Imported) {
    let p = &imp.profile;
    for h in p.hot_functions(20) {
        assert!(h.self_pct.is_finite() && h.total_pct.is_finite(), "{h:?}");
    }
    if let Err(e) = p.flamegraph_svg("fuzz") {
        assert!(!e.contains(LIBRARY_FAULT), "{e}");
    }
    if let Err(e) = perf_script::diff_flamegraph_svg(p, p, "fuzz", true) {
        assert!(!e.message.contains(LIBRARY_FAULT), "{}", e.message);
    }
    let _ = perf_script::diff_functions(p, p, 10);
    let _ = hpcscope_trace::pprof::to_pprof_gz(p, &imp.weight, 0);
    let _ = hpcscope_trace::speedscope::from_profile(p, &imp.weight, "fuzz");
    let _ = hpcscope_trace::hatchet::to_json(p, &imp.weight);
    let folded = p.folded();
    if !folded.is_empty() {
        let back = perf_script::from_folded(&folded, "folded")
            .unwrap_or_else(|e| panic!("folded stacks written do not read: {e}\n{folded}"));
        assert_eq!(back.profile.total(), p.total(), "{folded}");
    }
}
