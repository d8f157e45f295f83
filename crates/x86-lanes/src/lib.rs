//! The FLOP rule for horizontal and reduction operations on x86-64 (`docs/flop-counting.md`).
//!
//! A vectorized reduction keeps `L` partial sums in the lanes of a register and combines
//! them after the loop: `vextractf128` + `vaddpd`, `unpckhpd` + `addpd`, `haddpd`... Those
//! combining operations do `L - 1` adds the source does not have (the source adds each
//! element once to one sum), and the last of them also computes lanes nobody reads. Counted
//! lane by lane they make the FLOPs of a build depend on its vector width: a short reduction
//! per row of a sparse matrix adds 1 FLOP per row in an SSE2 build and 3 to 4 in an AVX2
//! build.
//!
//! Both engines of `hpcscope mix` apply it to the blocks they count: the QEMU plugin to its
//! translation blocks, the DynamoRIO client to its basic blocks (decoding each block's bytes
//! here with iced-x86, as the plugin does), so that both count alike.
//!
//! This crate follows the 32-bit chunks of the 32 xmm/ymm/zmm registers through one
//! block: where each chunk's value came from (an *origin*: a register's value at block entry,
//! a load, or an instruction's result) and which chunk of that origin it is. With that:
//!
//! - a lane of an FP operation is a **combining** lane when its two inputs are two different
//!   lanes of the same origin (one was moved by a shuffle, an extract, or the operation is
//!   horizontal);
//! - an operation with combining lanes whose origin is an **accumulator** (a value that
//!   entered the block, i.e. was carried around a loop, or that adds or fused-multiply-adds
//!   into one, or a previous combination of one) is a reduction tail: it counts **0 FLOPs**;
//! - otherwise (a horizontal sum of values computed in the block, e.g. the components of a
//!   vector) its combining lanes count, and so do its other lanes except those that combine
//!   a value with itself through a shuffled copy (the unused upper lane of `unpckhpd x, x` +
//!   `addpd`);
//! - an add of two accumulators (partial sums kept in several registers, as clang does) whose
//!   result a reduction tail combines is part of that tail: 0 FLOPs as well;
//! - in every FP operation, a lane that computes the same operation on the same inputs as a
//!   lower lane of the same instruction (e.g. both lanes of `haddpd x, x`) counts once;
//! - a lane whose result is never used — overwritten in the block before any instruction
//!   reads it, e.g. the low lane of a `mulpd` whose result only `unpckhpd x, x` reads — does
//!   not count (partial vectors). A result still in a register at the end of the block is
//!   taken as used.
//!
//! Everything else counts every lane, as before. The analysis is local to the block: a value
//! coming from another block is taken as an accumulator; a register written by an
//! instruction not modelled here gets a new origin. AVX-512: the 256-bit and 128-bit
//! extracts, inserts and block shuffles of zmm registers (`vextractf64x4`, `vinsertf32x4`,
//! `vshuff64x2`...) are modelled, so a 512-bit reduction's tail counts 0 as a 256-bit one
//! does; an instruction under an opmask is not (what it writes gets a new origin: its lanes
//! count, by the mask where the engine counts active lanes).

pub mod chain;

pub use iced_x86;
use iced_x86::{
    Decoder, DecoderOptions, EncodingKind, Instruction, InstructionInfoFactory, Mnemonic, OpAccess,
    OpKind, Register,
};

/// Vector registers (xmm/ymm/zmm 0 to 31).
const REGS: usize = 32;
/// 32-bit chunks of a register (zmm).
const CHUNKS: usize = 16;

/// What the rule needs of an FP arithmetic instruction (from the engine's own
/// classification: the QEMU plugin's table, DynamoRIO's decoding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fp {
    /// Element bits: 32 or 64 (other precisions are not modelled: every lane counts).
    pub element_bits: u32,
    /// Vector register width in bits (128, 256, 512); `None` for a scalar instruction.
    pub vector_bits: Option<u32>,
    /// A fused multiply-add (three inputs per lane).
    pub fma: bool,
}

impl Fp {
    /// Lanes of the instruction (1 for a scalar one).
    pub fn lanes(&self) -> u32 {
        match self.vector_bits {
            None => 1,
            Some(b) => (b / self.element_bits.max(1)).max(1),
        }
    }
}

/// Decodes one x86-64 instruction from its bytes (an invalid instruction for bytes iced
/// does not know: the rule then treats it as not modelled).
pub fn decode(bytes: &[u8], ip: u64) -> Instruction {
    let mut d = Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE);
    d.decode()
}

/// Where a 32-bit chunk of a register came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Prov {
    origin: u32,
    chunk: u8,
}

/// A register's value: its sixteen 32-bit chunks (zmm).
type Val = [Prov; CHUNKS];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Value of a register at block entry.
    External,
    /// A running sum: an add or FMA into an accumulator, or a combination of one.
    Acc,
    /// Computed or loaded in this block.
    Local,
}

/// One FP lane's inputs: (origin, lane) per operand, `None` for an input that mixes origins.
type LaneIn = Option<(u32, u8)>;

struct State {
    /// The registers' values (on the heap: a DynamoRIO client runs this on a small stack).
    regs: Vec<Val>,
    kinds: Vec<Kind>,
    /// Results of adds of two accumulators: origin -> (instruction index, input origins).
    partial_sums: std::collections::HashMap<u32, (usize, Vec<u32>)>,
    /// Index of the instruction being modelled.
    at: usize,
    /// Chunks read by an instruction, per origin (bit per chunk).
    used: Vec<u16>,
    /// FP results of the block, for the final count.
    results: Vec<FpResult>,
}

/// An FP instruction's result and the lanes that count so far.
struct FpResult {
    insn: usize,
    origin: u32,
    ebits: u32,
    lanes: u32,
    /// Lanes counted by the combining and duplicate rules (bit per lane).
    mask: u32,
}

impl State {
    fn new() -> Self {
        let mut regs = vec![
            [Prov {
                origin: 0,
                chunk: 0,
            }; CHUNKS];
            REGS
        ];
        for (r, v) in regs.iter_mut().enumerate() {
            for (k, p) in v.iter_mut().enumerate() {
                *p = Prov {
                    origin: r as u32,
                    chunk: k as u8,
                };
            }
        }
        State {
            regs,
            kinds: vec![Kind::External; REGS],
            partial_sums: std::collections::HashMap::new(),
            at: 0,
            used: vec![0; REGS],
            results: Vec::new(),
        }
    }

    /// A new value: `CHUNKS` chunks of a new origin of `kind`.
    fn fresh(&mut self, kind: Kind) -> Val {
        let origin = self.kinds.len() as u32;
        self.kinds.push(kind);
        self.used.push(0);
        std::array::from_fn(|k| Prov {
            origin,
            chunk: k as u8,
        })
    }

    /// Marks chunks `range` of `v` as read.
    fn mark(&mut self, v: &Val, range: std::ops::Range<usize>) {
        for k in range {
            let p = v[k.min(CHUNKS - 1)];
            if let Some(u) = self.used.get_mut(p.origin as usize) {
                *u |= 1 << p.chunk;
            }
        }
    }

    /// Marks lane `i` (element `bits` wide) of `v` as read.
    fn mark_lane(&mut self, v: &Val, i: usize, bits: u32) {
        let per = (bits / 32) as usize;
        self.mark(v, i * per..(i + 1) * per);
    }

    fn kind(&self, origin: u32) -> Kind {
        self.kinds
            .get(origin as usize)
            .copied()
            .unwrap_or(Kind::Local)
    }

    /// Write `v` to register `r`: the low `bits` (128, 256 or 512) of `v`; VEX and EVEX
    /// zero the rest of the register, legacy SSE keeps it.
    fn write(&mut self, r: usize, v: Val, bits: u32, vex: bool) {
        let n = (bits as usize / 32).clamp(4, CHUNKS);
        self.regs[r][..n].copy_from_slice(&v[..n]);
        if vex && n < CHUNKS {
            let z = self.fresh(Kind::Local);
            self.regs[r][n..].copy_from_slice(&z[n..]);
        }
    }
}

/// An operand of interest: a vector register (index, width in bits) or memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opnd {
    Reg(usize, u32),
    Mem,
    Other,
}

fn vreg(r: Register) -> Option<(usize, u32)> {
    let bits = if r.is_xmm() {
        128
    } else if r.is_ymm() {
        256
    } else if r.is_zmm() {
        512
    } else {
        return None;
    };
    let n = r.number();
    (n < REGS).then_some((n, bits))
}

fn opnd(ins: &Instruction, i: u32) -> Opnd {
    if i >= ins.op_count() {
        return Opnd::Other;
    }
    match ins.op_kind(i) {
        OpKind::Register => vreg(ins.op_register(i)).map_or(Opnd::Other, |(n, b)| Opnd::Reg(n, b)),
        OpKind::Memory => Opnd::Mem,
        _ => Opnd::Other,
    }
}

fn imm(ins: &Instruction) -> u32 {
    (0..ins.op_count())
        .find(|&i| {
            matches!(
                ins.op_kind(i),
                OpKind::Immediate8
                    | OpKind::Immediate8_2nd
                    | OpKind::Immediate16
                    | OpKind::Immediate32
            )
        })
        .map_or(0, |i| ins.immediate(i) as u32)
}

/// 64-bit lane `i` of a value, as (chunk, chunk+1).
fn q(v: &Val, i: usize) -> [Prov; 2] {
    [v[2 * i], v[2 * i + 1]]
}

fn set_q(v: &mut Val, i: usize, x: [Prov; 2]) {
    v[2 * i] = x[0];
    v[2 * i + 1] = x[1];
}

/// The inputs of lane `i` of element size `bits` in `v`.
fn lane(v: &Val, i: usize, bits: u32) -> LaneIn {
    if bits == 32 {
        let p = v[i];
        Some((p.origin, p.chunk))
    } else {
        let [a, b] = q(v, i);
        (a.origin == b.origin && a.chunk % 2 == 0 && b.chunk == a.chunk + 1)
            .then_some((a.origin, a.chunk / 2))
    }
}

/// The analysis of one block (`insns`, with `fps[i]` the FP arithmetic of instruction `i`
/// as the engine classified it, `None` for any other): for each instruction, the lanes
/// that count when the rule leaves some out (`None`: every lane, or not an FP
/// instruction). Give `None` for an instruction whose FLOPs are counted otherwise (an
/// AVX-512 instruction under a mask, counted by its active lanes): the rule then only
/// follows what it writes.
pub fn counted_lanes(insns: &[Instruction], fps: &[Option<Fp>]) -> Vec<Option<u32>> {
    let mut out = vec![None; insns.len()];
    let mut st = State::new();
    let mut factory = InstructionInfoFactory::new();
    for (i, ins) in insns.iter().enumerate() {
        if ins.is_invalid() {
            continue;
        }
        st.at = i;
        let mut tails = Vec::new();
        let fp = fps.get(i).copied().flatten();
        if !step(&mut st, ins, fp, &mut tails) {
            mark_reads(&mut st, ins, &mut factory);
            clobber(&mut st, ins, &mut factory);
        }
        // The partial sums a reduction tail combines are part of it.
        let mut work = tails;
        while let Some(o) = work.pop() {
            if let Some((k, inputs)) = st.partial_sums.remove(&o) {
                if let Some(r) = st.results.iter_mut().find(|r| r.insn == k) {
                    r.mask = 0;
                }
                work.extend(inputs);
            }
        }
    }
    // What is still in a register may be used after the block.
    for r in 0..REGS {
        let v = st.regs[r];
        st.mark(&v, 0..CHUNKS);
    }
    for r in &st.results {
        let per = (r.ebits / 32) as usize;
        let used = st.used.get(r.origin as usize).copied().unwrap_or(u16::MAX);
        let alive = (0..r.lanes as usize)
            .filter(|&l| (0..per).any(|c| used & (1 << (l * per + c)) != 0))
            .fold(0u32, |m, l| m | 1 << l);
        let counted = (r.mask & alive).count_ones();
        if let Some(o) = out.get_mut(r.insn) {
            *o = (counted != r.lanes).then_some(counted);
        }
    }
    out
}

/// Every vector register an instruction not modelled here reads is used, whole.
fn mark_reads(st: &mut State, ins: &Instruction, factory: &mut InstructionInfoFactory) {
    let read: Vec<Register> = factory
        .info(ins)
        .used_registers()
        .iter()
        .filter(|u| {
            matches!(
                u.access(),
                OpAccess::Read | OpAccess::CondRead | OpAccess::ReadWrite | OpAccess::ReadCondWrite
            )
        })
        .map(|u| u.register())
        .collect();
    for r in read {
        if (r.is_xmm() || r.is_ymm() || r.is_zmm()) && r.number() < REGS {
            let v = st.regs[r.number()];
            let n = if r.is_xmm() {
                4
            } else if r.is_ymm() {
                8
            } else {
                CHUNKS
            };
            st.mark(&v, 0..n);
        }
    }
}

/// Every vector register the instruction writes gets a new origin.
fn clobber(st: &mut State, ins: &Instruction, factory: &mut InstructionInfoFactory) {
    let vex = ins.encoding() != EncodingKind::Legacy;
    if ins.mnemonic() == Mnemonic::Vzeroupper || ins.mnemonic() == Mnemonic::Vzeroall {
        // Registers 0 to 15 only (their upper parts, zmm's included).
        for r in 0..16 {
            let z = st.fresh(Kind::Local);
            if ins.mnemonic() == Mnemonic::Vzeroall {
                st.regs[r] = z;
            } else {
                st.regs[r][4..].copy_from_slice(&z[4..]);
            }
        }
        return;
    }
    let written: Vec<Register> = factory
        .info(ins)
        .used_registers()
        .iter()
        .filter(|u| {
            matches!(
                u.access(),
                OpAccess::Write
                    | OpAccess::CondWrite
                    | OpAccess::ReadWrite
                    | OpAccess::ReadCondWrite
            )
        })
        .map(|u| u.register())
        .collect();
    for r in written {
        if let Some((n, bits)) = vreg(r) {
            let v = st.fresh(Kind::Local);
            st.write(n, v, bits, vex);
        }
    }
}

/// Reads an operand as a value (a memory operand is a new loaded value).
fn read(st: &mut State, o: Opnd) -> Val {
    match o {
        Opnd::Reg(n, _) => st.regs[n],
        _ => st.fresh(Kind::Local),
    }
}

/// A memory operand read as a broadcast of its first element (`bits` wide).
fn read_bcast(st: &mut State, o: Opnd, bits: u32) -> Val {
    let mut v = read(st, o);
    if o == Opnd::Mem {
        let first = v;
        for k in 0..CHUNKS {
            v[k] = first[k % (bits as usize / 32)];
        }
    }
    v
}

/// Models one instruction; returns false when it is not modelled (the caller clobbers the
/// registers it writes).
#[allow(clippy::too_many_lines)]
fn step(st: &mut State, ins: &Instruction, fp: Option<Fp>, tails: &mut Vec<u32>) -> bool {
    use Mnemonic as M;
    let m = ins.mnemonic();
    // Under an AVX-512 opmask some lanes keep the destination's value or become zero: not
    // modelled (what it writes gets a new origin).
    if ins.op_mask() != Register::None {
        return false;
    }
    let vex = ins.encoding() != EncodingKind::Legacy;
    // (destination, first source, second source) for the usual two- and three-operand forms.
    let (d, a, b) = if vex {
        (opnd(ins, 0), opnd(ins, 1), opnd(ins, 2))
    } else {
        (opnd(ins, 0), opnd(ins, 0), opnd(ins, 1))
    };
    let Opnd::Reg(dn, dbits) = d else {
        // A store, a compare, a move to a general register...: its reads are uses.
        return false;
    };
    if let Some(fp) = fp {
        return fp_op(st, ins, fp, dn, dbits, vex, tails);
    }
    let imm8 = imm(ins);
    // 128-bit lanes of the destination, in which most shuffles work apart.
    let halves = (dbits / 128).max(1) as usize;
    match m {
        M::Movapd
        | M::Movaps
        | M::Movupd
        | M::Movups
        | M::Movdqa
        | M::Movdqu
        | M::Vmovapd
        | M::Vmovaps
        | M::Vmovupd
        | M::Vmovups
        | M::Vmovdqa
        | M::Vmovdqu
        | M::Vmovdqa32
        | M::Vmovdqa64
        | M::Vmovdqu32
        | M::Vmovdqu64 => {
            let s = opnd(ins, 1);
            let v = read(st, s);
            st.write(dn, v, dbits, vex);
        }
        M::Xorps
        | M::Xorpd
        | M::Pxor
        | M::Vxorps
        | M::Vxorpd
        | M::Vpxor
        | M::Vpxord
        | M::Vpxorq
            if a == b && matches!(a, Opnd::Reg(..)) =>
        {
            let v = st.fresh(Kind::Local);
            st.write(dn, v, dbits, vex);
        }
        M::Unpcklpd
        | M::Unpckhpd
        | M::Vunpcklpd
        | M::Vunpckhpd
        | M::Punpcklqdq
        | M::Punpckhqdq
        | M::Vpunpcklqdq
        | M::Vpunpckhqdq => {
            let hi = matches!(
                m,
                M::Unpckhpd | M::Vunpckhpd | M::Punpckhqdq | M::Vpunpckhqdq
            );
            let (va, vb) = (read(st, a), read(st, b));
            let mut v = va;
            for h in 0..halves {
                let k = 2 * h + usize::from(hi);
                set_q(&mut v, 2 * h, q(&va, k));
                set_q(&mut v, 2 * h + 1, q(&vb, k));
            }
            st.write(dn, v, dbits, vex);
        }
        M::Unpcklps | M::Unpckhps | M::Vunpcklps | M::Vunpckhps => {
            let off = if matches!(m, M::Unpckhps | M::Vunpckhps) {
                2
            } else {
                0
            };
            let (va, vb) = (read(st, a), read(st, b));
            let mut v = va;
            for h in 0..halves {
                let base = 4 * h;
                v[base] = va[base + off];
                v[base + 1] = vb[base + off];
                v[base + 2] = va[base + off + 1];
                v[base + 3] = vb[base + off + 1];
            }
            st.write(dn, v, dbits, vex);
        }
        M::Movhlps | M::Vmovhlps | M::Movlhps | M::Vmovlhps => {
            let (va, vb) = (read(st, a), read(st, b));
            let mut v = va;
            if matches!(m, M::Movhlps | M::Vmovhlps) {
                set_q(&mut v, 0, q(&vb, 1));
                set_q(&mut v, 1, q(&va, 1));
            } else {
                set_q(&mut v, 0, q(&va, 0));
                set_q(&mut v, 1, q(&vb, 0));
            }
            st.write(dn, v, 128, vex);
        }
        M::Shufpd | M::Vshufpd => {
            let (va, vb) = (read(st, a), read(st, b));
            let mut v = va;
            for h in 0..halves {
                let sa = 2 * h + ((imm8 >> (2 * h)) & 1) as usize;
                let sb = 2 * h + ((imm8 >> (2 * h + 1)) & 1) as usize;
                set_q(&mut v, 2 * h, q(&va, sa));
                set_q(&mut v, 2 * h + 1, q(&vb, sb));
            }
            st.write(dn, v, dbits, vex);
        }
        M::Shufps | M::Vshufps => {
            let (va, vb) = (read(st, a), read(st, b));
            let mut v = va;
            for h in 0..halves {
                let base = 4 * h;
                let sel = |k: u32| base + ((imm8 >> (2 * k)) & 3) as usize;
                v[base] = va[sel(0)];
                v[base + 1] = va[sel(1)];
                v[base + 2] = vb[sel(2)];
                v[base + 3] = vb[sel(3)];
            }
            st.write(dn, v, dbits, vex);
        }
        M::Pshufd | M::Vpshufd | M::Vpermilps if ins.op_count() == 3 && is_imm(ins, 2) => {
            let s = read(st, opnd(ins, 1));
            let mut v = s;
            for h in 0..halves {
                for k in 0..4 {
                    v[4 * h + k] = s[4 * h + ((imm8 >> (2 * k)) & 3) as usize];
                }
            }
            st.write(dn, v, dbits, vex);
        }
        M::Vpermilpd if ins.op_count() == 3 && is_imm(ins, 2) => {
            let s = read(st, opnd(ins, 1));
            let mut v = s;
            for i in 0..2 * halves {
                let src = 2 * (i / 2) + ((imm8 >> i) & 1) as usize;
                set_q(&mut v, i, q(&s, src));
            }
            st.write(dn, v, dbits, vex);
        }
        M::Vpermpd | M::Vpermq if is_imm(ins, 2) => {
            // Within each 256-bit half (the zmm form permutes both halves alike).
            let s = read(st, opnd(ins, 1));
            let mut v = s;
            for j in 0..(dbits / 256).max(1) as usize {
                for i in 0..4 {
                    set_q(
                        &mut v,
                        4 * j + i,
                        q(&s, 4 * j + ((imm8 >> (2 * i)) & 3) as usize),
                    );
                }
            }
            st.write(dn, v, dbits.max(256), vex);
        }
        // AVX-512: a 256-bit half of a zmm register, or a 128-bit block of a ymm or zmm one,
        // moved to the low part of the destination.
        M::Vextractf64x4 | M::Vextracti64x4 | M::Vextractf32x8 | M::Vextracti32x8 => {
            let s = read(st, opnd(ins, 1));
            let h = (imm8 & 1) as usize;
            let mut v = s;
            v[..8].copy_from_slice(&s[8 * h..8 * h + 8]);
            st.write(dn, v, 256, true);
        }
        M::Vextractf32x4 | M::Vextractf64x2 | M::Vextracti32x4 | M::Vextracti64x2 => {
            let src = opnd(ins, 1);
            let blocks = match src {
                Opnd::Reg(_, bits) => (bits / 128).max(1),
                _ => return false,
            };
            let s = read(st, src);
            let h = (imm8 % blocks) as usize;
            let mut v = s;
            v[..4].copy_from_slice(&s[4 * h..4 * h + 4]);
            st.write(dn, v, 128, true);
        }
        // AVX-512: the first source with one part replaced by the second's low part.
        M::Vinsertf64x4 | M::Vinserti64x4 | M::Vinsertf32x8 | M::Vinserti32x8 => {
            let (va, vb) = (read(st, a), read(st, b));
            let h = (imm8 & 1) as usize;
            let mut v = va;
            v[8 * h..8 * h + 8].copy_from_slice(&vb[..8]);
            st.write(dn, v, 512, true);
        }
        M::Vinsertf32x4 | M::Vinsertf64x2 | M::Vinserti32x4 | M::Vinserti64x2 => {
            let (va, vb) = (read(st, a), read(st, b));
            let h = (imm8 as usize) % halves;
            let mut v = va;
            v[4 * h..4 * h + 4].copy_from_slice(&vb[..4]);
            st.write(dn, v, dbits, true);
        }
        // AVX-512: 128-bit blocks chosen from the first source (low half of the destination)
        // and the second (high half).
        M::Vshuff64x2 | M::Vshuff32x4 | M::Vshufi64x2 | M::Vshufi32x4 => {
            let (va, vb) = (read(st, a), read(st, b));
            let mut v = va;
            let (bits_per, mask) = if dbits >= 512 { (2, 3) } else { (1, 1) };
            for h in 0..halves {
                let src = if h < halves / 2 { &va } else { &vb };
                let k = ((imm8 >> (bits_per * h as u32)) & mask) as usize;
                let mut part = [v[0]; 4];
                part.copy_from_slice(&src[4 * k..4 * k + 4]);
                v[4 * h..4 * h + 4].copy_from_slice(&part);
            }
            st.write(dn, v, dbits, true);
        }
        M::Vextractf128 | M::Vextracti128 => {
            let s = read(st, opnd(ins, 1));
            let h = (imm8 & 1) as usize;
            let mut v = s;
            v[..4].copy_from_slice(&s[4 * h..4 * h + 4]);
            st.write(dn, v, 128, true);
        }
        M::Vinsertf128 | M::Vinserti128 => {
            let (va, vb) = (read(st, a), read(st, b));
            let h = (imm8 & 1) as usize;
            let mut v = va;
            v[4 * h..4 * h + 4].copy_from_slice(&vb[..4]);
            st.write(dn, v, 256, vex);
        }
        M::Vperm2f128 | M::Vperm2i128 => {
            let (va, vb) = (read(st, a), read(st, b));
            let z = st.fresh(Kind::Local);
            let mut v = va;
            for h in 0..2 {
                let ctl = (imm8 >> (4 * h)) & 0xf;
                let src = if ctl & 8 != 0 {
                    &z[..4]
                } else {
                    match ctl & 3 {
                        0 => &va[..4],
                        1 => &va[4..8],
                        2 => &vb[..4],
                        _ => &vb[4..8],
                    }
                };
                let mut part = [z[0]; 4];
                part.copy_from_slice(src);
                v[4 * h..4 * h + 4].copy_from_slice(&part);
            }
            st.write(dn, v, 256, vex);
        }
        M::Movddup | M::Vmovddup => {
            let s = read(st, opnd(ins, 1));
            let mut v = s;
            for h in 0..halves {
                set_q(&mut v, 2 * h, q(&s, 2 * h));
                set_q(&mut v, 2 * h + 1, q(&s, 2 * h));
            }
            st.write(dn, v, dbits, vex);
        }
        M::Movshdup | M::Vmovshdup | M::Movsldup | M::Vmovsldup => {
            let s = read(st, opnd(ins, 1));
            let off = usize::from(matches!(m, M::Movshdup | M::Vmovshdup));
            let mut v = s;
            for h in 0..halves {
                for k in 0..2 {
                    v[4 * h + 2 * k] = s[4 * h + 2 * k + off];
                    v[4 * h + 2 * k + 1] = s[4 * h + 2 * k + off];
                }
            }
            st.write(dn, v, dbits, vex);
        }
        M::Vbroadcastsd | M::Vpbroadcastq | M::Vbroadcastss | M::Vpbroadcastd => {
            let bits = if matches!(m, M::Vbroadcastss | M::Vpbroadcastd) {
                32
            } else {
                64
            };
            let s = read_bcast(st, opnd(ins, 1), bits);
            let mut v = s;
            for k in 0..CHUNKS {
                v[k] = s[k % (bits as usize / 32)];
            }
            st.write(dn, v, dbits, true);
        }
        M::Movsd | M::Vmovsd | M::Movss | M::Vmovss => {
            let n = if matches!(m, M::Movss | M::Vmovss) {
                1
            } else {
                2
            };
            if ins.op_count() == 2 && opnd(ins, 1) == Opnd::Mem {
                // Load: the element, upper part zeroed.
                let v = st.fresh(Kind::Local);
                st.write(dn, v, 256, true);
            } else if ins.op_count() == 2 {
                // Legacy register form: low element from the source, the rest kept.
                let s = read(st, opnd(ins, 1));
                let mut v = st.regs[dn];
                v[..n].copy_from_slice(&s[..n]);
                st.write(dn, v, 128, false);
            } else {
                let (va, vb) = (read(st, a), read(st, b));
                let mut v = va;
                v[..n].copy_from_slice(&vb[..n]);
                st.write(dn, v, 128, true);
            }
        }
        M::Movq | M::Vmovq if matches!(opnd(ins, 1), Opnd::Reg(..)) => {
            let s = read(st, opnd(ins, 1));
            let mut v = st.fresh(Kind::Local);
            set_q(&mut v, 0, q(&s, 0));
            st.write(dn, v, 256, true);
        }
        M::Psrldq | M::Vpsrldq if imm8.is_multiple_of(4) => {
            let s = if vex {
                read(st, opnd(ins, 1))
            } else {
                st.regs[dn]
            };
            let z = st.fresh(Kind::Local);
            let sh = (imm8 / 4) as usize;
            let mut v = s;
            for h in 0..halves {
                for k in 0..4 {
                    v[4 * h + k] = if k + sh < 4 {
                        s[4 * h + k + sh]
                    } else {
                        z[4 * h + k]
                    };
                }
            }
            st.write(dn, v, dbits, vex);
        }
        _ => return false,
    }
    true
}

fn is_imm(ins: &Instruction, i: u32) -> bool {
    i < ins.op_count() && matches!(ins.op_kind(i), OpKind::Immediate8)
}

/// An FP arithmetic instruction: decide its counted lanes and write its result.
#[allow(clippy::too_many_lines)]
fn fp_op(
    st: &mut State,
    ins: &Instruction,
    fp: Fp,
    dn: usize,
    dbits: u32,
    vex: bool,
    tails: &mut Vec<u32>,
) -> bool {
    use Mnemonic as M;
    let m = ins.mnemonic();
    let ebits = fp.element_bits;
    if ebits < 32 {
        return false;
    }
    let scalar = fp.vector_bits.is_none();
    let lanes = fp.lanes() as usize;
    let count = ins.op_count();
    // Operands: first and second source (FMA: the three inputs in order op1, op2, op3).
    let o = |i| opnd(ins, i);
    let horizontal = matches!(
        m,
        M::Haddpd
            | M::Haddps
            | M::Hsubpd
            | M::Hsubps
            | M::Vhaddpd
            | M::Vhaddps
            | M::Vhsubpd
            | M::Vhsubps
    );
    let commutative = matches!(
        m,
        M::Addpd
            | M::Addps
            | M::Addsd
            | M::Addss
            | M::Vaddpd
            | M::Vaddps
            | M::Vaddsd
            | M::Vaddss
            | M::Mulpd
            | M::Mulps
            | M::Mulsd
            | M::Mulss
            | M::Vmulpd
            | M::Vmulps
            | M::Vmulsd
            | M::Vmulss
            | M::Minpd
            | M::Minps
            | M::Minsd
            | M::Minss
            | M::Vminpd
            | M::Vminps
            | M::Vminsd
            | M::Vminss
            | M::Maxpd
            | M::Maxps
            | M::Maxsd
            | M::Maxss
            | M::Vmaxpd
            | M::Vmaxps
            | M::Vmaxsd
            | M::Vmaxss
    );
    let adds = matches!(
        m,
        M::Addpd
            | M::Addps
            | M::Addsd
            | M::Addss
            | M::Vaddpd
            | M::Vaddps
            | M::Vaddsd
            | M::Vaddss
            | M::Subpd
            | M::Subps
            | M::Subsd
            | M::Subss
            | M::Vsubpd
            | M::Vsubps
            | M::Vsubsd
            | M::Vsubss
            | M::Addsubpd
            | M::Addsubps
            | M::Vaddsubpd
            | M::Vaddsubps
    );
    let fma = fp.fma;
    let unary = matches!(
        m,
        M::Sqrtpd
            | M::Sqrtps
            | M::Sqrtsd
            | M::Sqrtss
            | M::Vsqrtpd
            | M::Vsqrtps
            | M::Vsqrtsd
            | M::Vsqrtss
    );
    // The per-lane input pairs (or triples for FMA).
    let mut inputs: Vec<Vec<LaneIn>> = Vec::with_capacity(lanes);
    let mut same_reg = false;
    let (va, vb, vc, addend) = if fma {
        // op1 = destination, op2 = vvvv, op3 = r/m; the addend depends on the form.
        let (v1, v2, v3) = (read(st, o(0)), read(st, o(1)), read(st, o(2)));
        let name = format!("{m:?}");
        let addend = if name.contains("132") {
            2
        } else if name.contains("213") {
            3
        } else {
            1
        };
        (v1, v2, Some(v3), addend)
    } else if unary {
        // The source is the last operand (VEX scalar forms take the upper part from op1).
        let s = read(st, o(count.saturating_sub(1)));
        let first = if vex && scalar { read(st, o(1)) } else { s };
        (first, s, None, 0)
    } else if vex {
        same_reg = o(1) == o(2) && matches!(o(1), Opnd::Reg(..));
        (read(st, o(1)), read(st, o(2)), None, 0)
    } else {
        same_reg = o(0) == o(1);
        (read(st, o(0)), read(st, o(1)), None, 0)
    };
    let per_half = (128 / ebits) as usize;
    for i in 0..lanes {
        let mut v = Vec::with_capacity(3);
        // The inputs of lane i are read.
        if horizontal {
            let h = i / per_half;
            let k = i % per_half;
            let src = if k < per_half / 2 { va } else { vb };
            let j = h * per_half + 2 * (k % (per_half / 2));
            st.mark_lane(&src, j, ebits);
            st.mark_lane(&src, j + 1, ebits);
        } else if unary {
            st.mark_lane(&vb, i, ebits);
        } else {
            st.mark_lane(&va, i, ebits);
            st.mark_lane(&vb, i, ebits);
            if let Some(vc) = vc {
                st.mark_lane(&vc, i, ebits);
            }
        }
        if horizontal {
            // Output lane i of half h: pairs of adjacent lanes of the first source for the
            // low part of the half, of the second source for the high part.
            let h = i / per_half;
            let k = i % per_half;
            let src = if k < per_half / 2 { &va } else { &vb };
            let j = h * per_half + 2 * (k % (per_half / 2));
            v.push(lane(src, j, ebits));
            v.push(lane(src, j + 1, ebits));
        } else if unary {
            v.push(lane(&vb, i, ebits));
        } else {
            v.push(lane(&va, i, ebits));
            v.push(lane(&vb, i, ebits));
            if let Some(vc) = &vc {
                v.push(lane(vc, i, ebits));
            }
        }
        inputs.push(v);
    }
    let combining = |v: &Vec<LaneIn>| -> Option<u32> {
        match (v.first().copied().flatten(), v.get(1).copied().flatten()) {
            (Some((oa, la)), Some((ob, lb))) if !fma && oa == ob && la != lb => Some(oa),
            _ => None,
        }
    };
    let self_combining = |v: &Vec<LaneIn>| -> bool {
        !same_reg && !fma && v.len() == 2 && v[0].is_some() && v[0] == v[1]
    };
    // For each lane, the lowest lane that computes the same operation on the same inputs
    // (the same value), if another.
    let key = |v: &Vec<LaneIn>| -> Option<Vec<(u32, u8)>> {
        let mut k: Vec<(u32, u8)> = v
            .iter()
            .map(|x| x.ok_or(()))
            .collect::<Result<_, _>>()
            .ok()?;
        if commutative && k.len() == 2 {
            k.sort();
        }
        Some(k)
    };
    let keys: Vec<Option<Vec<(u32, u8)>>> = inputs.iter().map(key).collect();
    let same_as: Vec<Option<usize>> = (0..lanes)
        .map(|i| {
            let ki = keys[i].as_ref()?;
            (0..i).find(|&j| keys[j].as_ref() == Some(ki))
        })
        .collect();
    let duplicate = |i: usize| same_as[i].is_some();
    let combined: Vec<u32> = inputs.iter().filter_map(combining).collect();
    let tail = combined
        .iter()
        .any(|&o| matches!(st.kind(o), Kind::External | Kind::Acc));
    let mask = if tail {
        0
    } else if !combined.is_empty() {
        (0..lanes)
            .filter(|&i| !self_combining(&inputs[i]) && !duplicate(i))
            .fold(0u32, |m, i| m | 1 << i)
    } else {
        (0..lanes)
            .filter(|&i| !duplicate(i))
            .fold(0u32, |m, i| m | 1 << i)
    };
    // The result's kind.
    let feeds_acc = |v: &Val| {
        (0..lanes).any(|i| {
            lane(v, i, ebits).is_some_and(|(o, _)| matches!(st.kind(o), Kind::External | Kind::Acc))
        })
    };
    if tail {
        tails.extend(combined.iter().copied());
    }
    // An add of accumulators only: a combination of partial sums, if a tail takes it.
    let carried_inputs: Option<Vec<u32>> = (adds && !fma && !tail && combined.is_empty())
        .then(|| {
            let mut origins = Vec::new();
            for v in &inputs {
                for x in v {
                    match x {
                        Some((o, _)) if matches!(st.kind(*o), Kind::External | Kind::Acc) => {
                            if !origins.contains(o) {
                                origins.push(*o);
                            }
                        }
                        _ => return None,
                    }
                }
            }
            Some(origins)
        })
        .flatten();
    let kind = if tail {
        Kind::Acc
    } else if fma {
        let add = match addend {
            1 => &va,
            2 => &vb,
            _ => vc.as_ref().unwrap_or(&va),
        };
        if feeds_acc(add) {
            Kind::Acc
        } else {
            Kind::Local
        }
    } else if adds && combined.is_empty() && (feeds_acc(&va) || feeds_acc(&vb)) {
        Kind::Acc
    } else {
        Kind::Local
    };
    let fresh = st.fresh(kind);
    // A lane that duplicates a lower one holds the same value: later instructions see the
    // two as one (identical lanes of a result stay identical through the arithmetic on it).
    let mut res = fresh;
    for (i, j) in same_as.iter().enumerate() {
        if let Some(j) = *j {
            if ebits == 32 {
                res[i] = fresh[j];
            } else {
                set_q(&mut res, i, q(&fresh, j));
            }
        }
    }
    st.results.push(FpResult {
        insn: st.at,
        origin: res[0].origin,
        ebits,
        lanes: lanes as u32,
        mask,
    });
    if let Some(origins) = carried_inputs {
        st.partial_sums.insert(res[0].origin, (st.at, origins));
    }
    // Scalar: only the low element changes; the rest comes from the destination (legacy
    // SSE, FMA) or the first source (VEX three-operand), upper half zeroed for VEX.
    if scalar {
        let n = (ebits / 32) as usize;
        let mut v = if vex && !fma { va } else { st.regs[dn] };
        v[..n].copy_from_slice(&res[..n]);
        st.write(dn, v, 128, vex);
    } else {
        st.write(dn, res, dbits, vex);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `vperm2f128` taking a source's upper 128 bits (Eigen's AVX2 code does) is followed
    /// without a panic (the upper half was taken as every lane above the fourth: a
    /// 12-element slice for a 4-element copy, which aborted QEMU under the plugin).
    #[test]
    fn a_permute_of_upper_halves_is_followed() {
        // vperm2f128 $0x31 / $0x13, %ymm2, %ymm1, %ymm0; vaddpd %ymm0, %ymm1, %ymm3
        // (bytes from GNU as).
        let code = [
            0xc4, 0xe3, 0x75, 0x06, 0xc2, 0x31, 0xc4, 0xe3, 0x75, 0x06, 0xc2, 0x13, 0xc5, 0xf5,
            0x58, 0xd8,
        ];
        let mut insns = Vec::new();
        let mut at = 0;
        while at < code.len() {
            let ins = decode(&code[at..], at as u64);
            assert!(!ins.is_invalid(), "at {at}");
            at += ins.len();
            insns.push(ins);
        }
        assert_eq!(insns.len(), 3);
        let fps = vec![None; insns.len()];
        assert_eq!(counted_lanes(&insns, &fps), vec![None; 3]);
    }
}
