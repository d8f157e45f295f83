//! The machine format's `[[network]]` links: round trip, validation with field and fix, and
//! no effect on rooflines and projections (a link is not a memory level).

use hpcscope_core::library::builtin;
use hpcscope_core::machine::{NetworkFit, NetworkLink, Placement, diff};
use hpcscope_core::profile::AppMetrics;
use hpcscope_core::project::{Method, Options, PairRule, Side, project};
use hpcscope_core::roofline::{Ceilings, Scope, analyze};
use hpcscope_core::{Machine, Precision};

fn link(name: &str) -> NetworkLink {
    NetworkLink {
        name: name.into(),
        placement: Placement::IntraNode,
        latency_us: 0.35,
        bandwidth_gbs: 5.2,
        n_half_bytes: Some(1820.0),
        benchmark: Some("pingpong".into()),
        ranks: Some(2),
        launcher: Some("mpirun -np 2 --allow-run-as-root".into()),
        mpi_library: Some("Open MPI v4.1.4".into()),
        fit: Some(NetworkFit {
            model: "hockney".into(),
            weights: "relative".into(),
            sizes_bytes: vec![0, 1, 2, 4, 1 << 22],
            r2: Some(0.998),
            max_rel_error: Some(0.21),
        }),
        provenance: "hpcscope bench mpi, test".into(),
    }
}

fn with_network() -> Machine {
    let mut m = builtin("thunderx2").unwrap();
    m.set_network_link(link("mpi-intra-node"));
    m
}

#[test]
fn a_network_link_round_trips_through_toml() {
    let m = with_network();
    let text = m.to_toml_string();
    assert!(text.contains("[[network]]"), "{text}");
    assert!(text.contains("placement = \"intra-node\""), "{text}");
    let back = Machine::from_toml_str(&text, "roundtrip").unwrap();
    assert_eq!(back, m);
    // Without links the file is unchanged: no empty `network` key.
    let plain = builtin("thunderx2").unwrap();
    assert!(!plain.to_toml_string().contains("network"));
}

#[test]
fn a_hand_written_link_parses() {
    let base = builtin("a64fx").unwrap().to_toml_string();
    let text = format!(
        "{base}\n[[network]]\nname = \"tofu\"\nplacement = \"inter-node\"\nlatency_us = 0.49\nbandwidth_gbs = 6.8\nprovenance = \"vendor\"\n"
    );
    let m = Machine::from_toml_str(&text, "a.toml").unwrap();
    let l = m.network_link("tofu").unwrap();
    assert_eq!(l.placement, Placement::InterNode);
    assert_eq!(l.fit, None);
}

#[test]
fn set_network_link_replaces_by_name() {
    let mut m = with_network();
    let mut faster = link("mpi-intra-node");
    faster.latency_us = 0.2;
    m.set_network_link(faster);
    m.set_network_link(link("mpi-inter-node"));
    assert_eq!(m.network.len(), 2);
    assert_eq!(m.network_link("mpi-intra-node").unwrap().latency_us, 0.2);
}

#[test]
fn bad_links_name_the_field_and_the_fix() {
    type Edit = Box<dyn Fn(&mut NetworkLink)>;
    let cases: Vec<(Edit, &str, &str)> = vec![
        (
            Box::new(|l| l.latency_us = 0.0),
            "network[0].latency_us",
            "positive",
        ),
        (
            Box::new(|l| l.latency_us = 2.5e6),
            "network[0].latency_us",
            "looks like ns",
        ),
        (
            Box::new(|l| l.bandwidth_gbs = 5.2e9),
            "network[0].bandwidth_gbs",
            "looks like B/s",
        ),
        (
            Box::new(|l| l.bandwidth_gbs = f64::NAN),
            "network[0].bandwidth_gbs",
            "NaN",
        ),
        (
            Box::new(|l| l.provenance.clear()),
            "network[0].provenance",
            "say where",
        ),
        (
            Box::new(|l| l.name = " ".into()),
            "network[0].name",
            "name the link",
        ),
        (
            Box::new(|l| l.fit.as_mut().unwrap().weights = "l1".into()),
            "network[0].fit.weights",
            "relative",
        ),
        (
            Box::new(|l| l.fit.as_mut().unwrap().sizes_bytes = vec![8]),
            "network[0].fit.sizes_bytes",
            "at least two",
        ),
    ];
    for (edit, field, words) in cases {
        let mut m = builtin("thunderx2").unwrap();
        let mut l = link("x");
        edit(&mut l);
        m.network.push(l);
        let e = m.validate("m.toml").unwrap_err().to_string();
        assert!(e.contains(field) && e.contains(words), "{field}: {e}");
        assert!(e.contains("fix:"), "{e}");
    }
    let mut m = with_network();
    m.network.push(link("mpi-intra-node"));
    let e = m.validate("m.toml").unwrap_err().to_string();
    assert!(
        e.contains("network[1].name") && e.contains("appears twice"),
        "{e}"
    );
    // A misspelled field is refused with its name.
    let text = with_network()
        .to_toml_string()
        .replace("latency_us", "latency_ns");
    let e = Machine::from_toml_str(&text, "m.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("latency_ns"), "{e}");
}

/// A network link changes no roofline and no projection: ceilings, analyses and intervals
/// are equal with and without it.
#[test]
fn rooflines_and_projections_ignore_the_network() {
    let plain = builtin("thunderx2").unwrap();
    let net = with_network();
    for scope in [Scope::Core, Scope::Node] {
        let a = Ceilings::of(&plain, Precision::F64, scope).unwrap();
        let b = Ceilings::of(&net, Precision::F64, scope).unwrap();
        assert_eq!(a.levels, b.levels);
        assert!(!b.levels.iter().any(|l| l.starts_with("mpi")));
        assert_eq!(a, b);
    }
    assert_eq!(
        plain.roofline_levels().count(),
        net.roofline_levels().count()
    );
    let app = AppMetrics {
        flops: 1.0e11,
        fp_instructions: 3.125e10,
        levels: vec!["L1".into(), "L2".into(), "MM".into()],
        bytes: vec![7.2e11, 4.8e10, 3.2e10],
        time_s: Some(100.0),
    };
    let c = Ceilings::of(&net, Precision::F64, Scope::Core).unwrap();
    let c0 = Ceilings::of(&plain, Precision::F64, Scope::Core).unwrap();
    assert_eq!(
        analyze(&c, &app, "app").unwrap(),
        analyze(&c0, &app, "app").unwrap()
    );
    let n1 = builtin("neoverse-n1").unwrap();
    let mut n1_net = n1.clone();
    n1_net.set_network_link(link("mpi-inter-node"));
    let opts = Options {
        pair_rule: PairRule::UpperTriangular,
        method: Method::Weighted,
        scope: Scope::Core,
    };
    let threads = [app.clone()];
    let run = |s: &Machine, t: &Machine| {
        let a = Side {
            machine: s,
            threads: &threads,
            origin: "app",
        };
        let b = Side {
            machine: t,
            threads: &threads,
            origin: "app",
        };
        project(a, 1.0, b, Precision::F64, opts).unwrap()
    };
    let p0 = run(&plain, &n1);
    let p1 = run(&net, &n1_net);
    assert_eq!(p0, p1);
}

#[test]
fn diff_compares_network_links() {
    let a = builtin("thunderx2").unwrap();
    let b = with_network();
    let d = diff(&a, &b);
    let f: Vec<&str> = d.iter().map(|f| f.field.as_str()).collect();
    assert!(f.contains(&"network.mpi-intra-node.latency_us"), "{f:?}");
    assert!(f.contains(&"network.mpi-intra-node.bandwidth_gbs"), "{f:?}");
}
