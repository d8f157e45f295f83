//! One sentence on the source run and one on each target: what bounds it and how far from
//! its ceiling it runs.

use hpcscope_core::Machine;
use hpcscope_core::project::Projection;
use hpcscope_core::roofline::{Bound, ComputeLimit, RooflineAnalysis};
use hpcscope_report::fmt::num;

/// One sentence on the source run.
pub fn source_verdict(m: &Machine, r: &RooflineAnalysis) -> String {
    let eff = r
        .efficiency
        .map(|e| format!(", at {:.0} % of that ceiling", e * 100.0))
        .unwrap_or_default();
    let achieved = r
        .achieved_gflops
        .map(|g| format!("runs at {} GFLOP/s and ", num(g, 3)))
        .unwrap_or_default();
    let first = match r.binding_bound {
        Bound::Memory => format!(
            "On {} the application {achieved}is memory-bound on {}: that level's bandwidth allows {} GFLOP/s at its operational intensity{eff}.",
            m.name,
            r.binding_level,
            num(r.binding_gflops, 3)
        ),
        Bound::Compute => format!(
            "On {} the application {achieved}is compute-bound: {} {} GFLOP/s{eff}.",
            m.name,
            compute_limit_words(r),
            num(r.binding_gflops, 3)
        ),
    };
    // Far below the binding ceiling, "bound" alone misleads: say what the roofline cannot see.
    if !r.efficiency.is_some_and(|e| e < 0.5) {
        return first;
    }
    let tightest_bandwidth = r
        .levels
        .iter()
        .filter(|l| l.oi.is_finite() && l.bandwidth_gbs > 0.0)
        .map(|l| (l.level.as_str(), l.oi * l.bandwidth_gbs))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let what = "the latency and concurrency of cache misses, dependencies between instructions, or instruction issue (`hpcscope model` and the counters tell them apart)";
    match (r.binding_bound, tightest_bandwidth) {
        (Bound::Compute, Some((level, g))) => format!(
            "{first} No ceiling is reached: the tightest bandwidth roofline ({level}) allows {} GFLOP/s, so what limits the run is not drawn on the roofline: {what}.",
            num(g, 3)
        ),
        _ => format!(
            "{first} Well below that ceiling, what limits the run is not drawn on the roofline: {what}."
        ),
    }
}

/// What sets a compute-bound roofline's ceiling, as the subject of "allows X GFLOP/s".
fn compute_limit_words(r: &RooflineAnalysis) -> &'static str {
    match r.compute_limit_below_peak() {
        Some(ComputeLimit::Chains) => {
            if !r.ceilings.latency_mostly_integer {
                "the loops' dependency chains (one operation after the other, at this machine's latencies) allow"
            } else {
                "the loops' dependency chains, mostly their counters (one iteration per cycle at most), allow"
            }
        }
        Some(ComputeLimit::Divider) => {
            "the divider, at the binary's share of divides and square roots, allows"
        }
        _ => "its instruction mix allows",
    }
}

/// One sentence on a run that does no floating point: what it did, and why FLOP rooflines
/// say nothing about it.
pub fn no_fp_verdict(
    m: &Machine,
    app: &hpcscope_core::AppMetrics,
    instructions: Option<f64>,
) -> String {
    let time = app
        .time_s
        .map(|t| format!("ran {} s, ", num(t, 3)))
        .unwrap_or_default();
    let instr = instructions
        .map(|i| format!("executed {} instructions and ", num(i, 4)))
        .unwrap_or_default();
    let beyond: f64 = app.bytes.iter().skip(1).sum();
    let bytes = match app.bytes.first() {
        Some(b) => format!(
            "moved {} bytes from {} ({} from the levels beyond it)",
            num(*b, 4),
            app.levels.first().map_or("L1", String::as_str),
            num(beyond, 4)
        ),
        None => "moved no byte that was counted".into(),
    };
    format!(
        "On {} the application does no floating-point work: it {time}{instr}{bytes}. FLOP rooflines and FLOP-based projections do not apply to it.",
        m.name
    )
}

/// What sets a projection's lower bound, in words: `L2 (memory)`.
pub fn lower_bound_by(p: &Projection) -> String {
    p.lowest_point()
        .map(|pt| format!("{} ({})", pt.roof_level, pt.bound_target))
        .unwrap_or_default()
}

/// What a target's verdict adds when the target gives no cache geometry, so that its bytes
/// per level are the source's (`borrowed`): said in the verdict itself, not only in the
/// table's column.
pub fn borrowed_caches(t: &Machine, borrowed: bool) -> String {
    if !borrowed {
        return String::new();
    }
    format!(
        " {} gives no cache geometry: its bytes per level are those of the source's caches, so the points bound by a cache or memory level are approximate (give the machine file [levels.cache] sizes to have them simulated).",
        t.name
    )
}

/// One sentence on a target.
pub fn target_verdict(t: &Machine, p: &Projection) -> String {
    let what = match p.lowest_point() {
        Some(pt) if pt.bound_target == Bound::Memory => {
            format!("the lower bound is set by {} bandwidth", pt.roof_level)
        }
        Some(_) => "the lower bound is compute-bound (the binary's instruction mix on that core)"
            .to_string(),
        None => String::new(),
    };
    let s = p.speedup();
    let point = p
        .point
        .as_ref()
        .map(|e| {
            format!(
                ", point estimate {} GFLOP/s (x{}, {})",
                num(e.gflops, 3),
                num(e.speedup, 3),
                e.error_words()
            )
        })
        .unwrap_or_default();
    let noise = p
        .widening
        .map(|w| {
            format!(
                "; of the interval's width, {:.0} % is the model's, {:.0} % its calibrated margin, {}",
                w.model_share * 100.0,
                w.margin_share * 100.0,
                if w.source.is_some() {
                    format!("{:.0} % the source's run-to-run noise", w.noise_share * 100.0)
                } else {
                    "the source's noise not measured".to_string()
                }
            ) + &if w.sampling_share > 0.0 {
                format!(", {:.1} % the sampling error of the bytes per level", w.sampling_share * 100.0)
            } else {
                String::new()
            }
        })
        .unwrap_or_default();
    format!(
        "On {} projected {} to {} GFLOP/s (x{} to x{} the source){point}; {what}{noise}.",
        t.name,
        num(p.interval.lo, 3),
        num(p.interval.hi, 3),
        num(s.lo, 3),
        num(s.hi, 3)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_core::roofline::{Ceilings, Scope, analyze as roofline};
    use hpcscope_core::{AppMetrics, library};

    /// An application on ThunderX2's single-core ceilings (2 FLOPs per FP instruction), with
    /// `bytes` per level and timed to run at `gflops`.
    fn verdict(bytes: [f64; 3], gflops: f64) -> String {
        let m = library::builtin("thunderx2").unwrap();
        let c = Ceilings::of(&m, hpcscope_core::Precision::F64, Scope::Core).unwrap();
        let flops = 1.0e10;
        let app = AppMetrics {
            flops,
            fp_instructions: flops / 2.0,
            levels: vec!["L1".into(), "L2".into(), "L3".into(), "MM".into()],
            bytes: vec![bytes[0], bytes[1], bytes[2], 0.0],
            time_s: Some(flops / (gflops * 1e9)),
        };
        source_verdict(&m, &roofline(&c, &app, "test").unwrap())
    }

    #[test]
    fn a_run_far_below_its_ceiling_is_not_called_simply_bound() {
        // Almost no bytes: compute-bound by the roofline.
        let near = verdict([1e8, 0.0, 0.0], 1e3);
        let ceiling: f64 = near
            .split("allows ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|t| t.parse().ok())
            .unwrap();
        let near = verdict([1e8, 0.0, 0.0], 0.9 * ceiling);
        assert!(
            near.contains("is compute-bound") && !near.contains("No ceiling"),
            "{near}"
        );
        let far = verdict([1e8, 0.0, 0.0], 0.2 * ceiling);
        assert!(far.contains("is compute-bound"), "{far}");
        assert!(
            far.contains("No ceiling is reached: the tightest bandwidth roofline (L1)"),
            "{far}"
        );
        // Memory-bound and far below: the same warning without a second roofline.
        let mem = verdict([0.0, 0.0, 1e11], 0.01);
        assert!(
            mem.contains("is memory-bound") && mem.contains("Well below"),
            "{mem}"
        );
    }

    #[test]
    fn a_chain_bound_run_says_the_chains_set_its_ceiling() {
        use hpcscope_core::roofline::{AccessWidths, ChainCounts};
        // One of the recorded hosts: per-width peaks and latencies.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/hosts/amd-epyc-25-1/machine.toml"
        );
        let m = hpcscope_core::load::machine(path).unwrap();
        // An in-order sum: a mul and an add per element, the add on the loop's chain.
        let app = AppMetrics {
            flops: 2e9,
            fp_instructions: 2e9,
            levels: vec!["L1".into(), "L2".into(), "L3".into(), "MM".into()],
            bytes: vec![1.6e10, 0.0, 0.0, 0.0],
            time_s: Some(1.5),
        };
        let plain = AccessWidths::from_bytes(&[(64, 1.6e10)], &[(64, 2e9)], "test").unwrap();
        let chained = plain.clone().with_chains(
            &ChainCounts {
                fp: vec![(64, [1e9, 0.0, 0.0, 0.0, 0.0])],
                other: 0.0,
            },
            2e9,
        );
        let say = |w: &AccessWidths| {
            let c = Ceilings::at_widths(&m, hpcscope_core::Precision::F64, Scope::Core, w).unwrap();
            let r = roofline(&c, &app, "test").unwrap();
            (source_verdict(&m, &r), r.efficiency.unwrap())
        };
        let (s, e) = say(&chained);
        assert!(s.contains("the loops' dependency chains"), "{s}");
        // 1e9 adds at 3 cycles of the record's 3.24 GHz: 0.93 s of the 1.5 s.
        assert!((e - 0.926 / 1.5).abs() < 0.01, "{e} {s}");
        // The FP units alone: 6.3 G scalar instructions/s.
        let (s, e) = say(&plain);
        assert!(
            s.contains("its instruction mix allows") && e < 0.25,
            "{e} {s}"
        );
    }

    #[test]
    fn a_target_without_caches_says_so_in_its_verdict() {
        let knl = library::builtin("knl-flat-dram").unwrap();
        assert!(knl.levels.iter().all(|l| l.cache.is_none()));
        let said = borrowed_caches(&knl, true);
        assert!(said.contains("gives no cache geometry"), "{said}");
        assert!(said.contains(&knl.name), "{said}");
        assert_eq!(borrowed_caches(&knl, false), "");
    }
}
