//! No printed error statement without the pairs behind it: a point estimate states the
//! error of its own kind of change, measured on pairs of that kind (the bundled calibration
//! has vector-width pairs only), or says it is not validated for that kind.

use hpcscope_test_support::bin;

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

/// `project` of `source` (on its machine, with `extra` arguments) onto `target`: (text, JSON).
fn project(
    source: (&str, &str),
    target: (&str, &str),
    extra: &[&str],
) -> (String, serde_json::Value) {
    let run = |fmt: &str| {
        let o = bin!()
            .args(["project", "--source-machine", source.0, "--source-profile"])
            .arg(example(source.1))
            .args(extra)
            .args(["--target-machine", target.0, "--target-profile"])
            .arg(example(target.1))
            .args(["--format", fmt])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    (
        String::from_utf8_lossy(&run("table")).into_owned(),
        serde_json::from_slice(&run("json")).unwrap(),
    )
}

#[test]
fn project_states_no_error_for_kinds_without_pairs() {
    // ThunderX2 onto A64FX: another machine of the same ISA (and another build): its kind's
    // own figure (data/hosts' pairs), with the number of pairs behind it.
    let (text, j) = project(
        ("thunderx2", "tx2-source.json"),
        ("a64fx", "sve-512.json"),
        &[],
    );
    assert!(text.contains("measured same-ISA machine pairs"), "{text}");
    assert_eq!(no_borrowed_figure(&j), ["same-isa-machine"]);
    // Two builds on one machine: a user's builds, of unknown kind: no figure.
    let (text, j) = project(
        ("a64fx", "sve-128.json"),
        ("a64fx", "sve-512.json"),
        &["--source-gflops", "1.0"],
    );
    assert_eq!(no_borrowed_figure(&j), ["builds"]);
    assert!(
        text.contains("not validated for this kind of change (builds)")
            && !text.contains("typically within"),
        "{text}"
    );
}

#[test]
fn explore_states_no_error_for_kinds_without_pairs() {
    let o = bin!()
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
