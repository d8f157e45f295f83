//! The split of a binary's bytes by access width, as `mix` counts it and profiles carry it:
//! built from bytes per width, checked when read, optional in old files.

use std::path::Path;

use hpcscope_core::Profile;
use hpcscope_core::roofline::AccessWidths;

fn profile_text() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/tx2-source.json"),
    )
    .unwrap()
}

#[test]
fn bytes_and_fp_instructions_split_each_by_their_own_width() {
    // An AVX2 loop: its vectors at 256 bits, a few 64-bit loads of scalars, scalar FMAs.
    let w = AccessWidths::from_bytes(
        &[(256, 960_000.0), (64, 40_000.0), (0, 5.0)],
        &[(256, 10_000.0), (64, 10_000.0)],
        "test",
    )
    .unwrap();
    let parts: Vec<(u32, f64, f64)> = w
        .parts
        .iter()
        .map(|p| (p.vector_bits, p.fraction, p.instructions))
        .collect();
    assert_eq!(parts, vec![(64, 0.04, 0.5), (256, 0.96, 0.5)]);
    assert!(w.problems().is_empty());
    assert_eq!(w.describe(), "256-bit 96 %, 64-bit 4 %");
    let tiny = AccessWidths::from_bytes(&[(128, 1e6), (64, 16.0)], &[], "test").unwrap();
    assert_eq!(
        tiny.describe(),
        "128-bit 100 %, under 0.5 % at other widths"
    );
    // No FP instruction: every instruction share is 0, the byte split stands.
    let w = AccessWidths::from_bytes(&[(128, 1.0)], &[], "test").unwrap();
    assert_eq!((w.parts[0].fraction, w.parts[0].instructions), (1.0, 0.0));
    // No byte with a width: no split.
    assert!(AccessWidths::from_bytes(&[(128, 0.0)], &[(128, 3.0)], "test").is_none());
}

#[test]
fn profiles_carry_the_split_and_old_ones_read_without_it() {
    let mut p = Profile::from_json_str(&profile_text(), "p.json").unwrap();
    assert!(p.regions[0].access_widths.is_none());
    p.regions[0].access_widths = AccessWidths::from_bytes(&[(128, 3.0), (64, 1.0)], &[], "mix");
    let back = Profile::from_json_str(&p.to_json_string(), "p.json").unwrap();
    assert_eq!(back.regions[0].access_widths, p.regions[0].access_widths);
    // Shares that do not add up are refused, with the field and a fix.
    if let Some(w) = p.regions[0].access_widths.as_mut() {
        w.parts[0].fraction = 0.5;
        w.parts[1].instructions = 2.0;
    }
    let e = Profile::from_json_str(&p.to_json_string(), "p.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("regions[0].access_widths"), "{e}");
    assert!(
        e.contains("sum to") && e.contains("instructions is 2"),
        "{e}"
    );
    assert!(e.contains("remove access_widths"), "{e}");
}
