//! Golden tests: raw-counter fixtures reproduce seed 001's metric tables (Gravelle 2022,
//! Table 16, N-Body on Cascade Lake and A64FX, and Tables 17-20, 22-28) through the shipped
//! recipes, `as_published` variant, within the printed precision.
//!
//! The fixtures (`tests/data/seed001/raw_counters.json`) hold, per table column, the raw
//! counters (PAPI/libpfm names, as the seed collected them through Caliper) that produce the
//! column. They were back-solved from the printed cells by [`backsolve`] below and are
//! rewritten with `HPCSCOPE_BLESS=1`. The metrics are over-determined by the counters (21
//! metrics from about 12 counters), so the other cells test the formulas: every printed cell
//! must be reproduced within half a unit of its last printed digit plus 2 % (the rounding of
//! the cells the counters were solved from; research note test plan 6.3 point 1), except the documented typos and misfits of the
//! research note (section 4.4, and 2.4 point 3 for the Cascade Lake L1 miss rate), listed in
//! `EXCEPTIONS` with the reason. The identities of section 2.4 hold as property tests in
//! `identities.rs`.

use std::collections::BTreeMap;

use hpcscope_counters::catalogue::{Catalogue, Variant};
use hpcscope_counters::compute::{self, Options, Precision};
use hpcscope_counters::raw::{Collector, Count, RawData};

const TABLES: &str = include_str!("data/seed001/tables.md");
const FIXTURE: &str = "tests/data/seed001/raw_counters.json";

/// Cells allowed to miss, with the reason (research note section 4.4 unless said).
const EXCEPTIONS: &[(u32, &str, &str, &str)] = &[
    (
        17,
        "CAS opt 1",
        "mem_bytes",
        "typo: Mem/LS 0.050 x LS 226 = 11.3, printed 112 (section 4.4)",
    ),
    (
        18,
        "A64FX Block Size 4",
        "l2_bytes",
        "typo: L2/LS 4.90 x LS 5,350 = 26,200, printed 2,620 (section 4.4)",
    ),
    (
        18,
        "CAS Block Size 4",
        "l3_bytes",
        "typo: printed in bytes (2.28E+12) in a GB column (section 4.4)",
    ),
    (
        19,
        "CAS chunk 64",
        "l2_mr",
        "typo: 0.41 printed, L3/L2 Bytes give 0.353 (section 4.4)",
    ),
    (
        19,
        "CAS chunk 64",
        "l1_mr",
        "typo: 0.075 printed, the L1 MR identity gives 0.124 (section 4.4)",
    ),
    (
        19,
        "CAS chunk 64",
        "flops_per_ld_ins",
        "the column's gross outlier (research note 2.4 point 3): LS Bytes / (8 x flops/fpins) gives 325E9 loads+stores, flops/[LD,ST] ins give 488E9",
    ),
    (
        19,
        "CAS chunk 64",
        "flops_per_st_ins",
        "same outlier as flops/LD ins of this column (2.4 point 3)",
    ),
    (
        19,
        "CAS chunk 64",
        "flops_per_st_bytes",
        "same outlier as flops/LD ins of this column (2.4 point 3)",
    ),
    (
        22,
        "OPT 2B",
        "flops_per_ld_bytes",
        "printed 1.02, AI 0.71 and flops/ST Bytes 2.19 imply 1.05 (section 4.4)",
    ),
];

/// Cells derived from other rounded cells: the research note's 1-2 % (test plan 6.3 point 1).
const DERIVED_TOLERANCE: f64 = 0.02;

/// Cascade Lake L1 MR: the identity L1 MR x 64 / (L2/LS) = esize x flops/fpins holds only
/// within 9 % over the tables (research note 2.4 point 3), so the printed 2-digit miss
/// rates are matched within 9 % instead of their printed precision.
const CLX_L1_MR_TOLERANCE: f64 = 0.09;

#[derive(Debug, Clone)]
struct Cell {
    value: Option<f64>,
    /// Half a unit of the last printed digit, in the metric's stored unit.
    half_ulp: f64,
    text: String,
}

#[derive(Debug, Clone)]
struct Column {
    table: u32,
    machine: &'static str, // "clx" or "a64fx"
    name: String,
    cells: BTreeMap<String, Cell>,
}

fn metric_of(label: &str) -> Option<(&'static str, f64)> {
    Some(match label {
        "Time (s)" => ("time", 1.0),
        "IPC" => ("ipc", 1.0),
        "flops/s (Gflops/s)" => ("flops_per_s", 1e9),
        "LS Bytes (GB)" => ("ls_bytes", 1e9),
        "L2 Bytes (GB)" => ("l2_bytes", 1e9),
        "L3 Bytes (GB)" => ("l3_bytes", 1e9),
        "Mem Bytes (GB)" => ("mem_bytes", 1e9),
        "L1 MR" => ("l1_mr", 1.0),
        "L2 MR" => ("l2_mr", 1.0),
        "L3 MR" => ("l3_mr", 1.0),
        "L2 / LS" => ("l2_per_ls", 1.0),
        "L3 / LS" => ("l3_per_ls", 1.0),
        "Mem / LS" => ("mem_per_ls", 1.0),
        "LD ins / ST ins" => ("ld_per_st", 1.0),
        "flops" => ("flops", 1.0),
        "flops (Gflops)" => ("flops", 1e9),
        "flops/fpins" => ("flops_per_fpins", 1.0),
        "AI" => ("ai", 1.0),
        "flops/LD ins" => ("flops_per_ld_ins", 1.0),
        "flops/ST ins" => ("flops_per_st_ins", 1.0),
        "flops/LD Bytes" => ("flops_per_ld_bytes", 1.0),
        "flops/ST Bytes" => ("flops_per_st_bytes", 1.0),
        _ => return None,
    })
}

/// Parses a printed cell: `20,170`, `31.2E-03`, `1.37E12`, `7.99...`, `NA`.
fn parse_cell(text: &str, scale: f64) -> Cell {
    let t = text.trim().replace(',', "");
    if t == "NA" || t.is_empty() {
        return Cell {
            value: None,
            half_ulp: 0.0,
            text: text.trim().into(),
        };
    }
    let truncated = t.ends_with("...");
    let t = t.trim_end_matches("...");
    let (mant, exp) = match t.find(['E', 'e']) {
        Some(p) => (
            &t[..p],
            t[p + 1..].trim_start_matches('+').parse::<i32>().unwrap(),
        ),
        None => (t, 0),
    };
    let decimals = mant.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    let m: f64 = mant.parse().unwrap_or_else(|_| panic!("cell '{text}'"));
    let unit = 10f64.powi(exp - decimals);
    let mut value = m * 10f64.powi(exp);
    let mut half = 0.5 * unit;
    if truncated {
        // "7.99..." : somewhere in [7.99, 8.00).
        value += 0.5 * unit;
    } else if half == 0.0 {
        half = 0.5;
    }
    if truncated {
        half = 0.5 * unit;
    }
    Cell {
        value: Some(value * scale),
        half_ulp: half * scale,
        text: text.trim().into(),
    }
}

fn sig(c: &Cell) -> f64 {
    match c.value {
        Some(v) if v != 0.0 && c.half_ulp > 0.0 => (v.abs() / (2.0 * c.half_ulp)).log10(),
        _ => 0.0,
    }
}

fn parse_tables() -> Vec<Column> {
    let mut cols = Vec::new();
    let mut lines = TABLES.lines().peekable();
    while let Some(l) = lines.next() {
        let Some(rest) = l.strip_prefix("*Table ") else {
            continue;
        };
        let table: u32 = rest.split('.').next().unwrap().parse().unwrap();
        let rows: Vec<Vec<String>> = lines
            .by_ref()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                l.trim()
                    .trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().replace("<i>", "").replace("</i>", ""))
                    .collect()
            })
            .collect();
        let header = &rows[0];
        let ncol = header.len() - 1;
        // Machine and version names per column.
        let (machines, names, first_data): (Vec<&'static str>, Vec<String>, usize) =
            if header.iter().any(|h| h == "A64FX") {
                let mut m = Vec::new();
                let mut cur = "a64fx";
                for h in &header[1..] {
                    if h == "A64FX" {
                        cur = "a64fx";
                    } else if h == "CAS" {
                        cur = "clx";
                    }
                    m.push(cur);
                }
                (m, rows[2][1..].to_vec(), 3)
            } else {
                let m = if rest.contains("Cascade Lake") {
                    "clx"
                } else {
                    "a64fx"
                };
                (vec![m; ncol], header[1..].to_vec(), 2)
            };
        let mut tc: Vec<Column> = (0..ncol)
            .map(|i| Column {
                table,
                machine: machines[i],
                name: format!(
                    "{} {}",
                    if machines[i] == "clx" { "CAS" } else { "A64FX" },
                    names[i]
                ),
                cells: BTreeMap::new(),
            })
            .collect();
        if first_data == 2 {
            // One machine per table: the version names alone.
            for (i, c) in tc.iter_mut().enumerate() {
                c.name = names[i].clone();
            }
        }
        for r in &rows[first_data..] {
            let Some((id, scale)) = metric_of(&r[0]) else {
                continue;
            };
            for (i, c) in tc.iter_mut().enumerate() {
                c.cells.insert(id.to_string(), parse_cell(&r[i + 1], scale));
            }
        }
        cols.extend(tc);
    }
    cols
}

fn precision_of(table: u32) -> Precision {
    // Tables 16-19 are DP codes; VPIC (20) and the Pagosa kernels (22-28) are SP
    // (flops/fpins above the DP maximum of 8 on Cascade Lake).
    if table >= 20 {
        Precision::Sp
    } else {
        Precision::Dp
    }
}

/// The more precisely printed of two derivations of one quantity.
fn best(a: (Option<f64>, f64), b: (Option<f64>, f64)) -> f64 {
    match (a.0, b.0) {
        (Some(x), Some(y)) => {
            if a.1 >= b.1 {
                x
            } else {
                y
            }
        }
        (Some(x), None) => x,
        (None, Some(y)) => y,
        _ => panic!("no derivation"),
    }
}

/// Raw counters that reproduce one printed column (see the module doc).
fn backsolve(c: &Column) -> RawData {
    // Documented typos are not used to solve for counters.
    let cell = |id: &str| {
        let typo = EXCEPTIONS.iter().any(|(t, col, m, why)| {
            *t == c.table && *col == c.name && *m == id && why.starts_with("typo")
        });
        match c.cells.get(id) {
            Some(x) if !typo => x.clone(),
            _ => Cell {
                value: None,
                half_ulp: 0.0,
                text: String::new(),
            },
        }
    };
    let sp = precision_of(c.table) == Precision::Sp;
    let time = cell("time").value.unwrap();
    let f_rate = cell("flops_per_s");
    let flops = best(
        (cell("flops").value, sig(&cell("flops"))),
        (
            f_rate.value.map(|r| r * time),
            sig(&f_rate).min(sig(&cell("time"))),
        ),
    );
    let r = cell("flops_per_fpins").value.unwrap();
    let fpins = flops / r;
    let ls_b = cell("ls_bytes").value.unwrap();
    let fld = cell("flops_per_ld_ins");
    let fst = cell("flops_per_st_ins");
    let q_printed = cell("ld_per_st");
    let q = best(
        (q_printed.value, sig(&q_printed)),
        (
            fst.value.zip(fld.value).map(|(s, l)| s / l),
            sig(&fst).min(sig(&fld)),
        ),
    );
    let mut raw = RawData::new(
        &format!("T{} {}", c.table, c.name),
        "seed001 fixture",
        Collector::Papi,
    );
    let t = raw.thread_mut("kernel", 0);
    t.time_s = Some(time);
    let mut put = |k: &str, x: f64| {
        t.counters.insert(k.to_string(), Count::of(x));
    };
    let cyc = 1e12;
    // Byte counts: the printed GB, or the printed ratio to LS Bytes times LS Bytes,
    // whichever is printed with more digits.
    let ls_sig = sig(&cell("ls_bytes"));
    let via_ls = |id: &str, ratio: &str| {
        let (b, r) = (cell(id), cell(ratio));
        best(
            (b.value, sig(&b)),
            (r.value.map(|x| x * ls_b), sig(&r).min(ls_sig)),
        )
    };
    let l2b = via_ls("l2_bytes", "l2_per_ls");
    let memb = via_ls("mem_bytes", "mem_per_ls");
    if c.machine == "clx" {
        // Scalar + 512-bit mix with the printed flops/fpins.
        let w = if sp { 16.0 } else { 8.0 };
        let p512 = ((flops - fpins) / (w - 1.0)).max(0.0);
        let scalar = fpins - p512;
        let (ps, pd) = if sp {
            ("SINGLE", "DOUBLE")
        } else {
            ("DOUBLE", "SINGLE")
        };
        for wd in ["SCALAR", "128B_PACKED", "256B_PACKED", "512B_PACKED"] {
            put(&format!("FP_ARITH_INST_RETIRED:{wd}_{pd}"), 0.0);
        }
        put(&format!("FP_ARITH_INST_RETIRED:SCALAR_{ps}"), scalar);
        put(&format!("FP_ARITH_INST_RETIRED:128B_PACKED_{ps}"), 0.0);
        put(&format!("FP_ARITH_INST_RETIRED:256B_PACKED_{ps}"), 0.0);
        put(&format!("FP_ARITH_INST_RETIRED:512B_PACKED_{ps}"), p512);
        let e = if sp { 4.0 } else { 8.0 };
        let bpl = (e * scalar + 64.0 * p512) / fpins;
        let ls_ins = ls_b / bpl;
        put("PAPI_LD_INS", ls_ins * q / (1.0 + q));
        put("PAPI_SR_INS", ls_ins / (1.0 + q));
        put("PAPI_L1_DCM", l2b / 64.0);
        // L3 Bytes = 64 x PAPI_L2_TCM; where the printed L3 Bytes is off by orders of
        // magnitude (T18, printed in bytes), L2 MR x L2 Bytes gives it.
        let from_mr = cell("l2_mr").value.map(|m| m * l2b);
        let l3b = match (cell("l3_bytes").value, from_mr) {
            (Some(p), Some(m)) if (p / m).log10().abs() > 1.0 => m,
            (Some(_), _) => via_ls("l3_bytes", "l3_per_ls"),
            (None, Some(m)) => m,
            _ => unreachable!(),
        };
        let l2tcm = l3b / 64.0;
        put("PAPI_L2_TCM", l2tcm);
        put("PAPI_L2_DCM", l2tcm);
        put("PAPI_L3_TCM", cell("l3_mr").value.unwrap() * l2tcm);
        // Memory: 6 IMCs x 2 sockets, read and write, as the seed's Table 10.
        let lines = memb / 64.0;
        for imc in 0..6 {
            for cpu in [0, 24] {
                put(
                    &format!("skx_unc_imc{imc}::UNC_M_CAS_COUNT:RD:cpu={cpu}"),
                    lines * 0.6 / 12.0,
                );
                put(
                    &format!("skx_unc_imc{imc}::UNC_M_CAS_COUNT:WR:cpu={cpu}"),
                    lines * 0.4 / 12.0,
                );
            }
        }
        put("PAPI_TOT_CYC", cyc);
        put("INST_RETIRED:PREC_DIST", cell("ipc").value.unwrap() * cyc);
    } else {
        let (fixed, scale) = if sp {
            ("FP_SP_FIXED_OPS_SPEC", "FP_SP_SCALE_OPS_SPEC")
        } else {
            ("FP_DP_FIXED_OPS_SPEC", "FP_DP_SCALE_OPS_SPEC")
        };
        let (ofixed, oscale) = if sp {
            ("FP_DP_FIXED_OPS_SPEC", "FP_DP_SCALE_OPS_SPEC")
        } else {
            ("FP_SP_FIXED_OPS_SPEC", "FP_SP_SCALE_OPS_SPEC")
        };
        // Any split reproduces the flops: 20 % fixed, 80 % scalable (x RVL = 4).
        put(fixed, 0.2 * flops);
        put(scale, 0.8 * flops / 4.0);
        put(ofixed, 0.0);
        put(oscale, 0.0);
        put("FP_SPEC", fpins);
        let ld = flops / fld.value.unwrap();
        let st = best(
            (fst.value.map(|f| flops / f), sig(&fst)),
            (Some(ld / q), sig(&q_printed)),
        );
        put("LD_SPEC", ld);
        put("ST_SPEC", st);
        // LD and ST bytes: the smaller comes from its printed flops/bytes ratio, the larger
        // is LS Bytes minus it (a subtraction that keeps the digits).
        let (fldb, fstb) = (cell("flops_per_ld_bytes"), cell("flops_per_st_bytes"));
        let (ld_b, st_b) = if fstb.value.unwrap() >= fldb.value.unwrap() {
            let st_b = flops / fstb.value.unwrap();
            (ls_b - st_b, st_b)
        } else {
            let ld_b = flops / fldb.value.unwrap();
            (ld_b, ls_b - ld_b)
        };
        // Alg. 9 with no scalar-FP loads: bytes = 4 x (ins - sve) + 64 x sve.
        put("ASE_SVE_LD_SPEC", ((ld_b - 4.0 * ld) / 60.0).max(0.0));
        put("ASE_SVE_ST_SPEC", ((st_b - 4.0 * st) / 60.0).max(0.0));
        put("FP_LD_SPEC", 0.0);
        put("FP_ST_SPEC", 0.0);
        let l1dcm = l2b / 256.0;
        put("PAPI_L1_DCM", l1dcm);
        put("L1D_CACHE", l1dcm / cell("l1_mr").value.unwrap());
        // L2 accesses are not printed: any value reproduces L2 MR with PAPI_L2_DCM.
        let l2acc = 2.0 * l1dcm;
        put("L2D_CACHE", l2acc);
        put("PAPI_L2_DCM", cell("l2_mr").value.unwrap() * l2acc);
        let lines = memb / 256.0;
        put("L2D_CACHE_REFILL", 0.7 * lines);
        put("L2D_CACHE_WB", 0.3 * lines);
        put("CPU_CYCLES", cyc);
        put("INST_SPEC", cell("ipc").value.unwrap() * cyc);
        put("INST_RETIRED", cell("ipc").value.unwrap() * cyc * 0.98);
    }
    raw
}

fn fixtures(cols: &[Column]) -> Vec<RawData> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    let bless = std::env::var("HPCSCOPE_BLESS").is_ok_and(|v| v == "1");
    if bless || !path.exists() {
        let raws: Vec<RawData> = cols.iter().map(backsolve).collect();
        std::fs::write(&path, serde_json::to_string_pretty(&raws).unwrap() + "\n").unwrap();
        println!("wrote {}", path.display());
    }
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

struct Miss {
    table: u32,
    column: String,
    metric: String,
    printed: String,
    computed: Option<f64>,
    allowed: f64,
}

fn check_all(tables: &[u32]) -> (usize, Vec<Miss>) {
    let cols = parse_tables();
    let raws = fixtures(&cols);
    assert_eq!(cols.len(), raws.len(), "one fixture per printed column");
    let cat = Catalogue::builtin();
    let order: Vec<String> = cat.metrics.metrics.iter().map(|m| m.id.clone()).collect();
    let mut checked = 0;
    let mut misses = Vec::new();
    for (c, raw) in cols.iter().zip(&raws) {
        if !tables.contains(&c.table) {
            continue;
        }
        assert_eq!(
            raw.label,
            format!("T{} {}", c.table, c.name),
            "fixture order"
        );
        let recipe = cat
            .find(if c.machine == "clx" {
                "intel-cascadelake"
            } else {
                "fujitsu-a64fx"
            })
            .unwrap();
        let compiled = cat.compile(recipe, Variant::AsPublished).unwrap();
        let opts = Options {
            precision: precision_of(c.table),
            ..Options::default()
        };
        let rep = compute::compute(&compiled, &order, raw, &opts);
        let r = &rep.regions[0];
        for (id, cell) in &c.cells {
            let got = r.value(id);
            let Some(want) = cell.value else {
                assert!(
                    got.is_none(),
                    "T{} {} {id}: printed NA, computed {got:?}",
                    c.table,
                    c.name
                );
                assert!(
                    r.get(id).unwrap().na.as_ref().unwrap().contains("no L3"),
                    "NA says why"
                );
                continue;
            };
            checked += 1;
            let mut allowed = cell.half_ulp + DERIVED_TOLERANCE * want.abs();
            if c.machine == "clx" && id == "l1_mr" {
                allowed = allowed.max(CLX_L1_MR_TOLERANCE * want.abs());
            }
            let ok = got.is_some_and(|g| (g - want).abs() <= allowed);
            if !ok {
                misses.push(Miss {
                    table: c.table,
                    column: c.name.clone(),
                    metric: id.clone(),
                    printed: cell.text.clone(),
                    computed: got,
                    allowed,
                });
            }
        }
    }
    (checked, misses)
}

fn assert_only_documented(misses: &[Miss], tables: &[u32]) {
    let mut undocumented = Vec::new();
    for m in misses {
        if !EXCEPTIONS
            .iter()
            .any(|(t, c, id, _)| *t == m.table && *c == m.column && *id == m.metric)
        {
            undocumented.push(format!(
                "Table {} {} {}: printed {}, computed {:?} (allowed +-{:.3e})",
                m.table, m.column, m.metric, m.printed, m.computed, m.allowed
            ));
        }
    }
    assert!(
        undocumented.is_empty(),
        "cells not reproduced:\n{}",
        undocumented.join("\n")
    );
    // Every listed exception is still a real miss (the list does not rot).
    for (t, c, id, why) in EXCEPTIONS.iter().filter(|e| tables.contains(&e.0)) {
        assert!(
            misses
                .iter()
                .any(|m| m.table == *t && m.column == *c && m.metric == *id),
            "exception Table {t} {c} {id} ({why}) is reproduced now: remove it from EXCEPTIONS"
        );
    }
}

#[test]
fn table16_nbody_cascade_lake_and_a64fx() {
    let (checked, misses) = check_all(&[16]);
    // 4 columns x 21 metrics, minus the A64FX L3 cells printed NA (3 x 2).
    assert_eq!(checked, 4 * 21 - 6);
    assert_only_documented(&misses, &[16]);
}

#[test]
fn tables_17_to_28_other_mini_apps_and_pagosa() {
    let tables = [17, 18, 19, 20, 22, 23, 25, 26, 27, 28];
    let (checked, misses) = check_all(&tables);
    assert!(checked > 900, "{checked} cells checked");
    assert_only_documented(&misses, &tables);
}

/// The research note's worked example (test plan 6.3, point 1): Cascade Lake N-Body SIMD
/// from hand-written counters, independently of the back-solver.
#[test]
fn worked_example_cascade_lake_nbody_simd() {
    let cat = Catalogue::builtin();
    let order: Vec<String> = cat.metrics.metrics.iter().map(|m| m.id.clone()).collect();
    let compiled = cat
        .compile(cat.find("clx").unwrap(), Variant::AsPublished)
        .unwrap();
    let mut raw = RawData::new("CAS simd", "manual", Collector::Papi);
    let t = raw.thread_mut("nbody", 0);
    t.time_s = Some(2.98);
    for (k, x) in [
        ("FP_ARITH_INST_RETIRED:512B_PACKED_DOUBLE", 171249082555.0),
        ("FP_ARITH_INST_RETIRED:SCALAR_DOUBLE", 7339561.0),
        ("FP_ARITH_INST_RETIRED:128B_PACKED_DOUBLE", 0.0),
        ("FP_ARITH_INST_RETIRED:256B_PACKED_DOUBLE", 0.0),
        ("FP_ARITH_INST_RETIRED:SCALAR_SINGLE", 0.0),
        ("FP_ARITH_INST_RETIRED:128B_PACKED_SINGLE", 0.0),
        ("FP_ARITH_INST_RETIRED:256B_PACKED_SINGLE", 0.0),
        ("FP_ARITH_INST_RETIRED:512B_PACKED_SINGLE", 0.0),
        ("PAPI_LD_INS", 39836610010.0),
        ("PAPI_SR_INS", 493027352.0),
        ("PAPI_L1_DCM", 20046875000.0),
        ("PAPI_L2_TCM", 26218750000.0),
        ("PAPI_L3_TCM", 655469.0),
        ("skx_unc_imc0::UNC_M_CAS_COUNT:RD:cpu=0", 3156250.0),
        ("skx_unc_imc0::UNC_M_CAS_COUNT:WR:cpu=0", 2000000.0),
        ("PAPI_TOT_CYC", 400000000000.0),
        ("INST_RETIRED:PREC_DIST", 220000000000.0),
    ] {
        t.counters.insert(k.into(), Count::of(x));
    }
    let rep = compute::compute(&compiled, &order, &raw, &Options::default());
    let r = &rep.regions[0];
    let near = |id: &str, want: f64, rel: f64| {
        let got = r
            .value(id)
            .unwrap_or_else(|| panic!("{id}: {:?}", r.get(id)));
        assert!(
            (got - want).abs() <= rel * want.abs(),
            "{id}: {got} vs {want}"
        );
    };
    near("ipc", 0.55, 1e-9);
    near("flops", 1.37e12, 0.002);
    near("flops_per_fpins", 7.9997, 1e-4);
    near("ls_bytes", 2581.0e9, 5e-4);
    near("l2_bytes", 1283e9, 1e-3);
    near("l3_bytes", 1678e9, 1e-3);
    near("mem_bytes", 0.33e9, 1e-3);
    near("l1_mr", 0.497, 2e-3);
    near("l2_mr", 1.308, 1e-3);
    near("l3_mr", 2.5e-5, 1e-3);
    near("ld_per_st", 80.8, 1e-3);
    near("ai", 0.531, 1e-3);
    near("flops_per_ld_ins", 34.39, 1e-3);
    near("flops_per_st_ins", 2779.0, 1e-3);
    near("flops_per_s", 459.7e9, 1e-3);
}
