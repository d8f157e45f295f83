//! Golden tests of seed 004's habakkuk figures (Wang 2023, figs. 3.4 and 3.5; research note
//! sections 3.6 and 6.1): the FFT components cftb040 and cftx020 at 3.85 GHz.

use hpcscope_models::peak::{Dag, DagConfig, loop_peak};

const CFTB040: &str = "
x0r = a0r + a2r
x0i = a0i + a2i
x1r = a0r - a2r
x1i = a0i - a2i
x2r = a1r + a3r
x2i = a1i + a3i
x3r = a1r - a3r
x3i = a1i - a3i
b0r = x0r + x2r
b0i = x0i + x2i
b2r = x0r - x2r
b2i = x0i - x2i
b1r = x1r - x3i
b1i = x1i + x3r
b3r = x1r + x3i
b3i = x1i - x3r
";

const CFTX020: &str = "
y0r = a0r + a1r
y0i = a0i + a1i
y1r = a0r - a1r
y1i = a0i - a1i
";

fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[test]
fn cftb040_figure_3_4_and_3_5() {
    let r = Dag::parse(CFTB040, "cftb040")
        .unwrap()
        .analyze(&DagConfig::habakkuk_ivybridge())
        .unwrap();
    assert_eq!((r.op_counts["+"], r.op_counts["-"]), (8, 8));
    assert_eq!(r.flops, 16.0);
    assert_eq!((r.array_refs, r.cache_lines), (8, 8));
    assert_eq!(r.naive_flops_per_byte, 0.250);
    assert_eq!(r.serial.cycles, 16.0);
    assert_eq!(r.serial.flops_per_cycle, 1.0);
    assert_eq!(r.serial.bytes_per_cycle, 4.0);
    assert_eq!(
        (
            r.critical_path_nodes,
            r.critical_path_flops,
            r.critical_path.cycles
        ),
        (5, 2.0, 2.0)
    );
    assert_eq!(r.critical_path.flops_per_cycle, 8.0);
    assert_eq!(r.critical_path.bytes_per_cycle, 32.0);
    assert_eq!((r.schedule.cycles, r.perfect.cycles), (16.0, 16.0));
    // "No ILP | Computed Schedule | Perfect Schedule | Critical path: 3.85 | 3.85 | 3.85 | 30.80"
    let g: Vec<f64> = [r.serial, r.schedule, r.perfect, r.critical_path]
        .iter()
        .map(|e| r2(e.gflops))
        .collect();
    assert_eq!(g, vec![3.85, 3.85, 3.85, 30.80]);
    // "with associated BW of 15.40,15.40,15.40,123.20 GB/s"
    let b: Vec<f64> = [r.serial, r.schedule, r.perfect, r.critical_path]
        .iter()
        .map(|e| r2(e.gbs))
        .collect();
    assert_eq!(b, vec![15.40, 15.40, 15.40, 123.20]);
}

#[test]
fn cftx020_figure_3_5() {
    let r = Dag::parse(CFTX020, "cftx020")
        .unwrap()
        .analyze(&DagConfig::habakkuk_ivybridge())
        .unwrap();
    assert_eq!(r.flops, 4.0);
    assert_eq!(r.naive_flops_per_byte, 0.125);
    assert_eq!(
        (
            r.critical_path_nodes,
            r.critical_path_flops,
            r.critical_path.cycles
        ),
        (3, 1.0, 1.0)
    );
    assert_eq!(r.serial.bytes_per_cycle, 8.0);
    let g: Vec<f64> = [r.serial, r.schedule, r.perfect, r.critical_path]
        .iter()
        .map(|e| r2(e.gflops))
        .collect();
    assert_eq!(g, vec![3.85, 3.85, 3.85, 15.40]);
    let b: Vec<f64> = [r.serial, r.schedule, r.perfect, r.critical_path]
        .iter()
        .map(|e| r2(e.gbs))
        .collect();
    assert_eq!(b, vec![30.80, 30.80, 30.80, 123.20]);
}

#[test]
fn multiplies_use_another_port_and_divides_cost_more() {
    let cfg = DagConfig::habakkuk_ivybridge();
    let r = Dag::parse("x = a * b\ny = c + d\nz = x / y", "t")
        .unwrap()
        .analyze(&cfg)
        .unwrap();
    assert_eq!(r.perfect.cycles, 9.0); // port 0: 1 (mul) + 8 (div)
    assert_eq!(r.critical_path.cycles, 16.0); // 1 + 15 (latency of the divide)
    assert_eq!(r.schedule.cycles, 9.0); // step 1: mul on P0 and add on P1 (cost 1); step 2: div (8)
    let e = Dag::parse("x = a % b", "bad.dag").unwrap_err().to_string();
    assert!(e.contains("bad.dag") && e.contains("line 1"), "{e}");
}

#[test]
fn loop_peak_takes_the_binding_bound() {
    let p = loop_peak(16.0, 4.0, 8.0, 2.0);
    assert_eq!(
        (
            p.flops_per_cycle_ports,
            p.flops_per_cycle_cp,
            p.flops_per_cycle,
            p.gflops
        ),
        (4.0, 2.0, 2.0, 4.0)
    );
}
