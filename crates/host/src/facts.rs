//! Facts about this machine, read from `/proc`, `/sys` and the C library. A fact that cannot
//! be read is `None` (or the documented fallback): callers decide what to show.

fn read(p: &str) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The environment variable naming a file read in place of `/proc/cpuinfo`.
pub const CPUINFO_ENV: &str = "HPCSCOPE_CPUINFO";

/// The text of `/proc/cpuinfo` (empty when unreadable), or of the file `HPCSCOPE_CPUINFO`
/// names: a `/proc/cpuinfo` saved on another machine, to see what hpcscope chooses for that
/// CPU (its counter recipe, its model name) and to test CPUs nobody here has. Only the CPU's
/// identity comes from it: what the code runs is still decided by this CPU's own `cpuid`.
/// An unreadable override is said on standard error and `/proc/cpuinfo` read instead.
pub fn cpuinfo() -> String {
    use std::io::Read;
    if let Some(p) = std::env::var_os(CPUINFO_ENV).filter(|p| !p.is_empty()) {
        // A cpuinfo of 1,000 logical CPUs is about 1.5 MB.
        let mut text = String::new();
        match std::fs::File::open(&p).and_then(|f| f.take(16 << 20).read_to_string(&mut text)) {
            Ok(_) => return text,
            Err(e) => eprintln!(
                "warning: {CPUINFO_ENV}={}: cannot read it ({e}): using /proc/cpuinfo; fix: name a readable copy of a /proc/cpuinfo, or unset it",
                std::path::Path::new(&p).display()
            ),
        }
    }
    std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default()
}

/// The first value of `key` in `/proc/cpuinfo` text (`model name`, `flags`, `CPU part`).
pub fn cpuinfo_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// The CPU model: `model name` of `/proc/cpuinfo` (x86), else its `Model` line (some Arm
/// boards), else the architecture's name.
pub fn cpu_model() -> String {
    cpu_model_of(&cpuinfo())
}

/// [`cpu_model`] of given `/proc/cpuinfo` text.
pub fn cpu_model_of(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Logical CPUs this process may use (at least 1).
pub fn logical_cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// The kernel release (`uname -r`), when readable.
pub fn kernel_release() -> Option<String> {
    read("/proc/sys/kernel/osrelease")
}

/// The OS and kernel release, `Linux 6.1.0-...` (`uname -sr`).
pub fn kernel_version() -> String {
    // SAFETY: utsname is plain data that uname fills.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) == 0 {
            let s = std::ffi::CStr::from_ptr(u.sysname.as_ptr()).to_string_lossy();
            let r = std::ffi::CStr::from_ptr(u.release.as_ptr()).to_string_lossy();
            return format!("{s} {r}");
        }
    }
    std::env::consts::OS.into()
}

/// The host name: the kernel's (`/proc/sys/kernel/hostname`), else `gethostname(2)`.
pub fn hostname() -> Option<String> {
    if let Some(h) = read("/proc/sys/kernel/hostname") {
        return Some(h);
    }
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its length.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        let s = String::from_utf8_lossy(&buf[..end]).trim().to_string();
        if !s.is_empty() {
            return Some(s);
        }
    }
    None
}

/// The cpufreq scaling governor of CPU 0, when the kernel exposes it.
pub fn governor() -> Option<String> {
    read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
}

/// Sizes of CPU 0's data and unified caches (L1d, L2, L3...) from sysfs, in the order sysfs
/// lists them (smallest first); empty if unknown.
pub fn data_cache_sizes() -> Vec<u64> {
    let mut v = Vec::new();
    for i in 0..8 {
        let d = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let Ok(t) = std::fs::read_to_string(format!("{d}/type")) else {
            break;
        };
        if t.trim() == "Instruction" {
            continue;
        }
        if let Some(b) = read(&format!("{d}/size")).and_then(|s| parse_sysfs_size(&s)) {
            v.push(b);
        }
    }
    v
}

/// Parses a sysfs cache size: `48K`, `2048K`, `32M`, or bytes.
pub fn parse_sysfs_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1024),
        'M' | 'm' => (&s[..s.len() - 1], 1024 * 1024),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// Memory available to new allocations, bytes (`MemAvailable` of /proc/meminfo).
pub fn mem_available_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_field(&s, "MemAvailable")
}

/// A field of /proc/meminfo text, in bytes.
pub fn meminfo_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    })
}

/// The load averages over 1, 5 and 15 minutes (`/proc/loadavg`): runnable and
/// uninterruptible tasks, the figure to note beside a timing.
pub fn loadavg() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    parse_loadavg(&text)
}

/// The first three fields of a `/proc/loadavg` text.
pub fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// The effective user id of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    euid() == 0
}

/// Effective capability bits of the calling thread (credentials are per thread).
pub fn effective_caps() -> u64 {
    std::fs::read_to_string("/proc/thread-self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// Whether this process may load tracing BPF programs (CAP_SYS_ADMIN, or CAP_BPF with
/// CAP_PERFMON), judged from its capability set.
pub fn has_bpf_caps() -> bool {
    let c = effective_caps();
    c & (1 << CAP_SYS_ADMIN) != 0 || (c & (1 << CAP_BPF) != 0 && c & (1 << CAP_PERFMON) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_sizes_parse() {
        assert_eq!(parse_sysfs_size("48K"), Some(48 * 1024));
        assert_eq!(parse_sysfs_size("266240K"), Some(266240 * 1024));
        assert_eq!(parse_sysfs_size("32M"), Some(32 << 20));
        assert_eq!(parse_sysfs_size("1G"), Some(1 << 30));
        assert_eq!(parse_sysfs_size("512"), Some(512));
        assert_eq!(parse_sysfs_size("x"), None);
        assert_eq!(parse_sysfs_size("K"), None);
        assert_eq!(parse_sysfs_size(""), None);
    }

    #[test]
    fn loadavg_text() {
        assert_eq!(
            parse_loadavg("6.41 5.93 6.34 3/512 12345\n"),
            Some([6.41, 5.93, 6.34])
        );
        assert_eq!(parse_loadavg("6.41 5.93"), None);
        assert_eq!(parse_loadavg("x 1 2"), None);
    }

    #[test]
    fn cpuinfo_and_meminfo_text() {
        let t = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R45\nflags\t\t: fpu sse2\n";
        assert_eq!(cpu_model_of(t), "AMD EPYC 9R45");
        assert_eq!(cpuinfo_field(t, "vendor_id"), Some("AuthenticAMD"));
        assert_eq!(cpuinfo_field(t, "flags"), Some("fpu sse2"));
        assert_eq!(cpu_model_of("Model\t: Raspberry Pi 4\n"), "Raspberry Pi 4");
        assert_eq!(cpu_model_of(""), std::env::consts::ARCH);
        let m = "MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(meminfo_field(m, "MemAvailable"), Some(20_000_000 * 1024));
        assert_eq!(meminfo_field(m, "Nope"), None);
        assert!(logical_cpus() >= 1);
        assert!(kernel_version().contains(' ') || !kernel_version().is_empty());
    }
}
