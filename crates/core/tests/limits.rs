//! Hostile but honest input: numbers that validate in one command and turn into infinities in
//! another, duplicates that were silently merged, inputs that never end, sweeps that do not fit
//! in memory. Each case failed (or hung, or printed NaN) before the shared checks.

use std::path::Path;

use hpcscope_core::explore::{Cost, Scenario};
use hpcscope_core::load;
use hpcscope_core::roofline::{Ceilings, Scope, analyze, scope_note};
use hpcscope_core::{Machine, Precision, Profile, library};

fn machine_with(edit: impl Fn(&mut Machine)) -> Result<Machine, String> {
    let mut m = library::builtin("thunderx2").unwrap();
    edit(&mut m);
    let text = m.to_toml_string();
    Machine::from_toml_str(&text, "m.toml").map_err(|e| e.to_string())
}

fn profile_text() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/tx2-source.json"),
    )
    .unwrap()
}

#[test]
fn machine_numbers_outside_their_plausible_range_are_refused_with_unit_and_fix() {
    // 65536 x 65536 cores wrapped to 0 and made the node peak NaN.
    let e = machine_with(|m| {
        m.sockets = 65536;
        m.cores_per_socket = 65536;
    })
    .unwrap_err();
    assert!(e.contains("sockets") && e.contains("plausible"), "{e}");
    // A subnormal bandwidth made the projection interval end at inf.
    let e = machine_with(|m| m.levels[0].core_gbs = Some(1e-310)).unwrap_err();
    assert!(
        e.contains("levels[0].core_gbs") && e.contains("GB/s") && e.contains("1e-310"),
        "{e}"
    );
    // 1e300 GFLOP/s is said in a few characters, not three hundred digits.
    let e = machine_with(|m| m.peaks[0].core_gflops = Some(1e300)).unwrap_err();
    assert!(e.contains("1e300") && e.len() < 600, "{e}");
    // A thousand levels: one message with the limit, not a thousand.
    let e = machine_with(|m| {
        let l = m.levels[0].clone();
        m.levels = (0..1000)
            .map(|i| {
                let mut l = l.clone();
                l.name = format!("L{i}");
                l
            })
            .collect();
    })
    .unwrap_err();
    assert!(e.contains("at most 16"), "{e}");
    assert!(e.len() < 4000, "{} bytes", e.len());
}

#[test]
fn profile_times_below_a_nanosecond_and_duplicates_are_refused() {
    let text = profile_text().replace("96.15384615384616", "5e-324");
    let e = Profile::from_json_str(&text, "p.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("time_s") && e.contains("plausible time"), "{e}");
    let mut p = Profile::from_json_str(&profile_text(), "p.json").unwrap();
    let t = p.regions[0].threads[0].clone();
    p.regions[0].threads.push(t);
    let e = Profile::from_json_str(&p.to_json_string(), "p.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("thread id 0 appears twice"), "{e}");
    let mut p = Profile::from_json_str(&profile_text(), "p.json").unwrap();
    let r = p.regions[0].clone();
    p.regions.push(r);
    let e = Profile::from_json_str(&p.to_json_string(), "p.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("region 'main' appears twice"), "{e}");
}

#[test]
fn json_errors_say_the_field_and_a_bom_is_read_as_in_toml() {
    let text = profile_text().replace("\"flops\": 100000000000.0", "\"flops\": \"many\"");
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let e = Profile::from_json_str(&one_line, "p.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("regions[0].threads[0].flops"), "{e}");
    assert!(e.contains("column"), "{e}");
    let bom = format!("\u{feff}{}", profile_text());
    Profile::from_json_str(&bom, "p.json").unwrap();
    let m = library::builtin("a64fx").unwrap().to_toml_string();
    Machine::from_toml_str(&format!("\u{feff}{m}"), "m.toml").unwrap();
}

#[test]
fn no_flops_gives_no_efficiency_instead_of_nan_and_threads_get_a_note() {
    let text = profile_text()
        .replace("\"flops\": 100000000000.0", "\"flops\": 0.0")
        .replace(
            "\"fp_instructions\": 31250000000.0",
            "\"fp_instructions\": 0.0",
        );
    let p = Profile::from_json_str(&text, "p.json").unwrap();
    let m = library::builtin("thunderx2").unwrap();
    let c = Ceilings::of(&m, Precision::F64, Scope::Core).unwrap();
    let app = p.regions[0].aggregate("p.json").unwrap();
    let a = analyze(&c, &app, "p.json").unwrap();
    assert_eq!(a.efficiency, None);
    assert!(
        a.notes.iter().any(|n| n.contains("no FLOPs")),
        "{:?}",
        a.notes
    );
    assert!(scope_note(100_000, 32, Scope::Core).is_some());
    assert!(scope_note(1, 32, Scope::Core).is_none());
    assert!(scope_note(64, 32, Scope::Node).is_some());
}

#[test]
fn inputs_that_never_end_are_bounded() {
    // /dev/zero used to be read until the memory ran out; as text it is refused at its
    // first byte, as bytes once past the limit.
    unsafe { std::env::set_var("HPCSCOPE_MAX_INPUT_MB", "1") };
    let e = load::profile(Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("byte 0x00 at line 1 (byte offset 0)"), "{e}");
    let e = load::read_bytes(Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("larger than the input limit of 1 MiB"), "{e}");
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big.json");
    std::fs::write(&big, vec![b' '; 2 << 20]).unwrap();
    let e = load::profile(&big).unwrap_err().to_string();
    assert!(e.contains("input limit"), "{e}");
    unsafe { std::env::remove_var("HPCSCOPE_MAX_INPUT_MB") };
    let e = load::profile(d.path()).unwrap_err().to_string();
    assert!(e.contains("a directory"), "{e}");
}

#[test]
fn a_fifo_is_opened_without_blocking_and_read_when_its_writer_comes() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("p.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let f2 = fifo.clone();
    let text = profile_text();
    let writer = std::thread::spawn(move || std::fs::write(&f2, text).unwrap());
    let p = load::profile(&fifo).unwrap();
    assert_eq!(p.application, "synthetic-minife-like");
    writer.join().unwrap();
}

#[test]
fn a_sweep_says_its_cost_and_refuses_past_the_limit() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/tx2-sve-hbm.toml"),
    )
    .unwrap();
    let s = Scenario::from_toml_str(&text, "s.toml").unwrap();
    let m = library::builtin("thunderx2").unwrap();
    let p = Profile::from_json_str(&profile_text(), "p.json").unwrap();
    let threads = p.regions[0].thread_metrics("p.json").unwrap();
    let r = hpcscope_core::explore::Resolved {
        source_machine: m.clone(),
        source_threads: threads.clone(),
        source_gflops: 1.0,
        variants: (0..1000)
            .map(|i| (format!("v{i}"), None, threads.clone()))
            .collect(),
        targets: (0..1000).map(|i| (format!("t{i}"), m.clone())).collect(),
        source_widths: None,
        variant_widths: vec![None; 1000],
        source_spread: None,
        source_instructions: None,
        variant_instructions: vec![None; 1000],
    };
    let cost = Cost::of(&r);
    assert_eq!(cost.points, 1_000_000);
    let e = cost.check(100_000, 4 << 30).unwrap_err().to_string();
    assert!(
        e.contains("1000000 design points") && e.contains("--max-points"),
        "{e}"
    );
    assert!(cost.check(u64::MAX, u64::MAX).is_ok());
    assert!(s.variants.len() * s.targets.len() < 100);
    // Two variants of one name could not be told apart in the results.
    let dup = text.replacen("name = \"SVE 256\"", "name = \"SVE 128\"", 1);
    let e = Scenario::from_toml_str(&dup, "s.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("variants[1].name") && e.contains("appears twice"),
        "{e}"
    );
}
