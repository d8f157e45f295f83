//! Facts about the run for provenance: host name, date, kernel version, memory.

/// The host name (`/proc/sys/kernel/hostname`, else `gethostname`).
pub fn host_name() -> String {
    if let Ok(s) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let s = s.trim();
        if !s.is_empty() {
            return s.to_string();
        }
    }
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is writable for its length.
        if unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) } == 0 {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            return String::from_utf8_lossy(&buf[..end]).into_owned();
        }
    }
    "unknown-host".into()
}

/// The OS kernel: `Linux 6.1.0-...` (`uname -sr`).
pub fn kernel_version() -> String {
    #[cfg(unix)]
    {
        // SAFETY: utsname is plain data filled by uname.
        unsafe {
            let mut u: libc::utsname = std::mem::zeroed();
            if libc::uname(&mut u) == 0 {
                let s = std::ffi::CStr::from_ptr(u.sysname.as_ptr()).to_string_lossy();
                let r = std::ffi::CStr::from_ptr(u.release.as_ptr()).to_string_lossy();
                return format!("{s} {r}");
            }
        }
    }
    std::env::consts::OS.into()
}

/// Current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_utc(secs)
}

/// Formats seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian).
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = hpcscope_core::time::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Memory available to new allocations, bytes (`MemAvailable` of /proc/meminfo).
pub fn mem_available_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo(&s, "MemAvailable")
}

/// A field of /proc/meminfo text, bytes.
pub fn parse_meminfo(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn meminfo() {
        let t = "MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(parse_meminfo(t, "MemAvailable"), Some(20_000_000 * 1024));
        assert_eq!(parse_meminfo(t, "Nope"), None);
    }
}
