//! Reader for valgrind lackey memory traces (`valgrind --tool=lackey --trace-mem=yes`).
//!
//! Lines look like `I  04015e1e,3` (instruction fetch), ` L 1ffefffd28,8` (load),
//! ` S 1ffefffd28,8` (store) and ` M 1ffefffd28,8` (modify: a load then a store of the
//! same bytes). Addresses are hexadecimal, sizes decimal. Lines starting with `==` are
//! valgrind's messages and are skipped, as are blank lines.

use serde::{Deserialize, Serialize};

use crate::Access;
use crate::error::TraceError;

/// Kind of a lackey record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LackeyKind {
    /// Instruction fetch (`I`).
    Instr,
    /// Data load (`L`).
    Load,
    /// Data store (`S`).
    Store,
    /// Data modify (`M`): load then store.
    Modify,
}

/// One record of a lackey trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LackeyRecord {
    /// What the record is.
    pub kind: LackeyKind,
    /// Address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u32,
}

impl LackeyRecord {
    /// The data accesses of this record: none for an instruction fetch, a load then a
    /// store for a modify.
    pub fn data_accesses(&self) -> impl Iterator<Item = Access> + use<> {
        let (r, w) = match self.kind {
            LackeyKind::Instr => (None, None),
            LackeyKind::Load => (Some(Access::read(self.addr, self.size)), None),
            LackeyKind::Store => (None, Some(Access::write(self.addr, self.size))),
            LackeyKind::Modify => (
                Some(Access::read(self.addr, self.size)),
                Some(Access::write(self.addr, self.size)),
            ),
        };
        r.into_iter().chain(w)
    }
}

/// Parses one trace line (`line_no` is 1-based, for the error); `Ok(None)` for lines that
/// carry no record.
pub fn parse_line(line: &str, line_no: u64) -> Result<Option<LackeyRecord>, TraceError> {
    let err = |reason| TraceError {
        line_no,
        reason,
        text: line.to_string(),
    };
    let t = line.trim();
    if t.is_empty() || t.starts_with("==") || t.starts_with("--") {
        return Ok(None);
    }
    let mut chars = t.chars();
    let kind = match chars.next() {
        Some('I') => LackeyKind::Instr,
        Some('L') => LackeyKind::Load,
        Some('S') => LackeyKind::Store,
        Some('M') => LackeyKind::Modify,
        _ => return Err(err("expected a record starting with I, L, S or M")),
    };
    let rest = chars.as_str().trim();
    let (addr, size) = rest
        .split_once(',')
        .ok_or(err("expected 'ADDRESS,SIZE' after the record kind"))?;
    let addr =
        u64::from_str_radix(addr.trim(), 16).map_err(|_| err("address is not hexadecimal"))?;
    let size = size
        .trim()
        .parse::<u32>()
        .map_err(|_| err("size is not a decimal number"))?;
    Ok(Some(LackeyRecord { kind, addr, size }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_record_kinds() {
        let r = parse_line("I  04015e1e,3", 1).unwrap().unwrap();
        assert_eq!(
            (r.kind, r.addr, r.size),
            (LackeyKind::Instr, 0x0401_5e1e, 3)
        );
        let r = parse_line(" M 1ffefffd28,8", 2).unwrap().unwrap();
        assert_eq!(r.kind, LackeyKind::Modify);
        let acc: Vec<Access> = r.data_accesses().collect();
        assert_eq!(
            acc,
            vec![
                Access::read(0x1f_feff_fd28, 8),
                Access::write(0x1f_feff_fd28, 8)
            ]
        );
        assert_eq!(
            parse_line("==42== Lackey, an example Valgrind tool", 3),
            Ok(None)
        );
        assert_eq!(parse_line("", 4), Ok(None));
        let e = parse_line(" L zz,8", 5).unwrap_err();
        assert!(e.to_string().contains("line 5"), "{e}");
        assert!(parse_line(" X 10,8", 6).is_err());
        assert!(parse_line(" L 10", 7).is_err());
    }
}
