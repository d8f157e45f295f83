//! Address to function name: for user code, DWARF debug information where the file has it
//! (functions inlined at the address become frames of their own) and the ELF symbol tables
//! otherwise, with C++ and Rust names demangled (blazesym); separate debug files too (a
//! distribution's `-dbg`/`-debuginfo` packages: `.gnu_debuglink` and build IDs under
//! /usr/lib/debug, compressed sections included, and the debuginfod client's cache);
//! `kallsyms` for the kernel; and
//! snapshots of a process's memory map taken while it runs (a process that has exited has
//! no map left to read). [`ElfSymbols`] is the symbol-table index uprobes resolve names
//! with.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSegment, ObjectSymbol};

/// One file-backed executable mapping of a process.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset of `start`.
    pub offset: u64,
    /// Mapped file.
    pub path: PathBuf,
}

/// Parses `/proc/<pid>/maps` text, keeping executable file mappings.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(perms), Some(off)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let _dev = it.next();
        let _inode = it.next();
        let path: String = it.collect::<Vec<_>>().join(" ");
        if !perms.contains('x') || !path.starts_with('/') {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end), Ok(offset)) = (
            u64::from_str_radix(a, 16),
            u64::from_str_radix(b, 16),
            u64::from_str_radix(off, 16),
        ) else {
            continue;
        };
        out.push(Mapping {
            start,
            end,
            offset,
            path: PathBuf::from(path),
        });
    }
    out
}

/// Reads the executable mappings of a live process (empty when it is gone).
pub fn read_maps(pid: u32) -> Vec<Mapping> {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map(|t| parse_maps(&t))
        .unwrap_or_default()
}

/// Function symbols of one ELF file, by file offset.
#[derive(Debug, Default)]
pub struct ElfSymbols {
    /// `(file_offset, size, name)` sorted by offset, one name per offset (for lookups).
    syms: Vec<(u64, u64, String)>,
    /// Every defined function name, aliases included, and its file offset: a library such
    /// as libmpi defines `MPI_Send` as a weak alias of `PMPI_Send` at the same address, and
    /// either name can be probed.
    names: std::collections::BTreeMap<String, u64>,
}

impl ElfSymbols {
    /// Loads `.symtab` and `.dynsym` function symbols of `path` (empty on any error).
    pub fn load(path: &Path) -> ElfSymbols {
        let Ok(data) = std::fs::read(path) else {
            return ElfSymbols::default();
        };
        let Ok(file) = object::File::parse(&*data) else {
            return ElfSymbols::default();
        };
        let segs: Vec<(u64, u64, u64)> = file
            .segments()
            .map(|s| (s.address(), s.size(), s.file_range().0))
            .collect();
        let to_off = |va: u64| {
            segs.iter()
                .find(|(a, sz, _)| va >= *a && va < a + sz)
                .map(|(a, _, off)| va - a + off)
        };
        let mut syms = Vec::new();
        for s in file.symbols().chain(file.dynamic_symbols()) {
            if s.kind() != object::SymbolKind::Text || s.address() == 0 {
                continue;
            }
            let Ok(name) = s.name() else { continue };
            if let Some(off) = to_off(s.address()) {
                syms.push((off, s.size(), name.to_string()));
            }
        }
        Self::from_symbols(syms)
    }

    /// Builds the table from `(file_offset, size, name)` triples in any order.
    fn from_symbols(mut syms: Vec<(u64, u64, String)>) -> ElfSymbols {
        let mut names = std::collections::BTreeMap::new();
        for (off, _, name) in &syms {
            // The first definition wins (the static symbol table before the dynamic one).
            names.entry(name.clone()).or_insert(*off);
        }
        syms.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        syms.dedup_by_key(|s| s.0);
        ElfSymbols { syms, names }
    }

    /// Name of the function containing file offset `off`.
    pub fn lookup(&self, off: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= off);
        let (start, size, name) = self.syms.get(i.checked_sub(1)?)?;
        // Size 0 (hand-written assembly): accept up to the next symbol.
        if *size == 0 || off < start + size {
            Some(name)
        } else {
            None
        }
    }

    /// Every defined function name (aliases included), sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.keys().map(String::as_str)
    }

    /// Whether a function named `name` is defined.
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains_key(name)
    }

    /// File offset of the function `name` (where a uprobe goes).
    pub fn offset(&self, name: &str) -> Option<u64> {
        self.names.get(name).copied()
    }

    /// Defined function names starting with `prefix` (aliases included), sorted.
    pub fn with_prefix(&self, prefix: &str) -> Vec<String> {
        self.names
            .range(prefix.to_string()..)
            .map(|(n, _)| n)
            .take_while(|n| n.starts_with(prefix))
            .cloned()
            .collect()
    }
}

/// The debuginfod client's cache directories, where `debuginfod-find` (and gdb, perf...)
/// leave the debug file of a build ID as `<dir>/<build-id>/debuginfo`:
/// `$DEBUGINFOD_CACHE_PATH`, `$XDG_CACHE_HOME/debuginfod_client`,
/// `$HOME/.cache/debuginfod_client` (those that are set).
pub fn debuginfod_cache_dirs() -> Vec<PathBuf> {
    let var = |v: &str| {
        std::env::var_os(v)
            .filter(|x| !x.is_empty())
            .map(PathBuf::from)
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    dirs.extend(var("DEBUGINFOD_CACHE_PATH"));
    dirs.extend(var("XDG_CACHE_HOME").map(|d| d.join("debuginfod_client")));
    dirs.extend(var("HOME").map(|d| d.join(".cache/debuginfod_client")));
    dirs.dedup();
    dirs
}

/// The GNU build ID of an ELF file, in hexadecimal.
pub fn build_id(path: &Path) -> Option<String> {
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let id = file.build_id().ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// The virtual address at file offset `off` of an ELF file (its loadable segments').
fn file_offset_to_vaddr(path: &Path, off: u64) -> Option<u64> {
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    file.segments().find_map(|s| {
        let (start, size) = s.file_range();
        (off >= start && off < start + size).then(|| s.address() + (off - start))
    })
}

/// The name a function is known by: glibc's internal aliases (`__GI___strcoll_l`, made by
/// its `hidden_def`, at the same address) under their public name (`__strcoll_l`), as perf
/// and the symbol table's global entry name them.
pub fn public_name(name: &str) -> String {
    name.strip_prefix("__GI_").unwrap_or(name).to_string()
}

/// Whether `qualified` is `name` with its namespaces (`a::b::name`, `a::b::name(int)`).
fn qualifies(qualified: &str, name: &str) -> bool {
    let base = qualified.split('(').next().unwrap_or(qualified);
    base.len() > name.len() + 2
        && base.ends_with(name)
        && base[..base.len() - name.len()].ends_with("::")
}

/// Symbolizes user and kernel addresses, caching parsed files and resolved addresses.
pub struct Symbolizer {
    user: blazesym::symbolize::Symbolizer,
    resolved: HashMap<(PathBuf, u64), Vec<String>>,
    /// Where to look for debuginfod's debug files ([`debuginfod_cache_dirs`]).
    pub debuginfod_dirs: Vec<PathBuf>,
    /// The debug file found for each file, if any (by build ID in the debuginfod cache).
    debug_files: HashMap<PathBuf, Option<PathBuf>>,
    kernel: Vec<(u64, String)>,
    /// Last map snapshot of each process.
    pub maps: HashMap<u32, Vec<Mapping>>,
}

impl Default for Symbolizer {
    /// A symbolizer without kernel symbols.
    fn default() -> Self {
        Symbolizer {
            user: blazesym::symbolize::Symbolizer::builder()
                .enable_code_info(true)
                .enable_inlined_fns(true)
                .enable_demangling(true)
                .build(),
            resolved: HashMap::new(),
            debuginfod_dirs: debuginfod_cache_dirs(),
            debug_files: HashMap::new(),
            kernel: Vec::new(),
            maps: HashMap::new(),
        }
    }
}

impl Symbolizer {
    /// A symbolizer with kernel symbols from `/proc/kallsyms` (empty when unreadable).
    pub fn new() -> Symbolizer {
        let mut kernel = Vec::new();
        if let Ok(t) = std::fs::read_to_string("/proc/kallsyms") {
            for l in t.lines() {
                let mut it = l.split_whitespace();
                let (Some(a), Some(ty), Some(name)) = (it.next(), it.next(), it.next()) else {
                    continue;
                };
                if !matches!(ty, "t" | "T" | "w" | "W") {
                    continue;
                }
                if let Ok(a) = u64::from_str_radix(a, 16)
                    && a != 0
                {
                    kernel.push((a, name.to_string()));
                }
            }
        }
        kernel.sort();
        Symbolizer {
            kernel,
            ..Default::default()
        }
    }

    /// Remembers the current map of `pid` if it is readable and non-empty.
    pub fn snapshot(&mut self, pid: u32) {
        let m = read_maps(pid);
        if !m.is_empty() {
            self.maps.insert(pid, m);
        }
    }

    /// Name of the kernel function at `ip`.
    pub fn kernel(&self, ip: u64) -> String {
        let i = self.kernel.partition_point(|s| s.0 <= ip);
        match i.checked_sub(1).and_then(|i| self.kernel.get(i)) {
            Some((_, n)) => n.clone(),
            None => format!("[kernel] {ip:#x}"),
        }
    }

    /// Name of the user function at `ip` in process `pid` (the innermost, when functions
    /// are inlined there).
    pub fn user(&mut self, pid: u32, ip: u64) -> String {
        self.user_frames(pid, ip).pop().unwrap_or_default()
    }

    /// The user frames at `ip` in process `pid`, outermost first: the function whose code
    /// it is, then each function inlined into it down to the one the address is in.
    pub fn user_frames(&mut self, pid: u32, ip: u64) -> Vec<String> {
        let Some(m) = self
            .maps
            .get(&pid)
            .and_then(|ms| ms.iter().find(|m| ip >= m.start && ip < m.end))
        else {
            return vec![format!("[unknown] {ip:#x}")];
        };
        let off = ip - m.start + m.offset;
        let path = m.path.clone();
        self.file_frames(&path, off)
    }

    /// The frames at file offset `off` of the ELF file `path`, outermost first: from the
    /// file itself and the debug files blazesym finds for it (`.gnu_debuglink`, build ID
    /// under /usr/lib/debug/.build-id), else from its debug file in the debuginfod cache,
    /// else a placeholder naming the file and offset.
    pub fn file_frames(&mut self, path: &Path, off: u64) -> Vec<String> {
        let key = (path.to_path_buf(), off);
        if let Some(f) = self.resolved.get(&key) {
            return f.clone();
        }
        use blazesym::symbolize::{Input, source::Elf, source::Source};
        let src = Source::Elf(Elf::new(path));
        let frames = self
            .symbol_frames(&src, Input::FileOffset(off))
            .map(|mut v| {
                // Debug information with line tables only (`-g1`, `-gmlt`, Rust's
                // `line-tables-only`) names functions without their namespaces: the
                // symbol table's name is the qualified one.
                if let Some(first) = v.first_mut()
                    && !first.contains("::")
                {
                    let mut elf = Elf::new(path);
                    elf.debug_syms = false;
                    if let Some(q) = self
                        .symbol_frames(&Source::Elf(elf), Input::FileOffset(off))
                        .and_then(|f| f.into_iter().next())
                        .filter(|q| qualifies(q, first))
                    {
                        *first = q;
                    }
                }
                v
            })
            .or_else(|| {
                let debug = self.debuginfod_file(path)?;
                let vaddr = file_offset_to_vaddr(path, off)?;
                self.symbol_frames(&Source::Elf(Elf::new(debug)), Input::VirtOffset(vaddr))
            })
            .unwrap_or_else(|| {
                let file = path
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                vec![format!("[{file}+{off:#x}]")]
            });
        self.resolved.insert(key, frames.clone());
        frames
    }

    fn symbol_frames(
        &self,
        src: &blazesym::symbolize::source::Source,
        input: blazesym::symbolize::Input<u64>,
    ) -> Option<Vec<String>> {
        match self.user.symbolize_single(src, input) {
            Ok(blazesym::symbolize::Symbolized::Sym(sym)) => {
                let mut v = vec![public_name(&sym.name)];
                v.extend(sym.inlined.iter().map(|f| public_name(&f.name)));
                Some(v)
            }
            _ => None,
        }
    }

    /// The debug file of `path` in the debuginfod cache, by its build ID.
    fn debuginfod_file(&mut self, path: &Path) -> Option<PathBuf> {
        if let Some(d) = self.debug_files.get(path) {
            return d.clone();
        }
        let found = build_id(path).and_then(|id| {
            self.debuginfod_dirs
                .iter()
                .map(|d| d.join(&id).join("debuginfo"))
                .find(|p| p.is_file())
        });
        self.debug_files.insert(path.to_path_buf(), found.clone());
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_executable_file_mappings_only() {
        let t = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 123 /usr/bin/app
55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 123 /usr/bin/app
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0 [vdso]
7f1000000000-7f1000100000 r-xp 00028000 08:01 456 /usr/lib/libc with space.so
";
        let m = parse_maps(t);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].start, 0x55d0c0a01000);
        assert_eq!(m[0].offset, 0x1000);
        assert_eq!(m[1].path, PathBuf::from("/usr/lib/libc with space.so"));
    }

    #[test]
    fn aliases_at_one_address_are_all_defined() {
        // As in libmpi: MPI_Finalize is a weak alias of PMPI_Finalize. Whichever name the
        // lookup table keeps for the address, both can be probed.
        let s = ElfSymbols::from_symbols(vec![
            (0x200, 16, "PMPI_Finalize".into()),
            (0x100, 32, "PMPI_Barrier".into()),
            (0x200, 16, "MPI_Finalize".into()),
            (0x100, 32, "MPI_Barrier".into()),
        ]);
        for n in [
            "MPI_Finalize",
            "PMPI_Finalize",
            "MPI_Barrier",
            "PMPI_Barrier",
        ] {
            assert!(s.contains(n), "{n}");
        }
        assert_eq!(s.with_prefix("MPI_"), ["MPI_Barrier", "MPI_Finalize"]);
        assert_eq!(s.syms.len(), 2);
        assert_eq!(s.offset("MPI_Finalize"), Some(0x200));
        assert_eq!(s.offset("PMPI_Barrier"), Some(0x100));
        assert!(s.lookup(0x108).is_some_and(|n| n.ends_with("MPI_Barrier")));
    }

    #[test]
    fn symbolizes_this_test_binary() {
        // The running test binary has a symbol table; its own main-ish function is found.
        let me = std::env::current_exe().unwrap();
        let s = ElfSymbols::load(&me);
        assert!(!s.syms.is_empty());
        let (off, _, name) = s.syms[s.syms.len() / 2].clone();
        assert_eq!(s.lookup(off), Some(name.as_str()));
    }

    /// A C function the compiler inlines into its caller at -O2, called from a loop.
    const INLINED_C: &str = r#"
static inline __attribute__((always_inline)) double square(double x) { return x * x; }
__attribute__((noinline)) double sum_squares(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += square(v[i]);
    return s;
}
int main(void) { double v[4] = {1, 2, 3, 4}; return (int)sum_squares(v, 4); }
"#;

    #[test]
    fn dwarf_gives_inlined_frames_and_symbols_tables_the_rest() {
        let Ok(gcc) = std::process::Command::new("gcc").arg("--version").output() else {
            eprintln!("skipping: gcc not found");
            return;
        };
        assert!(gcc.status.success());
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("inl.c");
        std::fs::write(&src, INLINED_C).unwrap();
        let build = |name: &str, flags: &[&str]| {
            let out = dir.path().join(name);
            let st = std::process::Command::new("gcc")
                .args(flags)
                .arg("-o")
                .arg(&out)
                .arg(&src)
                .status()
                .unwrap();
            assert!(st.success());
            out
        };
        // The multiplication inside the loop is `square`'s code, inlined.
        let find_mul = |bin: &Path| -> u64 {
            let data = std::fs::read(bin).unwrap();
            let file = object::File::parse(&*data).unwrap();
            let f = file
                .symbols()
                .find(|s| s.name() == Ok("sum_squares"))
                .expect("sum_squares in the symbol table");
            let text = file
                .segments()
                .find(|s| f.address() >= s.address() && f.address() < s.address() + s.size())
                .unwrap();
            let code = &data[(f.address() - text.address() + text.file_range().0) as usize..]
                [..f.size() as usize];
            // mulsd xmm, xmm: F2 0F 59
            let at = code
                .windows(3)
                .position(|w| w == [0xf2, 0x0f, 0x59])
                .expect("a mulsd in sum_squares");
            f.address() - text.address() + text.file_range().0 + at as u64
        };
        let with_dwarf = build("inl_g", &["-O2", "-g"]);
        let mut s = Symbolizer::default();
        let frames = s.file_frames(&with_dwarf, find_mul(&with_dwarf));
        assert_eq!(frames, vec!["sum_squares", "square"]);
        // Stripped of debug information: the symbol table's function only.
        let without = build("inl_s", &["-O2"]);
        let frames = s.file_frames(&without, find_mul(&without));
        assert_eq!(frames, vec!["sum_squares"]);
        // An offset past the code: a placeholder naming the file.
        let frames = s.file_frames(&without, 1 << 30);
        assert!(frames[0].starts_with("[inl_s+"), "{frames:?}");
    }

    /// The address of function `name` in the symbol table of ELF file `debug` (a debug file
    /// or a program), as a file offset in `program` (the file its code is loaded from).
    fn function_offset(debug: &Path, program: &Path, name: &str) -> Option<u64> {
        let data = std::fs::read(debug).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let va = file.symbols().find(|s| s.name() == Ok(name))?.address();
        let pdata = std::fs::read(program).ok()?;
        let pfile = object::File::parse(&*pdata).ok()?;
        pfile.segments().find_map(|s| {
            (va >= s.address() && va < s.address() + s.size())
                .then(|| va - s.address() + s.file_range().0)
        })
    }

    #[test]
    fn a_debug_file_in_the_debuginfod_cache_names_a_static_function() {
        let tools = ["gcc", "objcopy", "strip"];
        if let Some(t) = tools.iter().find(|t| {
            std::process::Command::new(t)
                .arg("--version")
                .output()
                .is_err()
        }) {
            println!("skipping: {t} not found");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("p.c");
        std::fs::write(
            &src,
            "static __attribute__((noinline)) int hidden_helper(int x) { return x * 3 + 1; }\n\
             int main(int argc, char **argv) { (void)argv; return hidden_helper(argc); }\n",
        )
        .unwrap();
        let prog = dir.path().join("prog");
        let run = |cmd: &str, args: &[&std::ffi::OsStr]| {
            let st = std::process::Command::new(cmd).args(args).status().unwrap();
            assert!(st.success(), "{cmd} {args:?}");
        };
        run(
            "gcc",
            &[
                "-O2".as_ref(),
                "-g".as_ref(),
                "-Wl,--build-id".as_ref(),
                src.as_os_str(),
                "-o".as_ref(),
                prog.as_os_str(),
            ],
        );
        let debug = dir.path().join("prog.dbg");
        run(
            "objcopy",
            &[
                "--only-keep-debug".as_ref(),
                prog.as_os_str(),
                debug.as_os_str(),
            ],
        );
        run("strip", &["--strip-all".as_ref(), prog.as_os_str()]);
        let off = function_offset(&debug, &prog, "hidden_helper").expect("in the debug file");
        // Without the cache: the stripped program cannot name it.
        let mut s = Symbolizer {
            debuginfod_dirs: Vec::new(),
            ..Symbolizer::default()
        };
        let frames = s.file_frames(&prog, off);
        assert!(frames[0].starts_with("[prog+"), "{frames:?}");
        // With the debug file where debuginfod keeps it: <cache>/<build-id>/debuginfo.
        let cache = dir.path().join("cache");
        let id = build_id(&prog).expect("a build ID");
        std::fs::create_dir_all(cache.join(&id)).unwrap();
        std::fs::copy(&debug, cache.join(&id).join("debuginfo")).unwrap();
        let mut s = Symbolizer {
            debuginfod_dirs: vec![cache],
            ..Symbolizer::default()
        };
        assert_eq!(s.file_frames(&prog, off).last().unwrap(), "hidden_helper");
    }

    #[test]
    fn libc_functions_are_named_from_its_debug_package() {
        // Debian's libc6-dbg: /usr/lib/debug/.build-id/xx/yyyy.debug, compressed sections.
        let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        let Some(id) = build_id(libc) else {
            println!("skipping: no {} with a build ID", libc.display());
            return;
        };
        let debug = PathBuf::from(format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &id[..2],
            &id[2..]
        ));
        if !debug.is_file() {
            println!("skipping: no debug file for libc (apt-get install libc6-dbg)");
            return;
        }
        // A static function, absent from libc's own (dynamic) symbol table.
        let off = function_offset(&debug, libc, "__libc_start_call_main")
            .expect("__libc_start_call_main in libc's debug file");
        let mut s = Symbolizer {
            debuginfod_dirs: Vec::new(),
            ..Symbolizer::default()
        };
        let frames = s.file_frames(libc, off + 4);
        assert_eq!(
            frames.last().unwrap(),
            "__libc_start_call_main",
            "{frames:?}"
        );
        // A function with an internal alias at its address: named as perf names it.
        let off = function_offset(&debug, libc, "__strcoll_l").expect("__strcoll_l");
        let frames = s.file_frames(libc, off);
        assert_eq!(frames[0], "__strcoll_l", "{frames:?}");
    }

    #[test]
    fn a_qualified_name_is_the_same_function() {
        assert!(qualifies("a::b::f", "f"));
        assert!(qualifies("ns::C::f(int, double)", "f"));
        assert!(!qualifies("g", "f"));
        assert!(!qualifies("__strcoll_l", "strcoll_l"));
        assert!(!qualifies("a::xf", "f"));
        assert!(!qualifies("f", "f"));
    }

    #[test]
    fn rust_and_cxx_names_are_demangled() {
        // This test binary is Rust: its own test function's symbol is mangled in the ELF.
        let me = std::env::current_exe().unwrap();
        let syms = ElfSymbols::load(&me);
        let (off, _, mangled) = syms
            .syms
            .iter()
            .find(|s| s.2.contains("rust_and_cxx_names_are_demangled"))
            .cloned()
            .expect("this test's symbol");
        assert!(
            mangled.starts_with("_ZN") || mangled.starts_with("_R"),
            "{mangled}"
        );
        let mut s = Symbolizer::default();
        let name = s.file_frames(&me, off).pop().unwrap();
        assert!(
            name.starts_with("hpcscope_trace::symbolize::tests::rust_and_cxx_names_are_demangled"),
            "{name}"
        );
        assert!(!name.starts_with("_ZN"), "{name}");
    }
}
