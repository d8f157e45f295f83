//! Real collection on this machine: software events per region through the marker library,
//! and a whole command through perf_event_open. Where the PMU is not exposed (VMs), the
//! hardware metrics must be NA with one plain reason, never zero.

use hpcscope_counters::catalogue::{Catalogue, Variant};
use hpcscope_counters::compute::{self, Options};
use hpcscope_counters::import::markers;
use hpcscope_counters::output::{self, Format};
use hpcscope_counters::perf;
use hpcscope_markers::{Config, sys};

fn recipe_here(cat: &Catalogue) -> &hpcscope_counters::catalogue::Recipe {
    let cpu = hpcscope_counters::cpu::CpuId::detect();
    cat.for_cpu(&cpu)
        .unwrap_or_else(|_| cat.find("software").unwrap())
}

#[test]
fn marker_regions_software_events_and_hardware_status() {
    let mut events: Vec<sys::EventSpec> = sys::DEFAULT_SOFTWARE
        .iter()
        .map(|s| sys::EventSpec::parse(s).unwrap())
        .collect();
    events.push(sys::EventSpec::parse("instructions").unwrap());
    assert!(hpcscope_markers::init_with(Config { events, out: None }));
    for _ in 0..5 {
        hpcscope_markers::start("compute");
        let v: Vec<f64> = (0..100_000).map(|i| i as f64 * 0.5).collect();
        std::hint::black_box(v.iter().sum::<f64>());
        hpcscope_markers::stop("compute");
    }
    let h = std::thread::spawn(|| {
        hpcscope_markers::start("io");
        std::thread::sleep(std::time::Duration::from_millis(20));
        hpcscope_markers::stop("io");
        hpcscope_markers::stop("io"); // unbalanced: reported, the rest kept
    });
    h.join().unwrap();
    let out = hpcscope_markers::finish().unwrap();
    if out.events.is_empty() {
        println!(
            "skipping test - perf_event_open refused even software events: {:?}",
            out.event_errors
        );
        return;
    }
    let mut raw = markers::from_output(&out, "markers.json", "here").unwrap();
    // Counted here: the PMU status of this machine applies.
    perf::note_pmu(&mut raw);
    let cat = Catalogue::builtin();
    let recipe = recipe_here(&cat);
    let compiled = cat.compile(recipe, Variant::AsPublished).unwrap();
    let order: Vec<String> = cat.metrics.metrics.iter().map(|m| m.id.clone()).collect();
    let rep = compute::compute(
        &compiled,
        &order,
        &raw,
        &Options {
            per_thread: true,
            ..Options::default()
        },
    );
    let c = rep.region("compute").unwrap();
    assert_eq!(c.calls, Some(5));
    assert!(c.value("time").unwrap() > 0.0);
    assert!(
        c.value("cpu_time").unwrap() > 0.0,
        "task-clock counted for real"
    );
    // Busy, but the machine may be shared: only that CPU time was counted.
    assert!(c.value("cpus_utilized").unwrap() > 0.0);
    assert!(c.value("page_faults").is_some() && c.value("context_switches").is_some());
    let io = rep.region("io").unwrap();
    assert!(io.value("time").unwrap() >= 0.019);
    assert!(
        io.value("cpus_utilized").unwrap() < 0.5,
        "sleeping is off CPU"
    );
    assert!(
        rep.warnings
            .iter()
            .any(|w| w.contains("'io' without a matching start")),
        "{:?}",
        rep.warnings
    );
    let pmu = perf::probe();
    let text = output::render(
        std::slice::from_ref(&rep),
        &cat.metrics,
        None,
        false,
        Format::Table,
    );
    if pmu.available {
        println!("PMU available: hardware path counted\n{text}");
        return;
    }
    // No PMU: every hardware metric is NA, said once, never a zero.
    for id in ["ipc", "flops", "ls_bytes", "l2_bytes", "ai"] {
        let m = c.get(id).unwrap();
        assert!(m.value.is_none(), "{id} must not read a value without PMU");
    }
    assert_eq!(
        text.matches("hardware performance counters are not available")
            .count(),
        1,
        "{text}"
    );
    assert!(text.contains("Needed for the hardware metrics"), "{text}");
    assert!(text.contains("CPU time (s)"), "{text}");
    println!("{text}");
}

#[test]
fn whole_command_through_perf_event_open() {
    let cat = Catalogue::builtin();
    let recipe = recipe_here(&cat);
    let events = recipe.needed_events(&cat.metrics, Variant::AsPublished);
    let argv: Vec<String> = [
        "sh",
        "-c",
        "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let raw = match perf::collect(recipe, &events, &argv, &perf::CollectOptions::default()) {
        Ok(r) => r,
        Err(e) => {
            println!("skipping test - {e}");
            return;
        }
    };
    let t = &raw.regions[0].threads[0];
    assert!(t.time_s.unwrap() > 0.0);
    assert!(
        t.counters["task-clock"].value.unwrap() > 0.0,
        "{:?}",
        t.counters
    );
    let compiled = cat.compile(recipe, Variant::AsPublished).unwrap();
    let order: Vec<String> = cat.metrics.metrics.iter().map(|m| m.id.clone()).collect();
    let rep = compute::compute(&compiled, &order, &raw, &Options::default());
    let r = &rep.regions[0];
    assert!(r.value("cpus_utilized").unwrap() > 0.0);
    if raw.hardware_unavailable.is_some() {
        assert!(r.value("ipc").is_none() && r.value("flops").is_none());
    }
    // A command that does not exist is bad input, not a crash.
    let bad = vec!["/nonexistent/hpcscope-test-binary".to_string()];
    let e = perf::collect(recipe, &events, &bad, &perf::CollectOptions::default()).unwrap_err();
    assert!(e.to_string().contains("cannot run"), "{e}");
}

/// `quiet` sends the measured command's standard output to /dev/null (`analyze` embeds this
/// measurement in its own output) and leaves it alone otherwise.
#[test]
fn quiet_sends_the_commands_stdout_to_dev_null() {
    let ours = std::fs::read_link("/proc/self/fd/1").unwrap();
    if ours == std::path::Path::new("/dev/null") {
        println!("skipping test - this test's own stdout is /dev/null");
        return;
    }
    let cat = Catalogue::builtin();
    let recipe = recipe_here(&cat);
    let events = recipe.needed_events(&cat.metrics, Variant::AsPublished);
    for quiet in [true, false] {
        let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("counters-fd1-{quiet}.out"));
        let _ = std::fs::remove_file(&out);
        // $$ is the shell: its fd 1 is what the launch gave it.
        let argv: Vec<String> = [
            "sh".to_string(),
            "-c".to_string(),
            format!(
                "x=$(readlink /proc/$$/fd/1); echo \"$x\" > {}",
                out.display()
            ),
        ]
        .to_vec();
        let o = perf::CollectOptions {
            quiet,
            ..perf::CollectOptions::default()
        };
        if let Err(e) = perf::collect(recipe, &events, &argv, &o) {
            println!("skipping test - {e}");
            return;
        }
        let seen = std::fs::read_to_string(&out).unwrap();
        let want = if quiet {
            "/dev/null".into()
        } else {
            ours.display().to_string()
        };
        assert_eq!(seen.trim(), want, "quiet={quiet}");
    }
}
