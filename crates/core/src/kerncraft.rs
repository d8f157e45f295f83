//! Kerncraft (and OSACA) machine files: [`import`] turns one into a [`Machine`] with the
//! provenance of each number, [`export`] writes the fields of a machine that map. What does
//! not map is listed ([`Converted::unmapped`]), never guessed.
//!
//! What maps, import:
//!
//! | Kerncraft | hpcscope |
//! |---|---|
//! | `model name`, `model type`, `clock`, `sockets`, `cores per socket`, `threads per core` | `name`, `description`, `frequency_ghz`, topology |
//! | `isa` (`x86`, `aarch64`) | `isa` (`x86_64`, `aarch64`) |
//! | `FLOPs per cycle` `DP`/`SP` `total` x `clock` | theoretical `core_gflops` (x cores: `node_gflops`) |
//! | `FLOPs per cycle` `FMA` > 0, or a kernel name with `fma` | `fma` |
//! | the vector extension a benchmark kernel or compiler flag names (`triad_avx512_fma`, `-march=skylake-avx512`) | `simd`, `vector_bits` |
//! | `memory hierarchy` caches: `cache per group` `sets` x `ways` x `cl_size`, `cores per group` | `[levels.cache]` geometry |
//! | `benchmarks` `measurements` of `triad` (or `stream_triad`), 1 thread per core: 1 core; all cores of the node when measured | `core_gbs`; `node_gbs` |
//!
//! Kerncraft measures one socket: on a machine of several sockets the node bandwidths are
//! not in the file and are left out. Kerncraft's `triad` is likwid-bench's `a = b + c * d`
//! (three read streams, one write), not STREAM's `a = b + s * c`: a note says so.

use serde_yaml_ng::{Mapping, Value};

use crate::Failure;
use crate::machine::{CacheGeometry, FORMAT_VERSION, Level, LevelKind, Machine, Peak, Precision};

/// The Kerncraft machine-file version [`export`] writes (the format of the files Kerncraft
/// 0.8.11 to 0.8.18 ship).
pub const KERNCRAFT_VERSION: &str = "0.8.11.dev0";

/// A conversion and what did not map.
#[derive(Debug, Clone)]
pub struct Converted<T> {
    /// The result.
    pub value: T,
    /// Fields of the source that have no counterpart, each with why.
    pub unmapped: Vec<String>,
}

/// Values the user gives for what a Kerncraft file leaves out (`INFORMATION_REQUIRED`, or
/// nothing names the vector extension).
#[derive(Debug, Clone, Default)]
pub struct ImportOverrides {
    /// Machine id (default: the file name without extension, lower case).
    pub id: Option<String>,
    /// Vector extension, e.g. `neon`.
    pub simd: Option<String>,
    /// Vector width, bits.
    pub vector_bits: Option<u32>,
    /// Double-precision FLOPs per cycle of one core.
    pub dp_flops_per_cycle: Option<f64>,
}

fn get<'a>(m: &'a Value, key: &str) -> Option<&'a Value> {
    untag(m).as_mapping()?.get(key).map(untag)
}

fn untag(v: &Value) -> &Value {
    match v {
        Value::Tagged(t) => untag(&t.value),
        v => v,
    }
}

/// A number, or Kerncraft's prefixed unit string (`2.4 GHz`, `270.23 GB/s`, `32.00 kB`) in
/// base units (Hz, B/s, B). `INFORMATION_REQUIRED` and other text give `None`.
fn number(v: &Value) -> Option<f64> {
    match untag(v) {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let mut it = s.split_whitespace();
            let x: f64 = it.next()?.parse().ok()?;
            let unit = it.next().unwrap_or("");
            let scale = match unit.chars().next() {
                Some('k') => 1e3,
                Some('M') => 1e6,
                Some('G') => 1e9,
                Some('T') => 1e12,
                Some('P') => 1e15,
                _ => 1.0,
            };
            let scale = if unit.len() > 1 || unit == "B" {
                scale
            } else {
                1.0
            };
            Some(x * scale)
        }
        _ => None,
    }
    .filter(|x| x.is_finite())
}

fn text(v: &Value) -> Option<String> {
    match untag(v) {
        Value::String(s) if !s.starts_with("INFORMATION_REQUIRED") => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The vector extension and width that `evidence` (kernel names, compiler flags) names.
fn simd_of(evidence: &str, fma: bool) -> Option<(String, u32)> {
    let e = evidence.to_ascii_lowercase();
    if let Some(i) = e.find("sve") {
        let bits: String = e[i + 3..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        return Some(("sve".into(), bits.parse().ok()?));
    }
    if e.contains("avx512") {
        return Some(("avx512".into(), 512));
    }
    if e.contains("avx2") || (e.contains("avx") && fma) {
        return Some(("avx2".into(), 256));
    }
    if e.contains("avx") {
        return Some(("avx".into(), 256));
    }
    if e.contains("neon") || e.contains("asimd") {
        return Some(("neon".into(), 128));
    }
    if e.contains("sse") {
        return Some(("sse2".into(), 128));
    }
    None
}

/// The deepest nesting of YAML flow collections read: the YAML parser's own recursion
/// limit (128) is reached only after a time that grows with the square of the nesting.
const MAX_FLOW_NESTING: usize = 64;

/// Where (1-based line and column) flow collections (`{`, `[`) first nest deeper than
/// `limit`, outside quoted scalars and comments; `None` when they never do. Linear in the
/// text, so that a hostile file is refused before the parser sees it.
fn flow_nesting_past(src: &str, limit: usize) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let (mut line, mut column) = (1usize, 0usize);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut comment = false;
    let mut prev = '\n';
    for c in src.chars() {
        column += 1;
        if c == '\n' {
            line += 1;
            column = 0;
            comment = false;
            prev = c;
            // A quoted scalar may span lines; a comment may not.
            continue;
        }
        if comment {
            continue;
        }
        match quote {
            Some('"') => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    quote = None;
                }
            }
            // In single quotes `''` is a quote: closing and reopening reads the same.
            Some(_) => {
                if c == '\'' {
                    quote = None;
                }
            }
            None => match c {
                '#' if prev.is_whitespace() => comment = true,
                '"' | '\'' => quote = Some(c),
                '{' | '[' => {
                    depth += 1;
                    if depth > limit {
                        return Some((line, column));
                    }
                }
                '}' | ']' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        prev = c;
    }
    None
}

/// Imports the Kerncraft machine file text `src`; `origin` names it in errors and in the
/// provenance, `file_stem` gives the default id.
#[allow(clippy::too_many_lines)]
pub fn import(
    src: &str,
    origin: &str,
    file_stem: &str,
    ov: &ImportOverrides,
) -> Result<Converted<Machine>, Failure> {
    if let Some((line, column)) = flow_nesting_past(src, MAX_FLOW_NESTING) {
        return Err(Failure::input(format!(
            "{origin}: not YAML that hpcscope reads: flow collections (`{{`, `[`) nest more \
             than {MAX_FLOW_NESTING} deep at line {line} column {column}; a Kerncraft machine \
             file nests a few levels: give one of the files of Kerncraft's \
             examples/machine-files or one `kerncraft` wrote"
        )));
    }
    let doc: Value = serde_yaml_ng::from_str(src)
        .map_err(|e| Failure::input(format!("{origin}: not YAML: {e}")))?;
    let doc = untag(&doc);
    if get(doc, "memory hierarchy").is_none() || get(doc, "cores per socket").is_none() {
        return Err(Failure::input(format!(
            "{origin}: not a Kerncraft machine file (no `memory hierarchy` or `cores per \
             socket`); give one of the files of Kerncraft's examples/machine-files or one \
             `kerncraft` wrote"
        )));
    }
    let version = get(doc, "kerncraft version")
        .and_then(text)
        .unwrap_or_default();
    let src_note = format!("Kerncraft machine file {origin} (kerncraft version {version})");
    let mut unmapped = Vec::new();
    let mut missing = Vec::new();
    let need_u32 = |key: &str, missing: &mut Vec<String>| -> u32 {
        match get(doc, key).and_then(number) {
            Some(x) if x >= 1.0 && x.fract() == 0.0 => x as u32,
            _ => {
                missing.push(format!("`{key}` (a positive integer)"));
                1
            }
        }
    };
    let sockets = need_u32("sockets", &mut missing);
    let cores_per_socket = need_u32("cores per socket", &mut missing);
    let threads_per_core = get(doc, "threads per core")
        .and_then(number)
        .filter(|x| *x >= 1.0)
        .map(|x| x as u32);
    let clock_hz = get(doc, "clock").and_then(number);
    let name = get(doc, "model name")
        .and_then(text)
        .unwrap_or_else(|| file_stem.to_string());
    let description = get(doc, "model type").and_then(text).unwrap_or_default();
    let isa = match get(doc, "isa")
        .and_then(text)
        .map(|s| s.to_ascii_lowercase())
    {
        Some(s) if s == "x86" || s == "x86_64" => "x86_64".to_string(),
        Some(s) if s == "aarch64" || s == "armv8" => "aarch64".to_string(),
        Some(s) => s,
        None => {
            missing.push("`isa` (x86 or aarch64)".into());
            String::new()
        }
    };
    // FLOPs per cycle.
    let fpc = |prec: &str, k: &str| {
        get(doc, "FLOPs per cycle")
            .and_then(|f| get(f, prec))
            .and_then(|p| get(p, k))
            .and_then(number)
    };
    let dp_total = fpc("DP", "total");
    let sp_total = fpc("SP", "total");
    let dp_fma = fpc("DP", "FMA");
    // Evidence of the vector extension: the fastest benchmark kernels, then compiler flags.
    let mut evidence = Vec::new();
    if let Some(k) = get(doc, "benchmarks")
        .and_then(|b| get(b, "kernels"))
        .and_then(Value::as_mapping)
    {
        for (_, v) in k {
            if let Some(s) = get(v, "fastest bench kernel").and_then(text) {
                evidence.push(s);
            }
        }
    }
    let kernel_evidence = evidence.join(" ");
    let mut flags = Vec::new();
    if let Some(c) = get(doc, "compiler") {
        match untag(c) {
            Value::Mapping(m) => flags.extend(m.values().filter_map(text)),
            Value::Sequence(s) => {
                for item in s {
                    if let Some(m) = untag(item).as_mapping() {
                        flags.extend(m.values().filter_map(text));
                    }
                }
            }
            _ => {}
        }
    }
    let flag_evidence = flags.join(" ");
    let fma = dp_fma.map(|x| x > 0.0).unwrap_or(false) || kernel_evidence.contains("fma");
    let (simd, vector_bits, simd_from) = match (&ov.simd, ov.vector_bits) {
        (Some(s), Some(b)) => (s.clone(), b, "given on the command line".to_string()),
        _ => match simd_of(&kernel_evidence, fma) {
            Some((s, b)) => (s, b, format!("the benchmark kernels ({kernel_evidence})")),
            None => match simd_of(&flag_evidence, fma) {
                Some((s, b)) => (s, b, format!("the compiler flags ({flag_evidence})")),
                None => {
                    missing.push(
                        "the vector extension: no benchmark kernel or compiler flag names one \
                         (give --simd and --vector-bits)"
                            .into(),
                    );
                    (String::new(), 0, String::new())
                }
            },
        },
    };
    let dp = ov.dp_flops_per_cycle.or(dp_total);
    let ghz = clock_hz.map(|h| h / 1e9);
    let cores = sockets * cores_per_socket;
    let mut peaks = Vec::new();
    match (dp, ghz) {
        (Some(f), Some(g)) => peaks.push(Peak {
            precision: Precision::F64,
            core_gflops: Some(f * g),
            node_gflops: Some(f * g * f64::from(cores)),
            provenance: format!(
                "theoretical: {f} DP FLOPs per cycle x {g} GHz{}; {src_note}",
                if ov.dp_flops_per_cycle.is_some() {
                    " (FLOPs per cycle given on the command line)"
                } else {
                    ""
                }
            ),
            widths: Vec::new(),
            ceilings: Vec::new(),
            dgemm: None,
            latencies: Vec::new(),
        }),
        (None, _) => missing.push(
            "`FLOPs per cycle` `DP` `total` (INFORMATION_REQUIRED in the file: give \
             --dp-flops-per-cycle)"
                .into(),
        ),
        (_, None) => missing.push("`clock` (e.g. 2.4 GHz)".into()),
    }
    if let (Some(f), Some(g)) = (sp_total, ghz) {
        peaks.push(Peak {
            precision: Precision::F32,
            core_gflops: Some(f * g),
            node_gflops: Some(f * g * f64::from(cores)),
            provenance: format!("theoretical: {f} SP FLOPs per cycle x {g} GHz; {src_note}"),
            widths: Vec::new(),
            ceilings: Vec::new(),
            dgemm: None,
            latencies: Vec::new(),
        });
    }
    // Bandwidths: the triad measurements, one thread per core.
    let measurements = get(doc, "benchmarks").and_then(|b| get(b, "measurements"));
    let kernel_names = ["triad", "stream_triad"];
    let bandwidth = |level: &str| -> Option<(&'static str, Vec<(f64, f64)>)> {
        let m = get(measurements?, level)?;
        let m1 = untag(m)
            .as_mapping()?
            .iter()
            .find_map(|(k, v)| (number(k) == Some(1.0)).then_some(untag(v)))?;
        let cores: Vec<f64> = get(m1, "cores")?
            .as_sequence()?
            .iter()
            .filter_map(number)
            .collect();
        let results = get(m1, "results")?;
        for k in kernel_names {
            if let Some(r) = get(results, k).and_then(Value::as_sequence) {
                let v: Vec<(f64, f64)> = cores
                    .iter()
                    .zip(r.iter().map(number))
                    .filter_map(|(c, b)| Some((*c, b? / 1e9)))
                    .collect();
                if !v.is_empty() {
                    return Some((k, v));
                }
            }
        }
        None
    };
    let mut levels = Vec::new();
    let hierarchy = get(doc, "memory hierarchy")
        .and_then(Value::as_sequence)
        .cloned()
        .unwrap_or_default();
    let mut socket_only = false;
    for (i, l) in hierarchy.iter().enumerate() {
        let lname = get(l, "level")
            .and_then(text)
            .unwrap_or_else(|| format!("level{i}"));
        let cache = get(l, "cache per group");
        let is_memory = cache.is_none() && i + 1 == hierarchy.len();
        let geometry = cache.and_then(|c| {
            let sets = get(c, "sets").and_then(number)?;
            let ways = get(c, "ways").and_then(number)?;
            let cl = get(c, "cl_size").and_then(number)?;
            Some(CacheGeometry {
                size_bytes: (sets * ways * cl) as u64,
                line_bytes: cl as u32,
                associativity: ways as u32,
                shared_by_cores: get(l, "cores per group").and_then(number).map(|x| x as u32),
                inclusive: None,
                provenance: None,
            })
        });
        if let Some(c) = cache {
            for k in ["replacement_policy", "write_allocate", "write_back"] {
                if let Some(v) = get(c, k).and_then(|v| match v {
                    Value::Bool(b) => Some(b.to_string()),
                    v => text(v),
                }) {
                    unmapped.push(format!(
                        "memory hierarchy {lname}: cache per group {k} = {v} (the simulator \
                         models LRU, write-allocate, write-back caches)"
                    ));
                }
            }
        }
        let bw = bandwidth(&lname);
        let (core_gbs, node_gbs, prov) = match &bw {
            Some((k, v)) => {
                let one = v.iter().find(|(c, _)| *c == 1.0).map(|(_, b)| *b);
                let max_cores = v.iter().map(|(c, _)| *c).fold(0.0, f64::max);
                let node = (max_cores == f64::from(cores))
                    .then(|| {
                        v.iter()
                            .filter(|(c, _)| *c == max_cores)
                            .map(|(_, b)| *b)
                            .next()
                    })
                    .flatten();
                if node.is_none() {
                    socket_only = true;
                }
                (
                    one,
                    node,
                    format!(
                        "kerncraft benchmark `{k}`, 1 thread per core: 1 core{}; {src_note}",
                        if node.is_some() {
                            format!(" and all {cores} cores")
                        } else {
                            String::new()
                        }
                    ),
                )
            }
            None => (None, None, format!("cache geometry only; {src_note}")),
        };
        if is_memory && core_gbs.is_none() && node_gbs.is_none() {
            missing.push(format!(
                "a `triad` measurement of memory level {lname} (benchmarks measurements)"
            ));
        }
        levels.push(Level {
            name: if is_memory && lname == "MEM" {
                "MM".into()
            } else {
                lname.clone()
            },
            kind: if is_memory {
                LevelKind::Memory
            } else {
                LevelKind::Cache
            },
            core_gbs,
            node_gbs,
            technology: None,
            cache: geometry,
            provenance: prov,
            widths: Vec::new(),
        });
    }
    for k in [
        "in-core model",
        "overlapping model",
        "non-overlapping model",
        "compiler",
        "NUMA domains per socket",
        "cores per NUMA domain",
        "transparent hugepage",
        "machine state",
    ] {
        if get(doc, k).is_some() {
            unmapped.push(format!(
                "`{k}`: hpcscope's machine format has no such field"
            ));
        }
    }
    for k in ["ADD", "MUL", "FMA"] {
        if fpc("DP", k).is_some() {
            unmapped.push(format!(
                "`FLOPs per cycle` DP {k}: only the total becomes a peak"
            ));
        }
    }
    if measurements.is_some() {
        unmapped.push(
            "benchmark kernels other than triad (load, copy, update, daxpy), SMT and partial \
             core counts: only triad with 1 thread per core on 1 core and on the whole node \
             become bandwidths"
                .into(),
        );
    }
    if !missing.is_empty() {
        return Err(Failure::input(format!(
            "{origin}: cannot make a machine: missing {}",
            missing.join("; ")
        )));
    }
    let mut notes = vec![format!(
        "imported from {src_note}; the peaks are theoretical (clock x FLOPs per cycle), not \
         sustained"
    )];
    if levels.iter().any(|l| l.provenance.contains("`triad`")) {
        notes.push(
            "bandwidths are kerncraft's triad (likwid-bench a = b + c * d: three read streams, \
             one write), not STREAM's a = b + s * c"
                .into(),
        );
    }
    if socket_only {
        notes.push(format!(
            "the file's measurements cover one socket of {sockets}: node_gbs is left out where \
             the whole node was not measured"
        ));
    }
    let id = ov.id.clone().unwrap_or_else(|| {
        file_stem
            .to_ascii_lowercase()
            .replace(|c: char| c.is_whitespace() || c == '/', "-")
    });
    let m = Machine {
        format_version: FORMAT_VERSION,
        id,
        name,
        description,
        isa,
        simd,
        vector_bits,
        fma,
        sockets,
        cores_per_socket,
        threads_per_core,
        frequency_ghz: ghz,
        scalar_frequency_ghz: None,
        compiler: None,
        provenance: format!("{src_note}; vector extension from {simd_from}"),
        peaks,
        levels,
        network: Vec::new(),
        notes,
    };
    m.validate(origin)
        .map_err(|e| Failure::input(format!("{origin}: the imported machine is invalid: {e}")))?;
    Ok(Converted { value: m, unmapped })
}

fn s(v: &str) -> Value {
    Value::String(v.to_string())
}

fn num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        Value::Number((x as i64).into())
    } else {
        Value::Number(x.into())
    }
}

/// A prefixed unit as Kerncraft writes it: `2.40 GHz`, `27.30 GB/s`.
fn unit(x: f64, prefix: &str, u: &str) -> Value {
    s(&format!("{x:.2} {prefix}{u}"))
}

/// Level `l`'s (Kerncraft name `name`) STREAM triad measurements for a Kerncraft machine
/// file: one thread per core, the single core's and the whole node's; `None` without a
/// bandwidth.
fn triad_measurements(
    m: &Machine,
    l: &Level,
    name: &str,
    unmapped: &mut Vec<String>,
) -> Option<Value> {
    // One thread per core: the single-core and the whole-node triad.
    let mut points: Vec<(u32, f64)> = Vec::new();
    if let Some(c) = l.core_gbs {
        points.push((1, c));
    }
    if let Some(n) = l.node_gbs
        && m.cores() > 1
    {
        points.push((m.cores(), n));
    }
    if points.is_empty() {
        return None;
    }
    if m.sockets > 1 && l.node_gbs.is_some() {
        unmapped.push(format!(
            "{} node_gbs is for {} sockets; kerncraft's measurements are for one socket: \
             written with cores = {}",
            name,
            m.sockets,
            m.cores()
        ));
    }
    let mut meas = Mapping::new();
    meas.insert(s("threads per core"), num(1.0));
    meas.insert(
        s("cores"),
        Value::Sequence(points.iter().map(|p| num(p.0.into())).collect()),
    );
    meas.insert(
        s("threads"),
        Value::Sequence(points.iter().map(|p| num(p.0.into())).collect()),
    );
    let mut results = Mapping::new();
    results.insert(
        s("stream_triad"),
        Value::Sequence(points.iter().map(|p| unit(p.1, "G", "B/s")).collect()),
    );
    meas.insert(s("results"), Value::Mapping(results));
    let mut by_threads = Mapping::new();
    by_threads.insert(num(1.0), Value::Mapping(meas));
    Some(Value::Mapping(by_threads))
}

/// Writes the fields of `m` that map to a Kerncraft machine file (YAML); the rest is listed.
pub fn export(m: &Machine) -> Result<Converted<String>, Failure> {
    let mut unmapped = Vec::new();
    let mut doc = Mapping::new();
    let mut put = |k: &str, v: Value| {
        doc.insert(s(k), v);
    };
    put("kerncraft version", s(KERNCRAFT_VERSION));
    put("model name", s(&m.name));
    put(
        "model type",
        s(if m.description.is_empty() {
            &m.name
        } else {
            &m.description
        }),
    );
    if let Some(f) = m.frequency_ghz {
        put("clock", unit(f, "G", "Hz"));
    } else {
        unmapped.push("clock: the machine gives no frequency_ghz".into());
    }
    put("sockets", num(m.sockets.into()));
    put("cores per socket", num(m.cores_per_socket.into()));
    match m.threads_per_core {
        Some(t) => put("threads per core", num(t.into())),
        None => unmapped.push("threads per core: not given".into()),
    }
    put(
        "isa",
        s(match m.isa.as_str() {
            "x86_64" => "x86",
            other => other,
        }),
    );
    let mut fpc = Mapping::new();
    for (prec, key) in [(Precision::F64, "DP"), (Precision::F32, "SP")] {
        let core = m.peak(prec).and_then(|p| p.core_gflops);
        match (core, m.frequency_ghz) {
            (Some(c), Some(f)) => {
                let mut p = Mapping::new();
                p.insert(s("total"), num((c / f * 100.0).round() / 100.0));
                fpc.insert(s(key), Value::Mapping(p));
            }
            _ => unmapped.push(format!(
                "FLOPs per cycle {key}: needs the {prec} core_gflops and frequency_ghz"
            )),
        }
    }
    if !fpc.is_empty() {
        put("FLOPs per cycle", Value::Mapping(fpc));
    }
    unmapped.push(
        "FLOPs per cycle FMA/ADD/MUL, in-core model, compiler flags, overlapping and \
         non-overlapping port models, performance counter metrics: hpcscope's machine format \
         has none of them"
            .into(),
    );
    if let Some(line) = m
        .levels
        .iter()
        .find_map(|l| l.cache.as_ref())
        .map(|c| c.line_bytes)
    {
        put("cacheline size", unit(line.into(), "", "B"));
    }
    let mut hierarchy = Vec::new();
    let mut measurements = Mapping::new();
    let names: Vec<String> = m
        .levels
        .iter()
        .map(|l| {
            if l.kind == LevelKind::Memory && l.name == "MM" {
                "MEM".to_string()
            } else {
                l.name.clone()
            }
        })
        .collect();
    for (i, l) in m.levels.iter().enumerate() {
        let mut e = Mapping::new();
        e.insert(s("level"), s(&names[i]));
        if let Some(c) = &l.cache {
            let sets = c.size_bytes / (u64::from(c.line_bytes) * u64::from(c.associativity));
            let mut g = Mapping::new();
            g.insert(s("sets"), num(sets as f64));
            g.insert(s("ways"), num(c.associativity.into()));
            g.insert(s("cl_size"), num(c.line_bytes.into()));
            let next = m.levels[i + 1..]
                .iter()
                .position(|n| n.cache.is_some())
                .map(|j| names[i + 1 + j].clone());
            let link = next.map(Value::String).unwrap_or(Value::Null);
            g.insert(s("load_from"), link.clone());
            g.insert(s("store_to"), link);
            e.insert(s("cache per group"), Value::Mapping(g));
            e.insert(s("size per group"), unit(c.size_bytes as f64, "", "B"));
            match c.shared_by_cores {
                Some(n) => {
                    e.insert(s("cores per group"), num(n.into()));
                }
                None => unmapped.push(format!(
                    "memory hierarchy {}: cores per group (the cache's sharing is not given)",
                    names[i]
                )),
            }
        } else if l.kind == LevelKind::Cache {
            unmapped.push(format!(
                "memory hierarchy {}: cache per group (no geometry given)",
                names[i]
            ));
        }
        hierarchy.push(Value::Mapping(e));
        if let Some(v) = triad_measurements(m, l, &names[i], &mut unmapped) {
            measurements.insert(s(&names[i]), v);
        }
    }
    put("memory hierarchy", Value::Sequence(hierarchy));
    if !measurements.is_empty() {
        let mut kernel = Mapping::new();
        kernel.insert(s("FLOPs per iteration"), num(2.0));
        let streams = |n: f64, b: f64| {
            let mut x = Mapping::new();
            x.insert(s("streams"), num(n));
            x.insert(s("bytes"), unit(b, "", "B"));
            Value::Mapping(x)
        };
        kernel.insert(s("read streams"), streams(2.0, 16.0));
        kernel.insert(s("read+write streams"), streams(0.0, 0.0));
        kernel.insert(s("write streams"), streams(1.0, 8.0));
        let mut kernels = Mapping::new();
        kernels.insert(s("stream_triad"), Value::Mapping(kernel));
        let mut b = Mapping::new();
        b.insert(s("kernels"), Value::Mapping(kernels));
        b.insert(s("measurements"), Value::Mapping(measurements));
        put("benchmarks", Value::Mapping(b));
    }
    if !m.network.is_empty() {
        unmapped.push("network links: kerncraft machine files have none".into());
    }
    let yaml = serde_yaml_ng::to_string(&Value::Mapping(doc))
        .map_err(|e| Failure::new(crate::ErrorKind::Internal, e.to_string()))?;
    let header = format!(
        "# Kerncraft machine file written by hpcscope from machine `{}`.\n# Bandwidths: \
         `stream_triad` (STREAM's a = b + s * c); peaks: FLOPs per cycle = core GFLOP/s / clock.\n",
        m.id
    );
    Ok(Converted {
        value: header + &yaml,
        unmapped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flow_nesting_is_refused_before_parsing() {
        let deep = format!("a: {}1{}", "{b: ".repeat(20_000), "}".repeat(20_000));
        let e = match import(&deep, "m.yml", "m", &ImportOverrides::default()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a file nested 20,000 deep was read"),
        };
        assert!(
            e.contains("nest more than 64 deep at line 1 column 260"),
            "{e}"
        );
        // Brackets in quotes and comments do not count; a shallow flow mapping is fine.
        let text = format!(
            "a: '{}' # {}\nb: \"{}\"\nc: {{d: [1, 2]}}\n",
            "[".repeat(100),
            "{".repeat(100),
            "{".repeat(100)
        );
        assert_eq!(flow_nesting_past(&text, 64), None);
        assert_eq!(flow_nesting_past("x: [[[1]]]", 2), Some((1, 6)));
    }

    const FILE: &str = "
kerncraft version: 0.8.11.dev0
model name: Test CPU
model type: Test
clock: 2.0 GHz
sockets: 1
cores per socket: 4
threads per core: 1
isa: x86
FLOPs per cycle:
  DP: {total: 16, FMA: 8, ADD: 4, MUL: 4}
  SP: {total: 32}
compiler: !!omap
- gcc: -O3 -march=haswell -mavx2
memory hierarchy:
- level: L1
  cache per group: {sets: 64, ways: 8, cl_size: 64, replacement_policy: LRU}
  cores per group: 1
- level: L2
  cache per group: {sets: 512, ways: 8, cl_size: 64}
  cores per group: 4
- level: MEM
benchmarks:
  kernels:
    triad: {fastest bench kernel: triad_avx_fma}
  measurements:
    L1:
      1:
        cores: [1, 2, 3, 4]
        results:
          triad: [100.00 GB/s, 200.00 GB/s, 300.00 GB/s, 400.00 GB/s]
    MEM:
      1:
        cores: [1, 2, 3, 4]
        results:
          triad: [10.00 GB/s, 15.00 GB/s, 18.00 GB/s, 19.50 GB/s]
";

    #[test]
    fn a_file_imports_with_provenance_and_round_trips() {
        let c = import(FILE, "t.yml", "Test_CPU", &ImportOverrides::default()).unwrap();
        let m = c.value;
        assert_eq!(m.id, "test_cpu");
        assert_eq!((m.simd.as_str(), m.vector_bits, m.fma), ("avx2", 256, true));
        assert_eq!(m.peak(Precision::F64).unwrap().core_gflops, Some(32.0));
        assert_eq!(m.peak(Precision::F32).unwrap().node_gflops, Some(256.0));
        assert_eq!(m.levels[0].core_gbs, Some(100.0));
        assert_eq!(m.levels[0].node_gbs, Some(400.0));
        assert_eq!(m.levels[1].core_gbs, None);
        assert_eq!(m.levels[1].cache.as_ref().unwrap().size_bytes, 262_144);
        assert_eq!(m.levels[2].name, "MM");
        assert_eq!(m.levels[2].node_gbs, Some(19.5));
        assert!(m.levels[2].provenance.contains("t.yml"));
        assert!(c.unmapped.iter().any(|u| u.contains("replacement_policy")));
        // Back to Kerncraft and again: the mapped fields survive.
        let y = export(&m).unwrap().value;
        let back = import(&y, "back.yml", "test_cpu", &ImportOverrides::default());
        let e = back.unwrap_err();
        assert!(e.message.contains("vector extension"), "{e}");
        let back = import(
            &y,
            "back.yml",
            "test_cpu",
            &ImportOverrides {
                simd: Some("avx2".into()),
                vector_bits: Some(256),
                ..Default::default()
            },
        )
        .unwrap()
        .value;
        assert_eq!(back.levels[0].core_gbs, Some(100.0));
        assert_eq!(back.levels[2].node_gbs, Some(19.5));
        assert_eq!(back.peak(Precision::F64).unwrap().core_gflops, Some(32.0));
        assert_eq!(back.levels[1].cache, m.levels[1].cache);
    }

    #[test]
    fn what_is_missing_is_named() {
        let f = FILE.replace(
            "DP: {total: 16, FMA: 8, ADD: 4, MUL: 4}",
            "DP: {total: INFORMATION_REQUIRED}",
        );
        let e = import(&f, "t.yml", "t", &ImportOverrides::default()).unwrap_err();
        assert!(e.message.contains("--dp-flops-per-cycle"), "{e}");
        assert!(import("a: 1", "x.yml", "x", &ImportOverrides::default()).is_err());
    }
}
