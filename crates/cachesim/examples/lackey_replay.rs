//! Replays a valgrind lackey memory trace through a D1 → LL hierarchy with cachegrind's
//! geometry and, given cachegrind's output file, compares miss counts.
//!
//! ```text
//! valgrind --tool=lackey --trace-mem=yes --log-fd=3 ./prog 3>&1 >/dev/null 2>&1 \
//!   | cargo run --release -p hpcscope-cachesim --example lackey_replay -- \
//!       --D1 32768,8,64 --LL 1048576,16,64 --cachegrind cachegrind.out.1234
//! ```
//!
//! Options: `--D1 SIZE,ASSOC,LINE` and `--LL SIZE,ASSOC,LINE` (cachegrind's syntax;
//! defaults 32768,8,64 and 8388608,16,64), `--cachegrind FILE` (a `cachegrind.out.*` to
//! compare with), `--trace FILE` (default: standard input), `--json` (print the
//! statistics as JSON too).
//!
//! How the numbers line up with cachegrind's (LRU, write-allocate, no write-backs modelled):
//! - D1 misses: cachegrind's `D1mr + D1mw`; ours: D1 line-access misses. Cachegrind counts
//!   an access straddling two lines once (a miss if either line misses); we count each
//!   line. The number of straddling accesses is printed; it bounds the difference.
//! - LL misses: cachegrind's `DLmr + DLmw` (data misses in a unified LL that also holds
//!   instructions); ours: memory reads of a data-only LL. Instruction fetches are skipped.
//! - Data references: cachegrind counts a modify (`M`) once, as a read; we count a load and
//!   a store (the store always hits).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::process::ExitCode;

use hpcscope_cachesim::lackey::parse_line;
use hpcscope_cachesim::{Access, CacheConfig, Hierarchy, HierarchyConfig};

struct Options {
    d1: (u64, u32, u64),
    ll: (u64, u32, u64),
    cachegrind: Option<String>,
    trace: Option<String>,
    json: bool,
}

fn parse_geometry(flag: &str, v: &str) -> Result<(u64, u32, u64), String> {
    let parts: Vec<&str> = v.split(',').collect();
    let bad = || format!("{flag} expects SIZE,ASSOC,LINE in bytes (e.g. 32768,8,64), got '{v}'");
    if parts.len() != 3 {
        return Err(bad());
    }
    let size = parts[0].trim().parse().map_err(|_| bad())?;
    let assoc = parts[1].trim().parse().map_err(|_| bad())?;
    let line = parts[2].trim().parse().map_err(|_| bad())?;
    Ok((size, assoc, line))
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        d1: (32768, 8, 64),
        ll: (8 << 20, 16, 64),
        cachegrind: None,
        trace: None,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--D1" => o.d1 = parse_geometry("--D1", &value("--D1")?)?,
            "--LL" => o.ll = parse_geometry("--LL", &value("--LL")?)?,
            "--cachegrind" => o.cachegrind = Some(value("--cachegrind")?),
            "--trace" => o.trace = Some(value("--trace")?),
            "--json" => o.json = true,
            "-h" | "--help" => {
                return Err(
                    "usage: lackey_replay [--D1 S,A,L] [--LL S,A,L] [--cachegrind FILE] \
                            [--trace FILE] [--json]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument '{other}' (see --help)")),
        }
    }
    Ok(o)
}

/// Reads the `events:` and `summary:` lines of a cachegrind output file.
fn read_cachegrind(path: &str) -> Result<HashMap<String, u64>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read '{path}': {e}"))?;
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .ok_or(format!(
                "'{path}' has no '{key}' line; is it a cachegrind.out file?"
            ))
    };
    let events = field("events:")?;
    let summary = field("summary:")?;
    let mut map = HashMap::new();
    for (name, value) in events.split_whitespace().zip(summary.split_whitespace()) {
        let v = value
            .parse()
            .map_err(|_| format!("'{path}': summary value '{value}' is not a number"))?;
        map.insert(name.to_string(), v);
    }
    Ok(map)
}

fn rel_diff(ours: u64, theirs: u64) -> String {
    if theirs == 0 {
        return if ours == 0 {
            "0.0000 %".into()
        } else {
            "n/a".into()
        };
    }
    format!(
        "{:+.4} %",
        100.0 * (ours as f64 - theirs as f64) / theirs as f64
    )
}

fn run() -> Result<(), String> {
    let o = parse_args()?;
    let cfg = HierarchyConfig::new(
        "cachegrind-like",
        vec![
            CacheConfig::new("D1", o.d1.0, o.d1.2, o.d1.1),
            CacheConfig::new("LL", o.ll.0, o.ll.2, o.ll.1),
        ],
    );
    let mut h = Hierarchy::new(cfg).map_err(|e| e.to_string())?;
    let input: Box<dyn Read> = match &o.trace {
        Some(p) => Box::new(std::fs::File::open(p).map_err(|e| format!("cannot open '{p}': {e}"))?),
        None => Box::new(std::io::stdin()),
    };
    let mut reader = BufReader::with_capacity(1 << 20, input);
    let mut line = String::new();
    let mut line_no = 0u64;
    let mut batch: Vec<Access> = Vec::with_capacity(1 << 16);
    let (mut loads, mut stores, mut modifies) = (0u64, 0u64, 0u64);
    loop {
        line.clear();
        let n = reader
            .read_line(&mut line)
            .map_err(|e| format!("reading the trace: {e}"))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let Some(rec) = parse_line(&line, line_no).map_err(|e| e.to_string())? else {
            continue;
        };
        match rec.kind {
            hpcscope_cachesim::lackey::LackeyKind::Instr => continue,
            hpcscope_cachesim::lackey::LackeyKind::Load => loads += 1,
            hpcscope_cachesim::lackey::LackeyKind::Store => stores += 1,
            hpcscope_cachesim::lackey::LackeyKind::Modify => modifies += 1,
        }
        batch.extend(rec.data_accesses());
        if batch.len() >= (1 << 16) - 2 {
            h.access_batch(&batch);
            batch.clear();
        }
    }
    h.access_batch(&batch);
    let s = h.stats();
    let d1_misses = s.levels[0].misses;
    let ll_misses = s.memory.accesses;
    println!(
        "trace: {line_no} lines; data records: {loads} L, {stores} S, {modifies} M; \
         {} accesses straddle a line",
        s.split_accesses
    );
    println!(
        "geometry: D1 {},{},{}  LL {},{},{}",
        o.d1.0, o.d1.1, o.d1.2, o.ll.0, o.ll.1, o.ll.2
    );
    let refs = loads + stores + modifies;
    if let Some(path) = &o.cachegrind {
        let cg = read_cachegrind(path)?;
        let get = |k: &str| cg.get(k).copied().unwrap_or(0);
        let cg_refs = get("Dr") + get("Dw");
        let cg_d1 = get("D1mr") + get("D1mw");
        let cg_ll = get("DLmr") + get("DLmw");
        println!(
            "{:<22}{:>14}{:>14}{:>11}",
            "", "cachegrind", "cachesim", "rel.diff"
        );
        println!(
            "{:<22}{:>14}{:>14}{:>11}",
            "data refs (M once)",
            cg_refs,
            refs,
            rel_diff(refs, cg_refs)
        );
        println!(
            "{:<22}{:>14}{:>14}{:>11}",
            "D1 misses",
            cg_d1,
            d1_misses,
            rel_diff(d1_misses, cg_d1)
        );
        println!(
            "{:<22}{:>14}{:>14}{:>11}",
            "LL data misses",
            cg_ll,
            ll_misses,
            rel_diff(ll_misses, cg_ll)
        );
    } else {
        println!("data refs {refs}; D1 misses {d1_misses}; LL data misses {ll_misses}");
    }
    if o.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lackey_replay: {e}");
            ExitCode::from(2)
        }
    }
}
