//! Simulation speed in accesses per second (`Throughput::Elements`), through one 3-level
//! hierarchy, for several stream types, and through several hierarchies at once.
//!
//! Streams (1 Mi accesses each, 8-byte):
//! - `seq_read`, `seq_write`: sequential over 64 MiB (7 of 8 accesses hit the last line).
//! - `triad`: `a[i] = b[i] + s * c[i]` over three 2.7 MiB arrays (load, load, store: 7 of 8
//!   accesses hit L1 but never the line of the previous access).
//! - `stencil`: `b[i] = a[i-1] + a[i] + a[i+1]` over two 4 MiB arrays.
//! - `l1_resident`: random within 16 KiB (every access an L1 hit, most not on the last line).
//! - `stride_64`, `stride_4k`: one access per line; 4 KiB stride also conflicts in L1 sets.
//! - `random_1g`: uniformly random over 1 GiB (mostly memory).
//! - `mixed`: 90 % sequential, 10 % random over 256 MiB, a quarter stores.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hpcscope_cachesim::{
    Access, CacheConfig, Hierarchy, HierarchyConfig, Inclusion, MultiSim, Replacement,
};

const N: usize = 1 << 20;

fn spr() -> HierarchyConfig {
    HierarchyConfig::new(
        "Sapphire Rapids",
        vec![
            CacheConfig::new("L1d", 48 << 10, 64, 12),
            CacheConfig::new("L2", 2 << 20, 64, 16),
            CacheConfig::new("L3", 105 << 20, 64, 15),
        ],
    )
}

fn skylake() -> HierarchyConfig {
    HierarchyConfig::new(
        "Skylake",
        vec![
            CacheConfig::new("L1d", 32 << 10, 64, 8),
            CacheConfig::new("L2", 256 << 10, 64, 4),
            CacheConfig::new("L3", 8 << 20, 64, 16),
        ],
    )
    .with_inclusion(Inclusion::Inclusive)
}

fn a64fx() -> HierarchyConfig {
    HierarchyConfig::new(
        "A64FX",
        vec![
            CacheConfig::new("L1d", 64 << 10, 256, 4).with_replacement(Replacement::TreePlru),
            CacheConfig::new("L2", 8 << 20, 256, 16).with_replacement(Replacement::TreePlru),
        ],
    )
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn streams() -> Vec<(&'static str, Vec<Access>)> {
    let base = 0x7f00_0000_0000u64;
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let seq_read = (0..N as u64)
        .map(|i| Access::read(base + 8 * i, 8))
        .collect();
    let seq_write = (0..N as u64)
        .map(|i| Access::write(base + 8 * i, 8))
        .collect();
    let n3 = (N / 3) as u64;
    let (a, b, c) = (base, base + 8 * n3 + 4096, base + 16 * n3 + 8192);
    let triad = (0..N as u64)
        .map(|k| {
            let i = 8 * (k / 3);
            match k % 3 {
                0 => Access::read(b + i, 8),
                1 => Access::read(c + i, 8),
                _ => Access::write(a + i, 8),
            }
        })
        .collect();
    let n4 = (N / 4) as u64;
    let (a, b) = (base, base + 8 * n4 + 4096);
    let stencil = (0..N as u64)
        .map(|k| {
            let i = 8 * (k / 4 + 1);
            match k % 4 {
                0 => Access::read(a + i - 8, 8),
                1 => Access::read(a + i, 8),
                2 => Access::read(a + i + 8, 8),
                _ => Access::write(b + i, 8),
            }
        })
        .collect();
    let l1 = (0..N)
        .map(|_| Access::read(base + ((r.next() % (16 << 10)) & !7), 8))
        .collect();
    let s64 = (0..N as u64)
        .map(|i| Access::read(base + 64 * i, 8))
        .collect();
    let s4k = (0..N as u64)
        .map(|i| Access::read(base + 4096 * (i % 4096) + 64 * (i / 4096), 8))
        .collect();
    let rand = (0..N)
        .map(|_| Access::read(base + ((r.next() % (1 << 30)) & !7), 8))
        .collect();
    let mut p = 0u64;
    let mixed = (0..N)
        .map(|_| {
            let x = r.next();
            p = if x.is_multiple_of(10) {
                (x >> 8) % (256 << 20)
            } else {
                p + 8
            };
            Access {
                addr: base + (p & !7),
                size: 8,
                is_write: x % 4 == 1,
            }
        })
        .collect();
    vec![
        ("seq_read", seq_read),
        ("seq_write", seq_write),
        ("triad", triad),
        ("stencil", stencil),
        ("l1_resident", l1),
        ("stride_64", s64),
        ("stride_4k", s4k),
        ("random_1g", rand),
        ("mixed", mixed),
    ]
}

fn one_hierarchy(c: &mut Criterion) {
    let streams = streams();
    let mut g = c.benchmark_group("spr_3level");
    g.throughput(Throughput::Elements(N as u64));
    for (name, stream) in &streams {
        let mut h = Hierarchy::new(spr()).expect("valid geometry");
        g.bench_function(*name, |b| {
            b.iter(|| {
                h.access_batch(black_box(stream));
            })
        });
        black_box(h.stats());
    }
    g.finish();
}

fn three_hierarchies(c: &mut Criterion) {
    let streams = streams();
    let mut g = c.benchmark_group("multi_3_hierarchies");
    g.throughput(Throughput::Elements(N as u64));
    for (name, stream) in streams
        .iter()
        .filter(|(n, _)| ["seq_read", "triad", "mixed"].contains(n))
    {
        let mut m = MultiSim::new([spr(), skylake(), a64fx()]).expect("valid geometry");
        g.bench_function(*name, |b| b.iter(|| m.access_batch(black_box(stream))));
        black_box(m.stats());
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = one_hierarchy, three_hierarchies
}
criterion_main!(benches);
