//! Instruction class tables as data (`data/ports/*-classes.toml`): the mapping from a
//! mnemonic to the difference model's classes (seed 003, section 5.3), which mnemonics are
//! pure data moves, which are ignored, and latencies for the critical-path bound.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{ModelError, Result};
use crate::glob::glob_match;

/// One rule: a class and the globs of its mnemonics.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Class name.
    pub class: String,
    /// Mnemonic globs (`*`, `?`, `[abc]`).
    pub patterns: Vec<String>,
}

/// A class table for one instruction set.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassTable {
    /// File format version (1).
    pub format_version: u32,
    /// Instruction set.
    pub isa: String,
    /// Where the table comes from.
    pub provenance: String,
    /// Mnemonics not counted (NOPs, returns).
    #[serde(default)]
    pub ignore: Vec<String>,
    /// Data moves: with a memory operand they are only a load or a store.
    #[serde(default)]
    pub moves: Vec<String>,
    /// Rules, first match wins.
    #[serde(rename = "rule")]
    pub rules: Vec<Rule>,
    /// Latency of each class, cycles (critical-path bound).
    #[serde(default)]
    pub latency: BTreeMap<String, f64>,
    /// An `INT` mnemonic on vector registers is `SIMD_INT` (AArch64 shares mnemonics).
    #[serde(default)]
    pub vector_int_from_registers: bool,
}

/// What a mnemonic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Classified<'a> {
    /// Not counted.
    Ignored,
    /// A class of the table.
    Class(&'a str),
    /// No rule matches: counted as `OTHER` and reported.
    Other,
}

const BUILTIN: &[(&str, &str)] = &[
    (
        "x86-64",
        include_str!("../../../data/ports/x86-64-classes.toml"),
    ),
    (
        "aarch64",
        include_str!("../../../data/ports/aarch64-classes.toml"),
    ),
];

impl ClassTable {
    /// The built-in table of an instruction set (`x86-64`).
    pub fn builtin(isa: &str) -> Result<ClassTable> {
        let text = BUILTIN
            .iter()
            .find(|(i, _)| *i == isa)
            .map(|(_, t)| *t)
            .ok_or_else(|| ModelError::Unknown {
                what: "class table",
                name: isa.to_string(),
                known: BUILTIN
                    .iter()
                    .map(|(i, _)| *i)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        Self::from_toml(text, &format!("built-in class table '{isa}'"))
    }

    /// Parses a class table from TOML.
    pub fn from_toml(text: &str, origin: &str) -> Result<ClassTable> {
        let t: ClassTable = toml::from_str(text).map_err(|e| ModelError::Parse {
            origin: origin.to_string(),
            message: format!("{e}; see data/ports/x86-64-classes.toml for the expected shape"),
        })?;
        if t.format_version != 1 {
            return Err(ModelError::Parse {
                origin: origin.to_string(),
                message: format!(
                    "format_version {} is not supported; use 1",
                    t.format_version
                ),
            });
        }
        Ok(t)
    }

    /// Classifies a lower-case mnemonic.
    pub fn classify(&self, mnemonic: &str) -> Classified<'_> {
        if self.ignore.iter().any(|p| glob_match(p, mnemonic)) {
            return Classified::Ignored;
        }
        for r in &self.rules {
            if r.patterns.iter().any(|p| glob_match(p, mnemonic)) {
                return Classified::Class(&r.class);
            }
        }
        Classified::Other
    }

    /// True when the mnemonic is a data move (a pure load or store with a memory operand).
    pub fn is_move(&self, mnemonic: &str) -> bool {
        self.moves.iter().any(|p| glob_match(p, mnemonic))
    }

    /// Latency of a class, cycles (1 when the table has none).
    pub fn latency_of(&self, class: &str) -> f64 {
        self.latency.get(class).copied().unwrap_or(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_table_loads() {
        for (isa, _) in BUILTIN {
            let t = ClassTable::builtin(isa).unwrap();
            assert_eq!(t.isa, *isa);
            assert!(!t.provenance.is_empty() && !t.latency.is_empty());
        }
        let a = ClassTable::builtin("aarch64").unwrap();
        assert_eq!(a.classify("fmla"), Classified::Class("FP"));
        assert_eq!(a.classify("fsqrt"), Classified::Class("DIV"));
        assert_eq!(a.classify("whilelo"), Classified::Class("SIMD_INT"));
        assert_eq!(a.classify("b.ne"), Classified::Class("INT"));
        assert!(a.is_move("ld1d") && a.is_move("stp"));
    }

    #[test]
    fn x86_classes() {
        let t = ClassTable::builtin("x86-64").unwrap();
        assert_eq!(t.classify("vdivpd"), Classified::Class("DIV"));
        assert_eq!(t.classify("vsqrtsd"), Classified::Class("DIV"));
        assert_eq!(t.classify("vfmadd231pd"), Classified::Class("FP"));
        assert_eq!(t.classify("addsd"), Classified::Class("FP"));
        assert_eq!(t.classify("vpermpd"), Classified::Class("FP_SHUF"));
        assert_eq!(t.classify("vpaddq"), Classified::Class("SIMD_INT"));
        assert_eq!(t.classify("add"), Classified::Class("INT"));
        assert_eq!(t.classify("jne"), Classified::Class("INT"));
        assert_eq!(t.classify("nop"), Classified::Ignored);
        assert_eq!(t.classify("aesenc"), Classified::Other);
        assert!(t.is_move("vmovupd") && t.is_move("mov") && !t.is_move("add"));
    }
}
