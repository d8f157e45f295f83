//! Topology detection against a fixture sysfs tree and against this machine's sysfs.

use std::path::Path;

use hpcscope_bench::topology::{Topology, parse_cpu_list, parse_sysfs_size};

fn fixture() -> std::path::PathBuf {
    hpcscope_test_support::test_data!("sysfs-2s-smt2")
}

#[test]
fn fixture_two_sockets_smt2() {
    let cpuinfo = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz\ncpu MHz\t\t: 2100.000\n";
    let t = Topology::from_sysfs(&fixture(), cpuinfo);
    assert_eq!(t.cpus, (0..16).collect::<Vec<u32>>());
    assert_eq!(
        (t.sockets, t.cores_per_socket, t.threads_per_core),
        (2, 4, 2)
    );
    assert_eq!(t.cores(), 8);
    assert_eq!(t.numa_nodes, 2);
    assert_eq!(t.model_name, "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz");
    assert_eq!(t.nominal_ghz, Some(2.1));
    // The instruction cache is left out; levels in order.
    let levels: Vec<u32> = t.caches.iter().map(|c| c.level).collect();
    assert_eq!(levels, [1, 2, 3]);
    let l1 = &t.caches[0];
    assert_eq!(
        (l1.size_bytes, l1.line_bytes, l1.associativity, l1.sets),
        (32768, 64, 8, 64)
    );
    assert_eq!(l1.shared_cpus, [0, 8]);
    assert_eq!(l1.shared_by_cores, 1, "two hardware threads of one core");
    let l3 = &t.caches[2];
    assert_eq!(l3.size_bytes, 16896 * 1024);
    assert_eq!(l3.associativity, 11);
    assert_eq!(l3.shared_by_cores, 4);
    assert_eq!(t.llc().map(|c| c.level), Some(3));
    // Geometry is consistent: size = sets x ways x line.
    for c in &t.caches {
        assert_eq!(
            c.size_bytes,
            u64::from(c.sets) * u64::from(c.associativity) * u64::from(c.line_bytes)
        );
    }
}

#[test]
fn missing_sysfs_gives_an_empty_but_sane_topology() {
    let t = Topology::from_sysfs(Path::new("/nonexistent-sysfs-root"), "");
    assert!(t.cpus.is_empty());
    assert_eq!(
        (
            t.sockets,
            t.cores_per_socket,
            t.threads_per_core,
            t.numa_nodes
        ),
        (1, 1, 1, 1)
    );
    assert!(t.caches.is_empty());
}

#[test]
fn this_machine_matches_its_sysfs() {
    let root = Path::new("/sys/devices/system/cpu");
    let Ok(online) = std::fs::read_to_string(root.join("online")) else {
        eprintln!("skipping test - no sysfs CPU topology on this system");
        return;
    };
    let t = Topology::detect();
    assert_eq!(t.cpus, parse_cpu_list(online.trim()).unwrap());
    assert!(t.cores() as usize <= t.cpus.len());
    assert_eq!(t.cores() * t.threads_per_core, t.cpus.len() as u32);
    let first = t.cpus[0];
    for c in &t.caches {
        // Find the sysfs entry of this level (data or unified) and compare.
        let dir = root.join(format!("cpu{first}/cache"));
        let found = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| {
                let p = e.path();
                let rd = |f: &str| {
                    std::fs::read_to_string(p.join(f))
                        .map(|s| s.trim().to_string())
                        .unwrap_or_default()
                };
                rd("level") == c.level.to_string()
                    && rd("type") != "Instruction"
                    && parse_sysfs_size(&rd("size")) == Some(c.size_bytes)
                    && rd("coherency_line_size") == c.line_bytes.to_string()
            });
        assert!(
            found,
            "cache level {} ({} B) not found in {}",
            c.level,
            c.size_bytes,
            dir.display()
        );
    }
}
