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
//!
//! `mix_pair`: the two hierarchies of `hpcscope mix -m cascadelake-8260 -m graviton2` (the
//! geometries of `data/machines`), fed packed records in batches of 64 Ki as `mix` reads
//! the plugin's stream, per iteration one whole pass of the stream, timed in CPU time of
//! the simulating thread (a shared host's waits left out):
//! - `edge`: one repetition of `workloads/src/edge.c` at its benchmark size (500,000
//!   nodes, about 10^6 edges in shuffled order: `ea[e]`, `eb[e]`, `q[a]`, `q[b]`, `w[e]`,
//!   `res[a]` read and written, `res[b]` read and written; 9 records per edge). 24 MB in
//!   all: the indirect accesses miss L1 and L2 and mostly hit L3; a miss-bound stream.
//! - `triad_48m`: `a[i] = b[i] + s * c[i]` over three 16 MiB arrays (more than either L3:
//!   every line comes from memory and every dirty line of `a` is written back through L2
//!   and L3).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hpcscope_cachesim::{
    Access, CacheConfig, Hierarchy, HierarchyConfig, Inclusion, MultiSim, PackedAccess, Replacement,
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

/// `data/machines/cascadelake-8260.toml`'s caches, as `hpcscope mix` simulates them.
fn cascadelake_8260() -> HierarchyConfig {
    HierarchyConfig::new(
        "cascadelake-8260",
        vec![
            CacheConfig::new("L1", 32 << 10, 64, 8),
            CacheConfig::new("L2", 1 << 20, 64, 16),
            CacheConfig::new("L3", 37_486_592, 64, 11),
        ],
    )
}

/// `data/machines/graviton2.toml`'s caches, as `hpcscope mix` simulates them.
fn graviton2() -> HierarchyConfig {
    HierarchyConfig::new(
        "graviton2",
        vec![
            CacheConfig::new("L1", 64 << 10, 64, 4),
            CacheConfig::new("L2", 1 << 20, 64, 8),
            CacheConfig::new("L3", 32 << 20, 64, 16),
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

/// Where QEMU user mode puts a guest's heap (near 2^38).
const GUEST_HEAP: u64 = 0x40_0000_0000;

fn packed(addr: u64, size: u32, write: bool) -> PackedAccess {
    PackedAccess::new(addr, size, write).expect("small address")
}

/// One repetition of `workloads/src/edge.c`'s kernel on `n` nodes, as records.
fn edge_stream(n: u64) -> Vec<PackedAccess> {
    let g = (n as f64).sqrt() as u64;
    let n = g * g;
    let mut edges = Vec::with_capacity((2 * g * (g - 1)) as usize);
    for i in 0..g {
        for j in 0..g {
            if j + 1 < g {
                edges.push((i * g + j, i * g + j + 1));
            }
            if i + 1 < g {
                edges.push((i * g + j, (i + 1) * g + j));
            }
        }
    }
    // edge.c's shuffle.
    let mut s: u64 = 12345;
    for k in (1..edges.len()).rev() {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let m = ((s >> 33) % (k as u64 + 1)) as usize;
        edges.swap(k, m);
    }
    let ne = edges.len() as u64;
    // The arrays one after another, 4 KiB apart, as malloc places large blocks.
    let place = |at: &mut u64, bytes: u64| {
        let a = *at;
        *at = (a + bytes + 4096).next_multiple_of(4096);
        a
    };
    let mut at = GUEST_HEAP;
    let (ea, eb) = (place(&mut at, 4 * ne), place(&mut at, 4 * ne));
    let (w, q, res) = (
        place(&mut at, 8 * ne),
        place(&mut at, 8 * n),
        place(&mut at, 8 * n),
    );
    let mut v = Vec::with_capacity(9 * edges.len());
    for (e, &(a, b)) in edges.iter().enumerate() {
        let e = e as u64;
        v.extend([
            packed(ea + 4 * e, 4, false),
            packed(eb + 4 * e, 4, false),
            packed(q + 8 * a, 8, false),
            packed(q + 8 * b, 8, false),
            packed(w + 8 * e, 8, false),
            packed(res + 8 * a, 8, false),
            packed(res + 8 * a, 8, true),
            packed(res + 8 * b, 8, false),
            packed(res + 8 * b, 8, true),
        ]);
    }
    v
}

/// `a[i] = b[i] + s * c[i]` over three arrays of `bytes` bytes each, as records.
fn triad_stream(bytes: u64) -> Vec<PackedAccess> {
    let (a, b, c) = (
        GUEST_HEAP,
        GUEST_HEAP + bytes + 4096,
        GUEST_HEAP + 2 * (bytes + 4096),
    );
    (0..bytes / 8)
        .flat_map(|i| {
            [
                packed(b + 8 * i, 8, false),
                packed(c + 8 * i, 8, false),
                packed(a + 8 * i, 8, true),
            ]
        })
        .collect()
}

/// CPU time of the calling thread so far (Linux: `/proc/thread-self/schedstat`, in
/// nanoseconds); elsewhere the time since the first call, wall clock.
fn thread_cpu() -> std::time::Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map(std::time::Duration::from_nanos)
        .unwrap_or_else(|| {
            static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
            START.get_or_init(std::time::Instant::now).elapsed()
        })
}

fn mix_pair(c: &mut Criterion) {
    let mut g = c.benchmark_group("mix_pair");
    for (name, stream) in [
        ("edge", edge_stream(500_000)),
        ("triad_48m", triad_stream(16 << 20)),
    ] {
        g.throughput(Throughput::Elements(stream.len() as u64));
        let mut m = MultiSim::new([cascadelake_8260(), graviton2()]).expect("valid geometry");
        // In batches of 64 Ki records, as `mix` reads the plugin's stream.
        let pass = |m: &mut MultiSim| {
            for batch in black_box(&stream).chunks(1 << 16) {
                m.access_batch(batch);
            }
        };
        // Warm: the measured passes see the caches of a repetition after the first.
        pass(&mut m);
        // CPU time of this thread, not wall time: the host is often shared, and a pass
        // that waits for a CPU would count the wait.
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let t = thread_cpu();
                for _ in 0..iters {
                    pass(&mut m);
                }
                thread_cpu().saturating_sub(t)
            })
        });
        black_box(m.stats());
    }
    g.finish();
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
criterion_group! {
    name = pair;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(5));
    targets = mix_pair
}
criterion_main!(benches, pair);
