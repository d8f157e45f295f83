//! The counters importer of papi json files: never a panic or a hang; what it imports has only
//! finite, non-negative counts and times, and reads back from hpcscope's own raw format as
//! the same data.
#![no_main]
use hpcscope_counters::import::{Format, import_str};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(raw) = import_str(text, Format::PapiJson, "fuzz", "fuzz") {
        hpcscope_fuzz::check_raw(&raw);
    }
});
