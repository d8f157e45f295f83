//! The rates over time (`--interval`): the counters the probes keep per window, read and
//! turned into a series as the run goes.

use super::*;

/// Reads the rate series' intervals out of the in-kernel ring as they end.
pub(super) struct RateReader {
    pub(super) interval_ns: u64,
    /// The next interval to read.
    pub(super) next: u64,
    /// Per interval read: syscalls, faults, read bytes, write bytes, switches.
    pub(super) counts: Vec<[u64; 5]>,
    /// Per-CPU copies of an interval found already reused for a later one.
    pub(super) overwritten: u64,
    /// The series' origin (clock ns), once set.
    pub(super) origin_ns: Option<u64>,
}

impl RateReader {
    pub(super) fn new(interval_ns: u64) -> RateReader {
        RateReader {
            interval_ns: interval_ns.max(1),
            next: 0,
            counts: Vec::new(),
            overwritten: 0,
            origin_ns: None,
        }
    }

    /// The origin of the series, once the loader or the command's exec has set it.
    pub(super) fn origin(&mut self, bpf: &Ebpf) -> Option<u64> {
        if self.origin_ns.is_none() {
            self.origin_ns = bpf
                .map("trace_start")
                .and_then(|m| aya::maps::Array::<&MapData, u64>::try_from(m).ok())
                .and_then(|a| a.get(&1, 0).ok())
                .filter(|v| *v != 0);
        }
        self.origin_ns
    }

    /// Reads the intervals before `upto`: each CPU's copy of the slot counts when it holds
    /// that interval (an older one: that CPU had no event in it; a newer one: overwritten).
    pub(super) fn drain(&mut self, bpf: &Ebpf, upto: u64) {
        let Some(Ok(m)) = bpf
            .map("rates")
            .map(PerCpuArray::<&MapData, RateBucket>::try_from)
        else {
            return;
        };
        while self.next < upto {
            let k = self.next;
            let slot = (k as u32) & (RATE_SLOTS - 1);
            let mut sum = [0u64; 5];
            if let Ok(v) = m.get(&slot, 0) {
                for b in v.iter() {
                    if b.epoch == k + 1 {
                        for (s, x) in sum.iter_mut().zip([
                            b.syscalls,
                            b.faults,
                            b.read_bytes,
                            b.write_bytes,
                            b.switches,
                        ]) {
                            *s += x;
                        }
                    } else if b.epoch > k + 1 {
                        self.overwritten += 1;
                    }
                }
            }
            self.counts.push(sum);
            self.next += 1;
        }
    }

    /// The series of a window of `window_ns`, with the columns whose probe ran.
    pub(super) fn series(&self, probes: &crate::Probes, window_ns: u64) -> RateSeries {
        let iv = self.interval_ns as f64 * 1e-9;
        let end = window_ns as f64 * 1e-9;
        let n = self.counts.len();
        let start_s: Vec<f64> = (0..n).map(|k| k as f64 * iv).collect();
        let span_s: Vec<f64> = start_s.iter().map(|s| (end - s).clamp(0.0, iv)).collect();
        let sys = probes.syscalls || probes.files;
        let cols: [(bool, &str, &str); 5] = [
            (sys, "syscalls", "calls"),
            (probes.faults, "page_faults", "faults"),
            (sys, "read_bytes", "bytes"),
            (sys, "write_bytes", "bytes"),
            (
                probes.sched || probes.timeline,
                "context_switches",
                "switches",
            ),
        ];
        let series = cols
            .iter()
            .enumerate()
            .filter(|(_, c)| c.0)
            .map(|(i, c)| RateColumn {
                name: c.1.into(),
                unit: c.2.into(),
                counts: self.counts.iter().map(|b| b[i]).collect(),
            })
            .collect();
        RateSeries {
            interval_s: iv,
            start_s,
            span_s,
            series,
        }
    }
}
