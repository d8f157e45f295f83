//! Kernel extraction: find a function's innermost loops in an ELF binary, disassemble them and
//! count instructions per iteration by class (seed 003, section 5.3; the thesis's loop
//! extractor finds a backward branch and tallies the loop body).
//!
//! x86-64 is decoded with iced-x86, AArch64 (AdvSIMD and SVE) with bad64, the bindings of
//! Binary Ninja's arm64 disassembler, whose operation list covers SVE, SVE2 and SME. A loop is the address range from a backward branch's
//! target to the branch; several back edges to one target are one loop; a loop that contains
//! no other loop is innermost. Memory operands count as loads and stores; a data move with a
//! memory operand is only that load or store. Instructions no rule of the class table matches
//! are counted as `OTHER` and listed by mnemonic. A selection by address range
//! ([`Selector::Range`]) takes a hot loop found by a profiler.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Formatter, Instruction, InstructionInfoFactory,
    IntelFormatter, OpAccess, OpKind, Register,
};
use object::{Object, ObjectSection};
use serde::Serialize;

use crate::classes::{ClassTable, Classified};
use crate::error::{ModelError, Result};
use crate::ports::{ClassCounts, OTHER};

/// Which code to extract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// A function by symbol name.
    Function(String),
    /// An address range `[start, end)`.
    Range(u64, u64),
}

/// One decoded instruction of a loop.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoopInstruction {
    /// Address.
    pub address: u64,
    /// Intel-syntax text.
    pub text: String,
    /// Lower-case mnemonic.
    pub mnemonic: String,
    /// Compute class (None for a pure move or an ignored instruction).
    pub class: Option<String>,
    /// Memory reads.
    pub loads: u32,
    /// Memory writes.
    pub stores: u32,
    /// FLOPs (lanes x 1, or x 2 for FMA).
    pub flops: f64,
}

/// A loop and its per-iteration counts.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoopSummary {
    /// First address.
    pub start: u64,
    /// One past the last byte (after the back edge).
    pub end: u64,
    /// True when the loop contains no other loop.
    pub innermost: bool,
    /// Instructions per iteration (ignored ones excluded).
    pub instructions: usize,
    /// Class counts per iteration, `LOAD`/`STORE` included, unknown ones under `OTHER`.
    pub counts: ClassCounts,
    /// FLOPs per iteration.
    pub flops_per_iter: f64,
    /// Widest vector register used, bits (0 when scalar integer only; 128 per SVE granule).
    pub vector_bits: u32,
    /// Uses SVE registers: FLOPs per iteration are per 128-bit granule of the vector length.
    pub scalable: bool,
    /// Unknown mnemonics and how often each appears.
    pub other: BTreeMap<String, u32>,
    /// Loop-carried register critical path, cycles per iteration (table latencies).
    pub critical_path_cycles: f64,
    /// The listing.
    pub listing: Vec<LoopInstruction>,
}

/// The loops of a function.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelReport {
    /// Binary path.
    pub binary: PathBuf,
    /// Function name or range.
    pub function: String,
    /// Instruction set.
    pub isa: String,
    /// Function start address.
    pub start: u64,
    /// Function end address.
    pub end: u64,
    /// All loops, innermost flagged, in address order.
    pub loops: Vec<LoopSummary>,
}

impl KernelReport {
    /// The innermost loops.
    pub fn innermost(&self) -> impl Iterator<Item = &LoopSummary> {
        self.loops.iter().filter(|l| l.innermost)
    }

    /// The main innermost loop: the widest vectors, then the most FLOPs per iteration (the
    /// main vector loop rather than its peel, remainder or narrower epilogue), then the most
    /// instructions.
    pub fn main_loop(&self) -> Option<&LoopSummary> {
        self.innermost().max_by(|a, b| {
            a.vector_bits
                .cmp(&b.vector_bits)
                .then(a.flops_per_iter.total_cmp(&b.flops_per_iter))
                .then(a.instructions.cmp(&b.instructions))
        })
    }
}

/// The innermost loop chosen by measured instructions per iteration (seed 003, section
/// 5.3: the candidate whose instruction count matches the counted instructions divided by
/// the loop's iterations).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ByInstructions {
    /// Start address of the chosen loop.
    pub start: u64,
    /// Its static instructions per iteration.
    pub instructions: usize,
    /// The measured instructions per iteration.
    pub measured: f64,
    /// `(static - measured) / measured`, percent.
    pub mismatch_pct: f64,
    /// The next-best candidate's mismatch, percent, when there is one (how clear the choice
    /// is).
    pub runner_up_pct: Option<f64>,
}

impl KernelReport {
    /// The innermost loop whose instructions per iteration are closest to `measured`.
    pub fn select_by_instructions(&self, measured: f64) -> Result<ByInstructions> {
        if !(measured.is_finite() && measured > 0.0) {
            return Err(ModelError::Invalid(format!(
                "measured instructions per iteration must be positive, got {measured}"
            )));
        }
        let mut c: Vec<(&LoopSummary, f64)> = self
            .innermost()
            .map(|l| (l, (l.instructions as f64 - measured) / measured * 100.0))
            .collect();
        c.sort_by(|a, b| a.1.abs().total_cmp(&b.1.abs()));
        let Some(&(l, pct)) = c.first() else {
            return Err(ModelError::NoLoop {
                path: self.binary.clone(),
                function: self.function.clone(),
            });
        };
        Ok(ByInstructions {
            start: l.start,
            instructions: l.instructions,
            measured,
            mismatch_pct: pct,
            runner_up_pct: c.get(1).map(|x| x.1),
        })
    }
}

/// Loads and stores beyond the minimum a loop needs to read and write its data (seed 003,
/// section 5.3): register spills, what the difference model counts as `LOAD` and `STORE`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spills {
    /// Loads per iteration in the loop.
    pub loads: f64,
    /// Stores per iteration in the loop.
    pub stores: f64,
    /// The minimum loads (from the source: e.g. 2 nodes x 5 variables + a 3-D edge vector +
    /// 2 node ids = 15 for MG-CFD's flux loop).
    pub min_loads: f64,
    /// The minimum stores.
    pub min_stores: f64,
    /// `loads - min_loads`.
    pub spill_loads: f64,
    /// `stores - min_stores`.
    pub spill_stores: f64,
}

/// Spill loads and stores of class counts against a minimum; an error when the loop has
/// fewer than the minimum (the minimum is wrong, or the loop is not the one meant).
pub fn spills(counts: &ClassCounts, min_loads: f64, min_stores: f64) -> Result<Spills> {
    let loads = counts.get("LOAD").copied().unwrap_or(0.0);
    let stores = counts.get("STORE").copied().unwrap_or(0.0);
    for (what, have, min, flag) in [
        ("loads", loads, min_loads, "--min-loads"),
        ("stores", stores, min_stores, "--min-stores"),
    ] {
        if !(min.is_finite() && min >= 0.0) {
            return Err(ModelError::Invalid(format!(
                "{flag} must be >= 0, got {min}"
            )));
        }
        if have < min {
            return Err(ModelError::Invalid(format!(
                "the loop has {have} {what} per iteration, fewer than the minimum {min} ({flag}): lower the minimum, or pick the loop meant (--ins-per-iter, --range)"
            )));
        }
    }
    Ok(Spills {
        loads,
        stores,
        min_loads,
        min_stores,
        spill_loads: loads - min_loads,
        spill_stores: stores - min_stores,
    })
}

/// Class counts with `LOAD` and `STORE` replaced by the spills, as the difference model
/// takes them.
pub fn with_spills(counts: &ClassCounts, s: &Spills) -> ClassCounts {
    let mut c = counts.clone();
    c.insert("LOAD".into(), s.spill_loads);
    c.insert("STORE".into(), s.spill_stores);
    c
}

/// The bytes of the binary `path`, bounded by the input limit
/// ([`hpcscope_core::load::read_bytes`]).
fn read_binary(path: &Path) -> Result<Vec<u8>> {
    hpcscope_core::load::read_bytes(path).map_err(|e| match e {
        hpcscope_core::load::ReadError::Io(source) => ModelError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => ModelError::Binary {
            path: path.to_path_buf(),
            message: other.to_string(),
        },
    })
}

/// The instruction set of an ELF binary (`x86-64` or `aarch64`), to pick its class table.
pub fn binary_isa(path: &Path) -> Result<&'static str> {
    let data = read_binary(path)?;
    let file = object::File::parse(&*data).map_err(|e| ModelError::Binary {
        path: path.to_path_buf(),
        message: format!("not an ELF/object file this tool reads: {e}"),
    })?;
    match file.architecture() {
        object::Architecture::X86_64 => Ok("x86-64"),
        object::Architecture::Aarch64 => Ok("aarch64"),
        a => Err(ModelError::Binary {
            path: path.to_path_buf(),
            message: format!("architecture {a:?} is not supported (x86-64 and aarch64 only)"),
        }),
    }
}

/// Extracts and classifies the loops of a function (or address range) of an ELF binary.
pub fn extract(path: &Path, sel: &Selector, table: &ClassTable) -> Result<KernelReport> {
    let data = read_binary(path)?;
    let bin = |m: String| ModelError::Binary {
        path: path.to_path_buf(),
        message: m,
    };
    let file = object::File::parse(&*data)
        .map_err(|e| bin(format!("not an ELF/object file this tool reads: {e}")))?;
    let isa = match file.architecture() {
        object::Architecture::X86_64 => "x86-64",
        object::Architecture::Aarch64 => "aarch64",
        a => {
            return Err(bin(format!(
                "architecture {a:?} is not supported (x86-64 only)"
            )));
        }
    };
    let (name, start, end) = match sel {
        Selector::Function(f) => {
            let functions = hpcscope_host::elf::Functions::of(&file);
            let sym = functions
                .named(f)
                .ok_or_else(|| {
                    let mut near: Vec<String> = (functions.symbols.iter())
                        .filter(|s| !s.dynamic)
                        .map(|s| s.name.clone())
                        .filter(|n| n.contains(f.as_str()) || f.contains(n.as_str()) && n.len() > 3)
                        .take(5)
                        .collect();
                    near.sort();
                    bin(format!(
                        "no function symbol '{f}'{}; is the binary stripped? pass --range START:END instead",
                        if near.is_empty() { String::new() } else { format!(" (similar: {})", near.join(", ")) }
                    ))
                })?;
            if sym.size == 0 {
                return Err(bin(format!(
                    "symbol '{f}' has size 0; pass --range START:END"
                )));
            }
            (f.clone(), sym.addr, sym.addr + sym.size)
        }
        Selector::Range(a, b) => {
            if b <= a {
                return Err(bin(format!(
                    "empty address range {a:#x}:{b:#x}; give START < END"
                )));
            }
            (format!("{a:#x}:{b:#x}"), *a, *b)
        }
    };
    let section = file
        .sections()
        .find(|s| s.address() <= start && end <= s.address() + s.size())
        .ok_or_else(|| bin(format!("no section holds {start:#x}..{end:#x}")))?;
    let bytes = section
        .data()
        .map_err(|e| bin(format!("cannot read section: {e}")))?;
    let off = (start - section.address()) as usize;
    let code = &bytes[off..off + (end - start) as usize];
    if table.isa != isa {
        return Err(bin(format!(
            "the binary is {isa} but the class table is for {}; pass the {isa} table (built-in: --classes omitted picks it)",
            table.isa
        )));
    }
    let loops = if isa == "aarch64" {
        analyze_aarch64(code, start, table)
    } else {
        analyze_x86(code, start, table)
    };
    if loops.is_empty() {
        return Err(ModelError::NoLoop {
            path: path.to_path_buf(),
            function: name,
        });
    }
    Ok(KernelReport {
        binary: path.to_path_buf(),
        function: name,
        isa: isa.into(),
        start,
        end,
        loops,
    })
}

/// One decoded instruction, independent of the instruction set.
#[derive(Debug, Clone, PartialEq)]
struct Decoded {
    ip: u64,
    next_ip: u64,
    text: String,
    mnemonic: String,
    loads: u32,
    stores: u32,
    /// Widest vector register, bits (0: none; for SVE the 128-bit granule).
    bits: u32,
    /// FP lanes per instruction when the ISA gives them (aarch64 arrangement), else None.
    lanes: Option<f64>,
    /// Uses SVE (scalable) registers.
    scalable: bool,
    /// Uses vector registers.
    vector: bool,
    branch_target: Option<u64>,
    reads: Vec<String>,
    writes: Vec<String>,
}

/// Decodes x86-64 machine code at `ip` and returns its loops, classified.
pub fn analyze_x86(code: &[u8], ip: u64, table: &ClassTable) -> Vec<LoopSummary> {
    let mut dec = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let mut fmt = IntelFormatter::new();
    let mut factory = InstructionInfoFactory::new();
    let mut out = Vec::new();
    let mut i = Instruction::default();
    while dec.can_decode() {
        dec.decode_out(&mut i);
        let mut text = String::new();
        fmt.format(&i, &mut text);
        let info = factory.info(&i);
        let (mut loads, mut stores) = (0u32, 0u32);
        for m in info.used_memory() {
            match m.access() {
                OpAccess::Read | OpAccess::CondRead => loads += 1,
                OpAccess::Write | OpAccess::CondWrite => stores += 1,
                OpAccess::ReadWrite | OpAccess::ReadCondWrite => {
                    loads += 1;
                    stores += 1;
                }
                _ => {}
            }
        }
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        for u in info.used_registers() {
            let reg = u.register().full_register();
            // Stack and instruction pointers are renamed or predicted; they carry no chain.
            if matches!(reg, Register::RIP | Register::RSP) {
                continue;
            }
            let name = format!("{reg:?}");
            match u.access() {
                OpAccess::Read | OpAccess::CondRead => reads.push(name),
                OpAccess::Write | OpAccess::CondWrite => writes.push(name),
                OpAccess::ReadWrite | OpAccess::ReadCondWrite => {
                    reads.push(name.clone());
                    writes.push(name);
                }
                _ => {}
            }
        }
        let bits = vector_bits(&i);
        let branch = matches!(
            i.flow_control(),
            FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch
        );
        out.push(Decoded {
            ip: i.ip(),
            next_ip: i.next_ip(),
            text,
            mnemonic: format!("{:?}", i.mnemonic()).to_ascii_lowercase(),
            loads,
            stores,
            bits,
            lanes: None,
            scalable: false,
            vector: bits > 0,
            branch_target: branch.then(|| i.near_branch_target()),
            reads,
            writes,
        });
    }
    loops_of(&out, ip, ip + code.len() as u64, table)
}

/// Decodes AArch64 machine code (SVE included) at `ip` and returns its loops, classified.
/// SVE is vector-length agnostic: FLOPs per iteration count one 128-bit granule per vector
/// instruction (multiply by VL/128 for the machine's vector length), and `scalable` is set.
pub fn analyze_aarch64(code: &[u8], ip: u64, table: &ClassTable) -> Vec<LoopSummary> {
    let mut out = Vec::new();
    for (k, word) in code.chunks(4).enumerate() {
        let addr = ip + 4 * k as u64;
        let Ok(w) = <[u8; 4]>::try_from(word) else {
            break;
        };
        let ins = match bad64::decode(u32::from_le_bytes(w), addr) {
            Ok(i) => i,
            Err(_) => {
                out.push(Decoded {
                    ip: addr,
                    next_ip: addr + 4,
                    text: format!(".word {:#010x}", u32::from_le_bytes(w)),
                    mnemonic: "(undecodable)".into(),
                    loads: 0,
                    stores: 0,
                    bits: 0,
                    lanes: None,
                    scalable: false,
                    vector: false,
                    branch_target: None,
                    reads: vec![],
                    writes: vec![],
                });
                continue;
            }
        };
        let m = ins.op().mnem().to_ascii_lowercase();
        let (mut regs, mut label, mut lanes, mut scalable, mut vector, mut bits) =
            (Vec::new(), None, None, false, false, 0u32);
        let mut note_reg =
            |r: &bad64::Reg, arr: Option<&bad64::ArrSpec>, regs: &mut Vec<String>| {
                let name = r.name();
                let canon = canonical_a64(name);
                if r.is_sve() {
                    scalable = true;
                    vector = true;
                    bits = bits.max(128);
                } else if r.is_simd() || name.starts_with('q') {
                    vector = true;
                    bits = bits.max(if name.starts_with('q') || r.size() >= 16 {
                        128
                    } else {
                        64
                    });
                }
                if let Some(a) = arr {
                    let l = match a {
                        bad64::ArrSpec::TwoDoubles(_) | bad64::ArrSpec::FourSingles(_)
                            if !r.is_sve() =>
                        {
                            Some(if matches!(a, bad64::ArrSpec::TwoDoubles(_)) {
                                2.0
                            } else {
                                4.0
                            })
                        }
                        bad64::ArrSpec::OneDouble(_) if r.is_sve() => Some(2.0),
                        bad64::ArrSpec::OneSingle(_) if r.is_sve() => Some(4.0),
                        bad64::ArrSpec::OneHalf(_) if r.is_sve() => Some(8.0),
                        _ => None,
                    };
                    if l.is_some() {
                        lanes = l;
                    }
                }
                if let Some(c) = canon {
                    regs.push(c);
                }
            };
        for op in ins.operands() {
            match op {
                bad64::Operand::Reg { reg, arrspec } => note_reg(reg, arrspec.as_ref(), &mut regs),
                bad64::Operand::QualReg { reg, .. } | bad64::Operand::ShiftReg { reg, .. } => {
                    note_reg(reg, None, &mut regs)
                }
                bad64::Operand::MultiReg { regs: rs, arrspec } => {
                    for r in rs.iter().flatten() {
                        note_reg(r, arrspec.as_ref(), &mut regs);
                    }
                }
                bad64::Operand::Label(imm) => {
                    label = Some(match imm {
                        bad64::Imm::Signed(v) => *v as u64,
                        bad64::Imm::Unsigned(v) => *v,
                    })
                }
                _ => {}
            }
        }
        let is_load = m.starts_with("ld") && !m.starts_with("ldadd");
        let is_store = m.starts_with("st");
        let is_branch = m == "b"
            || m.starts_with("b.")
            || m.starts_with("bc.")
            || ["cbz", "cbnz", "tbz", "tbnz"].contains(&m.as_str());
        // Operand 0 is the destination except for stores, compares and branches; an
        // accumulating op (fmla, mla, fmad) also reads it.
        let no_dest = is_store
            || is_branch
            || m.starts_with("cmp")
            || m.starts_with("cmn")
            || m.starts_with("fcmp")
            || m.starts_with("tst")
            || m.starts_with("ptest");
        let (reads, writes) = if no_dest || regs.is_empty() {
            (regs.clone(), vec![])
        } else {
            let acc = [
                "fmla", "fmls", "fnmla", "fnmls", "fmad", "fmsb", "mla", "mls", "fadda",
            ]
            .iter()
            .any(|a| m.starts_with(a));
            let mut r = regs[1..].to_vec();
            if acc {
                r.push(regs[0].clone());
            }
            (r, vec![regs[0].clone()])
        };
        out.push(Decoded {
            ip: addr,
            next_ip: addr + 4,
            text: ins.to_string(),
            mnemonic: m,
            loads: u32::from(is_load),
            stores: u32::from(is_store),
            bits,
            lanes: if vector { lanes } else { Some(1.0) },
            scalable,
            vector,
            branch_target: if is_branch { label } else { None },
            reads,
            writes,
        });
    }
    loops_of(&out, ip, ip + code.len() as u64, table)
}

/// A register's architectural name for dependency tracking (w0 and x0 are one register,
/// b0/h0/s0/d0/q0/v0/z0 are one).
fn canonical_a64(name: &str) -> Option<String> {
    let (p, rest) = name.split_at(1.min(name.len()));
    if rest.is_empty() || !rest.chars().all(|c| c.is_ascii_digit()) {
        return match name {
            "sp" | "wsp" | "xzr" | "wzr" => None,
            _ => Some(name.to_string()),
        };
    }
    match p {
        "w" | "x" => Some(format!("x{rest}")),
        "b" | "h" | "s" | "d" | "q" | "v" | "z" => Some(format!("z{rest}")),
        _ => Some(name.to_string()),
    }
}

/// Finds back edges in decoded code and summarises each loop.
fn loops_of(instrs: &[Decoded], ip: u64, end: u64, table: &ClassTable) -> Vec<LoopSummary> {
    let mut ranges: BTreeMap<u64, u64> = BTreeMap::new();
    for i in instrs {
        if let Some(t) = i.branch_target
            && t <= i.ip
            && t >= ip
            && t < end
        {
            let e = ranges.entry(t).or_insert(0);
            *e = (*e).max(i.next_ip);
        }
    }
    let spans: Vec<(u64, u64)> = ranges.into_iter().collect();
    let mut out = Vec::new();
    for &(s, e) in &spans {
        let innermost = !spans
            .iter()
            .any(|&(s2, e2)| (s2, e2) != (s, e) && s <= s2 && e2 <= e);
        let body: Vec<&Decoded> = instrs.iter().filter(|i| i.ip >= s && i.ip < e).collect();
        out.push(summarize(&body, s, e, innermost, table));
    }
    out
}

fn vector_bits(i: &Instruction) -> u32 {
    let mut bits = 0;
    for k in 0..i.op_count() {
        if i.op_kind(k) == OpKind::Register {
            let r = i.op_register(k);
            if r.is_xmm() || r.is_ymm() || r.is_zmm() {
                bits = bits.max(r.size() as u32 * 8);
            }
        }
    }
    bits
}

fn flops_of(d: &Decoded, class: &str) -> f64 {
    let m = d.mnemonic.as_str();
    if class != "FP" && class != "DIV" {
        return 0.0;
    }
    let arith = [
        "add", "sub", "mul", "div", "sqrt", "madd", "msub", "mla", "mls", "mad", "msb",
    ];
    if !arith.iter().any(|a| m.contains(a))
        || m.contains("cvt")
        || m.contains("haddp")
        || m.ends_with('v')
    {
        return 0.0;
    }
    let lanes = match d.lanes {
        Some(l) => l,
        None if m.ends_with("pd") => (d.bits.max(128) / 64) as f64,
        None if m.ends_with("ps") => (d.bits.max(128) / 32) as f64,
        None => 1.0,
    };
    let fma = (m.starts_with("vf") && (m.contains("madd") || m.contains("msub")))
        || [
            "fmla", "fmls", "fnmla", "fnmls", "fmad", "fmsb", "fnmad", "fnmsb", "fmadd", "fmsub",
            "fnmadd", "fnmsub",
        ]
        .iter()
        .any(|f| m.starts_with(f));
    lanes * if fma { 2.0 } else { 1.0 }
}

fn summarize(
    body: &[&Decoded],
    start: u64,
    end: u64,
    innermost: bool,
    table: &ClassTable,
) -> LoopSummary {
    let mut counts = ClassCounts::new();
    let mut other = BTreeMap::new();
    let mut listing = Vec::new();
    let mut flops = 0.0;
    let mut vbits = 0;
    let mut scalable = false;
    let mut n = 0;
    // (reads, writes, latency) per instruction for the critical path.
    let mut deps: Vec<(&[String], &[String], f64)> = Vec::new();
    for d in body {
        let kind = table.classify(&d.mnemonic);
        let mut class = None;
        let mut f = 0.0;
        if kind != Classified::Ignored {
            n += 1;
            vbits = vbits.max(d.bits);
            scalable |= d.scalable;
            *counts.entry("LOAD".into()).or_insert(0.0) += d.loads as f64;
            *counts.entry("STORE".into()).or_insert(0.0) += d.stores as f64;
            let pure_move = (d.loads + d.stores) > 0 && table.is_move(&d.mnemonic);
            if !pure_move {
                let mut c = match kind {
                    Classified::Class(c) => c.to_string(),
                    _ => {
                        *other.entry(d.mnemonic.clone()).or_insert(0) += 1;
                        OTHER.to_string()
                    }
                };
                // One mnemonic for scalar and vector integer work (aarch64 `add`): the
                // registers decide.
                if c == "INT" && d.vector && table.vector_int_from_registers {
                    c = "SIMD_INT".into();
                }
                f = flops_of(d, &c);
                *counts.entry(c.clone()).or_insert(0.0) += 1.0;
                class = Some(c);
            }
            let lat = class.as_deref().map(|c| table.latency_of(c)).unwrap_or(0.0)
                + if d.loads > 0 {
                    table.latency_of("LOAD")
                } else {
                    0.0
                };
            let floor = if class.is_some() || d.loads + d.stores > 0 {
                1.0
            } else {
                0.0
            };
            deps.push((&d.reads, &d.writes, lat.max(floor)));
        }
        flops += f;
        listing.push(LoopInstruction {
            address: d.ip,
            text: d.text.clone(),
            mnemonic: d.mnemonic.clone(),
            class,
            loads: d.loads,
            stores: d.stores,
            flops: f,
        });
    }
    counts.retain(|_, v| *v != 0.0);
    LoopSummary {
        start,
        end,
        innermost,
        instructions: n,
        counts,
        flops_per_iter: flops,
        vector_bits: vbits,
        scalable,
        other,
        critical_path_cycles: loop_carried_path(&deps),
        listing,
    }
}

/// The loop-carried critical path per iteration: run the register dataflow over `2K`
/// unrolled copies and take the growth of the longest path from copy `K` to copy `2K`.
fn loop_carried_path(deps: &[(&[String], &[String], f64)]) -> f64 {
    const K: usize = 8;
    let mut ready: BTreeMap<&str, f64> = BTreeMap::new();
    let mut longest = 0.0f64;
    let mut at_k = 0.0;
    for copy in 0..2 * K {
        for (r, w, lat) in deps {
            let st = r
                .iter()
                .map(|x| ready.get(x.as_str()).copied().unwrap_or(0.0))
                .fold(0.0, f64::max);
            let fin = st + lat;
            for x in w.iter() {
                ready.insert(x.as_str(), fin);
            }
            longest = longest.max(fin);
        }
        if copy + 1 == K {
            at_k = longest;
        }
    }
    (longest - at_k) / K as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_assembled_loop() {
        // 0: vmovupd ymm0,[rdi+rax*8]; vfmadd231pd ymm0,ymm1,[rsi+rax*8]; vmovupd [rdx+rax*8],ymm0;
        //    add rax,4; cmp rax,rcx; jb 0
        let code: &[u8] = &[
            0xc5, 0xfd, 0x10, 0x04, 0xc7, // vmovupd ymm0,[rdi+rax*8]
            0xc4, 0xe2, 0xf5, 0xb8, 0x04, 0xc6, // vfmadd231pd ymm0,ymm1,[rsi+rax*8]
            0xc5, 0xfd, 0x11, 0x04, 0xc2, // vmovupd [rdx+rax*8],ymm0
            0x48, 0x83, 0xc0, 0x04, // add rax,4
            0x48, 0x39, 0xc8, // cmp rax,rcx
            0x72, 0xe7, // jb -25
        ];
        let t = ClassTable::builtin("x86-64").unwrap();
        let loops = analyze_x86(code, 0x1000, &t);
        assert_eq!(loops.len(), 1, "{loops:#?}");
        let l = &loops[0];
        assert!(l.innermost);
        assert_eq!(l.counts["LOAD"], 2.0);
        assert_eq!(l.counts["STORE"], 1.0);
        assert_eq!(l.counts["FP"], 1.0);
        assert_eq!(l.counts["INT"], 3.0);
        assert_eq!(l.flops_per_iter, 8.0);
        assert_eq!(l.vector_bits, 256);
        // rax += 4 each iteration: a 1-cycle loop-carried chain.
        assert!(
            (l.critical_path_cycles - 1.0).abs() < 1e-9,
            "{}",
            l.critical_path_cycles
        );
    }

    #[test]
    fn unknown_instructions_are_other() {
        // aesenc xmm0,xmm1 ; dec ecx ; jne back
        let code: &[u8] = &[0x66, 0x0f, 0x38, 0xdc, 0xc1, 0xff, 0xc9, 0x75, 0xf7];
        let t = ClassTable::builtin("x86-64").unwrap();
        let l = &analyze_x86(code, 0, &t)[0];
        assert_eq!(l.counts[OTHER], 1.0);
        assert_eq!(l.other["aesenc"], 1);
    }

    #[test]
    fn an_sve_loop() {
        // GCC's SVE triad: ld1d, ld1d, fmul, fadd, st1d, add, whilelo, b.ne (back to start).
        let words: [u32; 8] = [
            0xa5e44061, 0xa5e44042, 0x65c10801, 0x65c20021, 0xe5e44021, 0x8b050084, 0x25e01c80,
            0x54ffff21,
        ];
        let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let t = ClassTable::builtin("aarch64").unwrap();
        let loops = analyze_aarch64(&code, 0x400b10, &t);
        assert_eq!(loops.len(), 1, "{loops:#?}");
        let l = &loops[0];
        assert!(l.scalable && l.innermost);
        assert_eq!(l.counts["LOAD"], 2.0);
        assert_eq!(l.counts["STORE"], 1.0);
        assert_eq!(l.counts["FP"], 2.0);
        assert_eq!(l.counts["SIMD_INT"], 1.0); // whilelo
        assert_eq!(l.counts["INT"], 2.0); // add, b.ne
        assert_eq!(l.flops_per_iter, 4.0); // 2 lanes of a 128-bit granule x 2 FP ops
        assert!(
            (l.critical_path_cycles - 1.0).abs() < 1e-9,
            "{}",
            l.critical_path_cycles
        );
    }

    #[test]
    fn straight_line_code_has_no_loop() {
        let t = ClassTable::builtin("x86-64").unwrap();
        assert!(analyze_x86(&[0x48, 0x01, 0xc8, 0xc3], 0, &t).is_empty());
    }
}
