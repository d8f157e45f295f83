//! The markers count software events for real, per region and per thread, and report
//! unbalanced markers while keeping the other regions. One test function: the markers'
//! configuration is process-global.

use hpcscope_markers::{Config, finish, region, start, stop, sys};

#[test]
fn regions_threads_nesting_and_unbalanced_markers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("markers.json");
    let mut events: Vec<sys::EventSpec> = sys::DEFAULT_SOFTWARE
        .iter()
        .map(|s| sys::EventSpec::parse(s).unwrap())
        .collect();
    // A hardware event: counted on bare metal, reported as an event error in a VM.
    events.push(sys::EventSpec::parse("cycles").unwrap());
    assert!(hpcscope_markers::init_with(Config {
        events,
        out: Some(out.clone()),
    }));
    for _ in 0..3 {
        let _outer = region("outer");
        start("inner");
        let v: Vec<u64> = (0..200_000).collect();
        std::hint::black_box(v.iter().sum::<u64>());
        stop("inner");
    }
    std::thread::spawn(|| {
        start("worker");
        // Fresh anonymous pages, each written once: page faults (a Vec could reuse memory
        // another thread already touched).
        let len = 8 << 20;
        // SAFETY: anonymous private mapping, written within bounds, unmapped once.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            ) as *mut u8;
            assert!(!p.is_null() && p as isize != -1);
            for i in (0..len).step_by(4096) {
                std::ptr::write_volatile(p.add(i), 1);
            }
            libc::munmap(p.cast(), len);
        }
        stop("worker");
        stop("never-started");
        start("left-open");
    })
    .join()
    .unwrap();
    start("a");
    start("b");
    stop("a"); // b was left open inside a

    // A region's time, whatever the clock behind it (TSC ticks converted at output, or
    // CLOCK_MONOTONIC): at least the sleep inside it, at most the time around it.
    let around = std::time::Instant::now();
    start("sleep");
    std::thread::sleep(std::time::Duration::from_millis(30));
    stop("sleep");
    let around_ns = around.elapsed().as_nanos() as u64;

    let o = finish().expect("active");
    let text = std::fs::read_to_string(&out).unwrap();
    let back: hpcscope_markers::format::MarkerOutput = serde_json::from_str(&text).unwrap();
    assert_eq!(back, o);
    if o.events.is_empty() {
        println!(
            "skipping test - no event could be opened: {:?}",
            o.event_errors
        );
        return;
    }
    assert_eq!(
        &o.events[..4],
        &[
            "task-clock",
            "page-faults",
            "context-switches",
            "cpu-migrations"
        ]
    );
    assert_eq!(o.threads.len(), 2);
    let main = &o.threads[0];
    let slept = main
        .regions
        .iter()
        .find(|r| r.name == "sleep")
        .expect("sleep region");
    assert!(
        slept.time_ns >= 30_000_000 && slept.time_ns <= around_ns + around_ns / 100,
        "{} ns in the region, {around_ns} ns around it",
        slept.time_ns
    );
    let outer = main.regions.iter().find(|r| r.name == "outer").unwrap();
    let inner = main.regions.iter().find(|r| r.name == "inner").unwrap();
    assert_eq!((outer.calls, inner.calls), (3, 3));
    assert!(outer.time_ns >= inner.time_ns);
    assert!(inner.counts[0] > 0.0, "task-clock counted");
    assert!(outer.counts[0] >= inner.counts[0]);
    let a = main.regions.iter().find(|r| r.name == "a").unwrap();
    assert_eq!(a.calls, 1);
    assert!(
        main.warnings
            .iter()
            .any(|w| w.contains("'b' was not stopped")),
        "{:?}",
        main.warnings
    );
    let w = &o.threads[1];
    let worker = w.regions.iter().find(|r| r.name == "worker").unwrap();
    // 8 MiB touched: at least one fault (transparent huge pages make them few).
    assert!(worker.counts[1] >= 1.0, "page faults: {worker:?} {o:?}");
    assert!(
        w.warnings
            .iter()
            .any(|x| x.contains("'never-started' without a matching start"))
    );
    assert!(
        w.warnings
            .iter()
            .any(|x| x.contains("'left-open' was started but never stopped"))
    );
    println!(
        "events counted: {:?}; not counted: {:?}",
        o.events, o.event_errors
    );
}
