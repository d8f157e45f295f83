//! The house stays as built (docs/ARCHITECTURE.md): no command module imports another, and
//! the binary does not grow back. A failure here names the file and what to do.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// What several commands share lives in `args.rs`, `output.rs` or a library, not in another
/// command's module: a command module never names `crate::cmd::` or, from cmd/, `super::`
/// another command (a sibling), nor climbs past its parent (`super::super::`). A
/// subcommand's module may use its parent's.
#[test]
fn no_command_module_imports_another() {
    let cmd = src().join("cmd");
    let mut files = Vec::new();
    rust_files(&cmd, &mut files);
    // The command modules by name: `super::NAME` at the top of a file directly in cmd/ is a
    // sibling (inside a file's own `mod tests`, `super` is the file itself, and indented).
    let siblings: Vec<String> = std::fs::read_dir(&cmd)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .filter(|n| n != "mod")
        .collect();
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let top = f.parent() == Some(cmd.as_path());
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let sibling = top
                && siblings.iter().any(|n| {
                    code.starts_with(&format!("use super::{n}::"))
                        || code.starts_with(&format!("use super::{n};"))
                });
            if code.contains("crate::cmd::") || code.contains("super::super::") || sibling {
                bad.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "command modules import another command's module:\n{}\nfix: move what they share into args.rs, output.rs or the library crate of its domain",
        bad.join("\n")
    );
}

/// The lines of crates/cli/src stay within the 5,000 of docs/ARCHITECTURE.md: the binary
/// parses, converts, calls and prints; new logic goes into the library of its domain.
const CLI_LINES_CEILING: usize = 5_000;

#[test]
fn the_binary_does_not_grow() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let lines: usize = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap().lines().count())
        .sum();
    assert!(
        lines <= CLI_LINES_CEILING,
        "crates/cli/src has {lines} lines, over its ceiling of {CLI_LINES_CEILING}\nfix: put the new logic in the library crate of its domain (docs/ARCHITECTURE.md, 'Where new things go'); the command module only converts arguments, calls and prints"
    );
}

/// Every exit code a command chooses goes through `exit.rs` (`exit::finding()`,
/// `exit::bad_input()`), so that one table (README, "Exit codes") says what each means: a
/// command module never writes `ExitCode::from(1)`. (A status passed on from a measured
/// command, `ExitCode::from(session.finish(..)?)`, is not a literal.)
#[test]
fn exit_codes_come_from_exit_rs() {
    let mut files = Vec::new();
    rust_files(&src().join("cmd"), &mut files);
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if let Some(at) = code.find("ExitCode::from(")
                && code[at + "ExitCode::from(".len()..].starts_with(|c: char| c.is_ascii_digit())
            {
                bad.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "command modules choose an exit code by its number:\n{}\nfix: use crate::exit::finding() or crate::exit::bad_input() (or add a named code to exit.rs and the README's table)",
        bad.join("\n")
    );
}

/// The test helpers live in one dev-only crate: `hpcscope-test-support` is never a normal
/// dependency of a crate (it would ship test code in the binary).
#[test]
fn test_support_is_a_dev_dependency_only() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut bad = Vec::new();
    for e in std::fs::read_dir(&crates).unwrap() {
        let manifest = e.unwrap().path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let mut section = String::new();
        for line in text.lines() {
            let l = line.trim();
            if l.starts_with('[') {
                section = l.to_string();
            } else if l.starts_with("hpcscope-test-support") && section != "[dev-dependencies]" {
                bad.push(format!("{}: {l} in {section}", manifest.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "hpcscope-test-support outside [dev-dependencies]:\n{}\nfix: move it under [dev-dependencies]",
        bad.join("\n")
    );
}

/// Functions of non-test code longer than 150 lines (clippy's `too_many_lines`, set in
/// clippy.toml and turned on in every crate) are allowed one by one, and this list only
/// shrinks: lower the ceiling when a change splits one, never raise it. A new long
/// function is split instead (a workflow into its steps, a view into its parts).
const LONG_FUNCTIONS_CEILING: usize = 27;

/// The `#[allow(clippy::too_many_lines)]` of a file's non-test code (before its
/// `#[cfg(test)] mod ...`).
fn long_function_allows(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim() == "#[cfg(test)]"
            && lines
                .get(i + 1)
                .is_some_and(|n| n.trim_start().starts_with("mod "))
        {
            break;
        }
        if l.contains("#[allow(clippy::too_many_lines)]") {
            out.push(i + 1);
        }
    }
    out
}

#[test]
fn long_functions_do_not_multiply() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for e in std::fs::read_dir(&crates).unwrap() {
        let s = e.unwrap().path().join("src");
        if s.is_dir() {
            rust_files(&s, &mut files);
        }
    }
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for l in long_function_allows(&text) {
            found.push(format!("{}:{l}", f.display()));
        }
    }
    assert!(
        found.len() <= LONG_FUNCTIONS_CEILING,
        "{} functions over 150 lines are allowed, over the ceiling of {LONG_FUNCTIONS_CEILING}:\n{}\nfix: split the new long function into steps (docs/ARCHITECTURE.md), do not allow it",
        found.len(),
        found.join("\n")
    );
    assert!(
        long_function_allows(
            "#[allow(clippy::too_many_lines)]\nfn a() {}\n#[cfg(test)]\nmod tests {\n#[allow(clippy::too_many_lines)]\nfn b() {}\n}\n"
        ) == vec![1],
        "the count leaves test modules out"
    );
    if found.len() < LONG_FUNCTIONS_CEILING {
        println!(
            "{} long functions allowed: lower LONG_FUNCTIONS_CEILING to {}",
            found.len(),
            found.len()
        );
    }
}
