//! Set sampling's gate (`gate_in_place`) in records per second: what the DynamoRIO client
//! and the QEMU plugin do to every record of a full buffer before it goes down the pipe when
//! `hpcscope mix --sample K` runs (the gate of `mix -m cascadelake-8260 -m graviton2
//! --sample 8`: 64-byte lines, 256 classes, 32 of them chosen).
//!
//! Streams (one buffer of 64 Ki 8-byte records, as the client's):
//! - `sequential`: 8-byte loads over consecutive addresses (8 per line: a line's class
//!   repeats, the branch on it is predictable);
//! - `indirect`: loads at random lines of 256 MiB (the class, hence keep or drop, is random
//!   access by access: one in eight kept).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hpcscope_plugin_format::gate::{SampleGate, gate_in_place};
use hpcscope_plugin_format::record;

const N: usize = 1 << 16;

/// 32 of 256 classes, in a fixed scattered order (as `mix`'s choice is).
fn gate() -> SampleGate {
    let mut bits = [0u8; 256];
    let mut c = 7usize;
    for _ in 0..32 {
        while bits[c] == 1 {
            c = (c + 1) % 256;
        }
        bits[c] = 1;
        c = (c * 97 + 31) % 256;
    }
    let hex: String = bits
        .chunks(4)
        .map(|q| {
            let d = q
                .iter()
                .enumerate()
                .fold(0u32, |d, (j, b)| d | u32::from(*b) << j);
            char::from_digit(d, 16).expect("a hex digit")
        })
        .collect();
    SampleGate::parse(&format!("64:256:{hex}")).expect("a valid gate")
}

fn streams() -> Vec<(&'static str, Vec<u64>)> {
    let sequential = (0..N as u64)
        .map(|i| record(0x10_0000 + 8 * i, 3, false))
        .collect();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let indirect = (0..N)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            record(0x4000_0000 + (x % (1 << 22)) * 64, 3, false)
        })
        .collect();
    vec![("sequential", sequential), ("indirect", indirect)]
}

fn bench(c: &mut Criterion) {
    let g = gate();
    let mut group = c.benchmark_group("gate_in_place");
    group.throughput(Throughput::Elements(N as u64));
    for (name, stream) in streams() {
        let mut buf = stream.clone();
        group.bench_function(name, |b| {
            b.iter(|| {
                buf.copy_from_slice(&stream);
                black_box(gate_in_place(black_box(&mut buf), &g))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
