//! Set sampling's gate, shared by the engines that write the record stream (the QEMU
//! plugin's and the DynamoRIO client's `sample=`): which accesses the stream carries.

use crate::{ADDR_MASK, REPEATS};

/// The classes of lines a set-sampling reader simulates (`sample=LINE:MOD:HEX`): an
/// access is streamed when one of the `LINE`-byte lines it touches has its class
/// `line mod MOD` in the bitmap; the others are counted (accesses and bytes per thread)
/// and left out. `HEX` holds `MOD` bits, four per digit, the first digit classes 0 to 3
/// (bit 0 of the digit class 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleGate {
    /// log2 of the line size.
    pub line_shift: u32,
    /// Number of classes (a power of two).
    pub modulus: u64,
    /// Bit `c` of word `c / 64`: class `c` is sampled.
    pub bits: Vec<u64>,
}

impl SampleGate {
    /// Largest `MOD` accepted.
    pub const MAX_MODULUS: u64 = 1 << 16;

    /// Parses `LINE:MOD:HEX`.
    pub fn parse(v: &str) -> Result<SampleGate, String> {
        let bad = |why: &str| {
            format!(
                "sample={v}: {why} (expected LINE:MOD:HEX, e.g. sample=64:8:a1: 64-byte lines, classes line mod 8, classes 0, 2, 4 and 7 sampled)"
            )
        };
        let mut it = v.splitn(3, ':');
        let (Some(line), Some(modulus), Some(hex)) = (it.next(), it.next(), it.next()) else {
            return Err(bad("three fields"));
        };
        let line = parse_u64(line)
            .filter(|b| b.is_power_of_two() && (8..=1 << 15).contains(b))
            .ok_or_else(|| bad("the line size is a power of two from 8 to 32768"))?;
        let modulus = parse_u64(modulus)
            .filter(|m| m.is_power_of_two() && *m <= Self::MAX_MODULUS)
            .ok_or_else(|| bad("the number of classes is a power of two up to 65536"))?;
        if hex.len() as u64 != modulus.div_ceil(4) {
            return Err(bad(&format!(
                "{modulus} classes take {} hex digits, not {}",
                modulus.div_ceil(4),
                hex.len()
            )));
        }
        let mut bits = vec![0u64; modulus.div_ceil(64) as usize];
        for (i, ch) in hex.chars().enumerate() {
            let d = ch
                .to_digit(16)
                .ok_or_else(|| bad(&format!("'{ch}' is not a hex digit")))?;
            for j in 0..4 {
                let c = 4 * i + j;
                if d >> j & 1 == 1 {
                    if c as u64 >= modulus {
                        return Err(bad(&format!("class {c} is beyond {modulus} classes")));
                    }
                    bits[c / 64] |= 1 << (c % 64);
                }
            }
        }
        Ok(SampleGate {
            line_shift: line.trailing_zeros(),
            modulus,
            bits,
        })
    }

    /// Whether line number `line` (address >> `line_shift`) is in a sampled class.
    #[inline(always)]
    pub fn line(&self, line: u64) -> bool {
        let c = line & (self.modulus - 1);
        // The bitmap has `modulus` bits (at least one word).
        self.bits
            .get((c >> 6) as usize)
            .is_none_or(|w| w >> (c & 63) & 1 == 1)
    }

    /// Whether access record `rec` (its address and size; repeats ignored) touches a
    /// sampled line.
    #[inline(always)]
    pub fn keeps(&self, rec: u64) -> bool {
        let addr = rec & ADDR_MASK;
        let first = addr >> self.line_shift;
        let last = (addr + (1 << ((rec >> 56) & 0xf)) - 1) >> self.line_shift;
        if first == last {
            self.line(first)
        } else {
            (first..=last).any(|l| self.line(l))
        }
    }
}

/// Leaves out of `v` (accesses, repeats allowed) those `gate` does not keep, in place;
/// returns how many remain, and the accesses and bytes left out (a skip record's counts).
pub fn gate_in_place(v: &mut [u64], gate: &SampleGate) -> (usize, u64, u64) {
    let (mut k, mut accesses, mut bytes) = (0, 0u64, 0u64);
    for i in 0..v.len() {
        let rec = v[i];
        if gate.keeps(rec & !REPEATS) {
            v[k] = rec;
            k += 1;
        } else {
            let times = 1 + ((rec & REPEATS) >> 60);
            accesses += times;
            bytes += times << ((rec >> 56) & 0xf);
        }
    }
    (k, accesses, bytes)
}

fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record;

    #[test]
    fn parses_and_gates() {
        let g = SampleGate::parse("64:8:a1").expect("valid");
        assert_eq!((g.line_shift, g.modulus), (6, 8));
        // Digit 'a' (classes 1 and 3), digit '1' (class 4).
        assert_eq!(g.bits, vec![0b1_1010]);
        assert!(g.keeps(record(64, 3, false)));
        assert!(!g.keeps(record(0, 3, false)));
        assert!(!g.keeps(record(2 * 64 + 56, 3, true)));
        // An access crossing from class 2 into class 3 is kept.
        assert!(g.keeps(record(2 * 64 + 60, 3, false)));
        // Line 9 is class 1.
        assert!(g.keeps(record(9 * 64, 6, false)));
        // In place: the kept records in order, the others counted with their repeats.
        let mut v = vec![
            record(64, 3, false),
            record(0, 3, false) | 2 << 60,
            record(9 * 64, 6, true),
            record(0, 6, true),
        ];
        assert_eq!(gate_in_place(&mut v, &g), (2, 4, 3 * 8 + 64));
        assert_eq!(v[..2], [record(64, 3, false), record(9 * 64, 6, true)]);
        let g = SampleGate::parse(&format!("32:128:{}8", "0".repeat(31))).expect("valid");
        assert_eq!((g.line_shift, g.bits.clone()), (5, vec![0, 1 << 63]));
        assert!(g.keeps(record(127 * 32, 5, false)));
        assert!(!g.keeps(record(126 * 32, 5, false)));
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
    }
}
