//! Timing: calibrate a repetition count, then repeat timed runs and summarize.

use std::time::Instant;

use crate::stats::Summary;

/// How long and how often to measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Target duration of one timed sample, seconds.
    pub target_s: f64,
    /// Timed samples per measurement.
    pub reps: usize,
    /// Time each sample by the CPU time of the calling thread instead of the wall clock: the
    /// time another program held the core does not count.
    pub cpu_clock: bool,
}

/// A point in time on the chosen clock, seconds.
fn now(cpu_clock: bool, origin: Instant) -> f64 {
    if cpu_clock {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime only writes into the struct we pass.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if rc == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
        }
    }
    origin.elapsed().as_secs_f64()
}

/// Calls `f` repeatedly; returns the summary of calls per second over `timing.reps`
/// samples and the number of calls per sample.
///
/// The first call warms caches and TLBs and is not timed; the call count per sample is
/// calibrated so a sample lasts about `timing.target_s` (at least one call).
pub fn calls_per_second(timing: Timing, mut f: impl FnMut()) -> (Summary, u64) {
    f();
    let origin = Instant::now();
    let clock = || now(timing.cpu_clock, origin);
    let mut calls: u64 = 1;
    let mut dt;
    loop {
        let t = clock();
        for _ in 0..calls {
            f();
        }
        dt = clock() - t;
        if dt >= timing.target_s / 8.0 || calls >= 1 << 40 {
            break;
        }
        calls *= if dt < timing.target_s / 200.0 { 16 } else { 2 };
    }
    let calls = ((calls as f64) * timing.target_s / dt.max(1e-9))
        .round()
        .max(1.0) as u64;
    let samples: Vec<f64> = (0..timing.reps.max(1))
        .map(|_| {
            let t = clock();
            for _ in 0..calls {
                f();
            }
            calls as f64 / (clock() - t).max(1e-12)
        })
        .collect();
    (
        Summary::of(&samples).expect("at least one finite sample"),
        calls,
    )
}

/// Scales a summary of calls/s into a summary of `unit_per_call` units per second,
/// divided by `div` (1e9 for GB/s or GFLOP/s).
pub fn scale(s: &Summary, unit_per_call: f64, div: f64) -> Summary {
    let k = unit_per_call / div;
    Summary {
        median: s.median * k,
        min: s.min * k,
        max: s.max * k,
        q1: s.q1 * k,
        q3: s.q3 * k,
        n: s.n,
    }
}
