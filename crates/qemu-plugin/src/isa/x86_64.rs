//! x86-64 classifier: iced-x86 decodes the bytes, `data/x86_64.toml` classifies the mnemonic.
//!
//! iced-x86 rather than QEMU's disassembly string: QEMU 7.2's x86 disassembler predates
//! AVX-512 (EVEX), and iced-x86 also reports each memory operand's access (read, write,
//! read-write) and size, which give the load/store counters without parsing text.
//!
//! Bytes come from the memory operand, except where the encoding cannot say: string
//! instructions with `rep` (one element per iteration, as many iterations as `rcx`), masked
//! loads and stores, gathers, `xsave` and friends, and encodings iced-x86 does not decode;
//! those are counted from QEMU's access reports ([`MemKind::Dynamic`]). Forms QEMU 7.2
//! reads beyond their operand are listed in the table (`qemu_overread`): their stream is
//! cut to the operand ([`MemKind::Clipped`]).

use std::collections::{HashMap, HashSet};

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, MemorySize,
    Mnemonic, OpAccess, OpKind,
};
use serde::Deserialize;

use super::{Class, Classifier, FpInfo, FpOp, InsnInfo, MemKind, Precision, TableError};

/// The table shipped with the plugin.
pub const TABLE: &str = include_str!("../../data/x86_64.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    fp: Vec<FpGroup>,
    int: IntGroup,
    #[serde(default)]
    qemu_overread: Vec<OverreadGroup>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OverreadGroup {
    /// Which destination makes the form over-read: `any`, `xmm`, `ymm`, `mm` or `r16`.
    #[serde(default = "any")]
    dest: String,
    mnemonics: Vec<String>,
}

fn any() -> String {
    "any".into()
}

/// Destination operand condition of an over-reading form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Dest {
    Any,
    Xmm,
    Ymm,
    Mm,
    R16,
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
    overread: HashSet<(String, Dest)>,
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
        let mut overread = HashSet::new();
        for g in file.qemu_overread {
            let dest = match g.dest.as_str() {
                "any" => Dest::Any,
                "xmm" => Dest::Xmm,
                "ymm" => Dest::Ymm,
                "mm" => Dest::Mm,
                "r16" => Dest::R16,
                d => {
                    return Err(TableError(format!(
                        "x86_64 table, qemu_overread {:?}: dest {d:?} is not any, xmm, ymm, mm or r16",
                        g.mnemonics
                    )));
                }
            };
            for m in g.mnemonics {
                overread.insert((m, dest));
            }
        }
        Ok(X86_64 {
            table: map,
            overread,
        })
    }

    /// Whether QEMU 7.2 reports more bytes than the operand for this form.
    fn overreads(&self, instr: &Instruction) -> bool {
        let name = format!("{:?}", instr.mnemonic()).to_ascii_lowercase();
        let dest = match (instr.op_count() > 0 && instr.op0_kind() == OpKind::Register)
            .then(|| instr.op0_register())
        {
            Some(r) if r.is_xmm() => Dest::Xmm,
            Some(r) if r.is_ymm() => Dest::Ymm,
            Some(r) if r.is_mm() => Dest::Mm,
            Some(r) if r.is_gpr16() => Dest::R16,
            _ => Dest::Any,
        };
        self.overread.contains(&(name.clone(), Dest::Any)) || self.overread.contains(&(name, dest))
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

/// Instructions whose accesses QEMU performs in a helper function.
fn helper_mnemonic(m: Mnemonic) -> bool {
    use Mnemonic as M;
    matches!(
        m,
        M::Fxsave
            | M::Fxsave64
            | M::Fxrstor
            | M::Fxrstor64
            | M::Fnsave
            | M::Fsave
            | M::Frstor
            | M::Fnstenv
            | M::Fstenv
            | M::Fldenv
            | M::Fbld
            | M::Fbstp
            | M::Cmpxchg16b
            | M::Xsave
            | M::Xsave64
            | M::Xsavec
            | M::Xsavec64
            | M::Xsaveopt
            | M::Xsaveopt64
            | M::Xsaves
            | M::Xsaves64
            | M::Xrstor
            | M::Xrstor64
            | M::Xrstors
            | M::Xrstors64
    )
}

impl X86_64 {
    fn decode(bytes: &[u8]) -> Instruction {
        Decoder::with_ip(64, bytes, 0, DecoderOptions::NONE).decode()
    }

    fn classify_instr(
        &self,
        instr: &Instruction,
        factory: &mut InstructionInfoFactory,
    ) -> InsnInfo {
        if instr.is_invalid() {
            // QEMU may still run it (e.g. an alias encoding): whatever it accesses is counted
            // from its reports.
            return InsnInfo {
                mem_kind: MemKind::Dynamic,
                helper: true,
                ..InsnInfo::plain(Class::Other)
            };
        }
        let mut info = InsnInfo::plain(Class::Other);

        // Memory: each memory operand with its access kind and size.
        let rep =
            instr.is_string_instruction() && (instr.has_rep_prefix() || instr.has_repne_prefix());
        let used = factory.info(instr).used_memory().to_vec();
        let masked = matches!(
            instr.mnemonic(),
            Mnemonic::Vmaskmovps
                | Mnemonic::Vmaskmovpd
                | Mnemonic::Vpmaskmovd
                | Mnemonic::Vpmaskmovq
                | Mnemonic::Maskmovq
                | Mnemonic::Maskmovdqu
                | Mnemonic::Vmaskmovdqu
        );
        let mut dynamic = rep || instr.is_vsib();
        // Atomic read-modify-writes run in helpers once the guest has several threads.
        let atomic =
            !used.is_empty() && (instr.has_lock_prefix() || instr.mnemonic() == Mnemonic::Xchg);
        let mut helper = helper_mnemonic(instr.mnemonic()) || masked || atomic || instr.is_vsib();
        for m in &used {
            let size = m.memory_size().size() as u32;
            let (r, w) = match m.access() {
                // QEMU 7.2 reads a masked load's whole vector (counted whole, as the stream
                // has it), and `cmov` always reads.
                OpAccess::Read | OpAccess::CondRead => (true, false),
                OpAccess::Write | OpAccess::CondWrite => (false, true),
                // cmpxchg writes back even when the comparison fails.
                OpAccess::ReadWrite | OpAccess::ReadCondWrite => (true, true),
                _ => (false, false),
            };
            // Masked stores write only the selected elements: QEMU reports those.
            if masked && w {
                dynamic = true;
            }
            if size == 0 && (r || w) {
                // xsave and friends: the size depends on the state components saved.
                dynamic = true;
                helper = true;
            }
            if m.memory_size() == MemorySize::Float80 || m.memory_size() == MemorySize::Bcd {
                helper = true;
            }
            if r {
                info.loads = true;
                info.load_bytes += size;
            }
            if w {
                info.stores = true;
                info.store_bytes += size;
            }
        }
        if dynamic {
            info.mem_kind = MemKind::Dynamic;
            info.load_bytes = 0;
            info.store_bytes = 0;
            // QEMU runs gathers, masked stores and xsave in helpers.
            helper |= !rep;
        } else if (info.loads || info.stores) && self.overreads(instr) {
            info.mem_kind = MemKind::Clipped;
        }
        info.helper = helper;

        info.returns = instr.flow_control() == FlowControl::Return;
        let entry = self.lookup(instr);
        info.class = match entry {
            Some(Entry::Fp {
                precision,
                packed,
                op,
                flops_per_lane,
            }) => {
                let vector_bits = if packed {
                    Some(vector_width_bits(instr).unwrap_or(128))
                } else {
                    None
                };
                info.fp = Some(FpInfo::new(precision, vector_bits, flops_per_lane, op));
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

impl Classifier for X86_64 {
    fn classify(&self, bytes: &[u8]) -> InsnInfo {
        let mut factory = InstructionInfoFactory::new();
        self.classify_instr(&Self::decode(bytes), &mut factory)
    }

    fn classify_block(&self, insns: &[&[u8]]) -> Vec<InsnInfo> {
        let mut factory = InstructionInfoFactory::new();
        let decoded: Vec<Instruction> = insns.iter().map(|b| Self::decode(b)).collect();
        let mut infos: Vec<InsnInfo> = decoded
            .iter()
            .map(|i| self.classify_instr(i, &mut factory))
            .collect();
        super::x86_lanes::adjust(&decoded, &mut infos);
        infos
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
    fn divides_and_square_roots_apart_estimates_not_fp() {
        let op = |b: &[u8]| {
            c().classify(b)
                .fp
                .map(|f| (f.op, f.precision, f.vector_bits))
        };
        use FpOp::{Div, Sqrt};
        use Precision::{F32, F64};
        // divpd xmm0, xmm1; sqrtsd xmm0, xmm1
        assert_eq!(op(&[0x66, 0x0f, 0x5e, 0xc1]), Some((Div, F64, Some(128))));
        assert_eq!(op(&[0xf2, 0x0f, 0x51, 0xc1]), Some((Sqrt, F64, None)));
        // vdivps ymm0, ymm1, ymm2; vdivsd xmm0, xmm1, xmm2
        assert_eq!(op(&[0xc5, 0xf4, 0x5e, 0xc2]), Some((Div, F32, Some(256))));
        assert_eq!(op(&[0xc5, 0xf3, 0x5e, 0xc2]), Some((Div, F64, None)));
        // vsqrtpd zmm0, zmm1, and masked vsqrtpd zmm0{k1}, zmm1
        assert_eq!(
            op(&[0x62, 0xf1, 0xfd, 0x48, 0x51, 0xc1]),
            Some((Sqrt, F64, Some(512)))
        );
        assert_eq!(
            op(&[0x62, 0xf1, 0xfd, 0x49, 0x51, 0xc1]),
            Some((Sqrt, F64, Some(512)))
        );
        // sqrtss xmm0, [rdi]
        assert_eq!(op(&[0xf3, 0x0f, 0x51, 0x07]), Some((Sqrt, F32, None)));
        // rcpps xmm0, xmm1; rsqrtps xmm0, xmm1: estimates, not FP instructions.
        assert_eq!(op(&[0x0f, 0x53, 0xc1]), None);
        assert_eq!(op(&[0x0f, 0x52, 0xc1]), None);
        // mulpd xmm0, xmm1 and vfmadd231pd ymm0, ymm1, [rax]: neither.
        assert_eq!(
            c().classify(&[0x66, 0x0f, 0x59, 0xc1]).fp.map(|f| f.op),
            Some(FpOp::Arith)
        );
        assert_eq!(
            c().classify(&[0xc4, 0xe2, 0xf5, 0xb8, 0x00])
                .fp
                .map(|f| f.op),
            Some(FpOp::Fma)
        );
    }

    #[test]
    fn avx512_fma_zmm() {
        // vfmadd231pd zmm0, zmm1, zmm2
        let i = c().classify(&[0x62, 0xf2, 0xf5, 0x48, 0xb8, 0xc2]);
        assert_eq!(i.fp.expect("fp").flops(), 16);
    }
}
