//! The committed BPF object matches its sources.
//!
//! Always: the sources' SHA-256 equal those recorded in `bpf/objects.sha256` when the object
//! was built (so a source edit without `bpf/build.sh` fails here). With clang present and
//! the same clang major version as recorded: rebuilding gives the same bytes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bpf_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bpf")
}

fn sha256(path: &Path) -> Option<String> {
    let out = Command::new("sha256sum").arg(path).output().ok()?;
    String::from_utf8(out.stdout)
        .ok()?
        .split_whitespace()
        .next()
        .map(String::from)
}

fn manifest() -> (String, Vec<(String, String)>) {
    let text =
        std::fs::read_to_string(bpf_dir().join("objects.sha256")).expect("bpf/objects.sha256");
    let mut clang = String::new();
    let mut files = Vec::new();
    for l in text.lines() {
        if let Some(c) = l.strip_prefix("# clang: ") {
            clang = c.to_string();
        } else if let Some((h, f)) = l.split_once("  ") {
            files.push((h.to_string(), f.trim_start_matches("./").to_string()));
        }
    }
    (clang, files)
}

#[test]
fn sources_match_the_recorded_hashes() {
    if sha256(&bpf_dir().join("build.sh")).is_none() {
        println!("skipping: no sha256sum");
        return;
    }
    let (_, files) = manifest();
    assert!(files.iter().any(|(_, f)| f == "hpcscope.bpf.o"));
    assert!(files.iter().any(|(_, f)| f == "hpcscope.bpf.c"));
    for (h, f) in &files {
        let got = sha256(&bpf_dir().join(f)).unwrap_or_default();
        assert_eq!(
            &got, h,
            "{f} changed since the object was built: run crates/trace/bpf/build.sh"
        );
    }
}

fn clang_major(version_line: &str) -> Option<String> {
    let i = version_line.find("version ")?;
    version_line[i + 8..].split('.').next().map(String::from)
}

#[test]
fn rebuilt_object_is_identical() {
    let (recorded, _) = manifest();
    let Ok(out) = Command::new("clang").arg("--version").output() else {
        println!("skipping: clang not installed (only needed to regenerate the BPF object)");
        return;
    };
    let here = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    if clang_major(&here) != clang_major(&recorded) {
        println!(
            "skipping: clang {here:?} differs from the one that built the object ({recorded:?})"
        );
        return;
    }
    if !Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        println!("skipping: libbpf headers missing (apt-get install libbpf-dev)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let st = Command::new("sh")
        .arg(bpf_dir().join("build.sh"))
        .arg(tmp.path())
        .status()
        .unwrap();
    assert!(st.success(), "bpf/build.sh failed");
    let a = std::fs::read(tmp.path().join("hpcscope.bpf.o")).unwrap();
    let b = std::fs::read(bpf_dir().join("hpcscope.bpf.o")).unwrap();
    assert!(
        a == b,
        "the committed object differs from its sources: run crates/trace/bpf/build.sh"
    );
}
