//! Where hpcscope keeps what it caches (the measured description of this machine).

use std::path::PathBuf;

/// Cache directory: `$HPCSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/hpcscope`, else
/// `~/.cache/hpcscope`, else a directory under the system's temporary directory.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HPCSCOPE_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("hpcscope");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".cache/hpcscope"),
        None => std::env::temp_dir().join("hpcscope-cache"),
    }
}
