//! The Intel MPI Benchmarks' reporting conventions (IMB-MPI1), as pure functions.
//!
//! - Times are per operation in µs; PingPong's is half the round trip. t_min, t_max and t_avg
//!   are taken over the ranks that take part.
//! - Mbytes/sec = k x bytes / t_max, with k = 1 for PingPong, 2 for Sendrecv (each rank sends
//!   and receives: both directions count) and 4 for Exchange (two sends, two receives);
//!   collectives print no bandwidth. MB is 10^6 B: IMB's `IMB_output.c` divides by 1e6
//!   (`MEGA = 1.0 / 1e6`) since the 2018 releases; IMB 4.x and older divided by 2^20, so
//!   their Mbytes/sec are 4.6% lower for the same times. Seed 004's Tables 4.6-4.7 follow
//!   10^6 (research notes 004, sections 3.10 and 6.2).
//! - Repetitions per size: min(1000, 40 MiB / bytes) (`MSGSPERSAMPLE`, `OVERALL_VOL` of
//!   `IMB_settings.h`), 1000 for 0 bytes.

use serde::{Deserialize, Serialize};

/// IMB's `MSGSPERSAMPLE`: most repetitions of one size.
pub const MAX_REPS: u64 = 1000;
/// IMB's `OVERALL_VOL`: bytes moved per size at most, 40 MiB.
pub const OVERALL_VOLUME: u64 = 40 * 1024 * 1024;
/// Bytes in one IMB "Mbyte" (IMB 2018 and later).
pub const MBYTE: f64 = 1.0e6;

/// A benchmark of the suite.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Benchmark {
    /// Rank 0 sends, rank 1 sends back: one message at a time, one direction at a time.
    PingPong,
    /// Every rank sends to its right neighbour and receives from its left (MPI_Sendrecv).
    Sendrecv,
    /// Every rank sends to and receives from both neighbours (2 x MPI_Isend, 2 x MPI_Recv).
    Exchange,
    /// MPI_Allreduce of MPI_FLOAT elements with MPI_SUM over all ranks.
    Allreduce,
}

impl Benchmark {
    /// Every benchmark, in the order they run.
    pub const ALL: [Benchmark; 4] = [
        Benchmark::PingPong,
        Benchmark::Sendrecv,
        Benchmark::Exchange,
        Benchmark::Allreduce,
    ];

    /// The name on the command line and in the program's output.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::PingPong => "pingpong",
            Benchmark::Sendrecv => "sendrecv",
            Benchmark::Exchange => "exchange",
            Benchmark::Allreduce => "allreduce",
        }
    }

    /// IMB's spelling (`PingPong`).
    pub fn imb_name(self) -> &'static str {
        match self {
            Benchmark::PingPong => "PingPong",
            Benchmark::Sendrecv => "Sendrecv",
            Benchmark::Exchange => "Exchange",
            Benchmark::Allreduce => "Allreduce",
        }
    }

    /// The benchmark called `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<Benchmark> {
        Benchmark::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(name.trim()))
    }

    /// k of Mbytes/sec = k x bytes / t_max; `None` for collectives (no bandwidth column).
    pub fn bytes_factor(self) -> Option<f64> {
        match self {
            Benchmark::PingPong => Some(1.0),
            Benchmark::Sendrecv => Some(2.0),
            Benchmark::Exchange => Some(4.0),
            Benchmark::Allreduce => None,
        }
    }
}

/// Repetitions of an `bytes`-byte message: min(`max_reps`, `volume` / bytes), at least
/// `min_reps`; `max_reps` for 0 bytes. IMB: `repetitions(b, 40 MiB, 1000, 1)`.
pub fn repetitions(bytes: u64, volume: u64, max_reps: u64, min_reps: u64) -> u64 {
    let r = volume
        .checked_div(bytes)
        .map_or(max_reps, |r| r.min(max_reps));
    r.max(min_reps)
}

/// IMB's Mbytes/sec (MB = 10^6 B) of `benchmark` for `bytes` at `t_max_us`; `None` for a
/// collective or a non-positive time.
pub fn mbytes_per_s(benchmark: Benchmark, bytes: u64, t_max_us: f64) -> Option<f64> {
    let k = benchmark.bytes_factor()?;
    // bytes per µs are 10^6 bytes per second.
    (t_max_us > 0.0).then(|| k * bytes as f64 / t_max_us * 1.0e6 / MBYTE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Research notes 004, section 6.2: Tables 4.6 (Sendrecv) and 4.7 (Exchange) recomputed
    /// by hand from t_max.
    #[test]
    fn bandwidth_convention_reproduces_tables_4_6_and_4_7() {
        // Sendrecv, 4,194,304 B: 2 x 4194304 / 21878.73 = 383.41 MB/s.
        let s = mbytes_per_s(Benchmark::Sendrecv, 4_194_304, 21_878.73).unwrap();
        assert!((s - 383.41).abs() < 0.005, "{s}");
        // 1 B row: 2 / 2.86 = 0.699 -> printed 0.70.
        let s = mbytes_per_s(Benchmark::Sendrecv, 1, 2.86).unwrap();
        assert!((s - 0.6993).abs() < 1e-4, "{s}");
        // Exchange, 4,194,304 B: 4 x 4194304 / 44116.94 = 380.29 MB/s.
        let e = mbytes_per_s(Benchmark::Exchange, 4_194_304, 44_116.94).unwrap();
        assert!((e - 380.29).abs() < 0.005, "{e}");
        // PingPong counts one direction: 1 MiB in 100 µs is 10.48576 MB/s x 1000 = 10485.76.
        let p = mbytes_per_s(Benchmark::PingPong, 1 << 20, 100.0).unwrap();
        assert!((p - 10_485.76).abs() < 1e-9, "{p}");
        // Collectives have no bandwidth column; a zero time has no bandwidth.
        assert_eq!(mbytes_per_s(Benchmark::Allreduce, 1024, 10.0), None);
        assert_eq!(mbytes_per_s(Benchmark::PingPong, 1024, 0.0), None);
        // 0 bytes: 0.00, as IMB prints.
        assert_eq!(mbytes_per_s(Benchmark::Sendrecv, 0, 3.24), Some(0.0));
    }

    /// Every Sendrecv and Exchange row of Tables 4.6-4.7 with bytes > 0 (section 6.2's test
    /// rule): the printed Mbytes/sec lies within the rounding of t_max.
    #[test]
    fn every_row_of_the_seed_tables_is_within_rounding() {
        let rows: [(u64, f64, f64, f64); 6] = [
            // (bytes, Sendrecv t_max, Sendrecv MB/s, Exchange t_max) ...
            (64, 3.79, 33.75, 4.50),
            (1024, 6.23, 328.99, 12.13),
            (8192, 43.48, 376.78, 86.91),
            (65536, 350.46, 373.99, 714.49),
            (1_048_576, 5473.76, 383.13, 11_178.56),
            (2_097_152, 10_941.79, 383.33, 22_123.74),
        ];
        let exchange = [56.85, 337.71, 377.02, 366.89, 375.21, 379.17];
        for ((b, ts, ms, te), me) in rows.into_iter().zip(exchange) {
            for (bench, t, printed) in
                [(Benchmark::Sendrecv, ts, ms), (Benchmark::Exchange, te, me)]
            {
                let k = bench.bytes_factor().unwrap();
                let lo = k * b as f64 / (t + 0.005) - 0.005;
                let hi = k * b as f64 / (t - 0.005) + 0.005;
                let v = mbytes_per_s(bench, b, t).unwrap();
                assert!(lo <= printed && printed <= hi, "{bench:?} {b}: {printed}");
                assert!(lo <= v && v <= hi, "{bench:?} {b}: {v}");
            }
        }
    }

    /// Tables 4.6-4.8's #repetitions column: min(1000, 40 MiB / bytes).
    #[test]
    fn repetitions_follow_imb() {
        let imb = |b| repetitions(b, OVERALL_VOLUME, MAX_REPS, 1);
        assert_eq!(imb(0), 1000);
        assert_eq!(imb(1), 1000);
        assert_eq!(imb(32_768), 1000); // 1280, capped
        assert_eq!(imb(65_536), 640);
        assert_eq!(imb(131_072), 320);
        assert_eq!(imb(262_144), 160);
        assert_eq!(imb(524_288), 80);
        assert_eq!(imb(1_048_576), 40);
        assert_eq!(imb(2_097_152), 20);
        assert_eq!(imb(4_194_304), 10);
        // A floor applies to huge messages.
        assert_eq!(repetitions(1 << 30, OVERALL_VOLUME, MAX_REPS, 2), 2);
    }

    #[test]
    fn names_round_trip() {
        for b in Benchmark::ALL {
            assert_eq!(Benchmark::from_name(b.name()), Some(b));
            assert_eq!(Benchmark::from_name(b.imb_name()), Some(b));
        }
        assert_eq!(Benchmark::from_name("bcast"), None);
    }
}
