//! Plugin arguments (`-plugin lib.so,key=value,...`).

use std::path::PathBuf;

pub use hpcscope_plugin_format::gate::SampleGate;

/// Parsed plugin arguments; see the README for each key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// Where the JSON summary goes; `None` prints it on stderr.
    pub out: Option<PathBuf>,
    /// SVE vector length in bits (aarch64) from `vl=`; without it the plugin reads QEMU's
    /// command line ([`sve_vl_from_qemu_args`]).
    pub vl_bits: Option<u32>,
    /// Stream memory accesses.
    pub mem: bool,
    /// Memory stream sink: an inherited file descriptor ...
    pub mem_fd: Option<i32>,
    /// ... or a path (file or FIFO) to open for writing.
    pub mem_out: Option<PathBuf>,
    /// `memring=RING:TOKENS`: the batches go into the slots of the shared memory `RING`
    /// (an inherited descriptor of a file both sides map, e.g. a memfd), whose free slots
    /// arrive as 4-byte numbers on the inherited descriptor `TOKENS`; `memfd` then carries
    /// only the notices (see the README).
    pub mem_ring: Option<(i32, i32)>,
    /// `coalesce=BYTES`: consecutive accesses of one shape (size and direction) inside one
    /// aligned block of this many bytes share a record (up to 8 per record). A reader that
    /// simulates caches passes its smallest line size. `None`: one record per access.
    pub coalesce: Option<u64>,
    /// `meminline=on|off`: the stream's records written by QEMU's translated code instead
    /// of a callback per access (QEMU built by `scripts/build-qemu.sh`). `None` (the
    /// default): when this QEMU can and `scope=` is not given.
    pub mem_inline: Option<bool>,
    /// Count only instructions whose address is in one of these `[start, end)` ranges.
    pub regions: Vec<(u64, u64)>,
    /// Functions `[start, end)` counted with their callees: counting is on while one of
    /// them is running (entered at `start`, left by a return inside the range).
    pub scopes: Vec<(u64, u64)>,
    /// Write the per-TB breakdown.
    pub tbs: bool,
    /// Replacement classification table (TOML in the format of `data/<isa>.toml`).
    pub table: Option<PathBuf>,
    /// Write a per-instruction check of the memory stream against the byte counts here.
    pub audit: Option<PathBuf>,
    /// `sample=LINE:MOD:HEX`: set sampling's classes (see [`SampleGate`]); the stream
    /// carries only the accesses to sampled classes.
    pub sample: Option<SampleGate>,
}

fn parse_bool(key: &str, v: &str) -> Result<bool, String> {
    match v {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("{key}={v}: expected on or off")),
    }
}

fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parse `START-END` (hex with `0x` or decimal), end exclusive.
pub fn parse_region(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("region={s}: expected START-END, e.g. region=0x401000-0x401200");
    let (a, b) = s.split_once('-').ok_or_else(bad)?;
    let (a, b) = (parse_u64(a).ok_or_else(bad)?, parse_u64(b).ok_or_else(bad)?);
    if a >= b {
        return Err(format!("region={s}: start must be below end"));
    }
    Ok((a, b))
}

impl Config {
    /// Parse the raw `key=value` strings QEMU passes to the plugin.
    pub fn parse<S: AsRef<str>>(raw: &[S]) -> Result<Config, String> {
        let mut c = Config::default();
        for arg in raw {
            let arg = arg.as_ref();
            let (k, v) = arg
                .split_once('=')
                .ok_or_else(|| format!("argument '{arg}' is not key=value"))?;
            match k {
                "out" => c.out = Some(PathBuf::from(v)),
                "vl" => {
                    let bits: u32 = v.parse().map_err(|_| format!("vl={v}: expected bits"))?;
                    if !(128..=2048).contains(&bits) || !bits.is_multiple_of(128) {
                        return Err(format!(
                            "vl={v}: the SVE vector length is a multiple of 128 bits from 128 to 2048"
                        ));
                    }
                    c.vl_bits = Some(bits);
                }
                "mem" => c.mem = parse_bool(k, v)?,
                "meminline" => c.mem_inline = Some(parse_bool(k, v)?),
                "memfd" => {
                    c.mem_fd = Some(
                        v.parse()
                            .map_err(|_| format!("memfd={v}: expected a number"))?,
                    )
                }
                "memout" => c.mem_out = Some(PathBuf::from(v)),
                "memring" => {
                    let fds = v
                        .split_once(':')
                        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
                        .filter(|&(a, b): &(i32, i32)| a >= 0 && b >= 0)
                        .ok_or_else(|| {
                            format!(
                                "memring={v}: expected RING:TOKENS, two file descriptors (the shared ring and the pipe of free slots)"
                            )
                        })?;
                    c.mem_ring = Some(fds);
                }
                "coalesce" => {
                    let b = parse_u64(v)
                        .filter(|b| b.is_power_of_two() && (8..=1 << 15).contains(b))
                        .ok_or_else(|| {
                            format!(
                                "coalesce={v}: expected the smallest cache line size in bytes, a power of two from 8 to 32768"
                            )
                        })?;
                    c.coalesce = Some(b);
                }
                "region" => {
                    for r in v.split('+') {
                        c.regions.push(parse_region(r)?);
                    }
                }
                "scope" => {
                    for r in v.split('+') {
                        c.scopes.push(parse_region(r)?);
                    }
                }
                "tbs" => c.tbs = parse_bool(k, v)?,
                "table" => c.table = Some(PathBuf::from(v)),
                "audit" => c.audit = Some(PathBuf::from(v)),
                "sample" => c.sample = Some(SampleGate::parse(v)?),
                _ => {
                    return Err(format!(
                        "unknown argument '{k}' (known: out, vl, mem, memfd, memout, memring, meminline, coalesce, region, scope, tbs, table, audit, sample)"
                    ));
                }
            }
        }
        if c.mem_inline == Some(true) && !c.scopes.is_empty() {
            return Err(
                "meminline=on cannot follow scope=: a scope's records depend on the call depth at run time; drop one of them".into(),
            );
        }
        if c.mem && c.mem_fd.is_none() && c.mem_out.is_none() {
            return Err("mem=on needs memfd=N or memout=PATH for the access stream".into());
        }
        if c.mem_ring.is_some() && (!c.mem || c.mem_fd.is_none()) {
            return Err(
                "memring= puts the stream's batches in shared memory: it needs mem=on and memfd=N for the notices".into(),
            );
        }
        if c.sample.is_some() && !c.mem {
            return Err(
                "sample= selects which accesses the stream carries: it needs mem=on".into(),
            );
        }
        Ok(c)
    }

    /// Whether `pc` is the entry of a `scope` function.
    pub fn is_scope_entry(&self, pc: u64) -> bool {
        self.scopes.iter().any(|&(a, _)| pc == a)
    }

    /// Whether `pc` is inside a `scope` function.
    pub fn in_scope(&self, pc: u64) -> bool {
        self.scopes.iter().any(|&(a, b)| pc >= a && pc < b)
    }

    /// Whether an instruction at `pc` is counted.
    pub fn in_region(&self, pc: u64) -> bool {
        self.region_of(pc).is_some()
    }

    /// The region an instruction at `pc` is counted in (the first listed that contains it;
    /// 0 for every instruction when no region is given).
    pub fn region_of(&self, pc: u64) -> Option<usize> {
        if self.regions.is_empty() {
            return Some(0);
        }
        self.regions.iter().position(|&(a, b)| pc >= a && pc < b)
    }
}

/// The CPU model QEMU was asked for (`-cpu MODEL,...` or `QEMU_CPU`), without its properties;
/// `None` when neither is given (QEMU's default model).
pub fn cpu_model_from_qemu_args(args: &[String], env_cpu: Option<&str>) -> Option<String> {
    args.windows(2)
        .filter(|w| w[0] == "-cpu")
        .map(|w| w[1].as_str())
        .next_back()
        .or(env_cpu)
        .map(|c| c.split(',').next().unwrap_or("").to_string())
        .filter(|m| !m.is_empty())
}

/// QEMU user mode's default SVE vector length (64 bytes).
pub const QEMU_DEFAULT_VL_BITS: u32 = 512;

/// The SVE vector length QEMU was asked for: the `-cpu` option (or `QEMU_CPU`) with
/// `sve-default-vector-length=<bytes>`, capped by the largest `sve<bits>=on`; else QEMU's
/// default of 512 bits. `None` if SVE is off (`sve=off`).
pub fn sve_vl_from_qemu_args(args: &[String], env_cpu: Option<&str>) -> Option<u32> {
    let cpu = args
        .windows(2)
        .filter(|w| w[0] == "-cpu")
        .map(|w| w[1].as_str())
        .next_back()
        .or(env_cpu)
        .unwrap_or("");
    let mut vl = QEMU_DEFAULT_VL_BITS;
    let mut max_on: Option<u32> = None;
    for prop in cpu.split(',').skip(1) {
        let (k, v) = prop.split_once('=').unwrap_or((prop, "on"));
        if k == "sve" && matches!(v, "off" | "false") {
            return None;
        }
        if k == "sve-default-vector-length" {
            if let Ok(bytes) = v.parse::<i64>()
                && bytes > 0
            {
                vl = (bytes as u32).saturating_mul(8).clamp(128, 2048);
            }
        } else if let Some(bits) = k.strip_prefix("sve").and_then(|b| b.parse::<u32>().ok())
            && matches!(v, "on" | "true")
        {
            max_on = Some(max_on.map_or(bits, |m| m.max(bits)));
        }
    }
    Some(max_on.map_or(vl, |m| vl.min(m)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_keys() {
        let c = Config::parse(&[
            "out=counts.json",
            "vl=256",
            "mem=on",
            "memfd=3",
            "coalesce=64",
            "region=0x1000-0x1100+8192-9000",
            "tbs=on",
            "scope=0x400-0x480",
        ])
        .expect("valid");
        assert_eq!(c.vl_bits, Some(256));
        assert_eq!(c.regions, vec![(0x1000, 0x1100), (8192, 9000)]);
        assert!(c.in_region(0x10ff) && !c.in_region(0x1100));
        assert_eq!((c.region_of(0x1000), c.region_of(8200)), (Some(0), Some(1)));
        assert!(c.mem && c.tbs);
        assert_eq!(c.coalesce, Some(64));
        for bad in ["coalesce=48", "coalesce=4", "coalesce=x"] {
            let e = Config::parse(&["mem=on", "memfd=3", bad]).unwrap_err();
            assert!(e.contains("power of two"), "{e}");
        }
        assert!(c.is_scope_entry(0x400) && !c.is_scope_entry(0x404));
        assert!(c.in_scope(0x47f) && !c.in_scope(0x480));
    }

    #[test]
    fn parses_meminline() {
        let c = Config::parse(&["mem=on", "memfd=3"]).expect("valid");
        assert_eq!(c.mem_inline, None);
        for (v, want) in [("on", true), ("off", false)] {
            let c =
                Config::parse(&["mem=on", "memfd=3", &format!("meminline={v}")]).expect("valid");
            assert_eq!(c.mem_inline, Some(want));
        }
        let e = Config::parse(&["mem=on", "memfd=3", "meminline=maybe"]).unwrap_err();
        assert!(e.contains("meminline"), "{e}");
        let e =
            Config::parse(&["mem=on", "memfd=3", "scope=0x400-0x480", "meminline=on"]).unwrap_err();
        assert!(e.contains("scope="), "{e}");
        // Off with a scope is what the default does anyway.
        Config::parse(&["mem=on", "memfd=3", "scope=0x400-0x480", "meminline=off"]).expect("valid");
    }

    #[test]
    fn parses_the_ring() {
        let c = Config::parse(&["mem=on", "memfd=3", "memring=5:6"]).expect("valid");
        assert_eq!(c.mem_ring, Some((5, 6)));
        for bad in ["memring=5", "memring=a:6", "memring=5:-1"] {
            let e = Config::parse(&["mem=on", "memfd=3", bad]).unwrap_err();
            assert!(e.contains("RING:TOKENS"), "{e}");
        }
        let e = Config::parse(&["mem=on", "memout=x", "memring=5:6"]).unwrap_err();
        assert!(e.contains("memfd=N"), "{e}");
    }

    #[test]
    fn parses_the_sample_gate() {
        let c = Config::parse(&["mem=on", "memfd=3", "sample=64:8:a1"]).expect("valid");
        let g = c.sample.expect("a gate");
        assert_eq!((g.line_shift, g.modulus), (6, 8));
        // Digit 'a' (classes 1 and 3), digit '1' (class 4).
        assert_eq!(g.bits, vec![0b1_1010]);
        let g = SampleGate::parse(&format!("32:128:{}8", "0".repeat(31))).expect("valid");
        assert_eq!((g.line_shift, g.bits.clone()), (5, vec![0, 1 << 63]));
        for (bad, says) in [
            ("64:8", "three fields"),
            ("48:8:a1", "power of two"),
            ("64:6:a1", "power of two"),
            ("64:8:a", "take 2 hex digits"),
            ("64:8:ag", "not a hex digit"),
            ("64:2:4", "beyond 2 classes"),
        ] {
            let e = SampleGate::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let e = Config::parse(&["sample=64:8:a1"]).unwrap_err();
        assert!(e.contains("needs mem=on"), "{e}");
    }

    #[test]
    fn reads_the_vector_length_from_qemu_arguments() {
        let a = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let q = a("qemu-aarch64 -cpu max,sve-default-vector-length=32 -plugin x.so ./app");
        assert_eq!(sve_vl_from_qemu_args(&q, None), Some(256));
        assert_eq!(
            sve_vl_from_qemu_args(&a("qemu-aarch64 ./app"), None),
            Some(512)
        );
        assert_eq!(
            sve_vl_from_qemu_args(
                &a("qemu-aarch64 ./app"),
                Some("max,sve-default-vector-length=256")
            ),
            Some(2048)
        );
        let capped = a("qemu-aarch64 -cpu max,sve128=on,sve256=on ./app");
        assert_eq!(sve_vl_from_qemu_args(&capped, None), Some(256));
        assert_eq!(
            sve_vl_from_qemu_args(&a("qemu-aarch64 -cpu max,sve=off ./app"), None),
            None
        );
    }

    #[test]
    fn reads_the_cpu_model() {
        let a = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let q = a("qemu-aarch64 -cpu a64fx,sve512=on ./app");
        assert_eq!(cpu_model_from_qemu_args(&q, None).as_deref(), Some("a64fx"));
        assert_eq!(
            cpu_model_from_qemu_args(&a("qemu-aarch64 ./app"), None),
            None
        );
        assert_eq!(
            cpu_model_from_qemu_args(&a("qemu-aarch64 ./app"), Some("max")).as_deref(),
            Some("max")
        );
    }

    #[test]
    fn rejects_bad_input() {
        assert!(Config::parse(&["vl=100"]).is_err());
        assert!(Config::parse(&["mem=on"]).is_err());
        assert!(Config::parse(&["region=0x20-0x10"]).is_err());
        assert!(Config::parse(&["bogus=1"]).is_err());
    }
}
