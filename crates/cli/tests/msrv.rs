//! The workspace's `rust-version` is true: every crate of the workspace declares it, and no
//! dependency in the lock file (those built for this host) needs a newer Rust. (The standard-library calls are checked
//! against it by clippy's `incompatible_msrv` lint, which CI runs with `-D warnings`.)

use std::process::Command;

fn version(s: &str) -> (u64, u64, u64) {
    let mut it = s.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    (
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
    )
}

#[test]
fn rust_version_covers_the_workspace_and_its_dependencies() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // The dependencies built for this host (offline: the others were never downloaded).
    let rustc = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("rustc -vV names the host");
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", &host])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let members: Vec<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let packages = meta["packages"].as_array().unwrap();
    let mut ours = None;
    let mut needs = Vec::new();
    for p in packages {
        let id = p["id"].as_str().unwrap();
        let name = p["name"].as_str().unwrap();
        let rv = p["rust_version"].as_str();
        if members.contains(&id) {
            let rv = rv.unwrap_or_else(|| {
                panic!("workspace crate {name} declares no rust-version: add `rust-version.workspace = true`")
            });
            match ours {
                None => ours = Some(rv.to_string()),
                Some(ref o) => assert_eq!(
                    o, rv,
                    "{name} declares rust-version {rv}, the workspace {o}"
                ),
            }
        } else if let Some(rv) = rv {
            needs.push((
                version(rv),
                format!("{name} {}", p["version"].as_str().unwrap()),
            ));
        }
    }
    let ours = ours.expect("the workspace has members");
    let too_new: Vec<String> = needs
        .iter()
        .filter(|(v, _)| *v > version(&ours))
        .map(|(v, n)| format!("{n} needs {}.{}.{}", v.0, v.1, v.2))
        .collect();
    assert!(
        too_new.is_empty(),
        "rust-version is {ours} but {}: raise `rust-version` in Cargo.toml",
        too_new.join(", ")
    );
    // Let chains (`if let ... && let ...`), used throughout, are stable since 1.88.
    assert!(version(&ours) >= (1, 88, 0), "rust-version {ours} < 1.88");
    let newest = needs.iter().map(|(v, _)| *v).max().unwrap();
    eprintln!(
        "rust-version {ours}; {} dependencies declare one, the newest needs {}.{}.{}",
        needs.len(),
        newest.0,
        newest.1,
        newest.2
    );
}
