//! Plausible ranges of every number hpcscope reads, in one table that every command shares.
//!
//! A value outside its range is refused with the range, the unit and a fix, whatever
//! command reads it (`roofline`, `project`, `explore`, `analyze`...), so no command can turn a
//! value another refuses into an infinite or undefined result. The ranges are wide: they
//! stop units mixed up (FLOP/s for GFLOP/s, ns for s), subnormal numbers and sizes that
//! overflow the arithmetic, not unusual machines.

use crate::error::InputError;

/// A kind of number, with its unit and plausible range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantity {
    /// What it is, for the message (`bandwidth`, `time`).
    pub what: &'static str,
    /// Unit, for the message.
    pub unit: &'static str,
    /// Smallest plausible value (inclusive).
    pub min: f64,
    /// Largest plausible value (inclusive).
    pub max: f64,
    /// Whether 0 is allowed besides `min..=max` (counts: 0 FLOPs is a real measurement).
    pub zero_ok: bool,
    /// The hint for a value out of range.
    pub hint: &'static str,
}

/// A bandwidth, GB/s: 1 MB/s to 1 PB/s.
pub const BANDWIDTH_GBS: Quantity = Quantity {
    what: "bandwidth",
    unit: "GB/s",
    min: 1e-3,
    max: 1e6,
    zero_ok: false,
    hint: "the unit is GB/s (1e9 B/s): write 25.6 for 25.6 GB/s",
};

/// A peak, GFLOP/s: 1 MFLOP/s to 10 PFLOP/s.
pub const PEAK_GFLOPS: Quantity = Quantity {
    what: "peak",
    unit: "GFLOP/s",
    min: 1e-3,
    max: 1e7,
    zero_ok: false,
    hint: "the unit is GFLOP/s (1e9 FLOP/s): write 32 for 32 GFLOP/s",
};

/// A measured performance, GFLOP/s: 1 kFLOP/s to 10 PFLOP/s.
pub const MEASURED_GFLOPS: Quantity = Quantity {
    what: "performance",
    unit: "GFLOP/s",
    min: 1e-6,
    max: 1e7,
    zero_ok: false,
    hint: "give the measured performance in GFLOP/s (1e9 FLOP/s)",
};

/// A clock frequency, GHz.
pub const FREQUENCY_GHZ: Quantity = Quantity {
    what: "frequency",
    unit: "GHz",
    min: 1e-3,
    max: 100.0,
    zero_ok: false,
    hint: "the unit is GHz: write 2.5, not 2500 (MHz) or 2.5e9 (Hz)",
};

/// A measured time, s: 1 ns to 100 days (8.64e6 s).
pub const TIME_S: Quantity = Quantity {
    what: "time",
    unit: "s",
    min: 1e-9,
    max: 8.64e6,
    zero_ok: false,
    hint: "the unit is seconds: convert from ns, us or ms (a time below 1 ns is not a measurement)",
};

/// A count of operations, instructions or bytes: 0, or 1 to 1e24 (a zettascale-hour). A
/// count between 0 and 1 is not one (5e-324 instructions made a ratio print as infinite).
pub const COUNT: Quantity = Quantity {
    what: "count",
    unit: "",
    min: 1.0,
    max: 1e24,
    zero_ok: true,
    hint: "give the count itself (a whole number of operations, instructions or bytes)",
};

/// Sockets of a node.
pub const SOCKETS: Quantity = Quantity {
    what: "socket count",
    unit: "",
    min: 1.0,
    max: 64.0,
    zero_ok: false,
    hint: "give the sockets of one node (1 to 64)",
};

/// Cores of a socket.
pub const CORES_PER_SOCKET: Quantity = Quantity {
    what: "core count",
    unit: "",
    min: 1.0,
    max: 4096.0,
    zero_ok: false,
    hint: "give the cores of one socket (1 to 4096)",
};

/// Vector register width, bits.
pub const VECTOR_BITS: Quantity = Quantity {
    what: "vector width",
    unit: "bits",
    min: 32.0,
    max: 8192.0,
    zero_ok: false,
    hint: "give the vector register width in bits: 64 (scalar f64), 128 (SSE, NEON), 256 (AVX2), 512 (AVX-512, SVE-512), up to 2048 (SVE)",
};

/// A scale factor of a design-space transform.
pub const FACTOR: Quantity = Quantity {
    what: "factor",
    unit: "",
    min: 1e-6,
    max: 1e6,
    zero_ok: false,
    hint: "give a factor between 1e-6 and 1e6 (2 doubles the bandwidth)",
};

/// Memory levels of a machine, at most.
pub const MAX_LEVELS: usize = 16;
/// Peaks of a machine, at most (one per precision).
pub const MAX_PEAKS: usize = 8;
/// Network links of a machine, at most.
pub const MAX_LINKS: usize = 64;
/// Threads of one profile region, at most.
pub const MAX_THREADS: usize = 1 << 20;

/// Checks `v` against `q`; `None` when plausible.
pub fn check(q: &Quantity, origin: &str, field: &str, v: f64) -> Option<InputError> {
    let unit = if q.unit.is_empty() {
        String::new()
    } else {
        format!(" {}", q.unit)
    };
    let shown = crate::error::short_number(v);
    if v.is_nan() {
        return Some(InputError::new(
            origin,
            field,
            "is NaN",
            format!("give a number{}", crate::error::in_unit(q.unit)),
        ));
    }
    if q.zero_ok && v == 0.0 {
        return None;
    }
    if !(q.min..=q.max).contains(&v) {
        let range = if q.zero_ok {
            format!("0 or {} to {}", g(q.min), g(q.max))
        } else {
            format!("{} to {}", g(q.min), g(q.max))
        };
        return Some(InputError::new(
            origin,
            field,
            format!(
                "{shown}{unit} is outside the plausible {} range ({range}{unit})",
                q.what
            ),
            q.hint,
        ));
    }
    None
}

fn g(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e5 || v.abs() < 1e-2) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Numbers given on the command line (clap's value parsers), checked as the same numbers
/// read from a file are: a `NaN`, an infinity, a negative time or a frequency in MHz is
/// refused with the range and a fix, before anything runs. The messages name no option:
/// clap puts the option's name in front of them.
pub mod option {
    use super::{self as range, Quantity};

    fn parse(s: &str) -> Result<f64, String> {
        s.trim()
            .parse::<f64>()
            // Escaped: what was typed may hold a newline or a terminal's control sequence.
            .map_err(|_| format!("'{}' is not a number", s.escape_debug()))
    }

    fn checked(s: &str, q: &Quantity) -> Result<f64, String> {
        let v = parse(s)?;
        match range::check(q, "", "", v) {
            Some(e) => Err(format!("{}; {}", e.message, e.fix)),
            None => Ok(v),
        }
    }

    /// A clock frequency, GHz.
    pub fn ghz(s: &str) -> Result<f64, String> {
        checked(s, &range::FREQUENCY_GHZ)
    }

    /// A bandwidth, GB/s.
    pub fn gbs(s: &str) -> Result<f64, String> {
        checked(s, &range::BANDWIDTH_GBS)
    }

    /// A count of operations, bytes, messages or iterations: 0, or 1 to 1e24.
    pub fn count(s: &str) -> Result<f64, String> {
        checked(s, &range::COUNT)
    }

    /// A number of processes or threads: at least 1 (a fraction is allowed for a model's
    /// curve), at most 2^20 per region.
    pub fn processes(s: &str) -> Result<f64, String> {
        let v = parse(s)?;
        if v.is_finite() && (1.0..=range::MAX_THREADS as f64 * 1024.0).contains(&v) {
            Ok(v)
        } else {
            Err(format!(
                "{v} is not a process count; give one of at least 1 (p = 1 is the serial run)"
            ))
        }
    }

    /// A finite number greater than 0 (a ratio, cycles, a threshold).
    pub fn positive(s: &str) -> Result<f64, String> {
        let v = parse(s)?;
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(format!("{v} is not a finite number greater than 0"))
        }
    }

    /// A finite number of at least 0.
    pub fn non_negative(s: &str) -> Result<f64, String> {
        let v = parse(s)?;
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(format!("{v} is not a finite number of at least 0"))
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn numbers_out_of_range_are_refused_with_a_fix() {
            assert_eq!(ghz("3.85"), Ok(3.85));
            let e = ghz("nan").unwrap_err();
            assert!(e.contains("is NaN") && e.contains("GHz"), "{e}");
            assert!(
                ghz("2500")
                    .unwrap_err()
                    .contains("write 2.5, not 2500 (MHz)")
            );
            assert!(processes("-5").unwrap_err().contains("at least 1"));
            assert!(processes("inf").is_err());
            assert!(count("5e-324").is_err());
            assert!(positive("0").is_err());
            assert!(non_negative("-0.5").is_err());
            assert!(gbs("x").unwrap_err().contains("'x' is not a number"));
            // What was typed comes back escaped, on one line (the fuzz target's first find).
            assert_eq!(
                ghz("\t\0\n\x1b[2J").unwrap_err(),
                "'\\t\\0\\n\\u{1b}[2J' is not a number"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_refuse_subnormal_huge_and_nan_with_unit_and_hint() {
        assert!(check(&BANDWIDTH_GBS, "m", "f", 25.6).is_none());
        let e = check(&BANDWIDTH_GBS, "m.toml", "levels[0].core_gbs", 1e-310)
            .unwrap()
            .to_string();
        assert!(
            e.contains("GB/s") && e.contains("plausible bandwidth"),
            "{e}"
        );
        assert!(check(&TIME_S, "p", "t", 5e-324).is_some());
        assert!(check(&TIME_S, "p", "t", f64::INFINITY).is_some());
        // 100 days is 8.64e6 s (the range said 100 days and took 1e7 s: 115.7 days).
        assert!(check(&TIME_S, "p", "t", 8.64e6).is_none());
        assert!(check(&TIME_S, "p", "t", 9.0e6).is_some());
        assert!(check(&COUNT, "p", "f", 0.0).is_none());
        assert!(check(&COUNT, "p", "f", -1.0).is_some());
        assert!(check(&COUNT, "p", "f", 1.0).is_none());
        let e = check(&COUNT, "p", "fp_instructions", 5e-324)
            .unwrap()
            .to_string();
        assert!(e.contains("range (0 or 1 to 1e24)"), "{e}");
        let e = check(&COUNT, "p", "f", f64::NAN).unwrap();
        assert_eq!(e.fix, "give a number");
        assert!(check(&SOCKETS, "m", "sockets", 65536.0).is_some());
    }
}
