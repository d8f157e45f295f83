//! The built-in machine library: the machines the seeds publish, shipped in `data/machines`
//! and embedded in the binary.

use crate::error::{InputError, Result};
use crate::machine::Machine;

/// Every built-in machine file: (id, TOML text).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "thunderx2",
        include_str!("../../../data/machines/thunderx2.toml"),
    ),
    (
        "neoverse-n1",
        include_str!("../../../data/machines/neoverse-n1.toml"),
    ),
    ("a64fx", include_str!("../../../data/machines/a64fx.toml")),
    (
        "graviton2",
        include_str!("../../../data/machines/graviton2.toml"),
    ),
    (
        "graviton3",
        include_str!("../../../data/machines/graviton3.toml"),
    ),
    (
        "epi-like",
        include_str!("../../../data/machines/epi-like.toml"),
    ),
    (
        "knl-flat-dram",
        include_str!("../../../data/machines/knl-flat-dram.toml"),
    ),
    (
        "knl-flat-mcdram",
        include_str!("../../../data/machines/knl-flat-mcdram.toml"),
    ),
    (
        "cascadelake-8260",
        include_str!("../../../data/machines/cascadelake-8260.toml"),
    ),
    (
        "a64fx-node",
        include_str!("../../../data/machines/a64fx-node.toml"),
    ),
];

/// Loads the built-in machine `id`.
pub fn builtin(id: &str) -> Result<Machine> {
    match BUILTIN.iter().find(|(i, _)| *i == id) {
        Some((i, src)) => Machine::from_toml_str(src, &format!("built-in machine '{i}'")),
        None => Err(InputError::new(
            format!("machine '{id}'"),
            "",
            "is neither a built-in machine nor a file",
            format!(
                "give a path to a machine TOML file, or one of: {}",
                ids().join(", ")
            ),
        )
        .into()),
    }
}

/// Identifiers of the built-in machines.
pub fn ids() -> Vec<&'static str> {
    BUILTIN.iter().map(|(i, _)| *i).collect()
}

/// All built-in machines, parsed.
pub fn all() -> Result<Vec<Machine>> {
    BUILTIN.iter().map(|(i, _)| builtin(i)).collect()
}
