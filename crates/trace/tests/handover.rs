//! Handing attached uprobes over to a child process at exit (`hand_over_detach`): its own
//! test binary, since it takes every finished trace of the process.

use hpcscope_trace::{FunctionSpec, Probes, Target, TraceOptions, hand_over_detach, trace};

mod common;

#[test]
fn a_finished_trace_with_uprobes_is_handed_to_a_child_that_exits() {
    if !hpcscope_trace::doctor::has_bpf_caps()
        || !std::path::Path::new("/sys/kernel/btf/vmlinux").exists()
    {
        println!("skipping: not root or no BTF");
        return;
    }
    assert_eq!(hand_over_detach(), None, "nothing traced yet");
    let Some(bin) = common::build_testee("hpcscope-handover-testee") else {
        println!("skipping: no C compiler (cc)");
        return;
    };
    // Several functions, each with an entry and a return probe.
    let functions = ["hs_work", "main", "malloc", "free"]
        .iter()
        .map(|f| FunctionSpec {
            binary: Some(if f.starts_with("hs_") || *f == "main" {
                bin.display().to_string()
            } else {
                "libc".into()
            }),
            symbol: (*f).into(),
        })
        .collect();
    let opts = TraceOptions {
        target: Target::Command(vec![
            bin.display().to_string(),
            "counts".into(),
            "10".into(),
            "1".into(),
            "2".into(),
            "3".into(),
        ]),
        probes: Probes {
            functions,
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let r = trace(&opts).expect("trace").report;
    let calls: u64 = r
        .processes
        .iter()
        .flat_map(|p| &p.functions)
        .filter(|f| f.symbol == "hs_work")
        .map(|f| f.count)
        .sum();
    assert_eq!(calls, 3, "{r:#?}");
    let child = hand_over_detach().expect("the uprobes were still attached");
    // The child only closes descriptors and exits 0.
    let mut status = 0;
    // SAFETY: waiting for our own child process.
    let got = unsafe { libc::waitpid(child as i32, &mut status, 0) };
    assert_eq!(got, child as i32);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{status:#x}"
    );
    // Everything pending went with it.
    assert_eq!(hand_over_detach(), None);
}
