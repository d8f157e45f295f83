//! Byte sizes: parsing (`32k`, `1MB`, `2GiB`) and formatting.
//!
//! Suffixes `k`, `m`, `g` and `KiB`, `MiB`, `GiB` are binary (1024); `kB`, `MB`, `GB` are
//! decimal (1000), as in likwid-bench's `-w S0:32kB` and the SI convention of GB/s.

/// Parses one size.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let num: f64 = num.parse().map_err(|_| format!("'{s}' is not a size"))?;
    let mult: f64 = match suffix.trim() {
        "" | "B" | "b" => 1.0,
        "k" | "K" | "KiB" | "Ki" => 1024.0,
        "m" | "M" | "MiB" | "Mi" => 1024.0 * 1024.0,
        "g" | "G" | "GiB" | "Gi" => 1024.0 * 1024.0 * 1024.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        other => return Err(format!("'{s}': unknown unit '{other}'")),
    };
    let v = num * mult;
    if !v.is_finite() || v < 1.0 {
        return Err(format!("'{s}' is not a positive size"));
    }
    Ok(v.round() as u64)
}

/// Parses a comma-separated list of sizes.
pub fn parse_size_list(s: &str) -> Result<Vec<u64>, String> {
    let v: Result<Vec<u64>, String> = s
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(parse_size)
        .collect();
    let v = v?;
    if v.is_empty() {
        return Err("the size list is empty".into());
    }
    Ok(v)
}

/// Formats a byte count with a binary unit (`48 KiB`, `1.5 MiB`).
pub fn format_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || (v - v.round()).abs() < 0.05 {
        format!("{:.0} {}", v, UNITS[u])
    } else {
        format!("{:.1} {}", v, UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("32k").unwrap(), 32 * 1024);
        assert_eq!(parse_size("32kB").unwrap(), 32_000);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("64MB").unwrap(), 64_000_000);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("1GB").unwrap(), 1_000_000_000);
        assert_eq!(parse_size("1.5MiB").unwrap(), 3 << 19);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("12q").is_err());
        assert!(parse_size("k").is_err());
        assert!(parse_size("0").is_err());
        assert_eq!(parse_size_list("32k, 1m").unwrap(), vec![32768, 1 << 20]);
    }

    #[test]
    fn sizes_format() {
        assert_eq!(format_bytes(48 * 1024), "48 KiB");
        assert_eq!(format_bytes(3 << 19), "1.5 MiB");
        assert_eq!(format_bytes(100), "100 B");
    }
}
