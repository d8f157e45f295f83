//! Loading machines, profiles and scenarios from built-in names or files.

use std::path::{Path, PathBuf};

use anyhow::Result;
use hpcscope_core::{InputError, Machine, Profile, library};

/// Loads a machine: a path to a TOML file if one exists there (or the argument ends in
/// `.toml`), otherwise a built-in id.
pub fn machine(arg: &str) -> Result<Machine> {
    let p = Path::new(arg);
    if p.exists() || arg.ends_with(".toml") || arg.contains('/') {
        let text = read(
            p,
            "machine file",
            "give a machine TOML file or a built-in id (hpcscope machine list)",
        )?;
        Ok(Machine::from_toml_str(&text, &p.display().to_string())?)
    } else {
        Ok(library::builtin(arg)?)
    }
}

/// Loads a machine relative to a base directory (for scenario files).
pub fn machine_rel(arg: &str, base: &Path) -> Result<Machine> {
    let rel = base.join(arg);
    if !Path::new(arg).exists() && rel.exists() {
        machine(&rel.to_string_lossy())
    } else {
        machine(arg)
    }
}

/// Loads and validates a profile.
pub fn profile(p: &Path) -> Result<Profile> {
    let text = read(
        p,
        "profile",
        "give a profile JSON file, as written by hpcscope mix",
    )?;
    Ok(Profile::from_json_str(&text, &p.display().to_string())?)
}

/// Reads a whole text file with an error that says what and how to fix.
pub fn read(p: &Path, what: &str, fix: &str) -> Result<String> {
    std::fs::read_to_string(p)
        .map_err(|e| {
            let msg = match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_string(),
                std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                std::io::ErrorKind::InvalidData => "is not UTF-8 text".to_string(),
                _ => e.to_string(),
            };
            InputError::new(
                p.display().to_string(),
                "",
                format!("cannot read {what}: {msg}"),
                fix,
            )
            .into()
        })
        .map_err(|e: hpcscope_core::Error| anyhow::Error::from(e))
}

/// Resolves `arg` against the directory of a scenario file.
pub fn rel(base: &Path, arg: &str) -> PathBuf {
    let p = Path::new(arg);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}
