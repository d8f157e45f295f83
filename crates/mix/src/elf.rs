//! What mix needs to know about a program before running it: that it is an ELF file, its
//! architecture, its function symbols (for regions), the compiler that built it, its hash.

use std::path::Path;

use object::{Object, ObjectSection};

use crate::error::MixError;

/// Instruction-set architecture of a program.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    /// x86-64.
    X86_64,
    /// AArch64.
    Aarch64,
}

impl Arch {
    /// The name used in profiles and machine files.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// The architecture of this host.
    pub fn host() -> Option<Arch> {
        match std::env::consts::ARCH {
            "x86_64" => Some(Arch::X86_64),
            "aarch64" => Some(Arch::Aarch64),
            _ => None,
        }
    }
}

/// A function symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// Name.
    pub name: String,
    /// Link-time address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
}

/// What was read from the ELF file.
#[derive(Debug, Clone)]
pub struct ElfInfo {
    /// Architecture.
    pub arch: Arch,
    /// Function symbols with a size, sorted by address.
    pub functions: Vec<Symbol>,
    /// Compiler identification from the `.comment` section, when present.
    pub compiler: Option<String>,
    /// SHA-256 of the file, hex.
    pub sha256: String,
    /// Position-independent (loaded at a bias chosen at run time).
    pub pie: bool,
    /// Lowest address of its loadable segments.
    pub lowest_vaddr: u64,
    /// Its loadable segments: (address, size in memory, offset in the file).
    pub segments: Vec<(u64, u64, u64)>,
    /// Started by the dynamic loader (it has an `.interp`); else statically linked.
    pub dynamic: bool,
}

impl ElfInfo {
    /// Reads `path`.
    pub fn read(path: &Path) -> Result<ElfInfo, MixError> {
        let data = std::fs::read(path).map_err(|e| MixError::Program {
            path: path.display().to_string(),
            message: format!("cannot read it: {e}"),
            fix: "give the path of an executable file".into(),
        })?;
        if data.len() < 4 || &data[..4] != b"\x7fELF" {
            return Err(MixError::Program {
                path: path.display().to_string(),
                message: "is not an ELF executable".into(),
                fix: "give a compiled Linux program (a script must be run through its interpreter's binary)".into(),
            });
        }
        let file = object::File::parse(&*data).map_err(|e| MixError::Program {
            path: path.display().to_string(),
            message: format!("is a damaged ELF file: {e}"),
            fix: "rebuild the program".into(),
        })?;
        let arch = match file.architecture() {
            object::Architecture::X86_64 => Arch::X86_64,
            object::Architecture::Aarch64 => Arch::Aarch64,
            other => {
                return Err(MixError::Program {
                    path: path.display().to_string(),
                    message: format!("is built for {other:?}, which mix does not emulate"),
                    fix: "build it for x86-64 or aarch64".into(),
                });
            }
        };
        let table = hpcscope_host::elf::Functions::of(&file);
        // Regions are the functions of `.symtab` with a size.
        let mut functions: Vec<Symbol> = (table.symbols.iter())
            .filter(|s| !s.dynamic && s.size > 0)
            .map(|s| Symbol {
                name: s.name.clone(),
                addr: s.addr,
                size: s.size,
            })
            .collect();
        functions.sort_by_key(|s| s.addr);
        functions.dedup_by(|a, b| a.addr == b.addr && a.name == b.name);
        let compiler = file
            .section_by_name(".comment")
            .and_then(|s| s.data().ok())
            .map(|d| {
                d.split(|b| *b == 0)
                    .filter(|p| !p.is_empty())
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .filter(|s| !s.is_empty());
        let sha256 = hpcscope_host::hash::sha256_hex(&data);
        let pie = file.kind() == object::ObjectKind::Dynamic;
        let lowest_vaddr = file
            .segments()
            .map(|s| object::ObjectSegment::address(&s))
            .min()
            .unwrap_or(0);
        let dynamic = file.section_by_name(".interp").is_some();
        let segments = table.segments;
        Ok(ElfInfo {
            arch,
            functions,
            compiler,
            sha256,
            pie,
            lowest_vaddr,
            segments,
            dynamic,
        })
    }

    /// The offset in the file of link-time address `addr` (what a uprobe takes), through
    /// the loadable segment that holds it.
    pub fn file_offset(&self, addr: u64) -> Option<u64> {
        hpcscope_host::elf::file_offset(&self.segments, addr)
    }

    /// The function called `name`.
    pub fn function(&self, name: &str, path: &Path) -> Result<&Symbol, MixError> {
        self.functions
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| {
                let mut close: Vec<&str> = self
                    .functions
                    .iter()
                    .map(|s| s.name.as_str())
                    .filter(|n| n.contains(name) || name.contains(*n) && n.len() > 3)
                    .take(8)
                    .collect();
                if close.is_empty() {
                    close = self
                        .functions
                        .iter()
                        .map(|s| s.name.as_str())
                        .filter(|n| !n.starts_with('_'))
                        .take(8)
                        .collect();
                }
                MixError::Program {
                    path: path.display().to_string(),
                    message: format!("has no function named '{name}' in its symbol table"),
                    fix: if close.is_empty() {
                        "the program has no function symbols (stripped?): rebuild it without -s"
                            .into()
                    } else {
                        format!("functions include: {}", close.join(", "))
                    },
                }
            })
    }

    /// The function containing the link-time address `addr`.
    pub fn function_at(&self, addr: u64) -> Option<&Symbol> {
        let i = self.functions.partition_point(|s| s.addr <= addr);
        let s = self.functions.get(i.checked_sub(1)?)?;
        (addr < s.addr + s.size).then_some(s)
    }
}
