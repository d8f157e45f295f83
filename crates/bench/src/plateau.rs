//! From a bandwidth-vs-working-set sweep to one bandwidth per memory level.
//!
//! Two pure functions:
//! - [`detect_plateaus`] finds the flat stretches of the curve (the idea of the Empirical
//!   Roofline Toolkit: each memory level shows as a plateau, levels change where the curve
//!   steps down). It fits a piecewise-constant function to log(bandwidth) by dynamic
//!   programming with a per-segment penalty scaled to the measured noise, drops short
//!   segments that only bridge two plateaus (prefetch-blurred transitions), and merges
//!   neighbours closer than the tolerance (levels with the same bandwidth).
//! - [`assign_levels`] applies Gravelle's rule (dissertation, section 3.1) when the cache
//!   capacities are known: L1 = the maximum below the L1 capacity, every other cache = the
//!   value at about half its capacity, main memory = the value at 4x the last-level cache
//!   or beyond. Without capacities, the plateaus become the levels.

use serde::{Deserialize, Serialize};

/// A flat stretch of the sweep.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plateau {
    /// Smallest working set in the plateau, bytes.
    pub first_size: u64,
    /// Largest working set in the plateau, bytes.
    pub last_size: u64,
    /// Median bandwidth of its points, GB/s.
    pub gbs: f64,
    /// Largest bandwidth of its points, GB/s.
    pub max_gbs: f64,
    /// Number of sweep points.
    pub points: usize,
}

/// Parameters of [`detect_plateaus`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlateauParams {
    /// Two neighbouring plateaus closer than this relative difference are one level.
    pub merge_tolerance: f64,
    /// Smallest noise level assumed (relative), so a very quiet sweep is not split at
    /// every wiggle.
    pub min_noise: f64,
}

impl Default for PlateauParams {
    fn default() -> Self {
        PlateauParams {
            merge_tolerance: 0.12,
            min_noise: 0.02,
        }
    }
}

/// Finds the plateaus of a sweep given as `(working-set bytes, GB/s)` points.
///
/// Points are sorted by size; non-positive bandwidths are ignored. The result is ordered
/// by size. Transition sizes between plateau `i` and `i + 1` are given by
/// [`transition_sizes`].
pub fn detect_plateaus(points: &[(u64, f64)], params: &PlateauParams) -> Vec<Plateau> {
    let mut pts: Vec<(u64, f64)> = points
        .iter()
        .copied()
        .filter(|p| p.1 > 0.0 && p.1.is_finite())
        .collect();
    pts.sort_by_key(|p| p.0);
    let n = pts.len();
    if n == 0 {
        return Vec::new();
    }
    let y: Vec<f64> = pts.iter().map(|p| p.1.ln()).collect();
    // Noise: median absolute difference of neighbours (robust to the few steps), as a
    // standard deviation of one point.
    let mut d: Vec<f64> = y.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    d.sort_by(f64::total_cmp);
    let mad = if d.is_empty() { 0.0 } else { d[d.len() / 2] };
    let sigma = (mad / (0.6745 * std::f64::consts::SQRT_2)).max(params.min_noise);
    let penalty =
        2.0 * sigma * sigma * ((n as f64).ln().max(1.0)) + (params.merge_tolerance / 2.0).powi(2);
    // Prefix sums for O(1) segment cost.
    let mut s1 = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for i in 0..n {
        s1[i + 1] = s1[i] + y[i];
        s2[i + 1] = s2[i] + y[i] * y[i];
    }
    let cost = |i: usize, j: usize| {
        // SSE of y[i..j] around its mean.
        let m = (j - i) as f64;
        let s = s1[j] - s1[i];
        (s2[j] - s2[i]) - s * s / m
    };
    let mut best = vec![f64::INFINITY; n + 1];
    let mut prev = vec![0usize; n + 1];
    best[0] = 0.0;
    for j in 1..=n {
        for i in 0..j {
            let c = best[i] + cost(i, j) + penalty;
            if c < best[j] {
                best[j] = c;
                prev[j] = i;
            }
        }
    }
    let mut bounds = Vec::new();
    let mut j = n;
    while j > 0 {
        bounds.push((prev[j], j));
        j = prev[j];
    }
    bounds.reverse();
    let flat = |(i, j): (usize, usize)| -> bool {
        let (lo, hi) = pts[i..j]
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), p| {
                (lo.min(p.1), hi.max(p.1))
            });
        hi / lo - 1.0 <= params.merge_tolerance
    };
    let flats: Vec<bool> = bounds.iter().map(|b| flat(*b)).collect();
    let seg = |(i, j): (usize, usize)| -> Plateau {
        let mut v: Vec<f64> = pts[i..j].iter().map(|p| p.1).collect();
        v.sort_by(f64::total_cmp);
        let med = hpcscope_core::stats::median_sorted(&v);
        Plateau {
            first_size: pts[i].0,
            last_size: pts[j - 1].0,
            gbs: med,
            max_gbs: v[v.len() - 1],
            points: j - i,
        }
    };
    let mut segs: Vec<(Plateau, bool)> = bounds.into_iter().map(seg).zip(flats).collect();
    // Drop bridges: a segment whose level lies strictly between its neighbours' levels
    // is a transition, not a level, when it is short (at most 2 points) or short and
    // sloped (at most 4 points spanning more than the tolerance).
    loop {
        let mut dropped = false;
        for k in 1..segs.len().saturating_sub(1) {
            let (a, (b, b_flat), c) = (&segs[k - 1].0, &segs[k], &segs[k + 1].0);
            let between = (a.gbs > b.gbs && b.gbs > c.gbs) || (a.gbs < b.gbs && b.gbs < c.gbs);
            let short = b.points <= 2 || (b.points <= 4 && !b_flat);
            if short && between && a.points >= b.points && c.points >= b.points {
                segs.remove(k);
                dropped = true;
                break;
            }
        }
        if !dropped {
            break;
        }
    }
    // A single-point segment at the very start is an edge effect unless it is all there is.
    if segs.len() > 1
        && segs[0].0.points == 1
        && segs[1].0.points > 1
        && segs[0].0.gbs < segs[1].0.gbs
    {
        segs.remove(0);
    }
    // Merge neighbours within the tolerance.
    let mut out: Vec<Plateau> = Vec::new();
    for (s, _) in segs {
        if let Some(last) = out.last_mut() {
            let rel = (last.gbs - s.gbs).abs() / last.gbs.max(s.gbs);
            if rel < params.merge_tolerance {
                let total = (last.points + s.points) as f64;
                last.gbs = (last.gbs * last.points as f64 + s.gbs * s.points as f64) / total;
                last.max_gbs = last.max_gbs.max(s.max_gbs);
                last.last_size = s.last_size;
                last.points += s.points;
                continue;
            }
        }
        out.push(s);
    }
    out
}

/// Sizes where the level changes: the geometric mean of the last size of one plateau and
/// the first size of the next.
pub fn transition_sizes(plateaus: &[Plateau]) -> Vec<u64> {
    plateaus
        .windows(2)
        .map(|w| {
            ((w[0].last_size as f64) * (w[1].first_size as f64))
                .sqrt()
                .round() as u64
        })
        .collect()
}

/// Without cache geometry: each plateau is a level, the last one main memory.
fn levels_of_plateaus(plateaus: &[Plateau]) -> Vec<LevelEstimate> {
    let mut out = Vec::new();
    let n = plateaus.len();
    for (i, p) in plateaus.iter().enumerate() {
        let memory = i + 1 == n && n > 1;
        out.push(LevelEstimate {
            name: if memory { "MM".into() } else { format!("L{}", i + 1) },
            memory,
            gbs: Some(if i == 0 { p.max_gbs } else { p.gbs }),
            at_size: Some(((p.first_size as f64) * (p.last_size as f64)).sqrt() as u64),
            rule: format!(
                "plateau {}..{} B ({} points; no cache geometry known, so levels are the detected plateaus){}",
                p.first_size,
                p.last_size,
                p.points,
                if i == 0 { ", maximum" } else { ", median" }
            ),
            capacity_from_sweep: None,
        });
    }
    out
}

/// `caches` with the last level's capacity replaced by the sweep's step into main memory
/// where that lies below 3/4 of sysfs's capacity (see [`assign_levels`]); the sysfs
/// capacity so replaced.
///
/// The step into main memory is the sweep's last step that a cache of sysfs's capacity can
/// make: at most 1.25 times that capacity (a step the sweep places a little above it is the
/// cache's own) and more than twice the level before. Steps beyond (seen at 50 to 83 MiB on
/// VMs with 32 MiB of L3) are main memory's own: its pages, the host's memory.
fn measured_llc(
    caches: &[CacheCapacity],
    transitions: &[u64],
) -> (Vec<CacheCapacity>, Option<u64>) {
    let mut out = caches.to_vec();
    let n = out.len();
    let Some(last) = out.last().copied() else {
        return (out, None);
    };
    let before = if n > 1 { out[n - 2].bytes } else { 0 };
    let step = transitions
        .iter()
        .copied()
        .rfind(|&t| t > 2 * before && t as f64 <= 1.25 * last.bytes as f64);
    match step {
        Some(t) if (t as f64) < 0.75 * last.bytes as f64 => {
            out[n - 1].bytes = t;
            (out, Some(last.bytes))
        }
        _ => (out, None),
    }
}

/// Capacity of one cache level as seen by the measuring threads.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CacheCapacity {
    /// Level number (1 = L1).
    pub level: u32,
    /// Bytes usable by the measurement.
    pub bytes: u64,
}

/// Bandwidth of one memory level, with the rule that chose it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelEstimate {
    /// `L1`, `L2`, `L3`, ..., `MM`.
    pub name: String,
    /// True for main memory.
    pub memory: bool,
    /// Bandwidth, GB/s; `None` when no sweep point measures this level.
    pub gbs: Option<f64>,
    /// Working-set size of the chosen point(s), bytes.
    pub at_size: Option<u64>,
    /// How the value was chosen.
    pub rule: String,
    /// The level's capacity as the sweep saw it, where it contradicts sysfs's (the last
    /// level only: see [`assign_levels`]); `None` where sysfs's capacity was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_from_sweep: Option<SweptCapacity>,
}

/// A last-level cache's capacity taken from the bandwidth sweep instead of sysfs.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweptCapacity {
    /// Where the sweep's bandwidth steps down into main memory (total working set), bytes.
    pub bytes: u64,
    /// What sysfs reports, bytes.
    pub sysfs_bytes: u64,
}

/// Assigns a bandwidth to each level from `(size, GB/s)` sweep points.
///
/// With `caches` (ascending levels): L1 = maximum over sizes `<= C1`; level k = median of
/// the points within 0.3 octave of `Ck / 2` (else the point of `(C(k-1), Ck]` closest to
/// `Ck / 2`); MM = median of the points `>= 4 * C_last` (else the largest point beyond
/// `C_last`, flagged). Without `caches`, each plateau is a level, the last one is `MM`.
///
/// The last-level cache's capacity is the sweep's own where the two disagree: when the
/// sweep's bandwidth step into main memory (its last step up to 1.25 times the capacity
/// `caches` gives, sysfs's, and more than an octave above the level before) lies below 3/4
/// of sysfs's capacity, the level is measured at half that step, and its rule says so. A
/// VM's vCPUs can see a share of the host's L3 that sysfs reports whole (480 MiB reported,
/// the step at about 108 MiB, seen on a 2-vCPU guest; 32 MiB reported, the step at 16 MiB
/// on a 2-vCPU Zen 4 guest): measured at half of sysfs's size, the "L3" point is main
/// memory, and a working set between the two is simulated in a cache it does not fit.
pub fn assign_levels(
    points: &[(u64, f64)],
    caches: &[CacheCapacity],
    plateaus: &[Plateau],
) -> Vec<LevelEstimate> {
    let (caches, llc_step) = measured_llc(caches, &transition_sizes(plateaus));
    let caches = &caches[..];
    let mut pts: Vec<(u64, f64)> = points
        .iter()
        .copied()
        .filter(|p| p.1 > 0.0 && p.1.is_finite())
        .collect();
    pts.sort_by_key(|p| p.0);
    let mut out = Vec::new();
    if caches.is_empty() {
        return levels_of_plateaus(plateaus);
    }
    let median = |v: &[(u64, f64)]| -> (f64, u64) {
        let mut b: Vec<f64> = v.iter().map(|p| p.1).collect();
        b.sort_by(f64::total_cmp);
        let m = hpcscope_core::stats::median_sorted(&b);
        let size = (v.iter().map(|p| (p.0 as f64).ln()).sum::<f64>() / v.len() as f64)
            .exp()
            .round() as u64;
        (m, size)
    };
    for (k, c) in caches.iter().enumerate() {
        let lower = if k == 0 { 0 } else { caches[k - 1].bytes };
        let name = format!("L{}", c.level);
        let in_range: Vec<(u64, f64)> = pts
            .iter()
            .copied()
            .filter(|p| p.0 > lower && p.0 <= c.bytes)
            .collect();
        let est = if in_range.is_empty() {
            LevelEstimate {
                name,
                memory: false,
                gbs: None,
                at_size: None,
                rule: format!("no sweep point between {lower} and {} B", c.bytes),
                capacity_from_sweep: None,
            }
        } else if k == 0 {
            let best = in_range
                .iter()
                .copied()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .expect("non-empty");
            LevelEstimate {
                name,
                memory: false,
                gbs: Some(best.1),
                at_size: Some(best.0),
                rule: "maximum over working sets up to the L1 capacity (Gravelle)".into(),
                capacity_from_sweep: None,
            }
        } else {
            let half = c.bytes as f64 / 2.0;
            let near: Vec<(u64, f64)> = in_range
                .iter()
                .copied()
                .filter(|p| ((p.0 as f64) / half).log2().abs() <= 0.3)
                .collect();
            if near.is_empty() {
                let best = in_range
                    .iter()
                    .copied()
                    .min_by(|a, b| {
                        ((a.0 as f64) / half)
                            .ln()
                            .abs()
                            .total_cmp(&((b.0 as f64) / half).ln().abs())
                    })
                    .expect("non-empty");
                LevelEstimate {
                    name,
                    memory: false,
                    gbs: Some(best.1),
                    at_size: Some(best.0),
                    rule: "point closest to half the capacity (no point within 0.3 octave of it)"
                        .into(),
                    capacity_from_sweep: None,
                }
            } else {
                let (m, size) = median(&near);
                LevelEstimate {
                    name,
                    memory: false,
                    gbs: Some(m),
                    at_size: Some(size),
                    rule: format!(
                        "median of {} point(s) at about half the capacity (Gravelle)",
                        near.len()
                    ),
                    capacity_from_sweep: None,
                }
            }
        };
        let est = match llc_step {
            Some(sysfs) if k + 1 == caches.len() => LevelEstimate {
                rule: format!(
                    "{}; capacity from the sweep: its bandwidth steps down at about {} B, where sysfs reports {sysfs} B",
                    est.rule, c.bytes
                ),
                capacity_from_sweep: Some(SweptCapacity {
                    bytes: c.bytes,
                    sysfs_bytes: sysfs,
                }),
                ..est
            },
            _ => est,
        };
        out.push(est);
    }
    let llc = caches.last().map(|c| c.bytes).unwrap_or(0);
    // 1% slack: measured sizes are rounded down to whole loop iterations.
    let far: Vec<(u64, f64)> = pts
        .iter()
        .copied()
        .filter(|p| p.0 as f64 >= 3.96 * llc as f64)
        .collect();
    let mm = if !far.is_empty() {
        let (m, size) = median(&far);
        LevelEstimate {
            name: "MM".into(),
            memory: true,
            gbs: Some(m),
            at_size: Some(size),
            rule: format!(
                "median of {} point(s) at >= 4x the last-level cache",
                far.len()
            ),
            capacity_from_sweep: None,
        }
    } else if let Some(&p) = pts.iter().rfind(|p| p.0 > llc) {
        LevelEstimate {
            name: "MM".into(),
            memory: true,
            gbs: Some(p.1),
            at_size: Some(p.0),
            rule: "largest working set, beyond the last-level cache but below 4x its capacity: may include cache hits".into(),
            capacity_from_sweep: None,
        }
    } else {
        LevelEstimate {
            name: "MM".into(),
            memory: true,
            gbs: None,
            at_size: None,
            rule: format!("no sweep point beyond the last-level cache ({llc} B)"),
            capacity_from_sweep: None,
        }
    };
    out.push(mm);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-noise in [-1, 1].
    fn noise(i: usize) -> f64 {
        let x = ((i as u64)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407)
            >> 33) as f64;
        x / (1u64 << 31) as f64 * 2.0 - 1.0
    }

    /// A sweep from 16 KiB to 2 GiB, `ppo` points per octave, with levels of capacity
    /// `caps` (bytes) and bandwidths `bws` (one more than caps: memory), each transition
    /// blurred over `blur` octaves, relative noise `amp`.
    fn sweep(caps: &[f64], bws: &[f64], ppo: usize, blur: f64, amp: f64) -> Vec<(u64, f64)> {
        let mut v = Vec::new();
        let n = 17 * ppo;
        for i in 0..=n {
            let size = 16384.0 * 2f64.powf(i as f64 / ppo as f64);
            // Smooth step in log2(size) at each capacity.
            let mut lbw = bws[0].ln();
            for (k, c) in caps.iter().enumerate() {
                let x = (size / c).log2();
                let w = if blur > 0.0 {
                    1.0 / (1.0 + (-x * 4.0 / blur).exp())
                } else if x > 0.0 {
                    1.0
                } else {
                    0.0
                };
                lbw += w * (bws[k + 1].ln() - bws[k].ln());
            }
            v.push((size as u64, lbw.exp() * (1.0 + amp * noise(i))));
        }
        v
    }

    /// Relative error under `tol` (the expected bandwidths are all positive).
    fn close(a: f64, b: f64, tol: f64) -> bool {
        hpcscope_test_support::rel_err(a, b) < tol
    }

    /// Levels 1, 2, 3 of these capacities (bytes), as sysfs gives them.
    fn caches(bytes: [u64; 3]) -> Vec<CacheCapacity> {
        (1..)
            .zip(bytes)
            .map(|(level, bytes)| CacheCapacity { level, bytes })
            .collect()
    }

    const CAPS: [f64; 3] = [48.0 * 1024.0, 2.0 * 1024.0 * 1024.0, 64.0 * 1024.0 * 1024.0];
    const BWS: [f64; 4] = [400.0, 120.0, 40.0, 15.0];

    #[test]
    fn sharp_noisy_steps_give_four_plateaus() {
        let pts = sweep(&CAPS, &BWS, 4, 0.0, 0.04);
        let p = detect_plateaus(&pts, &PlateauParams::default());
        assert_eq!(p.len(), 4, "{p:#?}");
        for (pl, bw) in p.iter().zip(BWS) {
            assert!(close(pl.gbs, bw, 0.06), "{} vs {bw}", pl.gbs);
        }
        let t = transition_sizes(&p);
        for (t, c) in t.iter().zip(CAPS) {
            let r = *t as f64 / c;
            assert!((0.7..1.5).contains(&r), "transition {t} vs capacity {c}");
        }
    }

    #[test]
    fn prefetch_blurred_transitions_still_give_four_levels() {
        let pts = sweep(&CAPS, &BWS, 4, 1.5, 0.03);
        let p = detect_plateaus(&pts, &PlateauParams::default());
        assert_eq!(p.len(), 4, "{p:#?}");
        for (pl, bw) in p.iter().zip(BWS) {
            assert!(close(pl.gbs, bw, 0.12), "{} vs {bw}", pl.gbs);
        }
        let t = transition_sizes(&p);
        for (t, c) in t.iter().zip(CAPS) {
            let r = *t as f64 / c;
            assert!((0.5..2.0).contains(&r), "transition {t} vs capacity {c}");
        }
    }

    #[test]
    fn a_missing_level_merges() {
        // L2 and L3 with the same bandwidth: three plateaus.
        let pts = sweep(&CAPS, &[400.0, 100.0, 100.0, 15.0], 2, 0.0, 0.03);
        let p = detect_plateaus(&pts, &PlateauParams::default());
        assert_eq!(p.len(), 3, "{p:#?}");
        assert!(close(p[1].gbs, 100.0, 0.05));
    }

    #[test]
    fn flat_and_tiny_sweeps() {
        let flat: Vec<(u64, f64)> = (0..10)
            .map(|i| (1u64 << (14 + i), 50.0 * (1.0 + 0.02 * noise(i as usize))))
            .collect();
        assert_eq!(detect_plateaus(&flat, &PlateauParams::default()).len(), 1);
        assert!(detect_plateaus(&[], &PlateauParams::default()).is_empty());
        let one = detect_plateaus(&[(1000, 10.0)], &PlateauParams::default());
        assert_eq!(one.len(), 1);
        assert!(transition_sizes(&one).is_empty());
        // Non-positive values are ignored.
        assert_eq!(
            detect_plateaus(&[(1000, 0.0), (2000, -1.0)], &PlateauParams::default()).len(),
            0
        );
    }

    #[test]
    fn gravelle_rule_with_capacities() {
        let pts = sweep(&CAPS, &BWS, 4, 1.0, 0.02);
        let caps: Vec<CacheCapacity> = CAPS
            .iter()
            .enumerate()
            .map(|(i, c)| CacheCapacity {
                level: i as u32 + 1,
                bytes: *c as u64,
            })
            .collect();
        let l = assign_levels(&pts, &caps, &[]);
        let names: Vec<&str> = l.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["L1", "L2", "L3", "MM"]);
        assert!(l[3].memory && !l[2].memory);
        // L1 is the maximum; half-capacity values are close to the plateau values.
        let l1_max = pts
            .iter()
            .filter(|p| p.0 <= CAPS[0] as u64)
            .map(|p| p.1)
            .fold(0.0, f64::max);
        assert_eq!(l[0].gbs, Some(l1_max));
        assert!(close(l[1].gbs.unwrap(), 120.0, 0.1));
        assert!(close(l[2].gbs.unwrap(), 40.0, 0.1));
        assert!(close(l[3].gbs.unwrap(), 15.0, 0.05));
        assert!(l[3].at_size.unwrap() >= 4 * CAPS[2] as u64);
        let half = l[1].at_size.unwrap() as f64 / (CAPS[1] / 2.0);
        assert!((0.8..1.25).contains(&half));
    }

    #[test]
    fn gravelle_rule_with_sparse_points() {
        // Only 4 sizes, like likwid's comparison: 32 kB, 1 MB, 64 MB, 1 GB.
        let pts = [
            (32_000, 400.0),
            (1_000_000, 120.0),
            (64_000_000, 30.0),
            (1_000_000_000, 15.0),
        ];
        let caps = caches([48 << 10, 2 << 20, 260 << 20]);
        let l = assign_levels(&pts, &caps, &[]);
        assert_eq!(l[0].gbs, Some(400.0));
        assert_eq!(l[1].gbs, Some(120.0));
        assert_eq!(l[2].gbs, Some(30.0));
        assert_eq!(l[3].gbs, Some(15.0));
        assert!(l[3].rule.contains("below 4x"));
        // Nothing beyond the LLC: memory has no value.
        let l = assign_levels(&pts[..3], &caps, &[]);
        assert_eq!(l[3].gbs, None);
        // A level with no point in its range is reported without a value.
        let l = assign_levels(&[(32_000, 400.0), (1_000_000_000, 15.0)], &caps, &[]);
        assert_eq!(l[1].gbs, None);
        assert_eq!(l[2].gbs, None);
    }

    /// The Intel Xeon VM's sweep: sysfs says 480 MiB of L3, the bandwidth steps down to
    /// memory's at about 108 MiB. The L3 is measured at half the step, not at 240 MiB.
    #[test]
    fn a_last_level_cache_smaller_than_sysfs_says_is_measured_where_the_sweep_sees_it() {
        let seen = [
            48.0 * 1024.0,
            2.0 * 1024.0 * 1024.0,
            108.0 * 1024.0 * 1024.0,
        ];
        let pts = sweep(&seen, &BWS, 4, 0.0, 0.02);
        let p = detect_plateaus(&pts, &PlateauParams::default());
        let sysfs = |l3: u64| caches([48 << 10, 2 << 20, l3]);
        let l = assign_levels(&pts, &sysfs(480 << 20), &p);
        assert!(close(l[2].gbs.unwrap(), 40.0, 0.1), "{:?}", l[2]);
        assert!(l[2].at_size.unwrap() < 80 << 20, "{:?}", l[2]);
        assert!(
            l[2].rule.contains("sysfs reports 503316480 B"),
            "{}",
            l[2].rule
        );
        let sc = l[2].capacity_from_sweep.expect("capacity from the sweep");
        assert_eq!(sc.sysfs_bytes, 480 << 20);
        assert!(
            close(sc.bytes as f64, 108.0 * 1024.0 * 1024.0, 0.2),
            "{sc:?}"
        );
        assert!(close(l[3].gbs.unwrap(), 15.0, 0.05) && l[3].memory);
        // Sysfs's capacity where the step agrees with it (at 0.84 of it): as before.
        let l = assign_levels(&pts, &sysfs(128 << 20), &p);
        assert!(!l[2].rule.contains("sysfs"), "{}", l[2].rule);
        assert!(l.iter().all(|e| e.capacity_from_sweep.is_none()));
        assert_eq!(l, assign_levels(&pts, &sysfs(128 << 20), &[]));
        // No plateaus (no sweep steps known): sysfs's, even if wrong.
        let l = assign_levels(&pts, &sysfs(480 << 20), &[]);
        assert!(close(l[2].gbs.unwrap(), 15.0, 0.1), "{:?}", l[2]);
    }

    /// A Zen 4 VM's sweep (2026-12-01): sysfs says 32 MiB of L3, the bandwidth steps down at
    /// 16 MiB, and once more at 70 MiB, inside main memory. The step at 16 MiB is the L3's;
    /// the one beyond sysfs's capacity is not a cache's. A step at 27 MiB (0.84 of sysfs's,
    /// another VM of that kind) keeps sysfs's capacity.
    #[test]
    fn a_step_beyond_sysfs_capacity_does_not_hide_the_last_level_cache_step() {
        let bws = [300.0, 114.0, 75.0, 35.0, 30.0];
        let sysfs = caches([32 << 10, 1 << 20, 32 << 20]);
        let mib = 1024.0 * 1024.0;
        // The sweep with its L3 step at `l3` MiB, and the levels assigned from it.
        let levels = |l3: f64| {
            let pts = sweep(
                &[32.0 * 1024.0, mib, l3 * mib, 70.0 * mib],
                &bws,
                4,
                0.0,
                0.02,
            );
            let p = detect_plateaus(&pts, &PlateauParams::default());
            assert!(transition_sizes(&p).iter().any(|&t| t > 40 << 20), "{p:#?}");
            assign_levels(&pts, &sysfs, &p)
        };
        let l = levels(16.0);
        let sc = l[2].capacity_from_sweep.expect("capacity from the sweep");
        assert_eq!(sc.sysfs_bytes, 32 << 20);
        assert!(close(sc.bytes as f64, 16.0 * mib, 0.2), "{sc:?}");
        assert!(close(l[2].gbs.unwrap(), 75.0, 0.1), "{:?}", l[2]);
        assert!(l[3].memory && l[3].gbs.unwrap() < 36.0, "{:?}", l[3]);
        let l = levels(27.0);
        assert!(l.iter().all(|e| e.capacity_from_sweep.is_none()), "{l:#?}");
    }

    #[test]
    fn without_capacities_plateaus_are_levels() {
        let pts = sweep(&CAPS, &BWS, 4, 0.0, 0.02);
        let p = detect_plateaus(&pts, &PlateauParams::default());
        let l = assign_levels(&pts, &[], &p);
        let names: Vec<&str> = l.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["L1", "L2", "L3", "MM"]);
        assert!(l[3].memory);
    }
}
