//! The shipped catalogue and recipes load and check; bad recipes are refused with the file,
//! the formula and the column; unknown CPUs get the list of known recipes.

use hpcscope_core::Classify;
use hpcscope_counters::catalogue::{Catalogue, Variant};
use hpcscope_counters::cpu::CpuId;
use hpcscope_counters::error::Error;

#[test]
fn every_shipped_recipe_checks_in_both_variants() {
    let cat = Catalogue::builtin();
    cat.check().unwrap();
    assert_eq!(
        cat.metrics
            .metrics
            .iter()
            .filter(|m| m.category != "software")
            .count(),
        21,
        "the seed's 21 metrics"
    );
    for id in [
        "intel-cascadelake",
        "fujitsu-a64fx",
        "intel-sapphirerapids",
        "amd-zen3",
        "amd-zen4",
        "amd-zen5",
        "arm-neoverse-n1",
        "arm-neoverse-v1",
        "arm-neoverse-v2",
        "software",
    ] {
        let r = cat.find(id).unwrap();
        assert!(
            !r.recipe.source.is_empty() && !r.recipe.events_source.is_empty(),
            "{id} says where it comes from"
        );
        assert_eq!(
            r.recipe.from_seed,
            id == "intel-cascadelake" || id == "fujitsu-a64fx",
            "{id}"
        );
        // Every raw encoding parses as key=value pairs.
        for (e, d) in &r.events {
            if let Some(raw) = &d.raw {
                assert!(raw.split(',').all(|kv| kv.contains('=')), "{id} {e}: {raw}");
            }
        }
    }
    // Variants only where the seed contradicts itself.
    assert!(cat.find("a64fx").unwrap().has_variants());
    assert!(cat.find("clx").unwrap().has_variants());
    assert!(!cat.find("spr").unwrap().has_variants());
}

#[test]
fn cpus_map_to_recipes() {
    let cat = Catalogue::builtin();
    let cases = [
        (
            "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n",
            "intel-cascadelake",
        ),
        (
            "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n",
            "intel-sapphirerapids",
        ),
        (
            "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n",
            "intel-sapphirerapids",
        ),
        (
            "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n",
            "amd-zen3",
        ),
        (
            "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n",
            "amd-zen4",
        ),
        (
            "vendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n",
            "amd-zen5",
        ),
        (
            "CPU implementer\t: 0x46\nCPU part\t: 0x001\n",
            "fujitsu-a64fx",
        ),
        (
            "CPU implementer\t: 0x41\nCPU part\t: 0xd0c\n",
            "arm-neoverse-n1",
        ),
        (
            "CPU implementer\t: 0x41\nCPU part\t: 0xd40\n",
            "arm-neoverse-v1",
        ),
        (
            "CPU implementer\t: 0x41\nCPU part\t: 0xd4f\n",
            "arm-neoverse-v2",
        ),
    ];
    for (info, want) in cases {
        let cpu = CpuId::from_cpuinfo(info);
        assert_eq!(cat.for_cpu(&cpu).unwrap().recipe.id, want, "{cpu}");
    }
    let unknown = CpuId::from_cpuinfo(
        "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 42\nmodel name\t: Old Xeon\n",
    );
    let e = cat.for_cpu(&unknown).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(
            "no counter recipe for this CPU (GenuineIntel family 6 model 0x2a \"Old Xeon\")"
        ),
        "{msg}"
    );
    assert!(
        msg.contains("intel-cascadelake (Intel Xeon Cascade Lake"),
        "{msg}"
    );
    assert!(msg.contains("--recipe-file FILE"), "{msg}");
    assert_eq!(e.kind().exit_code(), 2);
}

#[test]
fn zen5_recipe_loads_checks_and_matches_family_1ah() {
    let cat = Catalogue::builtin();
    let r = cat.find("zen5").unwrap();
    assert_eq!(r.recipe.id, "amd-zen5");
    assert_eq!(cat.find("turin").unwrap().recipe.id, "amd-zen5");
    for v in [Variant::AsPublished, Variant::Corrected] {
        cat.compile(r, v).unwrap();
    }
    assert!(!r.has_variants());
    // Every quantity has a formula: nothing is left unmeasurable on Zen 5.
    assert!(r.recipe.cannot_measure.is_empty());
    for q in cat.metrics.quantities.keys() {
        assert!(r.formulas.contains_key(q), "{q}");
    }
    // Every event can be opened by the perf_event collector (no import-only events).
    for (e, d) in &r.events {
        assert!(d.raw.is_some() || d.generic.is_some(), "{e}");
    }

    let here = |family: u32, model: u32, name: &str| {
        CpuId::from_cpuinfo(&format!(
            "vendor_id\t: AuthenticAMD\ncpu family\t: {family}\nmodel\t\t: {model}\nmodel name\t: {name}\nflags\t\t: fpu avx512f hypervisor\n"
        ))
    };
    // An EPYC 9005 (Turin) guest as a hypervisor shows it: family 26, model 0x02.
    let turin = here(26, 0x02, "AMD EPYC");
    assert_eq!(cat.for_cpu(&turin).unwrap().recipe.id, "amd-zen5");
    // The kernel's Zen 5 model ranges, at their ends.
    for m in [0x00, 0x11, 0x2f, 0x40, 0x44, 0x4f, 0x60, 0x7f] {
        assert_eq!(
            cat.for_cpu(&here(0x1a, m, "")).unwrap().recipe.id,
            "amd-zen5",
            "model {m:#x}"
        );
    }
    // Family 0x1A models outside the kernel's Zen 5 ranges (0x30: none known; 0x50, 0x80,
    // 0xc0: Zen 6) get no Zen 5 events; Zen 4 (family 0x19) keeps its own recipes.
    for m in [0x30, 0x50, 0x80, 0xc0] {
        let e = cat.for_cpu(&here(0x1a, m, "")).unwrap_err().to_string();
        assert!(e.contains("amd-zen5 (AMD Zen 5"), "model {m:#x}: {e}");
    }
    for m in [0x02, 0x11, 0x44, 0x61] {
        assert_ne!(
            cat.for_cpu(&here(0x19, m, "")).unwrap().recipe.id,
            "amd-zen5",
            "family 0x19 model {m:#x}"
        );
    }
    assert_eq!(
        cat.for_cpu(&here(0x19, 0x11, "")).unwrap().recipe.id,
        "amd-zen4"
    );
    assert!(
        r.recipe
            .cpus
            .iter()
            .all(|c| c.family == Some(0x1a) && c.vendor == "AuthenticAMD")
    );
}

fn write(dir: &tempfile::TempDir, text: &str) -> std::path::PathBuf {
    let p = dir.path().join("my-cpu.toml");
    std::fs::write(&p, text).unwrap();
    p
}

const GOOD: &str = r#"format_version = 1
[recipe]
id = "my-cpu"
name = "My CPU"
vendor = "generic"
source = "tests"
events_source = "tests"
[recipe.cannot_measure]
instructions = "x"
cycles = "x"
fpins = "x"
ld_ins = "x"
st_ins = "x"
ld_bytes = "x"
st_bytes = "x"
l1_accesses = "x"
l1_misses = "x"
l2_accesses = "x"
l2_misses = "x"
l3_accesses = "x"
l3_misses = "x"
mem_bytes = "x"
[constants]
line_size = 64
[events.FP]
perf = "fp_ops"
[formulas]
flops = "FP * 2"
"#;

#[test]
fn user_recipe_files_and_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut cat = Catalogue::builtin();
    let r = cat.add_recipe_file(&write(&dir, GOOD)).unwrap();
    assert_eq!(r.recipe.id, "my-cpu");
    assert!(cat.find("my-cpu").is_ok());

    let mut cat = Catalogue::builtin();
    let e = cat
        .add_recipe_file(&write(&dir, &GOOD.replace("FP * 2", "FP * (2")))
        .unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, Error::Formula { .. }), "{m}");
    assert!(
        m.contains("formula 'flops'") && m.contains("at column 8"),
        "{m}"
    );

    let e = cat
        .add_recipe_file(&write(&dir, &GOOD.replace("FP * 2", "FP * FPX")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown name 'FPX' at column 6"), "{e}");

    let e = cat
        .add_recipe_file(&write(&dir, &GOOD.replace("FP * 2", "FP * #vl")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown constant '#vl'"), "{e}");

    let e = cat
        .add_recipe_file(&write(&dir, &GOOD.replace("mem_bytes = \"x\"\n", "")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("quantity 'mem_bytes' has no formula"), "{e}");

    // Formulas that refer to each other in a cycle.
    let cyc = GOOD.replace(
        "flops = \"FP * 2\"",
        "flops = \"helper + FP\"\nhelper = \"other * 2\"\nother = \"helper\"",
    );
    let e = cat
        .add_recipe_file(&write(&dir, &cyc))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cycle: helper -> other -> helper"), "{e}");

    // TOML syntax errors carry line and column.
    let e = cat
        .add_recipe_file(&write(
            &dir,
            &GOOD.replace("name = \"My CPU\"", "name = My CPU"),
        ))
        .unwrap_err();
    assert!(matches!(e, Error::Import { line: 4, .. }), "{e}");

    let e = cat.find("pentium-4").unwrap_err().to_string();
    assert!(
        e.contains("unknown recipe 'pentium-4'") && e.contains("fujitsu-a64fx"),
        "{e}"
    );
}

#[test]
fn variant_text() {
    let cat = Catalogue::builtin();
    let a = cat
        .compile(cat.find("a64fx").unwrap(), Variant::AsPublished)
        .unwrap();
    let c = cat
        .compile(cat.find("a64fx").unwrap(), Variant::Corrected)
        .unwrap();
    assert!(a.formulas["ld_bytes"].source().contains("8 if #sp else 4"));
    assert!(c.formulas["ld_bytes"].source().contains("#element_bytes"));
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/data/cpuinfo/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A CPU without a recipe of its own gets the closest known microarchitecture its vendor,
/// family and flags name, or the architectural events, and the note says which and why.
#[test]
fn unknown_cpus_take_the_closest_recipe_and_say_so() {
    let cat = Catalogue::builtin();
    let cases = [
        (
            "intel-6-167-amx.txt",
            "intel-sapphirerapids",
            "AVX-512 and AMX",
        ),
        ("intel-6-190-no-avx512.txt", "generic-pmu", "architectural"),
        ("amd-26-208.txt", "amd-zen5", "family 1Ah"),
        ("arm-0x41-0xd8e-sve2.txt", "arm-neoverse-v2", "SVE2"),
    ];
    for (file, want, why) in cases {
        let cpu = CpuId::from_cpuinfo(&fixture(file));
        assert!(cat.for_cpu(&cpu).is_err(), "{file} has a recipe of its own");
        let c = cat.for_cpu_or_closest(&cpu);
        assert_eq!(c.recipe.recipe.id, want, "{file}");
        let note = c.note.unwrap();
        assert!(
            note.contains(why) && note.contains(want) && note.contains("--recipe ID"),
            "{file}: {note}"
        );
    }
    // The CPU's own recipe is taken without a note.
    let genoa = CpuId::from_cpuinfo(
        "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nflags\t\t: fpu avx512f\n",
    );
    let c = cat.for_cpu_or_closest(&genoa);
    assert_eq!((c.recipe.recipe.id.as_str(), c.note), ("amd-zen4", None));
    // Flags decide within a family: Zen 3 has no AVX-512.
    let zen3ish = CpuId::from_cpuinfo(
        "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 159\nflags\t\t: fpu avx2\n",
    );
    assert_eq!(
        cat.for_cpu_or_closest(&zen3ish).recipe.recipe.id,
        "amd-zen3"
    );
    // An unknown vendor: software events, said.
    let c = cat.for_cpu_or_closest(&CpuId::from_cpuinfo("vendor_id\t: HygonGenuine\n"));
    assert_eq!(c.recipe.recipe.id, "software");
    assert!(c.note.unwrap().contains("unknown vendor"));
}

/// Data recorded elsewhere is read with the recipe its event names fit, whatever CPU reads it.
#[test]
fn recorded_data_takes_the_recipe_its_events_name() {
    let cat = Catalogue::builtin();
    let data = |f: &str| {
        let p = format!("{}/tests/data/import/{f}", env!("CARGO_MANIFEST_DIR"));
        hpcscope_counters::import::import_file(std::path::Path::new(&p), None, "x").unwrap()
    };
    // Cascade Lake and Sapphire Rapids spell these events alike: the first in the catalogue
    // is taken and the note says the file fits both.
    let c = cat.for_data(&data("perf-stat-clx.csv"), "clx.csv");
    assert_eq!(c.recipe.recipe.id, "intel-cascadelake");
    let note = c.note.unwrap();
    assert!(
        note.contains("clx.csv")
            && note.contains("intel-sapphirerapids")
            && note.contains("--recipe"),
        "{note}"
    );
    // A VM's perf stat names instructions and cycles (not supported) and software events.
    let c = cat.for_data(&data("perf-stat-vm.csv"), "vm.csv");
    assert_eq!(c.recipe.recipe.id, "generic-pmu");
    assert!(c.note.unwrap().contains("need --recipe ID"));
}
