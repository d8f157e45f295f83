//! SHA-256 of bytes and files (from `hpcscope-host`, which uses the `sha2` crate).

pub use hpcscope_host::hash::{sha256_file, sha256_hex};
