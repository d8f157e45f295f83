//! The value parsers of the command line's numeric options (`hpcscope_core::range::option`:
//! `--clock-ghz`, bandwidths, counts, process counts, ratios): never a panic; a value taken is
//! finite and inside what its parser promises, and reads back the same from its own text; a
//! value refused gets a one-line message.
#![no_main]
use hpcscope_core::range::{self, option};
use libfuzzer_sys::fuzz_target;

type Parser = fn(&str) -> Result<f64, String>;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsers: [(&str, Parser, fn(f64) -> bool); 6] = [
        ("ghz", option::ghz, |v| {
            range::check(&range::FREQUENCY_GHZ, "", "", v).is_none()
        }),
        ("gbs", option::gbs, |v| {
            range::check(&range::BANDWIDTH_GBS, "", "", v).is_none()
        }),
        ("count", option::count, |v| {
            range::check(&range::COUNT, "", "", v).is_none()
        }),
        ("processes", option::processes, |v| {
            (1.0..=range::MAX_THREADS as f64 * 1024.0).contains(&v)
        }),
        ("positive", option::positive, |v| v > 0.0),
        ("non_negative", option::non_negative, |v| v >= 0.0),
    ];
    for (name, parse, promise) in parsers {
        match parse(text) {
            Ok(v) => {
                assert!(v.is_finite() && promise(v), "{name}({text:?}) took {v}");
                assert_eq!(
                    parse(&v.to_string()),
                    Ok(v),
                    "{name}: {v} does not read back"
                );
            }
            Err(e) => {
                assert!(
                    !e.trim().is_empty() && !e.contains('\n'),
                    "{name}({text:?}): {e:?}"
                );
                assert_eq!(parse(text), Err(e), "{name}({text:?}) is not deterministic");
            }
        }
    }
});
