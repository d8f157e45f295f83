//! A thread that only waits for the others (a main thread that starts its workers and joins
//! them) is told apart from the working threads.

use hpcscope_core::profile::{LevelBytes, Memory, Region, ThreadMetrics};

fn thread(id: u32, flops: f64, l1: f64, mm: f64) -> ThreadMetrics {
    ThreadMetrics {
        thread: id,
        time_s: Some(1.0),
        flops,
        fp_instructions: flops,
        memory: Memory {
            bytes_per_level: Some(vec![
                LevelBytes {
                    level: "L1".into(),
                    bytes: l1,
                },
                LevelBytes {
                    level: "MM".into(),
                    bytes: mm,
                },
            ]),
            ..Memory::default()
        },
        loads: None,
        stores: None,
        instructions: None,
    }
}

fn region(threads: Vec<ThreadMetrics>) -> Region {
    Region {
        name: "main".into(),
        threads,
        access_widths: None,
    }
}

/// As `analyze` counted a std::thread program: the main thread 1 FLOP and 65 KB, each
/// worker 13 M FLOPs and 860 MB.
fn main_and_two_workers() -> Region {
    region(vec![
        thread(0, 1.0, 6.5e4, 0.0),
        thread(1, 1.3e7, 8.5e8, 1e7),
        thread(2, 1.3e7, 8.6e8, 1e7),
    ])
}

#[test]
fn a_main_thread_joining_its_workers_waits() {
    let r = main_and_two_workers();
    assert_eq!(r.waiting_threads("test").unwrap(), [0]);
    // Uneven workers all work: a quarter of the busiest is far above 1 %.
    let r = region(vec![thread(0, 2.5e6, 2e8, 0.0), thread(1, 1e7, 8e8, 0.0)]);
    assert!(r.waiting_threads("test").unwrap().is_empty());
    // A thread with few FLOPs but many bytes (a copy or I/O thread) works.
    let r = region(vec![thread(0, 0.0, 9e8, 1e8), thread(1, 1e9, 1e8, 0.0)]);
    assert!(r.waiting_threads("test").unwrap().is_empty());
    // Nobody waits when every thread is idle, or with one thread.
    let r = region(vec![thread(0, 0.0, 0.0, 0.0), thread(1, 0.0, 0.0, 0.0)]);
    assert!(r.waiting_threads("test").unwrap().is_empty());
    let r = region(vec![thread(0, 1.0, 1.0, 0.0)]);
    assert!(r.waiting_threads("test").unwrap().is_empty());
    // Several waiting threads, and an idle one, are all named.
    let r = region(vec![
        thread(0, 0.0, 1e3, 0.0),
        thread(1, 1e9, 1e9, 0.0),
        thread(2, 0.0, 0.0, 0.0),
        thread(3, 9e8, 1e9, 0.0),
    ]);
    assert_eq!(r.waiting_threads("test").unwrap(), [0, 2]);
}

#[test]
fn the_waiting_threads_are_said_with_what_they_did() {
    let r = main_and_two_workers();
    let waiting = r.waiting_threads("test").unwrap();
    assert_eq!(
        r.waiting_threads_said("test", &waiting).unwrap(),
        "thread 0 did at most 1 % of the busiest thread's FLOPs and bytes (1 FLOPs and 65000 bytes in all: a thread that waits for the others, as a main thread that joins its workers does)"
    );
    let r = region(vec![
        thread(0, 0.0, 1e3, 0.0),
        thread(1, 1e9, 1e9, 0.0),
        thread(2, 0.0, 0.0, 0.0),
        thread(3, 9e8, 1e9, 0.0),
    ]);
    let said = r.waiting_threads_said("test", &[0, 2]).unwrap();
    assert!(
        said.starts_with("threads 0, 2 did at most 1 %")
            && said.contains("(0 FLOPs and 1000 bytes in all: threads that wait for the others"),
        "{said}"
    );
}
