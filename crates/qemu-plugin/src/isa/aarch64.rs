//! aarch64 (A64, AdvSIMD, SVE) classifier: first matching row of `data/aarch64.toml`.
//!
//! A64 instructions are 32-bit words, so a row is a mask/value pair on the word. The table
//! says what an instruction is; the few field rules below (which precision bits, how many
//! bytes a load/store moves) are a fixed vocabulary the table refers to by name.

use serde::Deserialize;

use super::{Class, Classifier, FpInfo, FpOp, InsnInfo, MemKind, Precision, TableError};

/// The table shipped with the plugin.
pub const TABLE: &str = include_str!("../../data/aarch64.toml");

#[derive(Deserialize)]
struct TableFile {
    insn: Vec<RowSpec>,
    dc_zva: Option<DcZvaSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DcZvaSpec {
    default_bytes: u32,
    #[serde(default)]
    models: Vec<DcZvaModel>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DcZvaModel {
    cpu: String,
    bytes: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RowSpec {
    name: String,
    mask: u32,
    value: u32,
    class: String,
    fp: Option<FpSpec>,
    mem: Option<String>,
    reduce: Option<String>,
    #[serde(default)]
    adds: bool,
    #[serde(default)]
    predicated: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FpSpec {
    op: String,
    flops_per_lane: u32,
    precision: String,
    shape: String,
}

#[derive(Debug, Clone, Copy)]
enum PrecRule {
    Fixed(Precision),
    /// Scalar FP `ftype`, bits 23:22: 00 f32, 01 f64, 11 f16.
    Ftype,
    /// AdvSIMD `sz`, bit 22: 0 f32, 1 f64.
    Sz22,
    /// SVE `size`, bits 23:22: 01 f16, 10 f32, 11 f64.
    SveSize,
}

#[derive(Debug, Clone, Copy)]
enum Shape {
    Scalar,
    /// AdvSIMD: 128 bits if Q (bit 30) is set, else 64.
    NeonQ,
    /// SVE: the vector length in use.
    Sve,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemRule {
    LdstGeneric,
    SveVec,
    SvePredReg,
    SveLdContig,
    SveLd1r,
    SveSt,
    SveGather32,
    SveGather64,
    DcZva,
}

/// How an FP row combines lanes of one register (see `docs/flop-counting.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reduce {
    /// All lanes of Vn/Zn into one (FADDV, FMAXV...): lanes - 1 operations.
    Across,
    /// The two lanes of Vn into one (FADDP scalar): 1 operation.
    PairwiseScalar,
    /// Adjacent pairs of Vn, then of Vm (FADDP vector): lanes operations.
    Pairwise,
}

#[derive(Debug, Clone, Copy)]
struct Row {
    mask: u32,
    value: u32,
    class: Class,
    fp: Option<(FpOp, u32, PrecRule, Shape)>,
    mem: Option<MemRule>,
    reduce: Option<Reduce>,
    adds: bool,
    /// The governing predicate is in bits 12:10 (P0-P7).
    predicated: bool,
}

/// Classifier for aarch64 guests at a given SVE vector length.
pub struct Aarch64 {
    rows: Vec<Row>,
    vl_bits: u32,
    /// DC ZVA block size per QEMU CPU model, and for the others.
    dc_zva_models: Vec<(String, u32)>,
    dc_zva_default: u32,
    /// Block size of the CPU model run.
    dc_zva_bytes: u32,
    /// QEMU reports SVE loads and stores to plugins (plugin API v4): their bytes are
    /// counted from the reports.
    sve_reported: bool,
}

fn parse_class(s: &str) -> Option<Class> {
    Some(match s {
        "fp" => Class::Fp,
        "load" => Class::Load,
        "store" => Class::Store,
        "int" => Class::Int,
        "branch" => Class::Branch,
        "other" => Class::Other,
        _ => return None,
    })
}

impl Aarch64 {
    /// Build from a TOML table (normally [`TABLE`]) and the SVE vector length in bits.
    pub fn new(table: &str, vl_bits: u32) -> Result<Self, TableError> {
        let file: TableFile =
            toml::from_str(table).map_err(|e| TableError(format!("aarch64 table: {e}")))?;
        let mut rows = Vec::with_capacity(file.insn.len());
        for r in file.insn {
            let bad = |what: &str| TableError(format!("aarch64 table, row '{}': {what}", r.name));
            if r.value & !r.mask != 0 {
                return Err(bad("value has bits outside mask"));
            }
            let class = parse_class(&r.class).ok_or_else(|| bad("unknown class"))?;
            let fp = match &r.fp {
                None => None,
                Some(f) => {
                    let op = FpOp::parse(&f.op).ok_or_else(|| bad("unknown fp.op"))?;
                    let prec = match f.precision.as_str() {
                        "ftype" => PrecRule::Ftype,
                        "sz22" => PrecRule::Sz22,
                        "sve_size" => PrecRule::SveSize,
                        p => PrecRule::Fixed(
                            Precision::parse(p).ok_or_else(|| bad("unknown fp.precision"))?,
                        ),
                    };
                    let shape = match f.shape.as_str() {
                        "scalar" => Shape::Scalar,
                        "neon_q" => Shape::NeonQ,
                        "sve" => Shape::Sve,
                        _ => return Err(bad("unknown fp.shape")),
                    };
                    Some((op, f.flops_per_lane, prec, shape))
                }
            };
            let mem = match r.mem.as_deref() {
                None => None,
                Some(m) => Some(match m {
                    "ldst_generic" => MemRule::LdstGeneric,
                    "sve_vec" => MemRule::SveVec,
                    "sve_pred_reg" => MemRule::SvePredReg,
                    "sve_ld_contig" => MemRule::SveLdContig,
                    "sve_ld1r" => MemRule::SveLd1r,
                    "sve_st" => MemRule::SveSt,
                    "sve_gather32" => MemRule::SveGather32,
                    "sve_gather64" => MemRule::SveGather64,
                    "dc_zva" => MemRule::DcZva,
                    _ => return Err(bad("unknown mem rule")),
                }),
            };
            if class == Class::Fp && fp.is_none() {
                return Err(bad("class fp needs an fp = { ... } entry"));
            }
            let reduce = match r.reduce.as_deref() {
                None => None,
                Some("across") => Some(Reduce::Across),
                Some("pairwise_scalar") => Some(Reduce::PairwiseScalar),
                Some("pairwise") => Some(Reduce::Pairwise),
                Some(_) => return Err(bad("reduce must be across, pairwise_scalar or pairwise")),
            };
            if reduce.is_some() && fp.is_none() {
                return Err(bad("reduce needs an fp = { ... } entry"));
            }
            if r.predicated && fp.is_none() {
                return Err(bad("predicated needs an fp = { ... } entry"));
            }
            rows.push(Row {
                mask: r.mask,
                value: r.value,
                class,
                fp,
                mem,
                reduce,
                adds: r.adds,
                predicated: r.predicated,
            });
        }
        let (dc_zva_default, dc_zva_models) = match file.dc_zva {
            Some(d) => (
                d.default_bytes,
                d.models.into_iter().map(|m| (m.cpu, m.bytes)).collect(),
            ),
            None => (64, Vec::new()),
        };
        let mut a = Aarch64 {
            rows,
            vl_bits,
            dc_zva_models,
            dc_zva_default,
            dc_zva_bytes: dc_zva_default,
            sve_reported: false,
        };
        a.set_cpu_model(None);
        Ok(a)
    }

    /// The QEMU CPU model run (`-cpu` or `QEMU_CPU`, without properties; `None`: QEMU's
    /// default), for the DC ZVA block size.
    pub fn set_cpu_model(&mut self, model: Option<&str>) {
        let model = model.unwrap_or("max");
        self.dc_zva_bytes = self
            .dc_zva_models
            .iter()
            .find(|(m, _)| m == model)
            .map_or(self.dc_zva_default, |(_, b)| *b);
    }

    /// QEMU reports the accesses of SVE loads and stores to plugins, one per active element
    /// (QEMU 9.2 and later, plugin API v4): their bytes are counted from the reports
    /// ([`MemKind::Dynamic`]) instead of from the encoding.
    pub fn set_sve_accesses_reported(&mut self, reported: bool) {
        self.sve_reported = reported;
    }

    fn classify_word(&self, w: u32) -> InsnInfo {
        self.classify_row(w).0
    }

    /// The instruction's classification and the table row it matched.
    fn classify_row(&self, w: u32) -> (InsnInfo, Option<&Row>) {
        let (info, row) = self.classify_class(w);
        let info = InsnInfo {
            // RET {Xn}, RETAA, RETAB.
            returns: w & 0xffff_fc1f == 0xd65f_0000 || w == 0xd65f_0bff || w == 0xd65f_0fff,
            ..info
        };
        (info, row)
    }

    fn classify_class(&self, w: u32) -> (InsnInfo, Option<&Row>) {
        let sve = (w >> 25) & 0xf == 0b0010;
        let Some(row) = self.rows.iter().find(|r| w & r.mask == r.value) else {
            return (
                InsnInfo {
                    sve,
                    ..InsnInfo::plain(Class::Other)
                },
                None,
            );
        };
        let mut info = InsnInfo {
            sve,
            ..InsnInfo::plain(row.class)
        };
        if let Some((op, flops_per_lane, prec, shape)) = row.fp {
            let precision = match prec {
                PrecRule::Fixed(p) => Some(p),
                PrecRule::Ftype => match bits(w, 23, 22) {
                    0 => Some(Precision::F32),
                    1 => Some(Precision::F64),
                    3 => Some(Precision::F16),
                    _ => None,
                },
                PrecRule::Sz22 => Some(if bits(w, 22, 22) == 1 {
                    Precision::F64
                } else {
                    Precision::F32
                }),
                PrecRule::SveSize => match bits(w, 23, 22) {
                    1 => Some(Precision::F16),
                    2 => Some(Precision::F32),
                    3 => Some(Precision::F64),
                    _ => None,
                },
            };
            let vector_bits = match shape {
                Shape::Scalar => None,
                Shape::NeonQ => Some(if bits(w, 30, 30) == 1 { 128 } else { 64 }),
                Shape::Sve => Some(self.vl_bits),
            };
            match precision {
                // An unallocated size field: not an FP instruction we know.
                None => info.class = Class::Other,
                Some(precision) => {
                    info.fp = Some(FpInfo::new(precision, vector_bits, flops_per_lane, op));
                    if row.predicated {
                        info.pg = Some(bits(w, 12, 10) as u8);
                    }
                }
            }
        }
        if let Some(rule) = row.mem {
            match self.mem_access(rule, w) {
                Access::Prefetch => info.class = Class::Other,
                Access::Load(n) => {
                    info.class = Class::Load;
                    info.loads = true;
                    info.load_bytes = n;
                }
                Access::Store(n) => {
                    info.class = Class::Store;
                    info.stores = true;
                    info.store_bytes = n;
                }
                Access::LoadStore(n) => {
                    info.class = Class::Store;
                    info.loads = true;
                    info.stores = true;
                    info.load_bytes = n;
                    info.store_bytes = n;
                }
            }
            let sve_helper = matches!(
                rule,
                MemRule::SveLdContig | MemRule::SveSt | MemRule::SveGather32 | MemRule::SveGather64
            );
            info.mem_kind = match rule {
                // Newer QEMU reports each active element: the predicate decides the bytes.
                _ if sve_helper && self.sve_reported => {
                    info.load_bytes = 0;
                    info.store_bytes = 0;
                    MemKind::Dynamic
                }
                // QEMU 7.2 runs these in helpers that do not report to plugins.
                MemRule::SveLdContig
                | MemRule::SveSt
                | MemRule::SveGather32
                | MemRule::SveGather64
                | MemRule::DcZva => MemKind::Unreported,
                // A store-exclusive stores only when it succeeds; QEMU reports a success as
                // the load and store of a compare-and-swap.
                MemRule::LdstGeneric if store_exclusive(w) => {
                    info.store_bytes = 0;
                    MemKind::StoreExclusive
                }
                _ => MemKind::Exact,
            };
            // Exclusives and atomics run in helpers once the guest has several threads.
            info.helper = rule == MemRule::LdstGeneric && atomic_or_exclusive(w);
            // SVE stores (contiguous, structures, scatters) are governed by Pg, bits 12:10.
            if rule == MemRule::SveSt {
                info.pg = Some(bits(w, 12, 10) as u8);
            }
        }
        (info, Some(row))
    }

    fn mem_access(&self, rule: MemRule, w: u32) -> Access {
        let vl_bytes = self.vl_bits / 8;
        let sve_store = bits(w, 31, 29) == 0b111;
        let dir = |n| {
            if sve_store {
                Access::Store(n)
            } else {
                Access::Load(n)
            }
        };
        match rule {
            MemRule::LdstGeneric => ldst_generic(w),
            MemRule::DcZva => Access::Store(self.dc_zva_bytes),
            MemRule::SveVec => dir(vl_bytes),
            MemRule::SvePredReg => dir(vl_bytes / 8),
            MemRule::SveLdContig => {
                let (msz, esz) = SVE_DTYPE[bits(w, 24, 21) as usize];
                let contiguous = self.vl_bits / esz * msz;
                match bits(w, 15, 13) {
                    0b010 | 0b011 | 0b101 => Access::Load(contiguous),
                    // LD1RQ* (16 bytes) / LD1RO* (32 bytes).
                    0b000 | 0b001 => Access::Load(if bits(w, 22, 21) == 1 { 32 } else { 16 }),
                    // LDNT1 (1 register) and LD2/LD3/LD4: (num + 1) whole vectors.
                    _ => Access::Load((bits(w, 22, 21) + 1) * vl_bytes),
                }
            }
            MemRule::SveLd1r => {
                let (msz, _) = SVE_DTYPE[(bits(w, 24, 23) << 2 | bits(w, 14, 13)) as usize];
                Access::Load(msz)
            }
            MemRule::SveSt => {
                let msize = 1 << bits(w, 24, 23);
                let lanes32 = self.vl_bits / 32;
                let lanes64 = self.vl_bits / 64;
                Access::Store(match bits(w, 15, 13) {
                    0b010 => self.vl_bits / (8 << bits(w, 22, 21)) * msize,
                    0b111 if bits(w, 20, 20) == 0 => self.vl_bits / (8 << bits(w, 22, 21)) * msize,
                    0b111 | 0b011 => (bits(w, 22, 21) + 1) * vl_bytes,
                    0b100 | 0b110 if bits(w, 22, 22) == 1 => lanes32 * msize,
                    0b100 | 0b110 => lanes64 * msize,
                    0b101 if bits(w, 22, 21) == 0b11 => lanes32 * msize,
                    0b101 => lanes64 * msize,
                    _ => vl_bytes,
                })
            }
            MemRule::SveGather32 => {
                let msz = bits(w, 24, 23);
                let prefetch = (msz == 0 && bits(w, 21, 21) == 1 && bits(w, 15, 15) == 0)
                    || (bits(w, 22, 21) == 0 && bits(w, 15, 15) == 1)
                    || (bits(w, 24, 22) == 0b111 && bits(w, 15, 15) == 0);
                if prefetch {
                    Access::Prefetch
                } else {
                    Access::Load(self.vl_bits / 32 * (1 << msz))
                }
            }
            MemRule::SveGather64 => {
                let msz = bits(w, 24, 23);
                let prefetch = (msz == 0
                    && bits(w, 21, 21) == 1
                    && (bits(w, 22, 22) == 1 || bits(w, 15, 15) == 0))
                    || (bits(w, 22, 21) == 0 && bits(w, 15, 13) == 0b111);
                if prefetch {
                    Access::Prefetch
                } else {
                    Access::Load(self.vl_bits / 64 * (1 << msz))
                }
            }
        }
    }
}

impl Classifier for Aarch64 {
    fn classify(&self, bytes: &[u8]) -> InsnInfo {
        match <[u8; 4]>::try_from(bytes) {
            Ok(b) => self.classify_word(u32::from_le_bytes(b)),
            Err(_) => InsnInfo::plain(Class::Other),
        }
    }

    fn classify_block(&self, insns: &[&[u8]]) -> Vec<InsnInfo> {
        let words: Vec<Option<u32>> = insns
            .iter()
            .map(|b| <[u8; 4]>::try_from(*b).ok().map(u32::from_le_bytes))
            .collect();
        self.classify_words(&words)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Load(u32),
    Store(u32),
    LoadStore(u32),
    Prefetch,
}

/// SVE `dtype` (4 bits) of contiguous loads: (memory bytes per element, element bits in the
/// register). E.g. 0b1111 is LD1D (8, 64); 0b0100 is LD1SW (4, 64).
const SVE_DTYPE: [(u32, u32); 16] = [
    (1, 8),
    (1, 16),
    (1, 32),
    (1, 64),
    (4, 64),
    (2, 16),
    (2, 32),
    (2, 64),
    (2, 64),
    (2, 32),
    (4, 32),
    (4, 64),
    (1, 64),
    (1, 32),
    (1, 16),
    (8, 64),
];

fn bits(w: u32, hi: u32, lo: u32) -> u32 {
    (w >> lo) & ((1u32 << (hi - lo + 1)) - 1)
}

/// STXR, STLXR, STXP, STLXP: the load/store exclusive group with o2 = 0, L = 0, and not
/// CASP (bit 31 set, or o1 = 0).
fn store_exclusive(w: u32) -> bool {
    bits(w, 29, 24) == 0b001000
        && bits(w, 23, 23) == 0
        && bits(w, 22, 22) == 0
        && (bits(w, 31, 31) == 1 || bits(w, 21, 21) == 0)
}

/// The load/store exclusive group (LDXR, STXR, LDAR, STLR, CAS, CASP...) and the atomic
/// memory operations (LDADD, SWP...).
fn atomic_or_exclusive(w: u32) -> bool {
    bits(w, 29, 24) == 0b001000
        || (bits(w, 29, 27) == 0b111
            && bits(w, 26, 26) == 0
            && bits(w, 24, 24) == 0
            && bits(w, 21, 21) == 1
            && bits(w, 11, 10) == 0)
}

/// Value kinds of the V/Z registers through a block, for the reduction rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Not written in the block yet: carried in (e.g. a loop accumulator).
    External,
    /// A running sum: an add or FMA with an accumulator input, or a reduction of one.
    Acc,
    /// Computed or loaded in the block.
    Local,
}

impl Aarch64 {
    /// Classify a block: the reduction rows count 0 FLOPs on an accumulator.
    fn classify_words(&self, words: &[Option<u32>]) -> Vec<InsnInfo> {
        let mut kinds = [Kind::External; 32];
        let carried = |k: Kind| matches!(k, Kind::External | Kind::Acc);
        words
            .iter()
            .map(|w| {
                let Some(w) = *w else {
                    return InsnInfo::plain(Class::Other);
                };
                let (mut info, row) = self.classify_row(w);
                let rd = bits(w, 4, 0) as usize;
                let rn = bits(w, 9, 5) as usize;
                let rm = bits(w, 20, 16) as usize;
                match (row, info.fp.as_mut()) {
                    (Some(row), Some(fp)) => {
                        if let Some(red) = row.reduce {
                            let lanes = fp.lanes();
                            let counted = match red {
                                Reduce::Across if carried(kinds[rn]) => 0,
                                Reduce::Across => lanes.saturating_sub(1),
                                Reduce::PairwiseScalar if carried(kinds[rn]) => 0,
                                Reduce::PairwiseScalar => 1,
                                Reduce::Pairwise => {
                                    // Half the result lanes come from Vn's pairs, half from Vm's;
                                    // with Vn = Vm the halves are the same.
                                    let half = lanes / 2;
                                    let from = |r: usize| if carried(kinds[r]) { 0 } else { half };
                                    if rn == rm {
                                        from(rn)
                                    } else {
                                        from(rn) + from(rm)
                                    }
                                }
                            };
                            if counted != lanes {
                                fp.counted_lanes = Some(counted);
                            }
                            kinds[rd] = if counted == 0 { Kind::Acc } else { Kind::Local };
                        } else {
                            let accumulates = fp.op == FpOp::Fma || row.adds;
                            let from_acc =
                                carried(kinds[rd]) || carried(kinds[rn]) || carried(kinds[rm]);
                            kinds[rd] = if accumulates && from_acc {
                                Kind::Acc
                            } else {
                                Kind::Local
                            };
                        }
                    }
                    _ => {
                        if let Some(r) = vector_dest(w, &info) {
                            for k in r {
                                kinds[k % 32] = Kind::Local;
                            }
                        }
                    }
                }
                info
            })
            .collect::<Vec<InsnInfo>>()
            .pipe_lanes(words)
    }
}

/// The predicate rule for unpredicated SVE FP instructions (`docs/flop-counting.md`).
trait PipeLanes {
    fn pipe_lanes(self, words: &[Option<u32>]) -> Vec<InsnInfo>;
}

impl PipeLanes for Vec<InsnInfo> {
    /// An SVE FP instruction whose result is next read, in the block, by a predicated SVE
    /// instruction (an FP operation, or a store of it) counts the lanes active under that
    /// instruction's predicate (and under its own, if it has one): GCC computes a product
    /// on whole vectors and sums it with a predicated FADDA, or an FMAD under an all-true
    /// predicate stored under the loop's; the other lanes' results are never used. An
    /// unpredicated reader passes its own rule on. When another instruction mentions the
    /// register first, or nothing reads it in the block, the instruction's own predicate
    /// (or every lane, without one) counts.
    fn pipe_lanes(mut self, words: &[Option<u32>]) -> Vec<InsnInfo> {
        for i in (0..self.len()).rev() {
            let info = self[i];
            let (Some(fp), Some(w)) = (info.fp, words[i]) else {
                continue;
            };
            if !info.sve || fp.counted_lanes.is_some() {
                continue;
            }
            let zd = bits(w, 4, 0);
            for j in i + 1..self.len() {
                let Some(wj) = words[j] else { break };
                let reader = self[j];
                // A predicated instruction is counted at its reader with both predicates
                // read there: not when something in between may write its predicate (an SVE
                // instruction whose bits 3:0 name it; some are Z writes, which only costs
                // the refinement).
                if let Some(p) = info.pg
                    && (wj >> 25) & 0xf == 0b0010
                    && bits(wj, 3, 0) == u32::from(p)
                    && !(reader.stores && reader.pg.is_some())
                    && reader.fp.is_none()
                {
                    break;
                }
                // A predicated SVE FP operation reading Zd as Zn or Zm, or a predicated SVE
                // store of Zd.
                let fp_reads =
                    reader.fp.is_some() && (bits(wj, 9, 5) == zd || bits(wj, 20, 16) == zd);
                let stores = reader.stores && bits(wj, 4, 0) == zd;
                if reader.sve && (fp_reads || stores) {
                    if reader.pg.is_some() {
                        self[i].lanes_of = Some(j as u16);
                    } else if reader.fp.is_some() && info.pg.is_none() {
                        self[i].lanes_of = reader.lanes_of;
                    }
                    break;
                }
                let mentions = [bits(wj, 4, 0), bits(wj, 9, 5), bits(wj, 20, 16)].contains(&zd);
                if mentions {
                    break;
                }
            }
        }
        self
    }
}

/// V or Z registers an instruction other than an FP operation writes, as far as the
/// reduction rule needs: loads into them, and AdvSIMD / scalar FP data processing (Rd). A
/// register copy (`mov v1.16b, v0.16b`) is a new value too.
fn vector_dest(w: u32, info: &InsnInfo) -> Option<std::ops::Range<usize>> {
    let rt = bits(w, 4, 0) as usize;
    if info.loads && !info.stores {
        if info.sve {
            return Some(rt..rt + 1);
        }
        // A64 loads with V = 1 (bit 26): one register, a pair (Rt2 is bits 14:10, marked by
        // taking the next few), or AdvSIMD structures (up to four consecutive registers).
        if bits(w, 26, 26) == 1 {
            return Some(match bits(w, 29, 27) {
                // A pair: Rt and Rt2 (the registers in between are marked too).
                0b101 => {
                    let rt2 = bits(w, 14, 10) as usize;
                    rt.min(rt2)..rt.max(rt2) + 1
                }
                // AdvSIMD structures: up to four consecutive registers.
                0b001 => rt..rt + 4,
                _ => rt..rt + 1,
            });
        }
        return None;
    }
    // Scalar FP and AdvSIMD data processing: bits 28:25 = x111.
    if bits(w, 27, 25) == 0b111 && !info.loads && !info.stores {
        return Some(rt..rt + 1);
    }
    None
}

/// Non-SVE loads and stores (the A64 "loads and stores" group, bits 27 = 1, 25 = 0).
fn ldst_generic(w: u32) -> Access {
    let size = bits(w, 31, 30);
    let v = bits(w, 26, 26) == 1;
    let opc = bits(w, 23, 22);
    match bits(w, 29, 27) {
        // Single register: immediate (all forms), register offset, atomics.
        0b111 => {
            let atomic = bits(w, 24, 24) == 0 && bits(w, 21, 21) == 1 && bits(w, 11, 10) == 0;
            if atomic && !v {
                return Access::LoadStore(1 << size);
            }
            if !v {
                match opc {
                    0 => Access::Store(1 << size),
                    2 if size == 3 => Access::Prefetch,
                    _ => Access::Load(1 << size),
                }
            } else {
                match (opc, size) {
                    (0, _) => Access::Store(1 << size),
                    (1, _) => Access::Load(1 << size),
                    (2, 0) => Access::Store(16),
                    _ => Access::Load(16),
                }
            }
        }
        // Pairs: two registers of 4, 8 or 16 bytes.
        0b101 => {
            let each = if v {
                4 << size
            } else if size == 2 {
                8
            } else {
                4
            };
            if bits(w, 22, 22) == 1 {
                Access::Load(2 * each)
            } else {
                Access::Store(2 * each)
            }
        }
        0b011 => {
            if bits(w, 24, 24) == 0 {
                // Load register (literal): opc is bits 31:30.
                match (v, size) {
                    (false, 3) => Access::Prefetch,
                    (false, 1) | (true, 1) => Access::Load(8),
                    (true, 2) => Access::Load(16),
                    _ => Access::Load(4),
                }
            } else if opc == 0 {
                Access::Store(1 << size)
            } else {
                Access::Load(1 << size)
            }
        }
        // 0b001: AdvSIMD structures (bit 31 = 0, V = 1) or exclusives / ordered.
        _ => {
            let load = bits(w, 22, 22) == 1;
            let n = if v && bits(w, 31, 31) == 0 {
                let q = bits(w, 30, 30) == 1;
                if bits(w, 24, 24) == 0 {
                    // LD1-4 / ST1-4, multiple structures.
                    let regs = match bits(w, 15, 12) {
                        0b0000 | 0b0010 => 4,
                        0b0100 | 0b0110 => 3,
                        0b1000 | 0b1010 => 2,
                        _ => 1,
                    };
                    regs * if q { 16 } else { 8 }
                } else {
                    // Single structure (one lane, or replicate).
                    let opcode = bits(w, 15, 13);
                    let selem = ((opcode & 1) << 1 | bits(w, 21, 21)) + 1;
                    let esize = match opcode >> 1 {
                        0 => 1,
                        1 => 2,
                        2 if bits(w, 11, 10) == 1 => 8,
                        2 => 4,
                        _ => 1 << bits(w, 11, 10),
                    };
                    selem * esize
                }
            } else if bits(w, 23, 23) == 1 && bits(w, 21, 21) == 1 {
                // CAS{A,L,AL}{B,H,}: reads, and writes (QEMU always reports both).
                return Access::LoadStore(1 << size);
            } else if bits(w, 31, 31) == 0 && bits(w, 23, 23) == 0 && bits(w, 21, 21) == 1 {
                // CASP{A,L,AL}: a pair of 4- or 8-byte registers.
                return Access::LoadStore(2 * (4 << bits(w, 30, 30)));
            } else {
                // Exclusive / acquire-release; bit 21 selects the pair forms.
                (1 << size) * if bits(w, 21, 21) == 1 { 2 } else { 1 }
            };
            if load {
                Access::Load(n)
            } else {
                Access::Store(n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(vl: u32) -> Aarch64 {
        Aarch64::new(TABLE, vl).expect("embedded table parses")
    }

    // Encodings checked with aarch64-linux-gnu-objdump.
    #[test]
    fn sve_fmla_d_counts_two_flops_per_lane() {
        // fmla z0.d, p0/m, z1.d, z2.d
        let i = c(512).classify_word(0x65e20020);
        let fp = i.fp.expect("fp");
        assert_eq!((fp.precision, fp.flops()), (Precision::F64, 16));
        assert!(i.sve);
        let i = c(2048).classify_word(0x65e20020);
        assert_eq!(i.fp.expect("fp").flops(), 64);
    }

    #[test]
    fn sve_ld1d_st1d_move_a_vector() {
        // ld1d {z0.d}, p0/z, [x1, x2, lsl #3]; st1d {z0.d}, p0, [x1, x2, lsl #3]
        let a = c(256);
        let ld = a.classify_word(0xa5e24020);
        assert_eq!((ld.class, ld.load_bytes), (Class::Load, 32));
        let st = a.classify_word(0xe5e24020);
        assert_eq!((st.class, st.store_bytes), (Class::Store, 32));
    }

    #[test]
    fn scalar_and_neon() {
        let a = c(128);
        // fmadd d0, d1, d2, d3
        let i = a.classify_word(0x1f420c20);
        assert_eq!(i.fp.expect("fp").flops(), 2);
        // fmla v0.2d, v1.2d, v2.2d
        let i = a.classify_word(0x4e62cc20);
        assert_eq!(i.fp.expect("fp").flops(), 4);
        // ldr q0, [x1]
        let i = a.classify_word(0x3dc00020);
        assert_eq!(i.load_bytes, 16);
        // ldp d0, d1, [x1]
        let i = a.classify_word(0x6d400420);
        assert_eq!(i.load_bytes, 16);
        // str d0, [x1, x2, lsl #3]
        let i = a.classify_word(0xfc227820);
        assert_eq!((i.class, i.store_bytes), (Class::Store, 8));
        // b.ne
        assert_eq!(a.classify_word(0x54000001).class, Class::Branch);
        // ret
        assert!(a.classify_word(0xd65f03c0).returns);
        assert!(!a.classify_word(0xd63f0000).returns);
        // add x0, x1, x2
        assert_eq!(a.classify_word(0x8b020020).class, Class::Int);
    }

    #[test]
    fn divides_and_square_roots_apart_estimates_not_fp() {
        let a = c(512);
        let op = |w: u32| {
            a.classify_word(w)
                .fp
                .map(|f| (f.op, f.precision, f.vector_bits))
        };
        use FpOp::{Div, Sqrt};
        use Precision::{F16, F32, F64};
        // fdiv d0, d1, d2; fsqrt s0, s1; fsqrt h0, h1
        assert_eq!(op(0x1e621820), Some((Div, F64, None)));
        assert_eq!(op(0x1e21c020), Some((Sqrt, F32, None)));
        assert_eq!(op(0x1ee1c020), Some((Sqrt, F16, None)));
        // fdiv v0.2d, v1.2d, v2.2d; fdiv v0.2s, v1.2s, v2.2s; fsqrt v0.4s, v1.4s
        assert_eq!(op(0x6e62fc20), Some((Div, F64, Some(128))));
        assert_eq!(op(0x2e22fc20), Some((Div, F32, Some(64))));
        assert_eq!(op(0x6ea1f820), Some((Sqrt, F32, Some(128))));
        // fdiv z0.d, p0/m, z0.d, z1.d; fdivr z0.s, p0/m, z0.s, z1.s; fsqrt z0.d, p0/m, z1.d
        assert_eq!(op(0x65cd8020), Some((Div, F64, Some(512))));
        assert_eq!(op(0x658c8020), Some((Div, F32, Some(512))));
        assert_eq!(op(0x65cda020), Some((Sqrt, F64, Some(512))));
        // frecpe v0.2d, v1.2d; frsqrte v0.4s, v1.4s; frsqrte d0, d1: estimates, no FLOPs.
        for w in [0x4ee1d820, 0x6ea1d820, 0x7ee1d820] {
            assert_eq!(op(w), None, "{w:#x}");
        }
    }

    /// FLOPs per instruction of a block of words.
    fn block(a: &Aarch64, words: &[u32]) -> Vec<u32> {
        let w: Vec<Option<u32>> = words.iter().map(|w| Some(*w)).collect();
        a.classify_words(&w)
            .iter()
            .map(|i| i.fp.map_or(0, |f| f.flops()))
            .collect()
    }

    #[test]
    fn reductions_of_an_accumulator_count_nothing() {
        let a = c(512);
        // faddp d0, v0.2d; faddv d0, p0, z0.d; faddp v0.2d, v0.2d, v0.2d on loop values.
        assert_eq!(block(&a, &[0x7e70d800]), [0]);
        assert_eq!(block(&a, &[0x65c02000]), [0]);
        assert_eq!(block(&a, &[0x6e60d400]), [0]);
        // fmla v0.2d, v1.2d, v2.2d accumulates into v0: its reduction is a tail too.
        assert_eq!(block(&a, &[0x4e62cc20, 0x7e70d800]), [4, 0]);
        // fmaxnmv s0, v1.4s of a carried value.
        assert_eq!(block(&a, &[0x6e30c820]), [0]);
    }

    #[test]
    fn reductions_of_block_values_count_lanes_minus_one() {
        // ldr q0, [x0]; faddp d0, v0.2d: one add.
        assert_eq!(block(&c(128), &[0x3dc00000, 0x7e70d800]), [0, 1]);
        // ld1d {z0.d}, p0/z, [x0]; faddv d0, p0, z0.d at 512 bits: 8 lanes, 7 adds.
        assert_eq!(block(&c(512), &[0xa5e0a000, 0x65c02000]), [0, 7]);
        // ldr q0, [x0]; faddp v0.2d, v0.2d, v0.2d: both result lanes are the same sum.
        assert_eq!(block(&c(128), &[0x3dc00000, 0x6e60d400]), [0, 1]);
    }
}
