//! Cost of one start/stop pair of the region markers, with the four software events
//! (task-clock, page-faults, context-switches, cpu-migrations) and inactive.
//! `bench/counters/marker_cost.sh` runs this next to likwid's and PAPI's marker APIs.

use criterion::{Criterion, criterion_group, criterion_main};
use hpcscope_markers::{Config, start, stop, sys};

fn pair(c: &mut Criterion) {
    let events = sys::DEFAULT_SOFTWARE
        .iter()
        .map(|s| sys::EventSpec::parse(s).expect("known event"))
        .collect();
    hpcscope_markers::init_with(Config { events, out: None });
    c.bench_function("marker start+stop, 4 software events", |b| {
        b.iter(|| {
            start("bench-region");
            stop("bench-region");
        })
    });
    c.bench_function("marker start+stop, nested in an outer region", |b| {
        start("outer");
        b.iter(|| {
            start("inner");
            stop("inner");
        });
        stop("outer");
    });
}

criterion_group!(benches, pair);
criterion_main!(benches);
