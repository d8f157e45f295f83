//! Loop-carried dependency chains of x86-64 loops (docs/projection.md, "The dependency
//! chain").
//!
//! A loop whose iterations depend on each other through a register (a sum kept in a
//! register, `s += a[j] * x[j]` without reassociation) cannot run faster than one pass
//! around that chain per iteration, however many FP units the core has: a non-vectorized
//! reduction runs at one add latency per element. Which machine runs it faster depends on
//! the latencies of the operations on the chain (an FP add takes 2 cycles on Golden Cove, 3
//! on Zen 3 and Zen 4), which no throughput ceiling measures.
//!
//! [`loop_chain`] takes the body of a loop as straight-line code (from the loop's head to
//! its backward branch, inner conditional branches taken as not taken) and finds, for each
//! register the body reads before writing it and writes again (a value carried from one
//! iteration to the next), the longest path of dependent instructions from its value at the
//! head to its value at the branch. The path's operations are classified (FP add, mul, FMA,
//! divide, square root at their precision and width; any other instruction as one "other"
//! step; register-to-register moves as free), and the longest path is chosen with typical
//! latencies ([`ChainOp::cycles`]): the engines count the chosen path's operations per
//! iteration, and a machine's own latencies give its time.
//!
//! Not modelled: dependencies through memory (a value stored and loaded again in the next
//! iteration), loads on the chain (a pointer chase counts one step per load, not the load's
//! latency), and paths through taken inner branches. Each leaves the chain shorter than the
//! machine's: the bound it gives stays a lower bound on the time.

use std::collections::HashMap;

use iced_x86::{Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register};

/// An FP operation on a dependency chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChainOp {
    /// Add, subtract (also horizontal and add-subtract forms).
    Add,
    /// Multiply.
    Mul,
    /// Fused multiply-add (any sign form).
    Fma,
    /// Divide.
    Div,
    /// Square root.
    Sqrt,
}

impl ChainOp {
    /// Every operation.
    pub const ALL: [ChainOp; 5] = [
        ChainOp::Add,
        ChainOp::Mul,
        ChainOp::Fma,
        ChainOp::Div,
        ChainOp::Sqrt,
    ];

    /// Typical latency in core cycles, only to choose the longest of several chains (the
    /// machine's own latencies give the time): current x86 cores.
    pub fn cycles(self) -> u32 {
        match self {
            ChainOp::Add => 3,
            ChainOp::Mul | ChainOp::Fma => 4,
            ChainOp::Div => 13,
            ChainOp::Sqrt => 18,
        }
    }

    /// Lower-case name (`add`).
    pub fn name(self) -> &'static str {
        match self {
            ChainOp::Add => "add",
            ChainOp::Mul => "mul",
            ChainOp::Fma => "fma",
            ChainOp::Div => "div",
            ChainOp::Sqrt => "sqrt",
        }
    }
}

/// One FP step of a chain: its operation, element size and vector width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChainStep {
    /// Operation.
    pub op: ChainOp,
    /// Element bits: 32 or 64.
    pub element_bits: u32,
    /// Vector register width in bits; `None` for a scalar instruction.
    pub vector_bits: Option<u32>,
}

/// The longest loop-carried chain of a loop body: per iteration, its FP steps and its other
/// steps (integer and other instructions, one cycle each).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain {
    /// FP steps and how many of each, sorted.
    pub fp: Vec<(ChainStep, u32)>,
    /// Other steps (one cycle each).
    pub other: u32,
}

impl Chain {
    /// Length in typical cycles ([`ChainOp::cycles`], 1 per other step).
    pub fn cycles(&self) -> u32 {
        self.other + self.fp.iter().map(|(s, n)| s.op.cycles() * n).sum::<u32>()
    }

    /// Whether the chain has no step.
    pub fn is_empty(&self) -> bool {
        self.other == 0 && self.fp.is_empty()
    }
}

/// A register as the chain analysis tracks it: the full register (`rax` for `eax`, `zmm3`
/// for `xmm3`), or the flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Node {
    Reg(Register),
    Flags,
}

/// The path to a value: typical cycles and its steps.
#[derive(Debug, Clone, Default)]
struct Path {
    cycles: u32,
    fp: Vec<ChainStep>,
    other: u32,
}

impl Path {
    fn then(&self, step: Step) -> Path {
        let mut p = self.clone();
        match step {
            Step::Free => {}
            Step::Other => {
                p.cycles += 1;
                p.other += 1;
            }
            Step::Fp(s) => {
                p.cycles += s.op.cycles();
                p.fp.push(s);
            }
        }
        p
    }
}

#[derive(Debug, Clone, Copy)]
enum Step {
    /// A register-to-register move: renamed, no latency.
    Free,
    Other,
    Fp(ChainStep),
}

/// What an instruction adds to a chain through it.
fn step(ins: &Instruction) -> Step {
    let name = format!("{:?}", ins.mnemonic()).to_ascii_lowercase();
    let all_regs = (0..ins.op_count()).all(|i| ins.op_kind(i) == OpKind::Register);
    if all_regs && ins.op_count() == 2 && is_move(&name) {
        return Step::Free;
    }
    let stem = name.strip_prefix('v').unwrap_or(&name);
    let (body, element_bits, scalar) = if let Some(b) = stem.strip_suffix("sd") {
        (b, 64, true)
    } else if let Some(b) = stem.strip_suffix("ss") {
        (b, 32, true)
    } else if let Some(b) = stem.strip_suffix("pd") {
        (b, 64, false)
    } else if let Some(b) = stem.strip_suffix("ps") {
        (b, 32, false)
    } else {
        return Step::Other;
    };
    let op = if body.starts_with("fmadd")
        || body.starts_with("fmsub")
        || body.starts_with("fnmadd")
        || body.starts_with("fnmsub")
    {
        ChainOp::Fma
    } else {
        match body {
            "add" | "sub" | "hadd" | "hsub" | "addsub" => ChainOp::Add,
            "mul" => ChainOp::Mul,
            "div" => ChainOp::Div,
            "sqrt" => ChainOp::Sqrt,
            _ => return Step::Other,
        }
    };
    let vector_bits = if scalar {
        None
    } else {
        let bytes = ins.op0_register().size();
        if bytes >= 16 {
            Some(bytes as u32 * 8)
        } else {
            return Step::Other;
        }
    };
    Step::Fp(ChainStep {
        op,
        element_bits,
        vector_bits,
    })
}

/// Register-to-register moves that rename (no computation).
fn is_move(name: &str) -> bool {
    matches!(
        name,
        "mov"
            | "movapd"
            | "movaps"
            | "movupd"
            | "movups"
            | "movdqa"
            | "movdqu"
            | "vmovapd"
            | "vmovaps"
            | "vmovupd"
            | "vmovups"
            | "vmovdqa"
            | "vmovdqu"
            | "vmovdqa64"
            | "vmovdqa32"
            | "vmovdqu64"
            | "vmovdqu32"
    )
}

/// Whether the instruction sets its destination to zero whatever the input (`xor eax, eax`,
/// `vxorpd x, x, x`): no dependency on the register's old value.
fn zeroing_idiom(ins: &Instruction) -> bool {
    if !matches!(
        ins.mnemonic(),
        Mnemonic::Xor
            | Mnemonic::Sub
            | Mnemonic::Pxor
            | Mnemonic::Vpxor
            | Mnemonic::Vpxord
            | Mnemonic::Vpxorq
            | Mnemonic::Xorps
            | Mnemonic::Xorpd
            | Mnemonic::Vxorps
            | Mnemonic::Vxorpd
    ) {
        return false;
    }
    let regs: Vec<Register> = (0..ins.op_count())
        .filter(|&i| ins.op_kind(i) == OpKind::Register)
        .map(|i| ins.op_register(i))
        .collect();
    regs.len() == ins.op_count() as usize
        && regs.len() >= 2
        && regs[1..].iter().all(|r| *r == regs[regs.len() - 1])
        && (regs.len() == 2 && regs[0] == regs[1] || regs.len() == 3)
}

fn node(r: Register) -> Option<Node> {
    if r == Register::None || r == Register::RIP || r == Register::EIP {
        return None;
    }
    Some(Node::Reg(r.full_register()))
}

/// The registers an instruction reads and writes (full registers, the flags as one).
fn reads_writes(ins: &Instruction, factory: &mut InstructionInfoFactory) -> (Vec<Node>, Vec<Node>) {
    let info = factory.info(ins);
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    let zero = zeroing_idiom(ins);
    for u in info.used_registers() {
        let Some(n) = node(u.register()) else {
            continue;
        };
        match u.access() {
            OpAccess::Read | OpAccess::CondRead if !zero => reads.push(n),
            OpAccess::Write => writes.push(n),
            OpAccess::ReadWrite | OpAccess::ReadCondWrite | OpAccess::CondWrite => {
                if !zero {
                    reads.push(n);
                }
                writes.push(n);
            }
            _ => {}
        }
    }
    if ins.rflags_read() != 0 {
        reads.push(Node::Flags);
    }
    if ins.rflags_modified() != 0 {
        writes.push(Node::Flags);
    }
    (reads, writes)
}

/// The longest loop-carried dependency chain of a loop body: `body` runs from the loop's
/// head to its backward branch (the last instruction), as straight-line code. `None` when
/// no value is carried from one iteration to the next through a register.
pub fn loop_chain(body: &[Instruction]) -> Option<Chain> {
    let mut factory = InstructionInfoFactory::new();
    let rw: Vec<(Vec<Node>, Vec<Node>)> =
        body.iter().map(|i| reads_writes(i, &mut factory)).collect();
    let steps: Vec<Step> = body.iter().map(step).collect();
    // Carried: read before any write in the body, and written in it.
    let mut written = std::collections::HashSet::new();
    let mut carried = Vec::new();
    for (reads, writes) in &rw {
        for r in reads {
            if !written.contains(r) && !carried.contains(r) {
                carried.push(*r);
            }
        }
        written.extend(writes.iter().copied());
    }
    carried.retain(|r| written.contains(r));
    let mut best: Option<Path> = None;
    for c in carried {
        let mut at: HashMap<Node, Path> = HashMap::new();
        at.insert(c, Path::default());
        for ((reads, writes), s) in rw.iter().zip(&steps) {
            let from = reads
                .iter()
                .filter_map(|r| at.get(r))
                .max_by_key(|p| p.cycles)
                .cloned();
            match from {
                Some(p) => {
                    let out = p.then(*s);
                    for w in writes {
                        at.insert(*w, out.clone());
                    }
                }
                None => {
                    for w in writes {
                        at.remove(w);
                    }
                }
            }
        }
        if let Some(p) = at.remove(&c)
            && p.cycles > 0
            && best.as_ref().is_none_or(|b| p.cycles > b.cycles)
        {
            best = Some(p);
        }
    }
    let p = best?;
    let mut counts: HashMap<ChainStep, u32> = HashMap::new();
    for s in p.fp {
        *counts.entry(s).or_default() += 1;
    }
    let mut fp: Vec<(ChainStep, u32)> = counts.into_iter().collect();
    fp.sort();
    Some(Chain { fp, other: p.other })
}

/// Decodes a loop body from `bytes` (the code at `head`) up to and including the backward
/// branch at `branch`, as straight-line code: `None` when decoding does not land on
/// `branch`, or meets an unconditional jump, a call, a return or an invalid instruction
/// before it.
pub fn decode_body(bytes: &[u8], head: u64, branch: u64) -> Option<Vec<Instruction>> {
    let mut d = iced_x86::Decoder::with_ip(64, bytes, head, iced_x86::DecoderOptions::NONE);
    let mut out = Vec::new();
    while d.can_decode() {
        let ins = d.decode();
        if ins.is_invalid() {
            return None;
        }
        let ip = ins.ip();
        if ip == branch {
            out.push(ins);
            return Some(out);
        }
        if ip > branch
            || ins.is_jmp_short_or_near()
            || ins.is_jmp_far()
            || ins.is_call_near()
            || ins.is_call_far()
            || matches!(ins.mnemonic(), Mnemonic::Ret | Mnemonic::Retf)
        {
            return None;
        }
        out.push(ins);
    }
    None
}

/// The head of the loop `ins` closes: its target when it is a near conditional or
/// unconditional jump backwards by at most `max_bytes`.
pub fn backward_target(ins: &Instruction, max_bytes: u64) -> Option<u64> {
    if !(ins.is_jcc_short_or_near() || ins.is_jmp_short_or_near()) {
        return None;
    }
    let t = ins.near_branch_target();
    (t <= ins.ip() && ins.ip() - t <= max_bytes).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asm(bytes: &[u8], head: u64) -> Vec<Instruction> {
        let mut d = iced_x86::Decoder::with_ip(64, bytes, head, iced_x86::DecoderOptions::NONE);
        let mut v = Vec::new();
        while d.can_decode() {
            v.push(d.decode());
        }
        v
    }

    fn step_of(op: ChainOp, element_bits: u32, vector_bits: Option<u32>) -> ChainStep {
        ChainStep {
            op,
            element_bits,
            vector_bits,
        }
    }

    /// gcc 12 -O3 -march=x86-64-v3, `s += row[j] * x[j]` (trmv): four dependent scalar adds
    /// per iteration of four elements.
    #[test]
    fn an_in_order_reduction_is_four_adds_per_iteration() {
        // 1700: vmovupd (%r8,%rcx,1),%ymm4 ... jne 1700
        let code = [
            0xc4, 0xc1, 0x7d, 0x10, 0x24, 0x08, // vmovupd ymm4,[r8+rcx]
            0xc5, 0xdd, 0x59, 0x04, 0x0b, // vmulpd ymm0,ymm4,[rbx+rcx]
            0x48, 0x83, 0xc1, 0x20, // add rcx,0x20
            0xc5, 0xfb, 0x58, 0xca, // vaddsd xmm1,xmm0,xmm2
            0xc5, 0xf9, 0x15, 0xd8, // vunpckhpd xmm3,xmm0,xmm0
            0xc4, 0xe3, 0x7d, 0x19, 0xc0, 0x01, // vextractf128 xmm0,ymm0,1
            0xc5, 0xf3, 0x58, 0xcb, // vaddsd xmm1,xmm1,xmm3
            0xc5, 0xf3, 0x58, 0xc8, // vaddsd xmm1,xmm1,xmm0
            0xc5, 0xf9, 0x15, 0xc0, // vunpckhpd xmm0,xmm0,xmm0
            0xc5, 0xf3, 0x58, 0xd0, // vaddsd xmm2,xmm1,xmm0
            0x49, 0x39, 0xc9, // cmp r9,rcx
            0x75, 0xce, // jne head
        ];
        let body = asm(&code, 0x1700);
        let last = body.last().unwrap();
        assert_eq!(backward_target(last, 4096), Some(0x1700));
        let c = loop_chain(&body).expect("a carried sum");
        assert_eq!(c.fp, vec![(step_of(ChainOp::Add, 64, None), 4)]);
        assert_eq!(c.other, 0);
        assert_eq!(c.cycles(), 12);
    }

    /// A loop carrying only its counter: one integer step.
    #[test]
    fn a_triad_carries_only_its_counter() {
        let code = [
            0xc5, 0xfd, 0x10, 0x04, 0xc6, // vmovupd ymm0,[rsi+rax*8]
            0xc4, 0xe2, 0xf5, 0xa8, 0x04, 0xc2, // vfmadd213pd ymm0,ymm1,[rdx+rax*8]
            0xc5, 0xfd, 0x11, 0x04, 0xc7, // vmovupd [rdi+rax*8],ymm0
            0x48, 0x83, 0xc0, 0x04, // add rax,4
            0x48, 0x39, 0xc1, // cmp rcx,rax
            0x75, 0xe7, // jne head
        ];
        let body = asm(&code, 0x2000);
        assert_eq!(backward_target(body.last().unwrap(), 4096), Some(0x2000));
        let c = loop_chain(&body).unwrap();
        assert!(c.fp.is_empty(), "{c:?}");
        assert_eq!(c.other, 1);
    }

    /// An FMA accumulator (`vfmadd231pd acc, a, b`): one FMA per iteration.
    #[test]
    fn an_fma_accumulator_is_one_fma() {
        let code = [
            0xc5, 0xfd, 0x10, 0x0c, 0xc6, // vmovupd ymm1,[rsi+rax*8]
            0xc4, 0xe2, 0xf5, 0xb8, 0x04, 0xc2, // vfmadd231pd ymm0,ymm1,[rdx+rax*8]
            0x48, 0x83, 0xc0, 0x04, // add rax,4
            0x48, 0x39, 0xc1, // cmp rcx,rax
            0x75, 0xec, // jne head
        ];
        let body = asm(&code, 0x3000);
        let c = loop_chain(&body).unwrap();
        assert_eq!(c.fp, vec![(step_of(ChainOp::Fma, 64, Some(256)), 1)]);
        assert_eq!(c.other, 0);
    }

    /// A sum through a copy (`movapd` then `addsd`): the move is free; a zeroing idiom
    /// breaks the chain.
    #[test]
    fn moves_are_free_and_zeroing_breaks_the_chain() {
        // movapd xmm1,xmm0 ; addsd xmm1,[rdi] ; movapd xmm0,xmm1 ; add rdi,8 ; cmp rdi,rsi ; jne
        let code = [
            0x66, 0x0f, 0x28, 0xc8, // movapd xmm1,xmm0
            0xf2, 0x0f, 0x58, 0x0f, // addsd xmm1,[rdi]
            0x66, 0x0f, 0x28, 0xc1, // movapd xmm0,xmm1
            0x48, 0x83, 0xc7, 0x08, // add rdi,8
            0x48, 0x39, 0xf7, // cmp rdi,rsi
            0x75, 0xeb, // jne head
        ];
        let c = loop_chain(&asm(&code, 0x4000)).unwrap();
        assert_eq!(c.fp, vec![(step_of(ChainOp::Add, 64, None), 1)]);
        // pxor xmm0,xmm0 ; addsd xmm0,[rdi] ; add rdi,8 ; cmp rdi,rsi ; jne
        let code = [
            0x66, 0x0f, 0xef, 0xc0, // pxor xmm0,xmm0
            0xf2, 0x0f, 0x58, 0x07, // addsd xmm0,[rdi]
            0x48, 0x83, 0xc7, 0x08, // add rdi,8
            0x48, 0x39, 0xf7, // cmp rdi,rsi
            0x75, 0xef, // jne head
        ];
        let c = loop_chain(&asm(&code, 0x5000)).unwrap();
        assert!(c.fp.is_empty(), "{c:?}");
    }

    /// The body is decoded up to the branch; an unconditional jump before it is refused.
    #[test]
    fn bodies_are_straight_line_code() {
        let code = [
            0x48, 0x83, 0xc0, 0x01, // add rax,1
            0x48, 0x39, 0xc1, // cmp rcx,rax
            0x75, 0xf7, // jne head
        ];
        let b = decode_body(&code, 0x100, 0x107).unwrap();
        assert_eq!(b.len(), 3);
        assert!(decode_body(&code, 0x100, 0x105).is_none());
        let jump = [0xeb, 0x00, 0x75, 0xfc]; // jmp +0 ; jne head
        assert!(decode_body(&jump, 0x200, 0x202).is_none());
    }
}
