//! What one instruction counts, from DynamoRIO's decoding: its opcode's name, its operands'
//! sizes and registers, and the EVEX opmask operand.
//!
//! The FP arithmetic instructions are those of hpcscope's FLOP definition
//! (docs/flop-counting.md, the QEMU plugin's table): add, sub, mul, min, max, the horizontal
//! adds and subtracts, addsub, div and sqrt in their packed and scalar single and double
//! forms (SSE, VEX and EVEX), and the fused multiply-adds (2 FLOPs per lane). Compares,
//! conversions, reciprocal estimates, rounding and x87 are not FLOPs there and are not here.
//! DynamoRIO's opcode name says which operation and precision; the vector width is the
//! widest vector register operand (xmm 128, ymm 256, zmm 512); a masked (EVEX `{k1}`)
//! instruction's FLOPs are counted at run time from the mask's active lanes.

use std::ffi::CStr;

use dynamorio_sys as dr;

/// DynamoRIO API functions the `dynamorio-sys` bindings leave out (their allow list has
/// `dr*`, `instr*` and `opnd*` only); `bool` is a C char there.
pub mod ffi {
    use std::ffi::{c_char, c_int};

    use dynamorio_sys::reg_id_t;

    unsafe extern "C" {
        pub fn decode_opcode_name(opcode: c_int) -> *const c_char;
        pub fn reg_is_strictly_zmm(reg: reg_id_t) -> i8;
        pub fn reg_is_strictly_ymm(reg: reg_id_t) -> i8;
        pub fn reg_is_strictly_xmm(reg: reg_id_t) -> i8;
        pub fn reg_64_to_32(reg: reg_id_t) -> reg_id_t;
    }
}

/// Precision of an FP instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    F32 = 0,
    F64 = 1,
}

impl Precision {
    pub fn bytes(self) -> u32 {
        match self {
            Precision::F32 => 4,
            Precision::F64 => 8,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}

/// What an FP instruction does, for the divide and square-root counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Add, sub, mul, min, max, the horizontal ones, and the fused multiply-adds.
    Arith,
    /// `div*`.
    Div,
    /// `sqrt*` (not the estimate `rsqrt*`, which is no FP instruction).
    Sqrt,
}

/// The FP arithmetic part of an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fp {
    pub precision: Precision,
    /// Vector register width in bits; None for a scalar instruction.
    pub vector_bits: Option<u32>,
    /// 1, or 2 for a fused multiply-add.
    pub flops_per_lane: u32,
    pub op: Op,
}

impl Fp {
    pub fn lanes(&self) -> u32 {
        match self.vector_bits {
            None => 1,
            Some(b) => (b / (self.precision.bytes() * 8)).max(1),
        }
    }
}

/// An instruction's class, as the QEMU plugin's report names them (`classes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Fp,
    Load,
    Store,
    Branch,
    /// Integer arithmetic and logic, scalar or vector (the QEMU plugin's `int` class).
    Int,
    Other,
}

/// The QEMU plugin's x86-64 table: its `[int]` mnemonics are the `int` class here too, so
/// both engines split the instructions alike.
const X86_TABLE: &str = include_str!("../../qemu-plugin/data/x86_64.toml");

/// The `[int]` table's mnemonics (DynamoRIO's opcode names are the same names, lower case).
fn int_mnemonics() -> &'static std::collections::HashSet<String> {
    static SET: std::sync::OnceLock<std::collections::HashSet<String>> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        #[derive(serde::Deserialize)]
        struct Table {
            int: Int,
        }
        #[derive(serde::Deserialize)]
        struct Int {
            mnemonics: Vec<String>,
        }
        let t: Table = toml::from_str(X86_TABLE).expect("the QEMU plugin's x86-64 table parses");
        t.int.mnemonics.into_iter().collect()
    })
}

/// Whether DynamoRIO's opcode `name` is in the `[int]` table, as the QEMU plugin looks it
/// up: the name itself, else without its VEX/EVEX `v`.
fn is_int(name: &str) -> bool {
    let set = int_mnemonics();
    set.contains(name) || name.strip_prefix('v').is_some_and(|n| set.contains(n))
}

/// Everything counted of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    pub class: Class,
    pub fp: Option<Fp>,
    pub loads: bool,
    pub stores: bool,
    /// Bytes per execution, all memory operands of one direction together (0 when only
    /// known at run time).
    pub load_bytes: u32,
    pub store_bytes: u32,
    /// The bytes are known only at run time (`rep` string instructions, gathers, scatters,
    /// `xsave`): not counted (see the documentation of the native engine).
    pub dynamic_mem: bool,
    /// The EVEX opmask register (k1..k7) that masks the instruction.
    pub mask: Option<dr::reg_id_t>,
    /// Element bytes of a masked access (its active bytes are lanes x this), when known.
    pub mask_elem_bytes: Option<u32>,
}

pub fn opcode_name(instr: *mut dr::instr_t) -> String {
    // SAFETY: decode_opcode_name returns a static C string for any valid opcode.
    unsafe {
        let p = ffi::decode_opcode_name(dr::instr_get_opcode(instr));
        if p.is_null() {
            return String::new();
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// The FP operation of an opcode name (DynamoRIO names them as the manuals do: `vaddpd`,
/// `vfmadd231ps`...): (precision, packed, FLOPs per lane, divide or square root or other).
pub fn fp_of_name(name: &str) -> Option<(Precision, bool, u32, Op)> {
    let base = name.strip_prefix('v').unwrap_or(name);
    let suffix_of = |s: &str| -> Option<(Precision, bool)> {
        match s {
            "ps" => Some((Precision::F32, true)),
            "pd" => Some((Precision::F64, true)),
            "ss" => Some((Precision::F32, false)),
            "sd" => Some((Precision::F64, false)),
            _ => None,
        }
    };
    // Fused multiply-adds: vf[n]madd/vf[n]msub/vfmaddsub/vfmsubadd + 132/213/231 + suffix
    // (the legacy encoding has no non-v form; the name keeps its v).
    if let Some(rest) = name.strip_prefix("vf") {
        let ops = ["maddsub", "msubadd", "nmadd", "nmsub", "madd", "msub"];
        for op in ops {
            if let Some(r) = rest.strip_prefix(op)
                && let Some(r) = r
                    .strip_prefix("132")
                    .or_else(|| r.strip_prefix("213"))
                    .or_else(|| r.strip_prefix("231"))
                && let Some((p, packed)) = suffix_of(r)
            {
                // vfmaddsub/vfmsubadd exist in packed forms only.
                if (op == "maddsub" || op == "msubadd") && !packed {
                    return None;
                }
                return Some((p, packed, 2, Op::Arith));
            }
        }
        return None;
    }
    for op in [
        "addsub", "hadd", "hsub", "add", "sub", "mul", "min", "max", "div", "sqrt",
    ] {
        if let Some(r) = base.strip_prefix(op)
            && let Some((p, packed)) = suffix_of(r)
        {
            // Horizontal ops and addsub are packed only.
            if matches!(op, "addsub" | "hadd" | "hsub") && !packed {
                return None;
            }
            let op = match op {
                "div" => Op::Div,
                "sqrt" => Op::Sqrt,
                _ => Op::Arith,
            };
            return Some((p, packed, 1, op));
        }
    }
    None
}

/// Element bytes of a masked move by its name (the masked loads and stores a compiler
/// writes for a loop's tail).
fn move_elem_bytes(name: &str) -> Option<u32> {
    match name {
        "vmovups" | "vmovaps" | "vmovdqu32" | "vmovdqa32" | "vmovss" | "vpbroadcastd"
        | "vbroadcastss" => Some(4),
        "vmovupd" | "vmovapd" | "vmovdqu64" | "vmovdqa64" | "vmovsd" | "vpbroadcastq"
        | "vbroadcastsd" => Some(8),
        "vmovdqu16" => Some(2),
        "vmovdqu8" => Some(1),
        _ => None,
    }
}

fn reg_bits(reg: dr::reg_id_t) -> Option<u32> {
    // SAFETY: pure queries on a register id.
    unsafe {
        if ffi::reg_is_strictly_zmm(reg) != 0 {
            Some(512)
        } else if ffi::reg_is_strictly_ymm(reg) != 0 {
            Some(256)
        } else if ffi::reg_is_strictly_xmm(reg) != 0 {
            Some(128)
        } else {
            None
        }
    }
}

fn is_opmask(reg: dr::reg_id_t) -> bool {
    (dr::DR_REG_K1 as dr::reg_id_t..=dr::DR_REG_K7 as dr::reg_id_t).contains(&reg)
}

/// Instructions whose memory operands are not accesses (`lea`, the multi-byte `nop`,
/// prefetches).
fn no_access(opcode: i32, name: &str) -> bool {
    opcode == dr::OP_lea as i32 || opcode == dr::OP_nop_modrm as i32 || name.starts_with("prefetch")
}

/// Counts one instruction.
pub fn classify(instr: *mut dr::instr_t) -> Info {
    let name = opcode_name(instr);
    let mut info = Info {
        class: Class::Other,
        fp: None,
        loads: false,
        stores: false,
        load_bytes: 0,
        store_bytes: 0,
        dynamic_mem: false,
        mask: None,
        mask_elem_bytes: None,
    };
    // SAFETY: the instruction is a decoded application instruction of the block being
    // instrumented; these are DynamoRIO's queries on it.
    unsafe {
        let nsrc = dr::instr_num_srcs(instr).max(0) as u32;
        let ndst = dr::instr_num_dsts(instr).max(0) as u32;
        let mut widest: Option<u32> = None;
        let reg_width = |o: dr::opnd_t, widest: &mut Option<u32>| {
            if dr::opnd_is_reg(o) != 0
                && let Some(b) = reg_bits(dr::opnd_get_reg(o))
            {
                *widest = Some(widest.map_or(b, |w| w.max(b)));
            }
        };
        for i in 0..nsrc {
            let o = dr::instr_get_src(instr, i);
            reg_width(o, &mut widest);
            if dr::opnd_is_reg(o) != 0 && is_opmask(dr::opnd_get_reg(o)) && info.mask.is_none() {
                info.mask = Some(dr::opnd_get_reg(o));
            }
        }
        for i in 0..ndst {
            reg_width(dr::instr_get_dst(instr, i), &mut widest);
        }
        // Memory: each memory operand that is an access, by direction.
        if !no_access(dr::instr_get_opcode(instr), &name) {
            let gather = dr::instr_is_gather(instr) != 0 || dr::instr_is_scatter(instr) != 0;
            // DynamoRIO gives the string instructions with a rep prefix their own opcodes
            // (`rep_movs`, `repne_scas`...).
            let rep = name.starts_with("rep");
            for i in 0..nsrc {
                let o = dr::instr_get_src(instr, i);
                if dr::opnd_is_memory_reference(o) != 0 {
                    info.loads = true;
                    info.load_bytes += dr::opnd_size_in_bytes(dr::opnd_get_size(o));
                }
            }
            for i in 0..ndst {
                let o = dr::instr_get_dst(instr, i);
                if dr::opnd_is_memory_reference(o) != 0 {
                    info.stores = true;
                    info.store_bytes += dr::opnd_size_in_bytes(dr::opnd_get_size(o));
                }
            }
            let xsave = name.starts_with("xsave") || name.starts_with("xrstor");
            if gather
                || rep
                || xsave
                || (info.loads && info.load_bytes == 0)
                || (info.stores && info.store_bytes == 0)
            {
                info.dynamic_mem = true;
                info.load_bytes = 0;
                info.store_bytes = 0;
            }
        }
        if info.mask.is_some() && (info.loads || info.stores) {
            info.mask_elem_bytes = move_elem_bytes(&name);
        }
        if let Some((precision, packed, fpl, op)) = fp_of_name(&name) {
            info.fp = Some(Fp {
                precision,
                vector_bits: packed.then(|| widest.unwrap_or(128)),
                flops_per_lane: fpl,
                op,
            });
            info.class = Class::Fp;
        } else if dr::instr_is_cti(instr) != 0 {
            info.class = Class::Branch;
        } else if is_int(&name) {
            info.class = Class::Int;
        } else if info.stores {
            info.class = Class::Store;
        } else if info.loads {
            info.class = Class::Load;
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_to_fp() {
        assert_eq!(
            fp_of_name("vfmadd231pd"),
            Some((Precision::F64, true, 2, Op::Arith))
        );
        assert_eq!(
            fp_of_name("vfnmsub213ss"),
            Some((Precision::F32, false, 2, Op::Arith))
        );
        assert_eq!(
            fp_of_name("vfmaddsub132ps"),
            Some((Precision::F32, true, 2, Op::Arith))
        );
        assert_eq!(
            fp_of_name("addpd"),
            Some((Precision::F64, true, 1, Op::Arith))
        );
        assert_eq!(
            fp_of_name("vaddsd"),
            Some((Precision::F64, false, 1, Op::Arith))
        );
        assert_eq!(
            fp_of_name("vhaddps"),
            Some((Precision::F32, true, 1, Op::Arith))
        );
        assert_eq!(
            fp_of_name("vsqrtsd"),
            Some((Precision::F64, false, 1, Op::Sqrt))
        );
        assert_eq!(
            fp_of_name("addsubpd"),
            Some((Precision::F64, true, 1, Op::Arith))
        );
        // Divides and square roots, every encoding's name.
        for (name, p, packed, op) in [
            ("divpd", Precision::F64, true, Op::Div),
            ("vdivps", Precision::F32, true, Op::Div),
            ("divss", Precision::F32, false, Op::Div),
            ("vdivsd", Precision::F64, false, Op::Div),
            ("sqrtsd", Precision::F64, false, Op::Sqrt),
            ("vsqrtpd", Precision::F64, true, Op::Sqrt),
            ("vsqrtss", Precision::F32, false, Op::Sqrt),
            ("sqrtps", Precision::F32, true, Op::Sqrt),
        ] {
            assert_eq!(fp_of_name(name), Some((p, packed, 1, op)), "{name}");
        }
        for arith in ["vaddpd", "mulsd", "vfmadd231pd", "vmaxps"] {
            assert_eq!(fp_of_name(arith).map(|f| f.3), Some(Op::Arith), "{arith}");
        }
        // Reciprocal estimates: no FP instructions.
        for not in [
            "rcpps",
            "vrcpss",
            "rsqrtps",
            "vrsqrtss",
            "vrsqrt14pd",
            "vrcp14ps",
        ] {
            assert_eq!(fp_of_name(not), None, "{not}");
        }
        for not in [
            "vcmppd",
            "vcvtsd2ss",
            "vrcpps",
            "vroundpd",
            "fadd",
            "paddd",
            "vpaddq",
            "add",
            "vmovapd",
            "vsubpd_x",
        ] {
            assert_eq!(fp_of_name(not), None, "{not}");
        }
    }

    #[test]
    fn integer_names_are_the_plugin_tables() {
        for int in [
            "add", "imul", "lea", "popcnt", "paddd", "vpaddd", "vpandq", "vpcmpgtq",
        ] {
            assert!(is_int(int), "{int}");
        }
        for not in [
            "mov", "vmovapd", "vaddpd", "jmp", "call", "vpshufb", "cmpxchg",
        ] {
            assert!(!is_int(not), "{not}");
        }
    }
}
