//! USDT probes (User Statically Defined Tracing, the thesis's white-box method, seed 004
//! section 3.1.1.1): the `.note.stapsdt` ELF notes that `<sys/sdt.h>`'s `DTRACE_PROBE` and
//! `STAP_PROBE` macros leave in a program or library, read with the `object` crate.
//!
//! Each note describes one probe site: provider, name, the address of the `nop` the macro
//! left, the address of `.stapsdt.base` when the note was written (prelinking moves code;
//! the difference to the section's address now corrects the site), the address of the
//! probe's semaphore (0 when it has none: a program checks it with `PROVIDER_NAME_ENABLED()`
//! and only then evaluates the arguments, so a guarded probe fires only while a tracer has
//! raised the semaphore), and the arguments in the assembler's operand syntax
//! (`-4@%eax 8@-16(%rbp)`). A uprobe goes at each site's file offset; a semaphore is raised
//! by the kernel (uprobe `ref_ctr_offset`, Linux 4.20) at the semaphore's file offset.

use std::path::{Path, PathBuf};

use object::read::elf::{ElfFile64, FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, Object, ObjectSection, elf};
use serde::Serialize;

use crate::error::TraceError;

/// Note type of a SystemTap SDT note (`NT_STAPSDT`).
const NT_STAPSDT: u32 = 3;

/// One site of a probe in a file.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UsdtSite {
    /// Address of the site (the note's, corrected by `.stapsdt.base`).
    pub address: u64,
    /// Its offset in the file, where the uprobe goes.
    pub file_offset: u64,
    /// Address of the probe's semaphore (0: none).
    pub semaphore: u64,
    /// The semaphore's offset in the file (where the kernel raises it), when there is one.
    pub semaphore_offset: Option<u64>,
    /// Argument specification, e.g. `-4@%eax 8@-16(%rbp)` (size@operand; a negative size is
    /// signed).
    pub arguments: String,
}

/// A probe (PROVIDER:NAME) and its sites in one file (a probe used in several places of
/// the code, or inlined, has several).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UsdtProbe {
    /// Provider, e.g. `python`, `libstdcxx`.
    pub provider: String,
    /// Name, e.g. `function__entry`, `throw`.
    pub name: String,
    /// The file that holds it.
    pub binary: PathBuf,
    /// Its sites, by address.
    pub sites: Vec<UsdtSite>,
}

impl UsdtProbe {
    /// `provider:name`.
    pub fn id(&self) -> String {
        format!("{}:{}", self.provider, self.name)
    }

    /// Whether any site is guarded by a semaphore.
    pub fn has_semaphore(&self) -> bool {
        self.sites.iter().any(|s| s.semaphore != 0)
    }
}

/// A USDT probe asked for: `PROVIDER:NAME` (in the traced program or a library it loads) or
/// `BINARY:PROVIDER:NAME` (a path, a library name such as `libstdc++`, or a program on PATH).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsdtSpec {
    /// The file to look in; `None`: the traced program, then the libraries it loads.
    pub binary: Option<String>,
    /// Provider.
    pub provider: String,
    /// Probe name.
    pub name: String,
}

impl std::str::FromStr for UsdtSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}`: expected PROVIDER:NAME or BINARY:PROVIDER:NAME");
        let mut it = s.rsplitn(3, ':');
        let name = it.next().ok_or_else(bad)?;
        let provider = it.next().ok_or_else(bad)?;
        let binary = it.next();
        if name.is_empty() || provider.is_empty() || binary == Some("") {
            return Err(bad());
        }
        Ok(UsdtSpec {
            binary: binary.map(str::to_string),
            provider: provider.to_string(),
            name: name.to_string(),
        })
    }
}

impl std::fmt::Display for UsdtSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.binary {
            Some(b) => write!(f, "{b}:{}:{}", self.provider, self.name),
            None => write!(f, "{}:{}", self.provider, self.name),
        }
    }
}

/// The raw fields of one SDT note: (pc, base, semaphore, provider, name, arguments).
type RawNote = (u64, u64, u64, String, String, String);

/// Decodes the descriptor of a 64-bit SDT note: three addresses, then three NUL-terminated
/// strings.
fn decode_note(desc: &[u8], little: bool) -> Option<RawNote> {
    if desc.len() < 24 {
        return None;
    }
    let word = |i: usize| {
        let b: [u8; 8] = desc[i * 8..i * 8 + 8].try_into().ok()?;
        Some(if little {
            u64::from_le_bytes(b)
        } else {
            u64::from_be_bytes(b)
        })
    };
    let (pc, base, sem) = (word(0)?, word(1)?, word(2)?);
    let mut strs = desc[24..].split(|&c| c == 0);
    let mut next = || strs.next().map(|b| String::from_utf8_lossy(b).into_owned());
    let provider = next()?;
    let name = next()?;
    let args = next().unwrap_or_default();
    (!provider.is_empty() && !name.is_empty()).then_some((pc, base, sem, provider, name, args))
}

/// Every USDT probe in an ELF file (empty when it has none), sites grouped by probe.
pub fn probes_in(path: &Path) -> Result<Vec<UsdtProbe>, TraceError> {
    let data = std::fs::read(path).map_err(|e| TraceError::Io {
        context: format!("reading {} for its USDT notes", path.display()),
        source: e,
    })?;
    probes_in_bytes(&data, path)
}

fn probes_in_bytes(data: &[u8], path: &Path) -> Result<Vec<UsdtProbe>, TraceError> {
    let not_elf = |why: String| {
        TraceError::Invalid(format!(
            "{}: not a 64-bit ELF file whose USDT notes can be read ({why}); give a program or shared library",
            path.display()
        ))
    };
    let file = ElfFile64::<Endianness>::parse(data).map_err(|e| not_elf(e.to_string()))?;
    let endian = file.endian();
    let little = file.is_little_endian();
    // Loadable segments: (vaddr, memsz, file offset, filesz, executable).
    let segs: Vec<(u64, u64, u64, u64, bool)> = file
        .elf_header()
        .program_headers(endian, data)
        .map_err(|e| not_elf(e.to_string()))?
        .iter()
        .filter(|p| p.p_type(endian) == elf::PT_LOAD)
        .map(|p| {
            (
                p.p_vaddr(endian),
                p.p_memsz(endian),
                p.p_offset(endian),
                p.p_filesz(endian),
                p.p_flags(endian) & elf::PF_X != 0,
            )
        })
        .collect();
    let to_offset = |va: u64, exec: bool| {
        segs.iter()
            .find(|s| s.4 == exec && va >= s.0 && va < s.0 + s.3.min(s.1))
            .map(|s| va - s.0 + s.2)
    };
    let base_now = file.section_by_name(".stapsdt.base").map(|s| s.address());
    let mut out: Vec<UsdtProbe> = Vec::new();
    for section in file.elf_section_table().iter() {
        if section.sh_type(endian) != elf::SHT_NOTE {
            continue;
        }
        let Ok(Some(mut notes)) = section.notes(endian, data) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() != b"stapsdt" || note.n_type(endian) != NT_STAPSDT {
                continue;
            }
            let Some((pc, base, sem, provider, name, arguments)) = decode_note(note.desc(), little)
            else {
                continue;
            };
            let address = match base_now {
                Some(now) if base != 0 => pc.wrapping_add(now).wrapping_sub(base),
                _ => pc,
            };
            // A site outside the code (a corrupt note) cannot be probed: leave it out.
            let Some(file_offset) = to_offset(address, true) else {
                continue;
            };
            let site = UsdtSite {
                address,
                file_offset,
                semaphore: sem,
                semaphore_offset: (sem != 0).then(|| to_offset(sem, false)).flatten(),
                arguments,
            };
            match out
                .iter_mut()
                .find(|p| p.provider == provider && p.name == name)
            {
                Some(p) => p.sites.push(site),
                None => out.push(UsdtProbe {
                    provider,
                    name,
                    binary: path.to_path_buf(),
                    sites: vec![site],
                }),
            }
        }
    }
    for p in &mut out {
        p.sites.sort_by_key(|s| s.address);
        p.sites.dedup_by_key(|s| s.address);
    }
    out.sort_by(|a, b| (&a.provider, &a.name).cmp(&(&b.provider, &b.name)));
    Ok(out)
}

/// A probe resolved for attaching: what was asked, and the probe found.
#[derive(Debug, Clone)]
pub struct ResolvedUsdt {
    /// The spec as given.
    pub spec: UsdtSpec,
    /// The probe and its sites.
    pub probe: UsdtProbe,
}

/// Finds `spec` among `candidates` (files in the order to search): the first file that has
/// the probe. The error lists what the files hold, so a misspelt name is easy to fix.
pub fn find(spec: &UsdtSpec, candidates: &[PathBuf]) -> Result<ResolvedUsdt, TraceError> {
    let mut seen: Vec<String> = Vec::new();
    for path in candidates {
        let probes = match probes_in(path) {
            Ok(p) => p,
            // Only the file named explicitly must be readable.
            Err(e) if spec.binary.is_some() => return Err(e),
            Err(_) => continue,
        };
        if let Some(p) = probes
            .iter()
            .find(|p| p.provider == spec.provider && p.name == spec.name)
        {
            return Ok(ResolvedUsdt {
                spec: spec.clone(),
                probe: p.clone(),
            });
        }
        if !probes.is_empty() {
            let ids: Vec<String> = probes.iter().map(UsdtProbe::id).collect();
            seen.push(format!("{}: {}", path.display(), ids.join(", ")));
        }
    }
    let searched: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    Err(TraceError::Invalid(format!(
        "USDT probe {}:{} not found in {}; {}",
        spec.provider,
        spec.name,
        if searched.is_empty() {
            "any file".to_string()
        } else {
            searched.join(", ")
        },
        if seen.is_empty() {
            "none of them has USDT notes (`readelf -n FILE` shows them as NT_STAPSDT); name the file that has the probe: --usdt BINARY:PROVIDER:NAME".to_string()
        } else {
            format!(
                "the probes there are: {} (list a file's probes with `hpcscope trace --list-usdt FILE`)",
                seen.join("; ")
            )
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_and_without_a_binary() {
        let s: UsdtSpec = "python:function__entry".parse().unwrap();
        assert_eq!(s.binary, None);
        assert_eq!(s.provider, "python");
        assert_eq!(s.name, "function__entry");
        let s: UsdtSpec = "/usr/bin/python3.11:python:gc__start".parse().unwrap();
        assert_eq!(s.binary.as_deref(), Some("/usr/bin/python3.11"));
        assert_eq!(s.to_string(), "/usr/bin/python3.11:python:gc__start");
        let s: UsdtSpec = "libstdc++:libstdcxx:throw".parse().unwrap();
        assert_eq!(s.binary.as_deref(), Some("libstdc++"));
        for bad in ["throw", ":throw", "libstdcxx:", ":a:b"] {
            assert!(bad.parse::<UsdtSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_note_descriptor_decodes() {
        let mut d = Vec::new();
        for w in [0x0042_512a_u64, 0x008c_c5a0, 0x00a8_4276] {
            d.extend_from_slice(&w.to_le_bytes());
        }
        d.extend_from_slice(b"python\0audit\08@%rbx 8@%r15\0");
        let n = decode_note(&d, true).unwrap();
        assert_eq!(n.0, 0x42512a);
        assert_eq!(n.1, 0x8cc5a0);
        assert_eq!(n.2, 0xa84276);
        assert_eq!((n.3.as_str(), n.4.as_str()), ("python", "audit"));
        assert_eq!(n.5, "8@%rbx 8@%r15");
        assert!(decode_note(&d[..20], true).is_none());
    }

    #[test]
    fn a_file_without_notes_has_no_probes_and_text_is_refused() {
        // This test binary has no SDT notes.
        let exe = std::env::current_exe().unwrap();
        assert!(probes_in(&exe).unwrap().is_empty());
        let d = tempfile::tempdir().unwrap();
        let txt = d.path().join("x.txt");
        std::fs::write(&txt, "not an ELF file").unwrap();
        let e = probes_in(&txt).unwrap_err().to_string();
        assert!(e.contains("not a 64-bit ELF file"), "{e}");
        let spec: UsdtSpec = "p:n".parse().unwrap();
        let e = find(&spec, &[exe]).unwrap_err().to_string();
        assert!(
            e.contains("p:n not found") && e.contains("readelf -n"),
            "{e}"
        );
    }
}
