//! x86-64 classifier: iced-x86 decodes the bytes, `data/x86_64.toml` classifies the mnemonic.
//!
//! iced-x86 rather than QEMU's disassembly string: QEMU 7.2's x86 disassembler predates
//! AVX-512 (EVEX), and iced-x86 also reports each memory operand's access (read, write,
//! read-write) and size, which give the load/store counters without parsing text.

use std::collections::HashMap;

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, OpAccess, OpKind,
};
use serde::Deserialize;

use super::{Class, Classifier, FpInfo, FpOp, InsnInfo, Precision, TableError};

/// The table shipped with the plugin.
pub const TABLE: &str = include_str!("../../data/x86_64.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    fp: Vec<FpGroup>,
    int: IntGroup,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FpGroup {
    precision: String,
    shape: String,
    op: String,
    flops_per_lane: u32,
    mnemonics: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IntGroup {
    mnemonics: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
enum Entry {
    Fp {
        precision: Precision,
        packed: bool,
        op: FpOp,
        flops_per_lane: u32,
    },
    Int,
}

/// Classifier for x86-64 guests.
pub struct X86_64 {
    table: HashMap<String, Entry>,
}

impl X86_64 {
    /// Build from a TOML table (normally [`TABLE`]).
    pub fn new(table: &str) -> Result<Self, TableError> {
        let file: TableFile =
            toml::from_str(table).map_err(|e| TableError(format!("x86_64 table: {e}")))?;
        let mut map = HashMap::new();
        for g in file.fp {
            let bad = |what: &str| {
                TableError(format!("x86_64 table, fp group {:?}: {what}", g.mnemonics))
            };
            let precision =
                Precision::parse(&g.precision).ok_or_else(|| bad("unknown precision"))?;
            let packed = match g.shape.as_str() {
                "packed" => true,
                "scalar" => false,
                _ => return Err(bad("shape must be packed or scalar")),
            };
            let op = FpOp::parse(&g.op).ok_or_else(|| bad("unknown op"))?;
            for m in &g.mnemonics {
                map.insert(
                    m.clone(),
                    Entry::Fp {
                        precision,
                        packed,
                        op,
                        flops_per_lane: g.flops_per_lane,
                    },
                );
            }
        }
        for m in file.int.mnemonics {
            map.entry(m).or_insert(Entry::Int);
        }
        Ok(X86_64 { table: map })
    }

    fn lookup(&self, instr: &Instruction) -> Option<Entry> {
        let name = format!("{:?}", instr.mnemonic()).to_ascii_lowercase();
        if let Some(e) = self.table.get(&name) {
            return Some(*e);
        }
        name.strip_prefix('v')
            .and_then(|n| self.table.get(n))
            .copied()
    }
}

/// Widest vector register operand in bits (xmm 128, ymm 256, zmm 512), if any.
fn vector_width_bits(instr: &Instruction) -> Option<u32> {
    (0..instr.op_count())
        .filter(|&i| instr.op_kind(i) == OpKind::Register)
        .map(|i| instr.op_register(i))
        .filter(|r| r.is_xmm() || r.is_ymm() || r.is_zmm())
        .map(|r| r.size() as u32 * 8)
        .max()
}

impl Classifier for X86_64 {
    fn classify(&self, bytes: &[u8]) -> InsnInfo {
        let mut decoder = Decoder::with_ip(64, bytes, 0, DecoderOptions::NONE);
        let instr = decoder.decode();
        if instr.is_invalid() {
            return InsnInfo::plain(Class::Other);
        }
        let mut info = InsnInfo::plain(Class::Other);

        // Memory: each memory operand with its access kind and size. A VSIB (gather/scatter)
        // operand is one element per lane of the data register.
        let mut factory = InstructionInfoFactory::new();
        let used = factory.info(&instr).used_memory().to_vec();
        for m in used {
            let mut size = m.memory_size().size() as u32;
            if instr.is_vsib() {
                let elem = m.memory_size().element_size().max(1) as u32;
                let lanes = vector_width_bits(&instr).unwrap_or(128) / (elem * 8);
                size = elem * lanes.max(1);
            }
            let (r, w) = match m.access() {
                OpAccess::Read | OpAccess::CondRead => (true, false),
                OpAccess::Write | OpAccess::CondWrite => (false, true),
                OpAccess::ReadWrite | OpAccess::ReadCondWrite => (true, true),
                _ => (false, false),
            };
            if r {
                info.loads = true;
                info.load_bytes += size;
            }
            if w {
                info.stores = true;
                info.store_bytes += size;
            }
        }

        info.returns = instr.flow_control() == FlowControl::Return;
        let entry = self.lookup(&instr);
        info.class = match entry {
            Some(Entry::Fp {
                precision,
                packed,
                op,
                flops_per_lane,
            }) => {
                let vector_bits = if packed {
                    Some(vector_width_bits(&instr).unwrap_or(128))
                } else {
                    None
                };
                info.fp = Some(FpInfo {
                    precision,
                    vector_bits,
                    flops_per_lane,
                    op,
                });
                Class::Fp
            }
            _ if instr.flow_control() != FlowControl::Next => Class::Branch,
            Some(Entry::Int) => Class::Int,
            None if info.stores => Class::Store,
            None if info.loads => Class::Load,
            None => Class::Other,
        };
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c() -> X86_64 {
        X86_64::new(TABLE).expect("embedded table parses")
    }

    #[test]
    fn avx2_fma_with_memory_operand() {
        // vfmadd231pd ymm0, ymm1, [rax]
        let i = c().classify(&[0xc4, 0xe2, 0xf5, 0xb8, 0x00]);
        let fp = i.fp.expect("fp");
        assert_eq!((fp.vector_bits, fp.flops()), (Some(256), 8));
        assert_eq!((i.loads, i.load_bytes), (true, 32));
    }

    #[test]
    fn sse2_and_moves() {
        // mulpd xmm0, xmm1
        let i = c().classify(&[0x66, 0x0f, 0x59, 0xc1]);
        assert_eq!(i.fp.expect("fp").flops(), 2);
        // movupd [rdi], xmm0
        let i = c().classify(&[0x66, 0x0f, 0x11, 0x07]);
        assert_eq!((i.class, i.store_bytes), (Class::Store, 16));
        // addsd xmm0, [rdi]
        let i = c().classify(&[0xf2, 0x0f, 0x58, 0x07]);
        assert_eq!((i.fp.expect("fp").flops(), i.load_bytes), (1, 8));
        // add rax, rbx
        assert_eq!(c().classify(&[0x48, 0x01, 0xd8]).class, Class::Int);
        // jne +0
        assert_eq!(c().classify(&[0x75, 0x00]).class, Class::Branch);
        // ret
        assert!(c().classify(&[0xc3]).returns);
    }

    #[test]
    fn avx512_fma_zmm() {
        // vfmadd231pd zmm0, zmm1, zmm2
        let i = c().classify(&[0x62, 0xf2, 0xf5, 0x48, 0xb8, 0xc2]);
        assert_eq!(i.fp.expect("fp").flops(), 16);
    }
}
