//! Static classification of guest instructions, done once at translation time.
//!
//! Each ISA module decodes the instruction bytes and looks the result up in a table shipped
//! as data (`data/<isa>.toml`, embedded with `include_str!`). The result is an [`InsnInfo`],
//! which [`InsnInfo::add_to`] turns into increments of the fixed counter vector described by
//! [`Counter`]. A whole translation block is classified at once ([`Classifier::classify_block`])
//! so that the FLOP rule for horizontal and reduction operations can follow register values
//! through the block ([`x86_lanes`], and the reduction rows of the aarch64 table). Nothing
//! here runs per executed instruction.

pub mod aarch64;
pub mod x86_64;
pub mod x86_lanes;

/// Floating-point precision of an arithmetic instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    F16 = 0,
    F32 = 1,
    F64 = 2,
}

impl Precision {
    /// Element size in bits.
    pub fn bits(self) -> u32 {
        match self {
            Precision::F16 => 16,
            Precision::F32 => 32,
            Precision::F64 => 64,
        }
    }

    /// Parse `f16`, `f32` or `f64`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "f16" => Some(Precision::F16),
            "f32" => Some(Precision::F32),
            "f64" => Some(Precision::F64),
            _ => None,
        }
    }

    const ALL: [Precision; 3] = [Precision::F16, Precision::F32, Precision::F64];

    fn name(self) -> &'static str {
        match self {
            Precision::F16 => "f16",
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}

/// Primary class of an instruction (exactly one per instruction).
///
/// Precedence when several apply: FP arithmetic, branch, integer, store, load, other. The
/// load/store *counters* are independent of the class: `addpd xmm0, [mem]` is class `fp` and
/// also counts one load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Fp,
    Load,
    Store,
    Int,
    Branch,
    Other,
}

/// What an FP arithmetic instruction does, for the FMA, divide and square-root counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FpOp {
    Arith,
    Fma,
    /// A divide (x86 `div*`, aarch64 `FDIV`, `FDIVR`).
    Div,
    /// A square root (x86 `sqrt*`, aarch64 `FSQRT`); not the reciprocal estimates.
    Sqrt,
}

impl FpOp {
    /// Parse `arith`, `fma`, `div` or `sqrt`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "arith" => Some(FpOp::Arith),
            "fma" => Some(FpOp::Fma),
            "div" => Some(FpOp::Div),
            "sqrt" => Some(FpOp::Sqrt),
            _ => None,
        }
    }
}

/// FP arithmetic part of an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FpInfo {
    pub precision: Precision,
    /// Register width in bits for vector instructions, `None` for scalar.
    pub vector_bits: Option<u32>,
    /// FLOPs per lane: 1, or 2 for a fused multiply-add.
    pub flops_per_lane: u32,
    pub op: FpOp,
    /// Lanes whose result counts, when the FLOP rule for horizontal and reduction operations
    /// excludes some (`None`: every lane). See `docs/flop-counting.md`.
    pub counted_lanes: Option<u32>,
    /// The FLOPs are counted at run time from the active lanes of the governing predicate
    /// (plugin API v4): none statically.
    pub active_lanes: bool,
}

impl FpInfo {
    /// An FP instruction whose every lane counts.
    pub fn new(
        precision: Precision,
        vector_bits: Option<u32>,
        flops_per_lane: u32,
        op: FpOp,
    ) -> Self {
        FpInfo {
            precision,
            vector_bits,
            flops_per_lane,
            op,
            counted_lanes: None,
            active_lanes: false,
        }
    }

    /// Number of lanes: vector width / element width (all lanes, predicates and masks ignored).
    pub fn lanes(&self) -> u32 {
        match self.vector_bits {
            None => 1,
            Some(bits) => (bits / self.precision.bits()).max(1),
        }
    }

    /// FLOPs of one execution: counted lanes x FLOPs per lane (0 when counted from the
    /// predicate at run time).
    pub fn flops(&self) -> u32 {
        if self.active_lanes {
            return 0;
        }
        self.counted_lanes.unwrap_or(self.lanes()).min(self.lanes()) * self.flops_per_lane
    }

    /// FLOPs of one execution that the lane rule leaves out (lanes not counted x FLOPs per
    /// lane).
    pub fn flops_excluded(&self) -> u32 {
        if self.active_lanes {
            return 0;
        }
        self.lanes() * self.flops_per_lane - self.flops()
    }
}

/// How the bytes of a memory instruction are known, and how QEMU reports its accesses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemKind {
    /// The operand's size is known from the encoding and QEMU reports exactly those bytes
    /// (possibly split into smaller pieces).
    #[default]
    Exact,
    /// The operand's size is known, but QEMU 7.2 reports more than the operand (it reads a
    /// whole vector for a scalar operand, or a load beside a store-exclusive): the stream
    /// keeps only the operand's bytes of each execution.
    Clipped,
    /// Bytes known only at run time (string instructions with `rep`, masked stores,
    /// gathers, `xsave`, encodings the decoder does not know): counted from QEMU's access
    /// reports, which then are both the counts and the stream.
    Dynamic,
    /// Counted from the encoding, but QEMU 7.2 does not report these accesses to plugins
    /// (SVE loads and stores done in helpers; with plugin API v4 they are reported, one
    /// access per active element, and counted as [`MemKind::Dynamic`]): absent from the
    /// stream.
    Unreported,
    /// A store-exclusive (aarch64 `stxr`): it stores only when it succeeds, and QEMU
    /// reports a successful one as the load and store of a compare-and-swap. Its bytes are
    /// the stores QEMU reports; the loads are dropped.
    StoreExclusive,
}

/// Everything the plugin knows statically about one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InsnInfo {
    pub class: Class,
    pub fp: Option<FpInfo>,
    /// Bytes read per execution (0 if the instruction does not read memory).
    pub load_bytes: u32,
    /// Bytes written per execution (0 if the instruction does not write memory).
    pub store_bytes: u32,
    /// The instruction reads / writes memory (a prefetch does neither).
    pub loads: bool,
    pub stores: bool,
    /// The instruction belongs to the SVE encoding space (aarch64 only).
    pub sve: bool,
    /// The instruction returns from a function (x86 `ret`, aarch64 `ret`).
    pub returns: bool,
    /// How the bytes are known and reported (meaningful when `loads` or `stores`).
    pub mem_kind: MemKind,
    /// QEMU performs the accesses in a helper function. QEMU 7.2 reports a helper's accesses
    /// to whichever memory callbacks the last instrumented helper-calling instruction
    /// installed, so such instructions outside the counted regions get a callback that
    /// drops them.
    pub helper: bool,
    /// Governing predicate register (P0-P7) of a predicated SVE instruction (FP arithmetic,
    /// stores), whose active lanes can be counted at run time.
    pub pg: Option<u8>,
    /// For an unpredicated SVE FP instruction: the position in its block of the predicated
    /// instruction that next reads its result, whose active lanes its FLOPs follow.
    pub lanes_of: Option<u16>,
}

impl InsnInfo {
    /// An instruction of the given class that touches no memory and does no FP arithmetic.
    pub fn plain(class: Class) -> Self {
        InsnInfo {
            class,
            fp: None,
            load_bytes: 0,
            store_bytes: 0,
            loads: false,
            stores: false,
            sve: false,
            returns: false,
            mem_kind: MemKind::Exact,
            helper: false,
            pg: None,
            lanes_of: None,
        }
    }

    /// Whether the bytes are counted from QEMU's access reports.
    pub fn counted_from_reports(&self) -> bool {
        matches!(self.mem_kind, MemKind::Dynamic | MemKind::StoreExclusive)
    }

    /// Add this instruction's per-execution increments to a counter vector.
    pub fn add_to(&self, v: &mut [u64; N_COUNTERS]) {
        v[Counter::Instructions as usize] += 1;
        let class = match self.class {
            Class::Fp => Counter::ClassFp,
            Class::Load => Counter::ClassLoad,
            Class::Store => Counter::ClassStore,
            Class::Int => Counter::ClassInt,
            Class::Branch => Counter::ClassBranch,
            Class::Other => Counter::ClassOther,
        };
        v[class as usize] += 1;
        if self.loads {
            v[Counter::Loads as usize] += 1;
            v[Counter::BytesLoaded as usize] += u64::from(self.load_bytes);
            if self.load_bytes > 0 {
                let slot = mem_slot(self.load_bytes);
                v[MEM_LOADS + slot] += 1;
                v[MEM_LOAD_BYTES + slot] += u64::from(self.load_bytes);
            }
        }
        if self.stores {
            v[Counter::Stores as usize] += 1;
            v[Counter::BytesStored as usize] += u64::from(self.store_bytes);
            if self.store_bytes > 0 {
                let slot = mem_slot(self.store_bytes);
                v[MEM_STORES + slot] += 1;
                v[MEM_STORE_BYTES + slot] += u64::from(self.store_bytes);
            }
        }
        if self.mem_kind == MemKind::Unreported {
            v[Counter::BytesUnreported as usize] +=
                u64::from(self.load_bytes) + u64::from(self.store_bytes);
        }
        if self.sve {
            v[Counter::SveInstructions as usize] += 1;
        }
        if let Some(fp) = self.fp {
            let flops = u64::from(fp.flops());
            v[Counter::FpInstructions as usize] += 1;
            v[Counter::Flops as usize] += flops;
            v[Counter::FlopsExcluded as usize] += u64::from(fp.flops_excluded());
            let slot = fp_slot(fp.precision, fp.vector_bits);
            match fp.op {
                FpOp::Fma => v[Counter::FmaInstructions as usize] += 1,
                FpOp::Div => {
                    v[Counter::DivSqrtInstructions as usize] += 1;
                    v[FP_BY_WIDTH_DIV + slot] += 1;
                }
                FpOp::Sqrt => {
                    v[Counter::DivSqrtInstructions as usize] += 1;
                    v[FP_BY_WIDTH_SQRT + slot] += 1;
                }
                FpOp::Arith => {}
            }
            v[FP_BY_WIDTH_INSNS + slot] += 1;
            v[FP_BY_WIDTH_FLOPS + slot] += flops;
        }
    }
}

/// Named counters at the start of the counter vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    Instructions = 0,
    ClassFp,
    ClassLoad,
    ClassStore,
    ClassInt,
    ClassBranch,
    ClassOther,
    Loads,
    Stores,
    BytesLoaded,
    BytesStored,
    FpInstructions,
    Flops,
    FmaInstructions,
    /// Divides and square roots (the sum of the per-width `div` and `sqrt`).
    DivSqrtInstructions,
    SveInstructions,
    /// Lane FLOPs left out by the rule for horizontal and reduction operations.
    FlopsExcluded,
    /// Bytes of accesses QEMU does not report to plugins (included in `BytesLoaded` and
    /// `BytesStored`, absent from the stream).
    BytesUnreported,
    /// Bytes counted from QEMU's access reports (included in `BytesLoaded` and
    /// `BytesStored`): string instructions with `rep`, masked accesses, `xsave`, and SVE
    /// loads and stores with plugin API v4.
    BytesDynamic,
    /// Lane FLOPs of inactive lanes of predicated SVE instructions counted from their
    /// predicate (plugin API v4): not in `Flops`.
    FlopsInactive,
}

const N_NAMED: usize = Counter::FlopsInactive as usize + 1;

/// Width buckets of the FP breakdown: scalar, then vector register widths in bits.
pub const WIDTHS: [Option<u32>; 7] = [
    None,
    Some(64),
    Some(128),
    Some(256),
    Some(512),
    Some(1024),
    Some(2048),
];
const N_SLOTS: usize = 3 * WIDTHS.len();
const FP_BY_WIDTH_INSNS: usize = N_NAMED;
const FP_BY_WIDTH_FLOPS: usize = N_NAMED + N_SLOTS;
/// Of the FP instructions of each bucket, the divides and the square roots.
const FP_BY_WIDTH_DIV: usize = FP_BY_WIDTH_FLOPS + N_SLOTS;
const FP_BY_WIDTH_SQRT: usize = FP_BY_WIDTH_DIV + N_SLOTS;

/// Access-size buckets of the loads and stores by width, bytes per execution of one
/// instruction (all its memory operands of one direction together); any other size falls
/// into one more bucket, `other`.
pub const MEM_WIDTH_BYTES: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];
const MEM_SLOTS: usize = MEM_WIDTH_BYTES.len() + 1;
const MEM_LOADS: usize = FP_BY_WIDTH_SQRT + N_SLOTS;
const MEM_LOAD_BYTES: usize = MEM_LOADS + MEM_SLOTS;
const MEM_STORES: usize = MEM_LOAD_BYTES + MEM_SLOTS;
const MEM_STORE_BYTES: usize = MEM_STORES + MEM_SLOTS;

/// Length of the counter vector.
pub const N_COUNTERS: usize = MEM_STORE_BYTES + MEM_SLOTS;
// Translation blocks keep their static counts as (region, counter as u8, increment).
const _: () = assert!(N_COUNTERS <= 256);

fn mem_slot(bytes: u32) -> usize {
    MEM_WIDTH_BYTES
        .iter()
        .position(|b| *b == bytes)
        .unwrap_or(MEM_SLOTS - 1)
}

/// Loads and stores of one access width (see [`mem_breakdown`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemWidth {
    /// Width in bits (`other` for sizes not in [`MEM_WIDTH_BYTES`]).
    pub width: String,
    /// Executions of instructions that load at this width, and their bytes.
    pub loads: u64,
    pub bytes_loaded: u64,
    /// Executions of instructions that store at this width, and their bytes.
    pub stores: u64,
    pub bytes_stored: u64,
}

/// Loads and stores by access width, narrowest first, skipping empty buckets. Only the
/// bytes known from the encoding are split: the bytes counted from QEMU's access reports
/// (`BytesDynamic`: `rep` string instructions, gathers, masked stores, `xsave`, SVE with
/// plugin API v4) are in no bucket, so the buckets' bytes plus `BytesDynamic` make
/// `BytesLoaded + BytesStored`.
pub fn mem_breakdown(v: &[u64; N_COUNTERS]) -> Vec<MemWidth> {
    (0..MEM_SLOTS)
        .filter_map(|slot| {
            let w = MemWidth {
                width: MEM_WIDTH_BYTES
                    .get(slot)
                    .map_or_else(|| "other".to_string(), |b| (b * 8).to_string()),
                loads: v[MEM_LOADS + slot],
                bytes_loaded: v[MEM_LOAD_BYTES + slot],
                stores: v[MEM_STORES + slot],
                bytes_stored: v[MEM_STORE_BYTES + slot],
            };
            (w.loads + w.stores > 0).then_some(w)
        })
        .collect()
}

/// Index in the counter vector of the FLOPs of the FP-by-width bucket of `p` at
/// `vector_bits`.
pub fn flops_by_width_index(p: Precision, vector_bits: Option<u32>) -> usize {
    FP_BY_WIDTH_FLOPS + fp_slot(p, vector_bits)
}

fn fp_slot(p: Precision, vector_bits: Option<u32>) -> usize {
    // Any width not in WIDTHS (cannot happen for valid VLs) falls into the widest bucket.
    let w = WIDTHS
        .iter()
        .position(|w| *w == vector_bits)
        .unwrap_or(WIDTHS.len() - 1);
    p as usize * WIDTHS.len() + w
}

/// One bucket of the FP-by-width breakdown (see [`fp_breakdown`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FpWidth {
    /// Precision and width, e.g. `f64_256`, `f32_scalar`.
    pub name: String,
    /// FP instructions, their FLOPs, and of the instructions the divides and square roots.
    pub instructions: u64,
    pub flops: u64,
    pub div: u64,
    pub sqrt: u64,
}

/// The FP-by-width breakdown, skipping empty buckets.
pub fn fp_breakdown(v: &[u64; N_COUNTERS]) -> Vec<FpWidth> {
    let mut out = Vec::new();
    for p in Precision::ALL {
        for w in WIDTHS {
            let slot = fp_slot(p, w);
            let insns = v[FP_BY_WIDTH_INSNS + slot];
            if insns == 0 {
                continue;
            }
            let width = match w {
                None => "scalar".to_string(),
                Some(b) => b.to_string(),
            };
            out.push(FpWidth {
                name: format!("{}_{}", p.name(), width),
                instructions: insns,
                flops: v[FP_BY_WIDTH_FLOPS + slot],
                div: v[FP_BY_WIDTH_DIV + slot],
                sqrt: v[FP_BY_WIDTH_SQRT + slot],
            });
        }
    }
    out
}

/// A decoder for one guest ISA.
pub trait Classifier: Send {
    /// Classify the instruction whose bytes are `bytes`, on its own.
    fn classify(&self, bytes: &[u8]) -> InsnInfo;

    /// Classify the instructions of one translation block, in order. The FLOPs of a
    /// horizontal or reduction operation depend on where its operands came from in the
    /// block (see `docs/flop-counting.md`); the default classifies each on its own.
    fn classify_block(&self, insns: &[&[u8]]) -> Vec<InsnInfo> {
        insns.iter().map(|b| self.classify(b)).collect()
    }
}

/// Error loading an embedded or user-supplied ISA table.
#[derive(Debug)]
pub struct TableError(pub String);

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fma_on_512_bits_f64_counts_16_flops() {
        let fp = FpInfo::new(Precision::F64, Some(512), 2, FpOp::Fma);
        assert_eq!(fp.lanes(), 8);
        assert_eq!(fp.flops(), 16);
        let mut v = [0u64; N_COUNTERS];
        let info = InsnInfo {
            fp: Some(fp),
            ..InsnInfo::plain(Class::Fp)
        };
        info.add_to(&mut v);
        assert_eq!(v[Counter::Flops as usize], 16);
        let b = fp_breakdown(&v);
        assert_eq!(b.len(), 1);
        assert_eq!(
            (b[0].name.as_str(), b[0].instructions, b[0].flops),
            ("f64_512", 1, 16)
        );
        assert_eq!((b[0].div, b[0].sqrt), (0, 0));
    }

    #[test]
    fn excluded_lanes_are_counted_apart() {
        let fp = FpInfo {
            counted_lanes: Some(1),
            ..FpInfo::new(Precision::F64, Some(256), 1, FpOp::Arith)
        };
        assert_eq!((fp.flops(), fp.flops_excluded()), (1, 3));
        let mut v = [0u64; N_COUNTERS];
        InsnInfo {
            fp: Some(fp),
            ..InsnInfo::plain(Class::Fp)
        }
        .add_to(&mut v);
        assert_eq!(v[Counter::Flops as usize], 1);
        assert_eq!(v[Counter::FlopsExcluded as usize], 3);
        let b = fp_breakdown(&v);
        assert_eq!(b.len(), 1);
        assert_eq!(
            (b[0].name.as_str(), b[0].instructions, b[0].flops),
            ("f64_256", 1, 1)
        );
    }

    #[test]
    fn divides_and_square_roots_are_counted_per_bucket() {
        let mut v = [0u64; N_COUNTERS];
        let add = |v: &mut [u64; N_COUNTERS], p, bits, op| {
            InsnInfo {
                fp: Some(FpInfo::new(p, bits, 1, op)),
                ..InsnInfo::plain(Class::Fp)
            }
            .add_to(v)
        };
        add(&mut v, Precision::F64, None, FpOp::Div);
        add(&mut v, Precision::F64, None, FpOp::Sqrt);
        add(&mut v, Precision::F64, None, FpOp::Sqrt);
        add(&mut v, Precision::F64, None, FpOp::Arith);
        add(&mut v, Precision::F32, Some(256), FpOp::Div);
        add(&mut v, Precision::F64, Some(512), FpOp::Sqrt);
        let b = fp_breakdown(&v);
        let w = |n: &str| {
            b.iter()
                .find(|w| w.name == n)
                .map(|w| (w.instructions, w.flops, w.div, w.sqrt))
        };
        assert_eq!(w("f64_scalar"), Some((4, 4, 1, 2)));
        assert_eq!(w("f32_256"), Some((1, 8, 1, 0)));
        assert_eq!(w("f64_512"), Some((1, 8, 0, 1)));
        assert_eq!(b.len(), 3);
        assert_eq!(v[Counter::DivSqrtInstructions as usize], 5);
        // Nothing spilled into the memory buckets.
        assert!(mem_breakdown(&v).is_empty());
    }

    #[test]
    fn loads_and_stores_go_to_their_width() {
        let mut v = [0u64; N_COUNTERS];
        let load32 = InsnInfo {
            loads: true,
            load_bytes: 32,
            ..InsnInfo::plain(Class::Load)
        };
        load32.add_to(&mut v);
        load32.add_to(&mut v);
        let rmw8 = InsnInfo {
            loads: true,
            stores: true,
            load_bytes: 8,
            store_bytes: 8,
            ..InsnInfo::plain(Class::Int)
        };
        rmw8.add_to(&mut v);
        InsnInfo {
            stores: true,
            store_bytes: 10,
            ..InsnInfo::plain(Class::Store)
        }
        .add_to(&mut v);
        // Bytes known only at run time: in no bucket.
        InsnInfo {
            loads: true,
            stores: true,
            mem_kind: MemKind::Dynamic,
            ..InsnInfo::plain(Class::Other)
        }
        .add_to(&mut v);
        let b = mem_breakdown(&v);
        let w = |n: &str| b.iter().find(|m| m.width == n).cloned();
        assert_eq!(b.len(), 3);
        assert_eq!(
            w("256").map(|m| (m.loads, m.bytes_loaded, m.stores)),
            Some((2, 64, 0))
        );
        assert_eq!(
            w("64").map(|m| (m.loads, m.bytes_loaded, m.stores, m.bytes_stored)),
            Some((1, 8, 1, 8))
        );
        assert_eq!(w("other").map(|m| m.bytes_stored), Some(10));
        let split: u64 = b.iter().map(|m| m.bytes_loaded + m.bytes_stored).sum();
        assert_eq!(
            split,
            v[Counter::BytesLoaded as usize] + v[Counter::BytesStored as usize]
        );
        assert_eq!(v[Counter::Loads as usize], 4);
    }
}
