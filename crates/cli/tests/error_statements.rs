//! No printed error statement without the pairs behind it: a point estimate states the
//! error of its own kind of change, measured on pairs of that kind (the bundled calibration
//! has vector-width pairs only), or says it is not validated for that kind.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hpcscope"))
}

fn example(f: &str) -> String {
    format!(
        "{}/../../examples/scenarios/{f}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Every point estimate in `v` (objects with a `rule` and a `change`), with its kind.
fn estimates<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a serde_json::Value>) {
    match v {
        serde_json::Value::Object(m) => {
            if m.contains_key("rule") && m.contains_key("change") && m.contains_key("gflops") {
                out.push(v);
            }
            m.values().for_each(|x| estimates(x, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| estimates(x, out)),
        _ => {}
    }
}

/// The kinds the bundled calibration has measured pairs of.
fn calibrated_kinds() -> Vec<String> {
    let text = std::fs::read_to_string(format!(
        "{}/../../data/projection/calibration.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let t: toml::Table = text.parse().unwrap();
    t["errors"].as_table().unwrap().keys().cloned().collect()
}

/// Checks every estimate of `json`: a stated error only for a calibrated kind, and that kind's
/// own pair count. Returns the kinds seen.
fn no_borrowed_figure(json: &serde_json::Value) -> Vec<String> {
    let kinds = calibrated_kinds();
    let mut es = Vec::new();
    estimates(json, &mut es);
    let mut seen = Vec::new();
    for e in es {
        let kind = e["change"].as_str().unwrap().to_string();
        if kinds.contains(&kind) {
            assert!(e["error"]["pairs"].as_u64().unwrap() > 0, "{e}");
        } else {
            assert!(
                e["error"].is_null(),
                "a {kind} projection borrows a figure: {e}"
            );
        }
        seen.push(kind);
    }
    seen
}

#[test]
fn project_states_no_error_for_kinds_without_pairs() {
    // ThunderX2 onto A64FX: another machine of the same ISA (and another build).
    let args = |fmt: &str| {
        let mut c = bin();
        c.args([
            "project",
            "--source-machine",
            "thunderx2",
            "--source-profile",
        ])
        .arg(example("tx2-source.json"))
        .args(["--target-machine", "a64fx", "--target-profile"])
        .arg(example("sve-512.json"))
        .args(["--format", fmt]);
        c.output().unwrap()
    };
    let o = args("table");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Its kind's own figure (data/hosts' pairs), with the number of pairs behind it.
    assert!(text.contains("measured same-ISA machine pairs"), "{text}");
    let o = args("json");
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(no_borrowed_figure(&j), ["same-isa-machine"]);
    // Two builds on one machine: a user's builds, of unknown kind.
    let o = bin()
        .args(["project", "--source-machine", "a64fx", "--source-profile"])
        .arg(example("sve-128.json"))
        .args(["--source-gflops", "1.0"])
        .args(["--target-machine", "a64fx", "--target-profile"])
        .arg(example("sve-512.json"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(no_borrowed_figure(&j), ["builds"]);
    let o = bin()
        .args(["project", "--source-machine", "a64fx", "--source-profile"])
        .arg(example("sve-128.json"))
        .args(["--source-gflops", "1.0"])
        .args(["--target-machine", "a64fx", "--target-profile"])
        .arg(example("sve-512.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("not validated for this kind of change (builds)")
            && !text.contains("typically within"),
        "{text}"
    );
}

#[test]
fn explore_states_no_error_for_kinds_without_pairs() {
    let o = bin()
        .arg("explore")
        .arg(example("tx2-sve-hbm.toml"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let seen = no_borrowed_figure(&j);
    assert!(seen.len() >= 20, "{seen:?}");
    assert!(seen.iter().any(|k| k == "same-isa-machine"), "{seen:?}");
}
