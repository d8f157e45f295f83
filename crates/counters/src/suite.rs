//! The validation suite of seed 001 (section 3.2, Figures 7-10 and 36/37): micro-benchmarks
//! whose work is known analytically, so that the counters' values can be checked against it.
//!
//! * **FP crunch**: one kernel per operation (add, mul, FMA, div, sqrt) and per vector width
//!   (scalar, 128, 256, 512 bits: the ones this CPU has), written in assembly so that the
//!   instructions counted are exactly the ones written: 8 independent accumulators, 8
//!   instructions per iteration, no other FP instruction. FLOPs and FP instructions are exact.
//! * **Transcendentals** (`cos`, `log`, `exp`, `sin`): one libm call per element. Their
//!   analytical value is per call (one "mathematical" FLOP); what libm executes is counted and
//!   reported per call, never judged (the seed found cos and log do not agree, Figures 9/10).
//! * **STREAM** copy, scale, add and triad at a sweep of sizes: FLOPs and bytes loaded and
//!   stored per element are exact (copy 0/8/8, scale 1/8/8, add 1/16/8, triad 2/16/8).
//! * **Cache conflict**: 16 arrays of 1 KiB summed element-wise, spaced by an offset; at an
//!   offset that is a multiple of the L1 way size every array maps to the same sets.
//! * **Matmul ladder**: naive (ijk), interchanged (ikj) and blocked (ikj in tiles) products of
//!   two n x n matrices: 2 n^3 FLOPs each, whatever the order.
//!
//! Every kernel is a `#[no_mangle]` function, so an emulator can count only its instructions
//! (`hpcscope mix --function`) in a run of `hpcscope counters kernel ...`.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::error::{Error, Result};

/// Accumulators (and FP instructions) per iteration of an FP-crunch kernel.
pub const CRUNCH_ACC: u64 = 8;

/// An FP operation of the crunch kernels.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// a += c
    Add,
    /// a *= c
    Mul,
    /// a += b * c, fused
    Fma,
    /// a /= c
    Div,
    /// a = sqrt(a)
    Sqrt,
}

impl Op {
    /// All operations.
    pub const ALL: [Op; 5] = [Op::Add, Op::Mul, Op::Fma, Op::Div, Op::Sqrt];
    /// Name.
    pub fn name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Mul => "mul",
            Op::Fma => "fma",
            Op::Div => "div",
            Op::Sqrt => "sqrt",
        }
    }
    /// FLOPs per lane.
    pub fn flops(self) -> u64 {
        if self == Op::Fma { 2 } else { 1 }
    }
}

/// A vector width of the crunch kernels.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Width {
    /// One double.
    Scalar,
    /// 128 bits (SSE2, NEON).
    W128,
    /// 256 bits (AVX, AVX2).
    W256,
    /// 512 bits (AVX-512).
    W512,
}

impl Width {
    /// All widths.
    pub const ALL: [Width; 4] = [Width::Scalar, Width::W128, Width::W256, Width::W512];
    /// Name (`scalar`, `128`...).
    pub fn name(self) -> &'static str {
        match self {
            Width::Scalar => "scalar",
            Width::W128 => "128",
            Width::W256 => "256",
            Width::W512 => "512",
        }
    }
    /// Doubles per instruction.
    pub fn lanes(self) -> u64 {
        match self {
            Width::Scalar => 1,
            Width::W128 => 2,
            Width::W256 => 4,
            Width::W512 => 8,
        }
    }
    /// The width key of the emulator's counts (`f64_256`...).
    pub fn mix_key(self) -> String {
        match self {
            Width::Scalar => "f64_scalar".into(),
            w => format!("f64_{}", w.name()),
        }
    }
    fn parse(s: &str) -> Option<Width> {
        Width::ALL.into_iter().find(|w| w.name() == s)
    }
}

/// Whether this CPU runs `op` at `w` (the kernels need SSE2, AVX, FMA, AVX-512F).
pub fn supported(op: Op, w: Width) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let fma = op != Op::Fma || std::arch::is_x86_feature_detected!("fma");
        match w {
            Width::Scalar | Width::W128 => fma,
            Width::W256 => std::arch::is_x86_feature_detected!("avx") && fma,
            Width::W512 => std::arch::is_x86_feature_detected!("avx512f"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (op, w);
        false
    }
}

/// The kernel groups a validation can be limited to (the first part of a kernel's name).
pub const GROUPS: [&str; 5] = ["fp", "libm", "stream", "conflict", "matmul"];

/// Whether `groups` selects `group` (an empty list selects every group).
pub fn selects(groups: &[String], group: &str) -> bool {
    groups.is_empty() || groups.iter().any(|g| g == group)
}

/// The plan's kernels in `groups` (every kernel when the list is empty).
pub fn select(plan: &Plan, groups: &[String]) -> Vec<Kernel> {
    plan.kernels()
        .into_iter()
        .filter(|k| {
            let s = k.to_string();
            s.split('.').next().is_some_and(|g| selects(groups, g))
        })
        .collect()
}

/// Widths this CPU has (for every operation).
pub fn host_widths() -> Vec<Width> {
    Width::ALL
        .into_iter()
        .filter(|w| Op::ALL.iter().all(|o| supported(*o, *w)))
        .collect()
}

/// Widths of the crunch kernels an emulator runs: what QEMU's TCG emulates of x86-64 (up to
/// AVX2, no AVX-512); none where the kernels are not compiled (they are x86-64 assembly).
pub fn emulated_widths() -> Vec<Width> {
    if cfg!(target_arch = "x86_64") {
        vec![Width::Scalar, Width::W128, Width::W256]
    } else {
        Vec::new()
    }
}

/// Widths of the crunch kernels `mix` counts: this CPU's when its native engine counts
/// them (`native`: AVX-512 included), else what QEMU emulates ([`emulated_widths`]).
pub fn mix_widths(native: bool) -> Vec<Width> {
    if native {
        host_widths()
    } else {
        emulated_widths()
    }
}

/// What the report says about the crunch kernels a plan of `widths` leaves out, one line
/// per reason (empty when every width runs): no kernel family is dropped without a word.
pub fn crunch_omissions(widths: &[Width], emulated: bool) -> Vec<String> {
    if !cfg!(target_arch = "x86_64") {
        return vec![format!(
            "fp: no FP-crunch kernels on {}: they are written in x86-64 assembly (SSE2, AVX, \
             FMA, AVX-512); the other groups ran",
            std::env::consts::ARCH
        )];
    }
    let mut why: Vec<(String, Vec<String>)> = Vec::new();
    for w in Width::ALL.into_iter().filter(|w| !widths.contains(w)) {
        let label = match w {
            Width::Scalar => "scalar".to_string(),
            w => format!("{}-bit", w.name()),
        };
        let reason = if emulated {
            "the emulator (QEMU's TCG) runs x86-64 up to AVX2, not AVX-512".to_string()
        } else {
            let lacks: Vec<&str> = Op::ALL
                .iter()
                .filter(|o| !supported(**o, w))
                .map(|o| o.name())
                .collect();
            let ext = match w {
                Width::W512 => "AVX-512F",
                Width::W256 if lacks.len() > 1 => "AVX",
                _ => "FMA",
            };
            if lacks.is_empty() {
                "not requested".to_string()
            } else {
                format!("this CPU lacks {ext} (for {})", lacks.join(", "))
            }
        };
        match why.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, ws)) => ws.push(label),
            None => why.push((reason, vec![label])),
        }
    }
    why.into_iter()
        .map(|(r, ws)| format!("fp: the {} kernels did not run: {r}", ws.join(", ")))
        .collect()
}

/// A libm function of the transcendental kernels.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Libm {
    /// cos
    Cos,
    /// log
    Log,
    /// exp
    Exp,
    /// sin
    Sin,
}

impl Libm {
    /// All of them.
    pub const ALL: [Libm; 4] = [Libm::Cos, Libm::Log, Libm::Exp, Libm::Sin];
    /// Name.
    pub fn name(self) -> &'static str {
        match self {
            Libm::Cos => "cos",
            Libm::Log => "log",
            Libm::Exp => "exp",
            Libm::Sin => "sin",
        }
    }
}

/// A STREAM operation.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// a = b
    Copy,
    /// a = s b
    Scale,
    /// a = b + c
    Add,
    /// a = b + s c
    Triad,
}

impl Stream {
    /// All four.
    pub const ALL: [Stream; 4] = [Stream::Copy, Stream::Scale, Stream::Add, Stream::Triad];
    /// Name.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Copy => "copy",
            Stream::Scale => "scale",
            Stream::Add => "add",
            Stream::Triad => "triad",
        }
    }
    /// Arrays read.
    pub fn reads(self) -> u64 {
        match self {
            Stream::Copy | Stream::Scale => 1,
            Stream::Add | Stream::Triad => 2,
        }
    }
    /// FLOPs per element.
    pub fn flops(self) -> u64 {
        match self {
            Stream::Copy => 0,
            Stream::Scale | Stream::Add => 1,
            Stream::Triad => 2,
        }
    }
}

/// Matmul loop orders of the ladder.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Matmul {
    /// i, j, k with a dot product in the inner loop.
    Naive,
    /// i, k, j: the inner loop streams rows of B and C.
    Interchange,
    /// i, k, j in tiles of this many rows and columns.
    Blocked(u32),
}

/// Arrays of the conflict kernel.
pub const CONFLICT_ARRAYS: u64 = 16;
/// Doubles per array of the conflict kernel (1 KiB).
pub const CONFLICT_LEN: u64 = 128;

/// One micro-benchmark and its size.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Kernel {
    /// FP crunch: `iters` iterations of 8 instructions.
    Crunch {
        /// Operation.
        op: Op,
        /// Vector width.
        width: Width,
        /// Iterations.
        iters: u64,
    },
    /// One libm call per element of `n`.
    Libm {
        /// Function.
        f: Libm,
        /// Calls.
        n: u64,
    },
    /// STREAM over three arrays of `n` doubles, `reps` times.
    Stream {
        /// Operation.
        op: Stream,
        /// Elements per array.
        n: u64,
        /// Repetitions.
        reps: u64,
    },
    /// 16 arrays of 1 KiB spaced `offset` bytes apart, summed element-wise `reps` times.
    Conflict {
        /// Distance between the arrays' starts, bytes (a multiple of 8, at least 1 KiB).
        offset: u64,
        /// Repetitions.
        reps: u64,
    },
    /// C += A B, n x n doubles.
    Matmul {
        /// Loop order.
        order: Matmul,
        /// Matrix size.
        n: u64,
    },
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kernel::Crunch { op, width, .. } => write!(f, "fp.{}.{}", op.name(), width.name()),
            Kernel::Libm { f: l, .. } => write!(f, "libm.{}", l.name()),
            Kernel::Stream { op, n, .. } => {
                write!(f, "stream.{}.{}", op.name(), size_label(3 * n * 8))
            }
            Kernel::Conflict { offset, .. } => write!(f, "conflict.{offset}"),
            Kernel::Matmul { order, n } => match order {
                Matmul::Naive => write!(f, "matmul.naive.{n}"),
                Matmul::Interchange => write!(f, "matmul.ikj.{n}"),
                Matmul::Blocked(b) => write!(f, "matmul.blocked{b}.{n}"),
            },
        }
    }
}

/// `32KiB`, `1MiB`, or bytes.
pub fn size_label(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{}KiB", bytes >> 10)
    } else {
        format!("{bytes}B")
    }
}

/// The kernels in batches an emulator counts in one run each: kernels without callees
/// together (each its own function), one batch per kernel with callees (counted with
/// them), never one function twice in a batch.
pub fn batches(kernels: &[Kernel]) -> Vec<Vec<Kernel>> {
    let mut batches: Vec<Vec<Kernel>> = Vec::new();
    for k in kernels {
        match batches.iter_mut().find(|b| {
            !k.has_callees() && !b[0].has_callees() && b.iter().all(|x| x.symbol() != k.symbol())
        }) {
            Some(b) => b.push(*k),
            None => batches.push(vec![*k]),
        }
    }
    batches
}

/// What a kernel does, analytically: metric id -> value. The ids are those of the
/// catalogue (`flops`, `ls_bytes`, `ai`, `flops_per_fpins`) plus `fp_ins` (FP arithmetic
/// instructions), `ld_bytes`, `st_bytes` and `calls`.
pub type Values = BTreeMap<String, f64>;

impl Kernel {
    /// The symbol of the kernel's function (what an emulator counts).
    pub fn symbol(&self) -> String {
        match self {
            Kernel::Crunch { op, width, .. } => {
                format!("hpcscope_kernel_{}_{}", op.name(), width.name())
            }
            Kernel::Libm { f, .. } => format!("hpcscope_kernel_libm_{}", f.name()),
            Kernel::Stream { op, .. } => format!("hpcscope_kernel_stream_{}", op.name()),
            Kernel::Conflict { .. } => "hpcscope_kernel_conflict".into(),
            Kernel::Matmul { order, .. } => match order {
                Matmul::Naive => "hpcscope_kernel_matmul_naive".into(),
                Matmul::Interchange => "hpcscope_kernel_matmul_ikj".into(),
                Matmul::Blocked(_) => "hpcscope_kernel_matmul_blocked".into(),
            },
        }
    }

    /// Whether the kernel calls other functions (libm): an emulator must count its callees.
    pub fn has_callees(&self) -> bool {
        matches!(self, Kernel::Libm { .. })
    }

    /// The analytical work.
    pub fn expected(&self) -> Values {
        let mut v = Values::new();
        let mut put = |k: &str, x: u64| {
            v.insert(k.to_string(), x as f64);
        };
        match *self {
            Kernel::Crunch { op, width, iters } => {
                let ins = CRUNCH_ACC * iters;
                put("fp_ins", ins);
                put("flops", ins * width.lanes() * op.flops());
                v.insert(
                    "flops_per_fpins".into(),
                    (width.lanes() * op.flops()) as f64,
                );
            }
            Kernel::Libm { n, .. } => {
                put("calls", n);
                // The mathematical count: one operation a call.
                put("flops", n);
            }
            Kernel::Stream { op, n, reps } => {
                let e = n * reps;
                put("flops", op.flops() * e);
                put("ld_bytes", 8 * op.reads() * e);
                put("st_bytes", 8 * e);
                put("ls_bytes", 8 * (op.reads() + 1) * e);
                if op.flops() > 0 {
                    v.insert(
                        "ai".into(),
                        op.flops() as f64 / (8 * (op.reads() + 1)) as f64,
                    );
                }
            }
            Kernel::Conflict { reps, .. } => {
                let e = CONFLICT_LEN * reps;
                put("flops", (CONFLICT_ARRAYS - 1) * e);
                put("ld_bytes", 8 * CONFLICT_ARRAYS * e);
                put("st_bytes", 8 * e);
                put("ls_bytes", 8 * (CONFLICT_ARRAYS + 1) * e);
            }
            Kernel::Matmul { n, .. } => put("flops", 2 * n * n * n),
        }
        v
    }

    /// Parses the name printed by `Display` with its size parameters (`fp.fma.256:1000`,
    /// `stream.triad:4096:10`, `conflict:4096:100`, `matmul.blocked16:64`, `libm.cos:1000`).
    pub fn parse(s: &str) -> Result<Kernel> {
        let bad = |why: &str| {
            Error::Input(format!(
                "kernel '{s}': {why}; write fp.OP.WIDTH:ITERS, libm.F:N, stream.OP:N:REPS, \
                 conflict:OFFSET:REPS or matmul.ORDER:N (OP add|mul|fma|div|sqrt, WIDTH \
                 scalar|128|256|512, F cos|log|exp|sin, ORDER naive|ikj|blockedB)"
            ))
        };
        let mut parts = s.split(':');
        let name = parts.next().unwrap_or_default();
        let nums: Vec<u64> = parts
            .map(|p| {
                p.parse::<u64>()
                    .map_err(|_| bad("a size is not a whole number"))
            })
            .collect::<Result<_>>()?;
        let num = |i: usize| {
            nums.get(i)
                .copied()
                .filter(|x| *x > 0)
                .ok_or_else(|| bad("a size is missing or 0"))
        };
        let words: Vec<&str> = name.split('.').collect();
        let k = match words.as_slice() {
            ["fp", op, w] => Kernel::Crunch {
                op: *Op::ALL
                    .iter()
                    .find(|o| o.name() == *op)
                    .ok_or_else(|| bad("unknown operation"))?,
                width: Width::parse(w).ok_or_else(|| bad("unknown width"))?,
                iters: num(0)?,
            },
            ["libm", f] => Kernel::Libm {
                f: *Libm::ALL
                    .iter()
                    .find(|l| l.name() == *f)
                    .ok_or_else(|| bad("unknown libm function"))?,
                n: num(0)?,
            },
            ["stream", op] => Kernel::Stream {
                op: *Stream::ALL
                    .iter()
                    .find(|o| o.name() == *op)
                    .ok_or_else(|| bad("unknown STREAM operation"))?,
                n: num(0)?,
                reps: num(1)?,
            },
            ["conflict"] => {
                let offset = num(0)?;
                if offset % 8 != 0 || offset < CONFLICT_LEN * 8 {
                    return Err(bad("the offset must be a multiple of 8 and at least 1024"));
                }
                Kernel::Conflict {
                    offset,
                    reps: num(1)?,
                }
            }
            ["matmul", order] => {
                let n = num(0)?;
                let order = match *order {
                    "naive" => Matmul::Naive,
                    "ikj" => Matmul::Interchange,
                    o => match o
                        .strip_prefix("blocked")
                        .and_then(|b| b.parse::<u32>().ok())
                    {
                        Some(b) if b > 0 && n % b as u64 == 0 => Matmul::Blocked(b),
                        _ => return Err(bad("blocked needs a tile size that divides n")),
                    },
                };
                Kernel::Matmul { order, n }
            }
            _ => return Err(bad("unknown kernel")),
        };
        Ok(k)
    }

    /// The argument [`Kernel::parse`] reads back.
    pub fn arg(&self) -> String {
        match *self {
            Kernel::Crunch { iters, .. } => format!("{self}:{iters}"),
            Kernel::Libm { n, .. } => format!("{self}:{n}"),
            Kernel::Stream { op, n, reps } => format!("stream.{}:{n}:{reps}", op.name()),
            Kernel::Conflict { offset, reps } => format!("conflict:{offset}:{reps}"),
            Kernel::Matmul { order, n } => {
                let o = match order {
                    Matmul::Naive => "naive".to_string(),
                    Matmul::Interchange => "ikj".into(),
                    Matmul::Blocked(b) => format!("blocked{b}"),
                };
                format!("matmul.{o}:{n}")
            }
        }
    }

    /// Whether this CPU can run it.
    pub fn runs_here(&self) -> bool {
        match self {
            Kernel::Crunch { op, width, .. } => supported(*op, *width),
            _ => true,
        }
    }
}

/// The sizes of the suite.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Crunch iterations (8 instructions each).
    pub crunch_iters: u64,
    /// Widths of the crunch kernels.
    pub widths: Vec<Width>,
    /// libm calls per function.
    pub libm_calls: u64,
    /// STREAM footprints (three arrays together), bytes.
    pub stream_bytes: Vec<u64>,
    /// STREAM elements moved per size (repetitions = this / elements, at least 1).
    pub stream_elements: u64,
    /// Conflict offsets, bytes.
    pub conflict_offsets: Vec<u64>,
    /// Conflict repetitions.
    pub conflict_reps: u64,
    /// Matmul size.
    pub matmul_n: u64,
    /// Matmul tiles of the blocked steps.
    pub matmul_blocks: Vec<u32>,
}

impl Plan {
    /// A native run: about a second in all on a current core.
    pub fn native(widths: Vec<Width>, caches: &[u64]) -> Plan {
        Plan {
            crunch_iters: 2_000_000,
            widths,
            libm_calls: 200_000,
            stream_bytes: stream_sweep(caches),
            stream_elements: 20_000_000,
            conflict_offsets: vec![4096, 4096 + 64],
            conflict_reps: 20_000,
            matmul_n: 256,
            matmul_blocks: vec![16, 64],
        }
    }

    /// A run under an emulator: the counts are exact at any size, so small sizes.
    pub fn emulated(widths: Vec<Width>) -> Plan {
        Plan {
            crunch_iters: 2_000,
            widths,
            libm_calls: 1_000,
            stream_bytes: vec![24 << 10, 384 << 10, 6 << 20],
            stream_elements: 600_000,
            conflict_offsets: vec![4096, 4096 + 64],
            conflict_reps: 200,
            matmul_n: 64,
            matmul_blocks: vec![16, 32],
        }
    }

    /// The smallest sizes that still resolve 0.5 % under the emulator (one STREAM size, a
    /// 32 x 32 matmul): the whole suite in seconds, for smoke tests.
    pub fn quick(widths: Vec<Width>) -> Plan {
        Plan {
            crunch_iters: 500,
            widths,
            libm_calls: 200,
            stream_bytes: vec![24 << 10],
            stream_elements: 3 << 10,
            conflict_offsets: vec![4096, 4096 + 64],
            conflict_reps: 20,
            matmul_n: 32,
            matmul_blocks: vec![16],
        }
    }

    /// The kernels, in the order the report lists them.
    pub fn kernels(&self) -> Vec<Kernel> {
        let mut k = Vec::new();
        for op in Op::ALL {
            for &width in &self.widths {
                k.push(Kernel::Crunch {
                    op,
                    width,
                    iters: self.crunch_iters,
                });
            }
        }
        for f in Libm::ALL {
            k.push(Kernel::Libm {
                f,
                n: self.libm_calls,
            });
        }
        for &b in &self.stream_bytes {
            let n = (b / 24).max(1);
            for op in Stream::ALL {
                k.push(Kernel::Stream {
                    op,
                    n,
                    reps: (self.stream_elements / n).max(1),
                });
            }
        }
        for &offset in &self.conflict_offsets {
            k.push(Kernel::Conflict {
                offset,
                reps: self.conflict_reps,
            });
        }
        k.push(Kernel::Matmul {
            order: Matmul::Naive,
            n: self.matmul_n,
        });
        k.push(Kernel::Matmul {
            order: Matmul::Interchange,
            n: self.matmul_n,
        });
        for &b in &self.matmul_blocks {
            if self.matmul_n.is_multiple_of(b as u64) {
                k.push(Kernel::Matmul {
                    order: Matmul::Blocked(b),
                    n: self.matmul_n,
                });
            }
        }
        k
    }
}

/// STREAM footprints around the caches, as the seed sizes them: half of each level (L1 at
/// half its size; the others mid-level) and four times the last level (memory).
pub fn stream_sweep(caches: &[u64]) -> Vec<u64> {
    let mut v: Vec<u64> = caches.iter().map(|c| (c / 2).max(3 * 1024)).collect();
    v.push(caches.last().map_or(256 << 20, |c| 4 * c).min(1 << 30));
    let v: Vec<u64> = v.into_iter().map(|b| b / 24 * 24).collect();
    let mut out: Vec<u64> = Vec::new();
    for b in v {
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

/// Data cache sizes of CPU 0 from sysfs (L1d, L2, L3...), smallest first; empty if unknown.
pub fn host_data_caches() -> Vec<u64> {
    hpcscope_host::facts::data_cache_sizes()
}

/// Working memory of a kernel, allocated (and touched) before it runs.
pub struct Buffers {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Buffers {
    /// Allocates and initialises what `k` needs.
    pub fn new(k: &Kernel) -> Buffers {
        let (na, nb, nc) = match *k {
            Kernel::Crunch { .. } => (0, 0, 0),
            Kernel::Libm { n, .. } => (n as usize, 0, 0),
            Kernel::Stream { n, .. } => (n as usize, n as usize, n as usize),
            Kernel::Conflict { offset, .. } => (
                CONFLICT_LEN as usize,
                ((CONFLICT_ARRAYS - 1) * offset / 8 + CONFLICT_LEN) as usize,
                0,
            ),
            Kernel::Matmul { n, .. } => {
                let m = (n * n) as usize;
                (m, m, m)
            }
        };
        Buffers {
            a: (0..na).map(|i| 0.5 + (i % 7) as f64 * 0.125).collect(),
            b: (0..nb).map(|i| 1.0 + (i % 5) as f64 * 0.25).collect(),
            c: (0..nc).map(|i| 2.0 - (i % 3) as f64 * 0.5).collect(),
        }
    }

    /// Runs `k` once on these buffers; returns a checksum (so nothing is optimised away).
    pub fn run(&mut self, k: &Kernel) -> f64 {
        let r = match *k {
            Kernel::Crunch { op, width, iters } => crunch(op, width, iters),
            Kernel::Libm { f, n } => {
                let x = &self.a[..n as usize];
                // SAFETY: the pointer and length are those of a live slice.
                unsafe {
                    match f {
                        Libm::Cos => hpcscope_kernel_libm_cos(x.as_ptr(), x.len()),
                        Libm::Log => hpcscope_kernel_libm_log(x.as_ptr(), x.len()),
                        Libm::Exp => hpcscope_kernel_libm_exp(x.as_ptr(), x.len()),
                        Libm::Sin => hpcscope_kernel_libm_sin(x.as_ptr(), x.len()),
                    }
                }
            }
            Kernel::Stream { op, n, reps } => {
                let (a, b, c) = (&mut self.a, &self.b, &self.c);
                let n = n as usize;
                for _ in 0..reps {
                    // SAFETY: three live slices of n elements; `a` does not alias b or c.
                    unsafe {
                        match op {
                            Stream::Copy => {
                                hpcscope_kernel_stream_copy(a.as_mut_ptr(), b.as_ptr(), n)
                            }
                            Stream::Scale => {
                                hpcscope_kernel_stream_scale(a.as_mut_ptr(), b.as_ptr(), 3.0, n)
                            }
                            Stream::Add => hpcscope_kernel_stream_add(
                                a.as_mut_ptr(),
                                b.as_ptr(),
                                c.as_ptr(),
                                n,
                            ),
                            Stream::Triad => hpcscope_kernel_stream_triad(
                                a.as_mut_ptr(),
                                b.as_ptr(),
                                c.as_ptr(),
                                3.0,
                                n,
                            ),
                        }
                    }
                    std::hint::black_box(&mut *a);
                }
                a.iter().step_by(97).sum()
            }
            Kernel::Conflict { offset, reps } => {
                // SAFETY: `b` holds 15 offsets plus one array; `a` one array.
                unsafe {
                    hpcscope_kernel_conflict(
                        self.a.as_mut_ptr(),
                        self.b.as_ptr(),
                        (offset / 8) as usize,
                        reps as usize,
                    )
                };
                self.a.iter().sum()
            }
            Kernel::Matmul { order, n } => {
                let n = n as usize;
                let (c, a, b) = (&mut self.c, &self.a, &self.b);
                c.iter_mut().for_each(|x| *x = 0.0);
                // SAFETY: three live n x n matrices; `c` does not alias a or b.
                unsafe {
                    match order {
                        Matmul::Naive => {
                            hpcscope_kernel_matmul_naive(c.as_mut_ptr(), a.as_ptr(), b.as_ptr(), n)
                        }
                        Matmul::Interchange => {
                            hpcscope_kernel_matmul_ikj(c.as_mut_ptr(), a.as_ptr(), b.as_ptr(), n)
                        }
                        Matmul::Blocked(t) => hpcscope_kernel_matmul_blocked(
                            c.as_mut_ptr(),
                            a.as_ptr(),
                            b.as_ptr(),
                            n,
                            t as usize,
                        ),
                    }
                }
                c.iter().step_by(31).sum()
            }
        };
        std::hint::black_box(r)
    }
}

fn crunch(op: Op, w: Width, iters: u64) -> f64 {
    if !supported(op, w) {
        return f64::NAN.min(0.0);
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `supported` checked the CPU features the kernel is compiled for.
    unsafe {
        x86::crunch(op, w, iters)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = iters;
        0.0
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The FP-crunch kernels: 8 accumulators, one instruction each per iteration, in
    //! assembly (the compiler may neither fuse, vectorise nor drop them).
    use super::{Op, Width};
    use std::arch::asm;
    use std::arch::x86_64::{__m128d, __m256d, __m512d};

    macro_rules! kernel {
        ($sym:ident, $feat:literal, $ty:ty, $reg:ident, $ins:literal $(, $x:ident)*) => {
            #[unsafe(no_mangle)]
            #[inline(never)]
            #[target_feature(enable = $feat)]
            /// One FP-crunch kernel: `iters` x 8 instructions on 8 accumulators.
            ///
            /// # Safety
            /// The CPU has the kernel's target features.
            pub unsafe extern "C" fn $sym(iters: u64, seed: f64, cv: f64) -> f64 {
                const L: usize = size_of::<$ty>() / 8;
                // SAFETY: an array of L doubles has the size of the vector.
                let v = |x: f64| unsafe { std::mem::transmute::<[f64; L], $ty>([x; L]) };
                $(let $x = v(cv);)*
                let _ = cv;
                let [mut a0, mut a1, mut a2, mut a3, mut a4, mut a5, mut a6, mut a7] = [v(seed); 8];
                for _ in 0..iters {
                    // SAFETY: register-only arithmetic.
                    unsafe {
                        asm!($ins, a = inout($reg) a0, $($x = in($reg) $x,)* options(nomem, nostack, preserves_flags));
                        asm!($ins, a = inout($reg) a1, $($x = in($reg) $x,)* options(nomem, nostack, preserves_flags));
                        asm!($ins, a = inout($reg) a2, $($x = in($reg) $x,)* options(nomem, nostack, preserves_flags));
                        asm!($ins, a = inout($reg) a3, $($x = in($reg) $x,)* options(nomem, nostack, preserves_flags));
                        asm!($ins, a = inout($reg) a4, $($x = in($reg) $x,)* options(nomem, nostack, preserves_flags));
                        asm!($ins, a = inout($reg) a5, $($x = in($reg) $x,)* options(nomem, nostack, preserves_flags));
                        asm!($ins, a = inout($reg) a6, $($x = in($reg) $x,)* options(nomem, nostack, preserves_flags));
                        asm!($ins, a = inout($reg) a7, $($x = in($reg) $x,)* options(nomem, nostack, preserves_flags));
                    }
                }
                // SAFETY: as above.
                [a0, a1, a2, a3, a4, a5, a6, a7]
                    .iter()
                    .map(|x| unsafe { std::mem::transmute::<$ty, [f64; L]>(*x) }[0])
                    .sum()
            }
        };
    }

    kernel!(
        hpcscope_kernel_add_scalar,
        "sse2",
        __m128d,
        xmm_reg,
        "addsd {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_mul_scalar,
        "sse2",
        __m128d,
        xmm_reg,
        "mulsd {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_div_scalar,
        "sse2",
        __m128d,
        xmm_reg,
        "divsd {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_sqrt_scalar,
        "sse2",
        __m128d,
        xmm_reg,
        "sqrtsd {a}, {a}"
    );
    kernel!(
        hpcscope_kernel_fma_scalar,
        "fma",
        __m128d,
        xmm_reg,
        "vfmadd231sd {a}, {b}, {c}",
        b,
        c
    );
    kernel!(
        hpcscope_kernel_add_128,
        "sse2",
        __m128d,
        xmm_reg,
        "addpd {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_mul_128,
        "sse2",
        __m128d,
        xmm_reg,
        "mulpd {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_div_128,
        "sse2",
        __m128d,
        xmm_reg,
        "divpd {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_sqrt_128,
        "sse2",
        __m128d,
        xmm_reg,
        "sqrtpd {a}, {a}"
    );
    kernel!(
        hpcscope_kernel_fma_128,
        "fma",
        __m128d,
        xmm_reg,
        "vfmadd231pd {a}, {b}, {c}",
        b,
        c
    );
    kernel!(
        hpcscope_kernel_add_256,
        "avx",
        __m256d,
        ymm_reg,
        "vaddpd {a}, {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_mul_256,
        "avx",
        __m256d,
        ymm_reg,
        "vmulpd {a}, {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_div_256,
        "avx",
        __m256d,
        ymm_reg,
        "vdivpd {a}, {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_sqrt_256,
        "avx",
        __m256d,
        ymm_reg,
        "vsqrtpd {a}, {a}"
    );
    kernel!(
        hpcscope_kernel_fma_256,
        "avx,fma",
        __m256d,
        ymm_reg,
        "vfmadd231pd {a}, {b}, {c}",
        b,
        c
    );
    kernel!(
        hpcscope_kernel_add_512,
        "avx512f",
        __m512d,
        zmm_reg,
        "vaddpd {a}, {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_mul_512,
        "avx512f",
        __m512d,
        zmm_reg,
        "vmulpd {a}, {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_div_512,
        "avx512f",
        __m512d,
        zmm_reg,
        "vdivpd {a}, {a}, {c}",
        c
    );
    kernel!(
        hpcscope_kernel_sqrt_512,
        "avx512f",
        __m512d,
        zmm_reg,
        "vsqrtpd {a}, {a}"
    );
    kernel!(
        hpcscope_kernel_fma_512,
        "avx512f",
        __m512d,
        zmm_reg,
        "vfmadd231pd {a}, {b}, {c}",
        b,
        c
    );

    /// Runs one crunch kernel.
    ///
    /// # Safety
    /// The CPU has the features of `op` at `w` (see [`super::supported`]).
    pub(super) unsafe fn crunch(op: Op, w: Width, iters: u64) -> f64 {
        let (s, c) = (std::hint::black_box(2.0), std::hint::black_box(1.0));
        // SAFETY: the caller's contract.
        unsafe {
            match (op, w) {
                (Op::Add, Width::Scalar) => hpcscope_kernel_add_scalar(iters, s, c),
                (Op::Mul, Width::Scalar) => hpcscope_kernel_mul_scalar(iters, s, c),
                (Op::Div, Width::Scalar) => hpcscope_kernel_div_scalar(iters, s, c),
                (Op::Sqrt, Width::Scalar) => hpcscope_kernel_sqrt_scalar(iters, s, c),
                (Op::Fma, Width::Scalar) => hpcscope_kernel_fma_scalar(iters, s, c),
                (Op::Add, Width::W128) => hpcscope_kernel_add_128(iters, s, c),
                (Op::Mul, Width::W128) => hpcscope_kernel_mul_128(iters, s, c),
                (Op::Div, Width::W128) => hpcscope_kernel_div_128(iters, s, c),
                (Op::Sqrt, Width::W128) => hpcscope_kernel_sqrt_128(iters, s, c),
                (Op::Fma, Width::W128) => hpcscope_kernel_fma_128(iters, s, c),
                (Op::Add, Width::W256) => hpcscope_kernel_add_256(iters, s, c),
                (Op::Mul, Width::W256) => hpcscope_kernel_mul_256(iters, s, c),
                (Op::Div, Width::W256) => hpcscope_kernel_div_256(iters, s, c),
                (Op::Sqrt, Width::W256) => hpcscope_kernel_sqrt_256(iters, s, c),
                (Op::Fma, Width::W256) => hpcscope_kernel_fma_256(iters, s, c),
                (Op::Add, Width::W512) => hpcscope_kernel_add_512(iters, s, c),
                (Op::Mul, Width::W512) => hpcscope_kernel_mul_512(iters, s, c),
                (Op::Div, Width::W512) => hpcscope_kernel_div_512(iters, s, c),
                (Op::Sqrt, Width::W512) => hpcscope_kernel_sqrt_512(iters, s, c),
                (Op::Fma, Width::W512) => hpcscope_kernel_fma_512(iters, s, c),
            }
        }
    }
}

// The memory kernels: plain loops the compiler vectorises as it likes (their FLOPs and bytes
// do not depend on the width).

/// Sum of cos over `n` values (one libm call each).
///
/// # Safety
/// `x` points to `n` readable doubles.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_libm_cos(x: *const f64, n: usize) -> f64 {
    // SAFETY: the caller's contract.
    let x = unsafe { std::slice::from_raw_parts(x, n) };
    x.iter().map(|v| std::hint::black_box(v.cos())).sum()
}

/// Sum of log over `n` values (one libm call each).
///
/// # Safety
/// `x` points to `n` readable doubles.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_libm_log(x: *const f64, n: usize) -> f64 {
    // SAFETY: the caller's contract.
    let x = unsafe { std::slice::from_raw_parts(x, n) };
    x.iter().map(|v| std::hint::black_box(v.ln())).sum()
}

/// Sum of exp over `n` values (one libm call each).
///
/// # Safety
/// `x` points to `n` readable doubles.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_libm_exp(x: *const f64, n: usize) -> f64 {
    // SAFETY: the caller's contract.
    let x = unsafe { std::slice::from_raw_parts(x, n) };
    x.iter().map(|v| std::hint::black_box(v.exp())).sum()
}

/// Sum of sin over `n` values (one libm call each).
///
/// # Safety
/// `x` points to `n` readable doubles.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_libm_sin(x: *const f64, n: usize) -> f64 {
    // SAFETY: the caller's contract.
    let x = unsafe { std::slice::from_raw_parts(x, n) };
    x.iter().map(|v| std::hint::black_box(v.sin())).sum()
}

/// STREAM copy `a = b`.
///
/// # Safety
/// `a` and `b` point to `n` doubles each, not overlapping.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_stream_copy(a: *mut f64, b: *const f64, n: usize) {
    // SAFETY: the caller's contract.
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts_mut(a, n),
            std::slice::from_raw_parts(b, n),
        )
    };
    for (x, y) in a.iter_mut().zip(b) {
        *x = *y;
    }
}

/// STREAM scale `a = s b`.
///
/// # Safety
/// `a` and `b` point to `n` doubles each, not overlapping.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_stream_scale(
    a: *mut f64,
    b: *const f64,
    s: f64,
    n: usize,
) {
    // SAFETY: the caller's contract.
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts_mut(a, n),
            std::slice::from_raw_parts(b, n),
        )
    };
    for (x, y) in a.iter_mut().zip(b) {
        *x = s * y;
    }
}

/// STREAM add `a = b + c`.
///
/// # Safety
/// `a`, `b` and `c` point to `n` doubles each; `a` overlaps neither.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_stream_add(
    a: *mut f64,
    b: *const f64,
    c: *const f64,
    n: usize,
) {
    // SAFETY: the caller's contract.
    let (a, b, c) = unsafe {
        (
            std::slice::from_raw_parts_mut(a, n),
            std::slice::from_raw_parts(b, n),
            std::slice::from_raw_parts(c, n),
        )
    };
    for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
        *x = y + z;
    }
}

/// STREAM triad `a = b + s c`.
///
/// # Safety
/// `a`, `b` and `c` point to `n` doubles each; `a` overlaps neither.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_stream_triad(
    a: *mut f64,
    b: *const f64,
    c: *const f64,
    s: f64,
    n: usize,
) {
    // SAFETY: the caller's contract.
    let (a, b, c) = unsafe {
        (
            std::slice::from_raw_parts_mut(a, n),
            std::slice::from_raw_parts(b, n),
            std::slice::from_raw_parts(c, n),
        )
    };
    for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
        *x = y + s * z;
    }
}

/// The conflict kernel: `out[i] = sum over k < 16 of x[k * stride + i]`, i < 128, `reps`
/// times (the repetitions inside, so that the call's own stores do not count).
///
/// # Safety
/// `out` points to 128 doubles, `x` to `15 stride + 128`, not overlapping.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_conflict(
    out: *mut f64,
    x: *const f64,
    stride: usize,
    reps: usize,
) {
    let m = CONFLICT_LEN as usize;
    let k = CONFLICT_ARRAYS as usize;
    // SAFETY: the caller's contract.
    let (out, x) = unsafe {
        (
            std::slice::from_raw_parts_mut(out, m),
            std::slice::from_raw_parts(x, (k - 1) * stride + m),
        )
    };
    for _ in 0..reps {
        for (i, o) in out.iter_mut().enumerate() {
            let mut s = x[i];
            for j in 1..k {
                s += x[j * stride + i];
            }
            *o = s;
        }
        // An empty statement that may read and write any memory: every repetition's loads
        // and stores happen (no instruction is emitted).
        // SAFETY: no instruction.
        unsafe { std::arch::asm!("", options(nostack, preserves_flags)) };
    }
}

/// Naive matmul `C += A B` (i, j, k; a dot product inside).
///
/// # Safety
/// Three n x n matrices; `c` overlaps neither of the others.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_matmul_naive(
    c: *mut f64,
    a: *const f64,
    b: *const f64,
    n: usize,
) {
    // SAFETY: the caller's contract.
    let (c, a, b) = unsafe { mats(c, a, b, n) };
    for i in 0..n {
        for j in 0..n {
            let mut s = c[i * n + j];
            for k in 0..n {
                s += a[i * n + k] * b[k * n + j];
            }
            c[i * n + j] = s;
        }
    }
}

/// Interchanged matmul `C += A B` (i, k, j: rows of B and C streamed).
///
/// # Safety
/// Three n x n matrices; `c` overlaps neither of the others.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_matmul_ikj(
    c: *mut f64,
    a: *const f64,
    b: *const f64,
    n: usize,
) {
    // SAFETY: the caller's contract.
    let (c, a, b) = unsafe { mats(c, a, b, n) };
    for i in 0..n {
        for k in 0..n {
            let x = a[i * n + k];
            let (ci, bk) = (&mut c[i * n..(i + 1) * n], &b[k * n..(k + 1) * n]);
            for (y, z) in ci.iter_mut().zip(bk) {
                *y += x * z;
            }
        }
    }
}

/// Blocked matmul `C += A B` (i, k, j in t x t tiles; t divides n).
///
/// # Safety
/// Three n x n matrices; `c` overlaps neither of the others; t divides n.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn hpcscope_kernel_matmul_blocked(
    c: *mut f64,
    a: *const f64,
    b: *const f64,
    n: usize,
    t: usize,
) {
    // SAFETY: the caller's contract.
    let (c, a, b) = unsafe { mats(c, a, b, n) };
    for ii in (0..n).step_by(t) {
        for kk in (0..n).step_by(t) {
            for jj in (0..n).step_by(t) {
                for i in ii..ii + t {
                    for k in kk..kk + t {
                        let x = a[i * n + k];
                        let ci = &mut c[i * n + jj..i * n + jj + t];
                        let bk = &b[k * n + jj..k * n + jj + t];
                        for (y, z) in ci.iter_mut().zip(bk) {
                            *y += x * z;
                        }
                    }
                }
            }
        }
    }
}

/// # Safety
/// Three n x n matrices; `c` overlaps neither of the others.
unsafe fn mats<'a>(
    c: *mut f64,
    a: *const f64,
    b: *const f64,
    n: usize,
) -> (&'a mut [f64], &'a [f64], &'a [f64]) {
    // SAFETY: the caller's contract.
    unsafe {
        (
            std::slice::from_raw_parts_mut(c, n * n),
            std::slice::from_raw_parts(a, n * n),
            std::slice::from_raw_parts(b, n * n),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_arguments_read_back() {
        let plan = Plan::emulated(vec![Width::Scalar, Width::W256]);
        for k in plan.kernels() {
            assert_eq!(Kernel::parse(&k.arg()).unwrap(), k, "{}", k.arg());
        }
        for bad in [
            "fp.add.96:10",
            "stream.triad:10",
            "matmul.blocked7:64",
            "conflict:100:1",
            "x",
        ] {
            let e = Kernel::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("write "), "{e}");
        }
    }

    #[test]
    fn left_out_widths_are_reported_in_one_line_per_reason() {
        let all = Width::ALL.to_vec();
        let emulated = crunch_omissions(&emulated_widths(), true);
        if cfg!(target_arch = "x86_64") {
            assert!(crunch_omissions(&all, false).is_empty());
            assert_eq!(emulated.len(), 1, "{emulated:?}");
            assert!(
                emulated[0].starts_with("fp: the 512-bit kernels did not run")
                    && emulated[0].contains("AVX-512"),
                "{emulated:?}"
            );
            let two = crunch_omissions(&[Width::Scalar, Width::W128], true);
            assert!(two[0].contains("256-bit, 512-bit"), "{two:?}");
        } else {
            // No kernel at any width: one line naming the ISA, whatever the plan says.
            for n in [emulated, crunch_omissions(&all, false)] {
                assert_eq!(n.len(), 1, "{n:?}");
                assert!(n[0].contains(std::env::consts::ARCH), "{n:?}");
            }
        }
    }

    #[test]
    fn the_quick_plan_is_small_but_complete() {
        let q = Plan::quick(vec![Width::Scalar]).kernels();
        let groups = ["fp.", "libm.", "stream.", "conflict.", "matmul."];
        for g in groups {
            assert!(q.iter().any(|k| k.to_string().starts_with(g)), "{g}: {q:?}");
        }
        assert!(q.len() < Plan::emulated(vec![Width::Scalar]).kernels().len());
    }

    #[test]
    fn analytical_work_of_each_family() {
        let e = Kernel::parse("fp.fma.256:10").unwrap().expected();
        assert_eq!(
            (e["fp_ins"], e["flops"], e["flops_per_fpins"]),
            (80.0, 640.0, 8.0)
        );
        let e = Kernel::parse("fp.sqrt.scalar:10").unwrap().expected();
        assert_eq!((e["fp_ins"], e["flops"]), (80.0, 80.0));
        let e = Kernel::parse("stream.add:100:3").unwrap().expected();
        assert_eq!(
            (e["flops"], e["ld_bytes"], e["st_bytes"]),
            (300.0, 4800.0, 2400.0)
        );
        let e = Kernel::parse("matmul.blocked16:32").unwrap().expected();
        assert_eq!(e["flops"], 2.0 * 32.0 * 32.0 * 32.0);
        let e = Kernel::parse("conflict:4096:2").unwrap().expected();
        assert_eq!((e["flops"], e["st_bytes"]), (15.0 * 128.0 * 2.0, 2048.0));
    }

    #[test]
    fn every_kernel_runs_here_and_computes() {
        // The matmul orders compute the same product; the crunch kernels return finite sums.
        let mut sums = Vec::new();
        for k in Plan::emulated(host_widths()).kernels() {
            let r = Buffers::new(&k).run(&k);
            assert!(r.is_finite(), "{k}: {r}");
            if let Kernel::Matmul { .. } = k {
                sums.push(r);
            }
        }
        assert!(
            sums.windows(2)
                .all(|w| (w[0] - w[1]).abs() < 1e-9 * w[0].abs()),
            "{sums:?}"
        );
        assert!(host_widths().contains(&Width::Scalar) || !cfg!(target_arch = "x86_64"));
    }

    #[test]
    fn stream_sweep_sits_in_every_level() {
        let s = stream_sweep(&[32 << 10, 1 << 20, 32 << 20]);
        assert_eq!(s.len(), 4);
        assert!(s[0] <= 16 << 10 && s[3] > (128 << 20) - 24, "{s:?}");
        assert!(s.iter().all(|b| b % 24 == 0));
    }
}
