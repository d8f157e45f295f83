//! Loading machines, profiles and other inputs from files or built-in names, with errors
//! that say which file, what is wrong and how to fix it.

use std::path::{Path, PathBuf};

use crate::error::{InputError, Result};
use crate::{Machine, Profile, library};

/// Loads a machine: a TOML file when one exists at `arg` (or `arg` ends in `.toml` or
/// holds a `/`), otherwise a built-in id.
pub fn machine(arg: &str) -> Result<Machine> {
    let p = Path::new(arg);
    if p.exists() || arg.ends_with(".toml") || arg.contains('/') {
        let text = read(
            p,
            "machine file",
            "give a machine TOML file or a built-in id (hpcscope machine list)",
        )?;
        Machine::from_toml_str(&text, &p.display().to_string())
    } else {
        library::builtin(arg)
    }
}

/// Loads a machine named in a file of directory `base` (a scenario): relative to `base`
/// when it is a file there, else as [`machine`] does.
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
    Profile::from_json_str(&text, &p.display().to_string())
}

/// Reads a whole text file; the error says what the file was for (`what`) and how to fix it.
pub fn read(p: &Path, what: &str, fix: &str) -> Result<String> {
    std::fs::read_to_string(p).map_err(|e| {
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
}

/// `arg` resolved against `base` (the directory of the file that names it), unless absolute.
pub fn rel(base: &Path, arg: &str) -> PathBuf {
    let p = Path::new(arg);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_ids_files_and_errors() {
        assert_eq!(machine("thunderx2").unwrap().id, "thunderx2");
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("m.toml");
        std::fs::write(&f, library::builtin("a64fx").unwrap().to_toml_string()).unwrap();
        assert_eq!(machine(&f.display().to_string()).unwrap().id, "a64fx");
        assert_eq!(machine_rel("m.toml", d.path()).unwrap().id, "a64fx");
        let e = machine("no/such.toml").unwrap_err().to_string();
        assert!(e.contains("no such file") && e.contains("fix:"), "{e}");
        let e = profile(&d.path().join("p.json")).unwrap_err().to_string();
        assert!(e.contains("cannot read profile"), "{e}");
        assert_eq!(rel(Path::new("/a"), "b"), Path::new("/a/b"));
        assert_eq!(rel(Path::new("/a"), "/b"), Path::new("/b"));
    }
}
