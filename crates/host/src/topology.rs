//! What the machine is: sockets, cores, SMT, NUMA nodes, caches, ISA extensions, and the
//! CPUs this process may use (affinity, pinning, CPU lists).
//!
//! Topology and caches are read from a sysfs tree (`<root>/devices/system/cpu/...` and
//! `<root>/devices/system/node/...`); the root is a parameter so tests can read a fixture
//! directory. On x86-64, cpuid adds what sysfs lacks (cache inclusiveness, brand string).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// ISA extensions relevant to the kernels.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Isa {
    /// `std::env::consts::ARCH` of this build: `x86_64`, `aarch64`...
    pub arch: String,
    /// SSE2 (x86).
    pub sse2: bool,
    /// AVX (x86): needed by every x86 kernel (VEX encoding).
    pub avx: bool,
    /// AVX2 (x86).
    pub avx2: bool,
    /// FMA3 (x86) or the FMA that comes with NEON/SVE.
    pub fma: bool,
    /// AVX-512 Foundation (x86).
    pub avx512f: bool,
    /// NEON / Advanced SIMD (aarch64).
    pub neon: bool,
    /// SVE (aarch64).
    pub sve: bool,
    /// SVE vector length in bits, when SVE is present.
    pub sve_bits: Option<u32>,
}

impl Isa {
    /// Detects the extensions of the running CPU.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            Isa {
                arch: std::env::consts::ARCH.into(),
                sse2: std::arch::is_x86_feature_detected!("sse2"),
                avx: std::arch::is_x86_feature_detected!("avx"),
                avx2: std::arch::is_x86_feature_detected!("avx2"),
                fma: std::arch::is_x86_feature_detected!("fma"),
                avx512f: std::arch::is_x86_feature_detected!("avx512f"),
                neon: false,
                sve: false,
                sve_bits: None,
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            let sve = std::arch::is_aarch64_feature_detected!("sve");
            Isa {
                arch: std::env::consts::ARCH.into(),
                sse2: false,
                avx: false,
                avx2: false,
                fma: true,
                avx512f: false,
                neon: std::arch::is_aarch64_feature_detected!("neon"),
                sve,
                sve_bits: if sve { sve_vector_bits() } else { None },
            }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            Isa::none()
        }
    }

    /// An ISA with no vector extension (only the portable scalar kernels run).
    pub fn none() -> Isa {
        Isa {
            arch: std::env::consts::ARCH.into(),
            sse2: false,
            avx: false,
            avx2: false,
            fma: false,
            avx512f: false,
            neon: false,
            sve: false,
            sve_bits: None,
        }
    }

    /// Whether this build has kernels of `width` that this CPU can run.
    pub fn supports(&self, width: Width) -> bool {
        if cfg!(target_arch = "x86_64") {
            match width {
                Width::Scalar | Width::W128 | Width::W256 => self.avx,
                Width::W512 => self.avx512f,
            }
        } else {
            // Other architectures: portable scalar loops only.
            width == Width::Scalar
        }
    }

    /// What a kernel of `width` needs, for messages.
    pub fn requirement(&self, width: Width) -> &'static str {
        if cfg!(target_arch = "x86_64") {
            match width {
                Width::W512 => "needs AVX-512F",
                _ => "needs AVX (VEX encoding)",
            }
        } else {
            "only portable scalar kernels exist for this architecture so far"
        }
    }

    /// Widths this CPU and build support, narrowest first.
    pub fn widths(&self) -> Vec<Width> {
        Width::ALL
            .into_iter()
            .filter(|w| self.supports(*w))
            .collect()
    }

    /// Widest supported width.
    pub fn widest(&self) -> Width {
        self.widths().last().copied().unwrap_or(Width::Scalar)
    }

    /// Name of the vector extension used at `width`, for the machine's `simd` field.
    pub fn simd_name(&self, width: Width) -> &'static str {
        if self.arch == "x86_64" {
            match width {
                Width::Scalar => "scalar",
                Width::W128 => "sse",
                Width::W256 => {
                    if self.avx2 {
                        "avx2"
                    } else {
                        "avx"
                    }
                }
                Width::W512 => "avx512",
            }
        } else if self.arch == "aarch64" {
            match width {
                Width::Scalar => "scalar",
                _ if self.sve => "sve",
                _ => "neon",
            }
        } else {
            "scalar"
        }
    }

    /// Extensions present, as names (`avx2`, `fma`, `avx512f`, `sve(512)`).
    pub fn extensions(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (on, name) in [
            (self.sse2, "sse2"),
            (self.avx, "avx"),
            (self.avx2, "avx2"),
            (self.fma, "fma"),
            (self.avx512f, "avx512f"),
            (self.neon, "neon"),
        ] {
            if on {
                v.push(name.to_string());
            }
        }
        if self.sve {
            v.push(match self.sve_bits {
                Some(b) => format!("sve({b})"),
                None => "sve".into(),
            });
        }
        v
    }
}

/// Vector width of a kernel.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Width {
    /// One element per instruction.
    #[serde(rename = "scalar")]
    Scalar,
    /// 128-bit vectors (SSE/AVX-128, NEON).
    #[serde(rename = "128")]
    W128,
    /// 256-bit vectors (AVX/AVX2).
    #[serde(rename = "256")]
    W256,
    /// 512-bit vectors (AVX-512).
    #[serde(rename = "512")]
    W512,
}

impl Width {
    /// Every width, narrowest first.
    pub const ALL: [Width; 4] = [Width::Scalar, Width::W128, Width::W256, Width::W512];

    /// Register bits used per instruction for elements of `elem_bits` bits.
    pub fn bits(self, elem_bits: u32) -> u32 {
        match self {
            Width::Scalar => elem_bits,
            Width::W128 => 128,
            Width::W256 => 256,
            Width::W512 => 512,
        }
    }

    /// Elements of `elem_bits` bits per instruction.
    pub fn lanes(self, elem_bits: u32) -> u32 {
        self.bits(elem_bits) / elem_bits
    }

    /// Name used in reports (`scalar`, `128`, `256`, `512`).
    pub fn name(self) -> &'static str {
        match self {
            Width::Scalar => "scalar",
            Width::W128 => "128",
            Width::W256 => "256",
            Width::W512 => "512",
        }
    }

    /// Parses `scalar`, `64`, `128`, `256` or `512`.
    pub fn from_name(s: &str) -> Option<Width> {
        match s {
            "scalar" | "64" | "32" => Some(Width::Scalar),
            "128" => Some(Width::W128),
            "256" => Some(Width::W256),
            "512" => Some(Width::W512),
            _ => None,
        }
    }
}

impl std::fmt::Display for Width {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// SVE vector length in bits from `prctl(PR_SVE_GET_VL)`.
#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
fn sve_vector_bits() -> Option<u32> {
    const PR_SVE_GET_VL: libc::c_int = 51;
    const PR_SVE_VL_LEN_MASK: libc::c_int = 0xffff;
    // SAFETY: PR_SVE_GET_VL takes no pointer arguments.
    let r = unsafe { libc::prctl(PR_SVE_GET_VL, 0, 0, 0, 0) };
    if r < 0 {
        None
    } else {
        Some(((r & PR_SVE_VL_LEN_MASK) as u32) * 8)
    }
}

#[cfg(all(target_arch = "aarch64", not(target_os = "linux")))]
fn sve_vector_bits() -> Option<u32> {
    None
}

/// One cache as seen by one CPU.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheInfo {
    /// Level, 1 = closest to the core.
    pub level: u32,
    /// `Data`, `Unified` (instruction caches are not listed).
    pub kind: String,
    /// Capacity of one instance, bytes.
    pub size_bytes: u64,
    /// Line size, bytes.
    pub line_bytes: u32,
    /// Ways per set.
    pub associativity: u32,
    /// Sets.
    pub sets: u32,
    /// Hardware threads sharing one instance.
    pub shared_cpus: Vec<u32>,
    /// Cores sharing one instance.
    pub shared_by_cores: u32,
    /// Whether the cache holds every line of the caches above it (cpuid), when known.
    pub inclusive: Option<bool>,
}

/// The machine's topology.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// CPU model (`model name` of /proc/cpuinfo or the cpuid brand string).
    pub model_name: String,
    /// Online hardware threads (logical CPU numbers).
    pub cpus: Vec<u32>,
    /// Sockets (distinct physical package ids).
    pub sockets: u32,
    /// Physical cores per socket.
    pub cores_per_socket: u32,
    /// Hardware threads per core.
    pub threads_per_core: u32,
    /// NUMA nodes.
    pub numa_nodes: u32,
    /// Data and unified caches of the first online CPU, by level.
    pub caches: Vec<CacheInfo>,
    /// Nominal frequency, GHz, when the system says (cpufreq, model name, cpuinfo).
    pub nominal_ghz: Option<f64>,
    /// Where each field came from.
    pub source: String,
}

impl Topology {
    /// Total physical cores.
    pub fn cores(&self) -> u32 {
        self.sockets * self.cores_per_socket
    }

    /// The largest cache level (the last-level cache), if any cache is known.
    pub fn llc(&self) -> Option<&CacheInfo> {
        self.caches.iter().max_by_key(|c| c.level)
    }

    /// Detects the topology of the running machine.
    pub fn detect() -> Topology {
        let cpuinfo = crate::facts::cpuinfo();
        let mut t = Topology::from_sysfs(Path::new("/sys"), &cpuinfo);
        #[cfg(target_arch = "x86_64")]
        {
            let incl = cpuid::cache_inclusiveness();
            for c in &mut t.caches {
                if c.inclusive.is_none() {
                    c.inclusive = incl.iter().find(|(l, _)| *l == c.level).map(|(_, i)| *i);
                }
            }
            if t.model_name.is_empty() {
                t.model_name = cpuid::brand_string();
            }
        }
        if t.cpus.is_empty() {
            // No sysfs: fall back on what the process can see.
            let n = crate::facts::logical_cpus();
            t.cpus = (0..n).collect();
            t.sockets = 1;
            t.cores_per_socket = n;
            t.threads_per_core = 1;
            t.source.push_str(
                "; no sysfs topology: one socket of available_parallelism() cores assumed",
            );
        }
        t
    }

    /// Reads the topology from a sysfs tree rooted at `root` (normally `/sys`) and the
    /// text of `/proc/cpuinfo`.
    pub fn from_sysfs(root: &Path, cpuinfo: &str) -> Topology {
        let cpu_dir = root.join("devices/system/cpu");
        let cpus = read_trim(&cpu_dir.join("online"))
            .and_then(|s| parse_cpu_list(&s).ok())
            .unwrap_or_else(|| list_cpu_dirs(&cpu_dir));
        // (package, core) per CPU.
        let mut packages = BTreeSet::new();
        let mut cores = BTreeSet::new();
        let mut core_of = std::collections::BTreeMap::new();
        for &c in &cpus {
            let topo = cpu_dir.join(format!("cpu{c}/topology"));
            let pkg = read_u64(&topo.join("physical_package_id")).unwrap_or(0);
            let core = read_u64(&topo.join("core_id")).unwrap_or(u64::from(c));
            packages.insert(pkg);
            cores.insert((pkg, core));
            core_of.insert(c, (pkg, core));
        }
        let sockets = packages.len().max(1) as u32;
        let n_cores = cores.len().max(1) as u32;
        let threads_per_core = (cpus.len() as u32 / n_cores).max(1);
        let cores_per_socket = (n_cores / sockets).max(1);
        let numa_nodes = std::fs::read_dir(root.join("devices/system/node"))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter(|e| {
                        let n = e.file_name().to_string_lossy().into_owned();
                        n.starts_with("node") && n[4..].parse::<u32>().is_ok()
                    })
                    .count() as u32
            })
            .unwrap_or(0)
            .max(1);
        let mut caches = Vec::new();
        if let Some(&first) = cpus.first() {
            let cache_dir = cpu_dir.join(format!("cpu{first}/cache"));
            let mut idx: Vec<PathBuf> = std::fs::read_dir(&cache_dir)
                .map(|rd| {
                    rd.filter_map(|e| e.ok())
                        .map(|e| e.path())
                        .filter(|p| {
                            p.file_name()
                                .is_some_and(|n| n.to_string_lossy().starts_with("index"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            idx.sort();
            for d in idx {
                let kind = read_trim(&d.join("type")).unwrap_or_default();
                if kind == "Instruction" {
                    continue;
                }
                let Some(level) = read_u64(&d.join("level")) else {
                    continue;
                };
                let Some(size_bytes) =
                    read_trim(&d.join("size")).and_then(|s| parse_sysfs_size(&s))
                else {
                    continue;
                };
                let line_bytes = read_u64(&d.join("coherency_line_size")).unwrap_or(64) as u32;
                let sets = read_u64(&d.join("number_of_sets")).unwrap_or(0) as u32;
                let mut associativity =
                    read_u64(&d.join("ways_of_associativity")).unwrap_or(0) as u32;
                if associativity == 0 && sets > 0 && line_bytes > 0 {
                    associativity = (size_bytes / (u64::from(sets) * u64::from(line_bytes))) as u32;
                }
                let shared_cpus = read_trim(&d.join("shared_cpu_list"))
                    .and_then(|s| parse_cpu_list(&s).ok())
                    .unwrap_or_else(|| vec![first]);
                let shared_cores: BTreeSet<_> = shared_cpus
                    .iter()
                    .map(|c| core_of.get(c).copied().unwrap_or((0, u64::from(*c))))
                    .collect();
                caches.push(CacheInfo {
                    level: level as u32,
                    kind,
                    size_bytes,
                    line_bytes,
                    associativity: associativity.max(1),
                    sets,
                    shared_by_cores: shared_cores.len().max(1) as u32,
                    shared_cpus,
                    inclusive: None,
                });
            }
        }
        caches.sort_by_key(|c| c.level);
        caches.dedup_by_key(|c| c.level);
        let model_name = cpuinfo_field(cpuinfo, "model name")
            .or_else(|| cpuinfo_field(cpuinfo, "Model"))
            .unwrap_or_default();
        let nominal_ghz = read_u64(&cpu_dir.join(format!(
            "cpu{}/cpufreq/base_frequency",
            cpus.first().copied().unwrap_or(0)
        )))
        .map(|khz| khz as f64 / 1e6)
        .or_else(|| {
            model_name
                .rsplit_once('@')
                .and_then(|(_, f)| f.trim().trim_end_matches("GHz").trim().parse().ok())
        })
        .or_else(|| {
            cpuinfo_field(cpuinfo, "cpu MHz")
                .and_then(|m| m.parse::<f64>().ok())
                .map(|m| m / 1000.0)
        });
        Topology {
            model_name,
            cpus,
            sockets,
            cores_per_socket,
            threads_per_core,
            numa_nodes,
            caches,
            nominal_ghz,
            source: "sysfs devices/system/{cpu,node} and /proc/cpuinfo".into(),
        }
    }
}

/// First value of `key` in /proc/cpuinfo text.
fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_u64(p: &Path) -> Option<u64> {
    read_trim(p)?.parse().ok()
}

fn list_cpu_dirs(cpu_dir: &Path) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(cpu_dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .strip_prefix("cpu")?
                        .parse()
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

pub use crate::facts::parse_sysfs_size;

/// Parses a CPU list such as `0-3,8,10-11` (the sysfs and `taskset -c` syntax).
pub fn parse_cpu_list(s: &str) -> Result<Vec<u32>, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((a, b)) = part.split_once('-') {
            let a: u32 = a
                .trim()
                .parse()
                .map_err(|_| format!("'{part}' is not a CPU range"))?;
            let b: u32 = b
                .trim()
                .parse()
                .map_err(|_| format!("'{part}' is not a CPU range"))?;
            if b < a {
                return Err(format!("'{part}' is a decreasing range"));
            }
            v.extend(a..=b);
        } else {
            v.push(
                part.parse()
                    .map_err(|_| format!("'{part}' is not a CPU number"))?,
            );
        }
    }
    if v.is_empty() {
        return Err("the CPU list is empty".into());
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Formats CPU numbers compactly: `0-3,8`.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// CPUs this process may run on (`sched_getaffinity`), or `None` when unknown.
#[cfg(target_os = "linux")]
pub fn allowed_cpus() -> Option<Vec<u32>> {
    // SAFETY: cpu_set_t is plain data; the call fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        Some(
            (0..libc::CPU_SETSIZE as u32)
                .filter(|&c| libc::CPU_ISSET(c as usize, &set))
                .collect(),
        )
    }
}

/// CPUs this process may run on, or `None` when unknown.
#[cfg(not(target_os = "linux"))]
pub fn allowed_cpus() -> Option<Vec<u32>> {
    None
}

/// How many CPUs this process may use: its affinity mask, else what the standard library
/// sees (at least 1).
pub fn usable_cpus() -> usize {
    allowed_cpus()
        .map(|v| v.len())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| crate::facts::logical_cpus() as usize)
}

/// Whether `cpu` can be named in an affinity mask at all (below `CPU_SETSIZE`).
#[cfg(target_os = "linux")]
pub fn cpu_in_set_range(cpu: u32) -> bool {
    (cpu as usize) < libc::CPU_SETSIZE as usize
}

/// Whether `cpu` can be named in an affinity mask at all.
#[cfg(not(target_os = "linux"))]
pub fn cpu_in_set_range(_cpu: u32) -> bool {
    true
}

/// Pins the calling thread to `cpu` (`sched_setaffinity`); `cpu` must be in the mask's
/// range ([`cpu_in_set_range`]).
#[cfg(target_os = "linux")]
pub fn pin_current_thread(cpu: u32) -> std::io::Result<()> {
    if !cpu_in_set_range(cpu) {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain data; `cpu` is below CPU_SETSIZE.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Pinning is not implemented on this OS: a no-op.
#[cfg(not(target_os = "linux"))]
pub fn pin_current_thread(_cpu: u32) -> std::io::Result<()> {
    Ok(())
}

/// The highest CPU number the kernel may bring online plus one
/// (`/sys/devices/system/cpu/possible`), when readable.
pub fn possible_cpus() -> Option<usize> {
    let t = std::fs::read_to_string("/sys/devices/system/cpu/possible").ok()?;
    let last = t.trim().rsplit(['-', ',']).next()?.parse::<usize>().ok()?;
    Some(last + 1)
}

/// CPUs of a sysfs CPU list (`0,24`, `0-3,8`) read leniently: entries that do not parse
/// are skipped (for lists the kernel wrote; [`parse_cpu_list`] checks what users type).
pub fn parse_cpu_list_lenient(s: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    v.extend(a..=b);
                }
            }
            None => {
                if let Ok(c) = part.trim().parse() {
                    v.push(c);
                }
            }
        }
    }
    v
}

#[cfg(target_arch = "x86_64")]
mod cpuid {
    use std::arch::x86_64::{__cpuid, __cpuid_count};

    /// (level, inclusive) of the data/unified caches from cpuid leaf 4 (Intel) or
    /// 0x8000001D (AMD): EDX bit 1 says "cache is inclusive of lower cache levels".
    pub fn cache_inclusiveness() -> Vec<(u32, bool)> {
        let (leaf, max) = {
            let v = __cpuid(0);
            let vendor = [
                v.ebx.to_le_bytes(),
                v.edx.to_le_bytes(),
                v.ecx.to_le_bytes(),
            ]
            .concat();
            if vendor == b"GenuineIntel" {
                (4u32, v.eax)
            } else if vendor == b"AuthenticAMD" {
                (0x8000_001D, __cpuid(0x8000_0000).eax)
            } else {
                return Vec::new();
            }
        };
        if max < leaf {
            return Vec::new();
        }
        let mut out = Vec::new();
        for sub in 0..16 {
            let r = __cpuid_count(leaf, sub);
            let kind = r.eax & 0x1f;
            if kind == 0 {
                break;
            }
            if kind == 2 {
                continue; // instruction cache
            }
            out.push(((r.eax >> 5) & 0x7, r.edx & 2 != 0));
        }
        out
    }

    /// The processor brand string (leaves 0x80000002-4).
    pub fn brand_string() -> String {
        if __cpuid(0x8000_0000).eax < 0x8000_0004 {
            return String::new();
        }
        let mut bytes = Vec::with_capacity(48);
        for leaf in 0x8000_0002u32..=0x8000_0004 {
            let r = __cpuid(leaf);
            for w in [r.eax, r.ebx, r.ecx, r.edx] {
                bytes.extend_from_slice(&w.to_le_bytes());
            }
        }
        String::from_utf8_lossy(&bytes)
            .trim_matches(char::from(0))
            .trim()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_format() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list(" 1 ").unwrap(), vec![1]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("").is_err());
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(parse_cpu_list_lenient("0,24"), vec![0, 24]);
        assert_eq!(parse_cpu_list_lenient(" 0-2,x,5\n"), vec![0, 1, 2, 5]);
        assert!(parse_cpu_list_lenient("").is_empty());
    }

    #[test]
    fn this_process_may_use_some_cpu() {
        assert!(usable_cpus() >= 1);
        if let Some(cpus) = allowed_cpus() {
            assert!(!cpus.is_empty());
            assert!(cpus.iter().all(|&c| cpu_in_set_range(c)));
        }
    }
}
