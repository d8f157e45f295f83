//! The function symbols of a program and where its code lies in the file: the one reading
//! of an ELF file's symbol tables that regions (`mix --function`), uprobes (`counters run
//! --function`, `mix --scope`) and loop extraction (`model kernel`) share.

use object::{Object, ObjectSegment, ObjectSymbol};

/// A function symbol defined in the file (object's `SymbolKind::Text`, not undefined).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSymbol {
    /// Name, as the symbol table spells it (mangled for C++).
    pub name: String,
    /// Link-time address.
    pub addr: u64,
    /// Size in bytes (0 when the table does not give it).
    pub size: u64,
    /// From the dynamic symbol table (`.dynsym`); else from `.symtab`.
    pub dynamic: bool,
}

/// The function symbols and loadable segments of an ELF (or other object) file.
#[derive(Debug, Clone, Default)]
pub struct Functions {
    /// `.symtab`'s functions, then `.dynsym`'s, in table order.
    pub symbols: Vec<FunctionSymbol>,
    /// Loadable segments: (address, size in memory, offset in the file).
    pub segments: Vec<(u64, u64, u64)>,
}

impl Functions {
    /// The functions and segments of `file`.
    pub fn of(file: &object::File<'_>) -> Functions {
        let table = |dynamic: bool| {
            let syms: Box<dyn Iterator<Item = object::Symbol<'_, '_>>> = if dynamic {
                Box::new(file.dynamic_symbols())
            } else {
                Box::new(file.symbols())
            };
            syms.filter(|s| s.kind() == object::SymbolKind::Text && !s.is_undefined())
                .filter_map(move |s| {
                    Some(FunctionSymbol {
                        name: s.name().ok()?.to_string(),
                        addr: s.address(),
                        size: s.size(),
                        dynamic,
                    })
                })
                .collect::<Vec<_>>()
        };
        let mut symbols = table(false);
        symbols.extend(table(true));
        let segments = file
            .segments()
            .map(|s| (s.address(), s.size(), s.file_range().0))
            .collect();
        Functions { symbols, segments }
    }

    /// The first function called `name` (`.symtab` before `.dynsym`).
    pub fn named(&self, name: &str) -> Option<&FunctionSymbol> {
        self.symbols.iter().find(|s| s.name == name)
    }

    /// The offset in the file of link-time address `addr` (what a uprobe takes), through
    /// the loadable segment that holds it.
    pub fn file_offset(&self, addr: u64) -> Option<u64> {
        file_offset(&self.segments, addr)
    }
}

/// The offset in the file of link-time address `addr`, through the one of `segments`
/// ((address, size in memory, offset in the file)) that holds it.
pub fn file_offset(segments: &[(u64, u64, u64)], addr: u64) -> Option<u64> {
    segments
        .iter()
        .find(|(a, size, _)| addr >= *a && addr - a < *size)
        .map(|(a, _, off)| addr - a + off)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_has_its_functions_and_their_offsets() {
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let f = Functions::of(&file);
        let main = f.named("main").expect("main in the symbol table");
        assert!(!main.dynamic);
        let off = f
            .file_offset(main.addr)
            .expect("main in a loadable segment");
        // The bytes at that offset are the bytes at main's address in its section.
        let text = file
            .sections()
            .find(|s| {
                use object::ObjectSection;
                s.address() <= main.addr && main.addr < s.address() + s.size()
            })
            .unwrap();
        use object::ObjectSection;
        let at = (main.addr - text.address()) as usize;
        assert_eq!(
            &data[off as usize..off as usize + 8],
            &text.data().unwrap()[at..at + 8]
        );
        assert_eq!(f.file_offset(u64::MAX), None);
        assert!(f.named("no such function here").is_none());
    }
}
