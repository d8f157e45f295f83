//! Message sizes of MPI calls: which arguments of which MPI functions give a message's
//! element count and datatype (the probes read them at the call's entry), and datatype
//! handles turned into names and sizes afterwards, in user space.
//!
//! - Open MPI: a predefined datatype is the address of a global object (`MPI_DOUBLE` is
//!   `&ompi_mpi_double`). The object is libmpi's, or, when the program itself names the
//!   datatype, the program's copy of it (a copy relocation: the linker moves the object into
//!   the executable and libmpi uses that copy). A handle is looked up in both symbol tables,
//!   each at its load bias; the probes record what that takes (the probed function's address
//!   in the process and the start of the program's code), so no memory map is needed and a
//!   process that has already exited resolves as well. Sizes are those `MPI_Type_size` gives
//!   on x86-64 (LP64, 16-byte `long double`).
//! - MPICH and its ABI (Intel MPI, MVAPICH): a datatype is an int. A builtin one encodes
//!   its size, `(handle >> 8) & 0xff` bytes (`MPIR_Datatype_get_basic_size` in MPICH's
//!   `mpir_datatype.h`); the pair types of `MPI_MINLOC`/`MPI_MAXLOC` have fixed handles.
//! - Any other handle is a derived datatype (or one this table does not know): its calls and
//!   element counts are reported with the size unknown.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSegment, ObjectSymbol};
use serde::Serialize;

use crate::symbolize::ElfSymbols;

/// The MPI functions whose arguments give a message: (function, argument with the element
/// count, argument with the datatype), arguments numbered from 1. What the count means:
///
/// - sends and `MPI_Bcast`, `MPI_Reduce`, `MPI_Allreduce`: the message;
/// - receives (`MPI_Recv`, `MPI_Irecv`): the buffer's capacity, an upper bound on the
///   message (the actual length is in the status, which the probes do not read);
/// - `MPI_Sendrecv`: its send half only (the receive half's arguments are the 7th and 8th,
///   on the stack); `MPI_Sendrecv_replace`: the one message sent and received;
/// - `MPI_Gather`, `MPI_Gatherv`, `MPI_Allgather`, `MPI_Allgatherv`, `MPI_Alltoall`: the
///   send count (for `MPI_Alltoall`, what goes to each rank);
/// - `MPI_Scatter`: the receive count (the send count only means something at the root).
///
/// `MPI_Alltoallv`, `MPI_Scatterv` and `MPI_Reduce_scatter` take arrays of counts: not read.
pub const MESSAGE_ARGS: &[(&str, u8, u8)] = &[
    ("MPI_Send", 2, 3),
    ("MPI_Ssend", 2, 3),
    ("MPI_Isend", 2, 3),
    ("MPI_Recv", 2, 3),
    ("MPI_Irecv", 2, 3),
    ("MPI_Bcast", 2, 3),
    ("MPI_Reduce", 3, 4),
    ("MPI_Allreduce", 3, 4),
    ("MPI_Sendrecv", 2, 3),
    ("MPI_Sendrecv_replace", 2, 3),
    ("MPI_Alltoall", 2, 3),
    ("MPI_Allgather", 2, 3),
    ("MPI_Allgatherv", 2, 3),
    ("MPI_Gather", 2, 3),
    ("MPI_Gatherv", 2, 3),
    ("MPI_Scatter", 5, 6),
];

/// The (count, datatype) argument numbers of an MPI function (`PMPI_X` as `MPI_X`).
pub fn message_args(symbol: &str) -> Option<(u8, u8)> {
    let name = symbol.strip_prefix('P').unwrap_or(symbol);
    MESSAGE_ARGS
        .iter()
        .find(|(f, _, _)| *f == name)
        .map(|&(_, c, d)| (c, d))
}

/// How the note of a trace about datatypes of unknown size begins (a merge of ranks sums
/// them in a note of its own instead).
pub const UNKNOWN_SIZE_NOTE: &str = "message sizes unknown for";

/// Which MPI implementation a library is, as far as its datatype handles go.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Flavor {
    /// Open MPI: handles are pointers to predefined objects.
    OpenMpi,
    /// MPICH and the implementations with its ABI (Intel MPI, MVAPICH): handles are ints.
    Mpich,
}

impl Flavor {
    /// Recognizes a library by the functions it defines: Open MPI's `ompi_mpi_init`, or
    /// `MPIR_Dup_fn`, which MPICH's `mpi.h` names as `MPI_DUP_FN`.
    pub fn detect(syms: &ElfSymbols) -> Option<Flavor> {
        if syms.contains("ompi_mpi_init") {
            Some(Flavor::OpenMpi)
        } else if syms.contains("MPIR_Dup_fn") {
            Some(Flavor::Mpich)
        } else {
            None
        }
    }

    /// Width of a datatype handle, bits.
    pub fn handle_bits(self) -> u8 {
        match self {
            Flavor::OpenMpi => 64,
            Flavor::Mpich => 32,
        }
    }
}

/// A datatype as far as its handle tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datatype {
    /// The MPI name of a predefined datatype, else the handle in hexadecimal.
    pub name: String,
    /// Bytes of one element (`MPI_Type_size`), when known.
    pub size: Option<u64>,
}

impl Datatype {
    fn unknown(handle: u64) -> Datatype {
        Datatype {
            name: format!("{handle:#x}"),
            size: None,
        }
    }
}

/// Open MPI's predefined datatypes: (symbol without `ompi_mpi_`, MPI name, `MPI_Type_size`
/// on x86-64), as Open MPI 4.1 reports them.
const OMPI_TYPES: &[(&str, &str, u64)] = &[
    ("2cplex", "MPI_2COMPLEX", 16),
    ("2dblcplex", "MPI_2DOUBLE_COMPLEX", 32),
    ("2dblprec", "MPI_2DOUBLE_PRECISION", 16),
    ("2int", "MPI_2INT", 8),
    ("2integer", "MPI_2INTEGER", 8),
    ("2real", "MPI_2REAL", 8),
    ("aint", "MPI_AINT", 8),
    ("byte", "MPI_BYTE", 1),
    ("c_bool", "MPI_C_BOOL", 1),
    ("c_double_complex", "MPI_C_DOUBLE_COMPLEX", 16),
    ("c_float_complex", "MPI_C_FLOAT_COMPLEX", 8),
    ("c_long_double_complex", "MPI_C_LONG_DOUBLE_COMPLEX", 32),
    ("char", "MPI_CHAR", 1),
    ("character", "MPI_CHARACTER", 1),
    ("complex16", "MPI_COMPLEX16", 16),
    ("complex32", "MPI_COMPLEX32", 32),
    ("complex8", "MPI_COMPLEX8", 8),
    ("count", "MPI_COUNT", 8),
    ("cplex", "MPI_COMPLEX", 8),
    ("cxx_bool", "MPI_CXX_BOOL", 1),
    ("cxx_cplex", "MPI_CXX_FLOAT_COMPLEX", 8),
    ("cxx_dblcplex", "MPI_CXX_DOUBLE_COMPLEX", 16),
    ("cxx_ldblcplex", "MPI_CXX_LONG_DOUBLE_COMPLEX", 32),
    ("dblcplex", "MPI_DOUBLE_COMPLEX", 16),
    ("dblprec", "MPI_DOUBLE_PRECISION", 8),
    ("double", "MPI_DOUBLE", 8),
    ("double_int", "MPI_DOUBLE_INT", 12),
    ("float", "MPI_FLOAT", 4),
    ("float_int", "MPI_FLOAT_INT", 8),
    ("int", "MPI_INT", 4),
    ("int16_t", "MPI_INT16_T", 2),
    ("int32_t", "MPI_INT32_T", 4),
    ("int64_t", "MPI_INT64_T", 8),
    ("int8_t", "MPI_INT8_T", 1),
    ("integer", "MPI_INTEGER", 4),
    ("integer1", "MPI_INTEGER1", 1),
    ("integer2", "MPI_INTEGER2", 2),
    ("integer4", "MPI_INTEGER4", 4),
    ("integer8", "MPI_INTEGER8", 8),
    ("logical", "MPI_LOGICAL", 4),
    ("logical1", "MPI_LOGICAL1", 1),
    ("logical2", "MPI_LOGICAL2", 2),
    ("logical4", "MPI_LOGICAL4", 4),
    ("logical8", "MPI_LOGICAL8", 8),
    ("long", "MPI_LONG", 8),
    ("long_double", "MPI_LONG_DOUBLE", 16),
    ("long_int", "MPI_LONG_INT", 12),
    ("long_long_int", "MPI_LONG_LONG_INT", 8),
    ("longdbl_int", "MPI_LONG_DOUBLE_INT", 20),
    ("offset", "MPI_OFFSET", 8),
    ("packed", "MPI_PACKED", 1),
    ("real", "MPI_REAL", 4),
    ("real16", "MPI_REAL16", 16),
    ("real4", "MPI_REAL4", 4),
    ("real8", "MPI_REAL8", 8),
    ("short", "MPI_SHORT", 2),
    ("short_int", "MPI_SHORT_INT", 6),
    ("signed_char", "MPI_SIGNED_CHAR", 1),
    ("uint16_t", "MPI_UINT16_T", 2),
    ("uint32_t", "MPI_UINT32_T", 4),
    ("uint64_t", "MPI_UINT64_T", 8),
    ("uint8_t", "MPI_UINT8_T", 1),
    ("unsigned", "MPI_UNSIGNED", 4),
    ("unsigned_char", "MPI_UNSIGNED_CHAR", 1),
    ("unsigned_long", "MPI_UNSIGNED_LONG", 8),
    ("unsigned_long_long", "MPI_UNSIGNED_LONG_LONG", 8),
    ("unsigned_short", "MPI_UNSIGNED_SHORT", 2),
    ("wchar", "MPI_WCHAR", 4),
];

/// MPICH's builtin C datatypes by their index (the handle's low byte), for names; sizes
/// come from the handle itself.
const MPICH_NAMES: &[(u32, &str)] = &[
    (0x01, "MPI_CHAR"),
    (0x02, "MPI_UNSIGNED_CHAR"),
    (0x03, "MPI_SHORT"),
    (0x04, "MPI_UNSIGNED_SHORT"),
    (0x05, "MPI_INT"),
    (0x06, "MPI_UNSIGNED"),
    (0x07, "MPI_LONG"),
    (0x08, "MPI_UNSIGNED_LONG"),
    (0x09, "MPI_LONG_LONG_INT"),
    (0x0a, "MPI_FLOAT"),
    (0x0b, "MPI_DOUBLE"),
    (0x0c, "MPI_LONG_DOUBLE"),
    (0x0d, "MPI_BYTE"),
    (0x0e, "MPI_WCHAR"),
    (0x0f, "MPI_PACKED"),
    (0x16, "MPI_2INT"),
    (0x18, "MPI_SIGNED_CHAR"),
    (0x19, "MPI_UNSIGNED_LONG_LONG"),
];

/// MPICH's pair types (fixed handles of kind "direct"): handle, name, size on x86-64.
const MPICH_PAIRS: &[(u32, &str, u64)] = &[
    (0x8c00_0000, "MPI_FLOAT_INT", 8),
    (0x8c00_0001, "MPI_DOUBLE_INT", 12),
    (0x8c00_0002, "MPI_LONG_INT", 12),
    (0x8c00_0003, "MPI_SHORT_INT", 6),
    (0x8c00_0004, "MPI_LONG_DOUBLE_INT", 20),
];

/// An MPICH datatype handle: a builtin one (kind 1 in bits 30-31, object kind 3, datatype,
/// in bits 26-29) carries its size in bits 8-15.
pub fn mpich_datatype(handle: u32) -> Datatype {
    if let Some((_, name, size)) = MPICH_PAIRS.iter().find(|p| p.0 == handle) {
        return Datatype {
            name: name.to_string(),
            size: Some(*size),
        };
    }
    let builtin = handle >> 30 == 1 && (handle >> 26) & 0xf == 3;
    if !builtin {
        return Datatype::unknown(handle as u64);
    }
    let size = ((handle >> 8) & 0xff) as u64;
    let name = MPICH_NAMES
        .iter()
        .find(|n| n.0 == handle & 0xff)
        .map_or_else(|| format!("{handle:#x}"), |n| n.1.to_string());
    Datatype {
        name,
        // MPI_LB, MPI_UB and MPI_DATATYPE_NULL-like builtins have size 0.
        size: (size > 0).then_some(size),
    }
}

/// Open MPI's predefined datatype objects in one ELF file, by address in the file.
#[derive(Debug, Default)]
struct OmpiObjects {
    by_addr: HashMap<u64, (&'static str, u64)>,
    /// Loadable segments: (address, size, file offset, executable).
    segments: Vec<(u64, u64, u64, bool)>,
}

impl OmpiObjects {
    fn load(path: &Path) -> OmpiObjects {
        let Ok(data) = std::fs::read(path) else {
            return OmpiObjects::default();
        };
        let Ok(file) = object::File::parse(&*data) else {
            return OmpiObjects::default();
        };
        let segments = file
            .segments()
            .map(|s| {
                let exec = matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0);
                (s.address(), s.size(), s.file_range().0, exec)
            })
            .collect();
        let mut by_addr = HashMap::new();
        for s in file.dynamic_symbols().chain(file.symbols()) {
            if s.is_undefined() || s.kind() != object::SymbolKind::Data {
                continue;
            }
            let Some(short) = s.name().ok().and_then(|n| n.strip_prefix("ompi_mpi_")) else {
                continue;
            };
            if let Some((_, name, size)) = OMPI_TYPES.iter().find(|t| t.0 == short) {
                by_addr.insert(s.address(), (*name, *size));
            }
        }
        OmpiObjects { by_addr, segments }
    }

    /// The address in the file of file offset `off`.
    fn address_of_offset(&self, off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(_, size, o, _)| off >= *o && off < o + size)
            .map(|(a, _, o, _)| a + (off - o))
    }

    /// The lowest address of an executable segment (what `mm->start_code` is, less the
    /// load bias, for the program the kernel loaded).
    fn start_code(&self) -> Option<u64> {
        self.segments.iter().filter(|s| s.3).map(|s| s.0).min()
    }

    fn get(&self, addr: u64) -> Option<Datatype> {
        self.by_addr.get(&addr).map(|(name, size)| Datatype {
            name: name.to_string(),
            size: Some(*size),
        })
    }
}

/// Where a handle was seen: in which process, through which probed function.
#[derive(Debug, Clone)]
pub struct HandleSite<'a> {
    /// The MPI library the probed function is in.
    pub library: &'a Path,
    /// The probed function's offset in that file.
    pub function_offset: u64,
    /// Its address in the process (recorded by the probe).
    pub entry_ip: u64,
    /// The process's program, when known.
    pub program: Option<&'a Path>,
    /// The start of the program's code in the process (recorded by the probe).
    pub start_code: u64,
}

/// Turns the datatype handles of one trace into datatypes, parsing each file once.
#[derive(Debug, Default)]
pub struct Datatypes {
    files: HashMap<PathBuf, OmpiObjects>,
}

impl Datatypes {
    fn objects(&mut self, path: &Path) -> &OmpiObjects {
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| OmpiObjects::load(path))
    }

    /// The datatype of `handle` in a library of `flavor`.
    pub fn resolve(&mut self, flavor: Flavor, handle: u64, at: &HandleSite) -> Datatype {
        match flavor {
            Flavor::Mpich => mpich_datatype(handle as u32),
            Flavor::OpenMpi => self.ompi(handle, at).unwrap_or(Datatype::unknown(handle)),
        }
    }

    fn ompi(&mut self, handle: u64, at: &HandleSite) -> Option<Datatype> {
        let lib = self.objects(at.library);
        let in_lib = lib
            .address_of_offset(at.function_offset)
            .and_then(|a| at.entry_ip.checked_sub(a))
            .and_then(|bias| handle.checked_sub(bias))
            .and_then(|a| lib.get(a));
        if in_lib.is_some() {
            return in_lib;
        }
        let exe = self.objects(at.program?);
        let bias = at.start_code.checked_sub(exe.start_code()?)?;
        exe.get(handle.checked_sub(bias)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpich_handles_carry_their_size() {
        // Values of MPICH's mpi.h on x86-64.
        for (h, name, size) in [
            (0x4c00_0101u32, "MPI_CHAR", 1),
            (0x4c00_0405, "MPI_INT", 4),
            (0x4c00_080b, "MPI_DOUBLE", 8),
            (0x4c00_100c, "MPI_LONG_DOUBLE", 16),
            (0x4c00_010d, "MPI_BYTE", 1),
            (0x4c00_0816, "MPI_2INT", 8),
            (0x8c00_0001, "MPI_DOUBLE_INT", 12),
        ] {
            assert_eq!(
                mpich_datatype(h),
                Datatype {
                    name: name.into(),
                    size: Some(size)
                }
            );
        }
        // A builtin this table has no name for still has its size.
        assert_eq!(mpich_datatype(0x4c00_0837).size, Some(8));
        // Derived datatypes (direct and indirect kinds), MPI_DATATYPE_NULL, MPI_UB.
        for h in [0x8c00_0010u32, 0xcc00_0000, 0x0c00_0000, 0x4c00_0011] {
            assert_eq!(mpich_datatype(h).size, None, "{h:#x}");
        }
        assert_eq!(mpich_datatype(0xcc00_0000).name, "0xcc000000");
    }

    #[test]
    fn message_arguments_by_function() {
        assert_eq!(message_args("MPI_Send"), Some((2, 3)));
        assert_eq!(message_args("PMPI_Allreduce"), Some((3, 4)));
        assert_eq!(message_args("MPI_Scatter"), Some((5, 6)));
        assert_eq!(message_args("MPI_Barrier"), None);
        assert_eq!(message_args("MPI_Alltoallv"), None);
        for (f, c, d) in MESSAGE_ARGS {
            assert!(
                crate::linux::MPI_FUNCTIONS.contains(f),
                "{f} is not probed by --mpi"
            );
            assert!((1..=6).contains(c) && (1..=6).contains(d) && c != d, "{f}");
        }
    }

    #[test]
    fn open_mpi_handles_resolve_at_the_load_bias() {
        let Some(lib) = crate::linux::find_library("libmpi") else {
            println!("skipping: no libmpi installed");
            return;
        };
        let syms = ElfSymbols::load(&lib);
        if Flavor::detect(&syms) != Some(Flavor::OpenMpi) {
            println!("skipping: {} is not Open MPI", lib.display());
            return;
        }
        let objects = OmpiObjects::load(&lib);
        let double = objects
            .by_addr
            .iter()
            .find(|(_, t)| t.0 == "MPI_DOUBLE")
            .map(|(a, _)| *a)
            .expect("ompi_mpi_double in libmpi");
        let send = syms.offset("MPI_Send").expect("MPI_Send");
        // As if libmpi were mapped at this bias: the probe saw MPI_Send there.
        let bias = 0x7f12_3456_0000u64;
        let site = HandleSite {
            library: &lib,
            function_offset: send,
            entry_ip: bias + objects.address_of_offset(send).unwrap(),
            program: None,
            start_code: 0,
        };
        let mut types = Datatypes::default();
        assert_eq!(
            types.resolve(Flavor::OpenMpi, bias + double, &site),
            Datatype {
                name: "MPI_DOUBLE".into(),
                size: Some(8)
            }
        );
        // A heap address (a derived datatype) is not a predefined object.
        let other = types.resolve(Flavor::OpenMpi, 0x5555_0000_1230, &site);
        assert_eq!((other.name.as_str(), other.size), ("0x555500001230", None));
    }

    #[test]
    fn open_mpi_names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for (sym, name, size) in OMPI_TYPES {
            assert!(seen.insert(*sym) && *size > 0, "{sym} {name}");
        }
    }
}
