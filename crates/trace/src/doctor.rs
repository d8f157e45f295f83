//! What this machine allows: BPF permission, BTF, program types, kprobes, fentry, uprobes,
//! perf events, qemu and cross compilers, and what each missing piece disables.

use std::path::Path;

use serde::Serialize;

/// One capability check.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Whether it is available.
    pub ok: bool,
    /// What was found (a version, a path, an error).
    pub detail: String,
    /// What is disabled when it is missing (empty when nothing is).
    pub disables: String,
}

/// All checks, in a fixed order.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct Doctor {
    /// Kernel release.
    pub kernel: String,
    /// Online CPUs.
    pub cpus: usize,
    /// The checks.
    pub checks: Vec<Check>,
}

impl Doctor {
    /// Whether the check named `name` passed.
    pub fn ok(&self, name: &str) -> bool {
        self.checks.iter().any(|c| c.name == name && c.ok)
    }

    /// True when tracing can run at all (BPF permission and BTF).
    pub fn can_trace(&self) -> bool {
        self.ok("bpf permission") && self.ok("kernel BTF")
    }
}

fn check(name: &str, ok: bool, detail: impl Into<String>, disables: &str) -> Check {
    Check {
        name: name.to_string(),
        ok,
        detail: detail.into(),
        disables: if ok {
            String::new()
        } else {
            disables.to_string()
        },
    }
}

/// Kernel release (`uname -r`), `unknown` when unreadable.
pub fn kernel_release() -> String {
    hpcscope_host::facts::kernel_release().unwrap_or_else(|| "unknown".into())
}

pub use hpcscope_host::facts::{effective_caps, has_bpf_caps};

/// Opens a counting perf event on this process (`type_`, `config`); true when it opens.
pub fn perf_event_opens(type_: u32, config: u64) -> Result<(), String> {
    use hpcscope_host::perf;
    let attr = perf::PerfEventAttr {
        type_,
        size: std::mem::size_of::<perf::PerfEventAttr>() as u32,
        config,
        flags: perf::FLAG_DISABLED | perf::FLAG_EXCLUDE_KERNEL | perf::FLAG_EXCLUDE_HV,
        ..perf::PerfEventAttr::default()
    };
    let fd = perf::perf_event_open(&attr, 0, -1, -1, perf::PERF_FLAG_FD_CLOEXEC)
        .map_err(|e| e.to_string())?;
    // SAFETY: fd was just returned by the kernel and is owned here.
    unsafe { libc::close(fd) };
    Ok(())
}

/// First of `names` found on PATH.
pub fn which(names: &[&str]) -> Option<String> {
    hpcscope_host::tools::find(names, None)
        .ok()
        .map(|p| p.display().to_string())
}

/// Runs every check. BPF program loads are tried only as root (or with the capabilities).
pub fn run() -> Doctor {
    let mut checks = Vec::new();
    let caps = has_bpf_caps();
    let euid = hpcscope_host::facts::euid();
    checks.push(check(
        "privileges",
        caps,
        format!("euid {euid}, CapEff {:#x}", effective_caps()),
        "all eBPF probes and profiling (run as root or grant CAP_BPF+CAP_PERFMON)",
    ));
    let arch = std::env::consts::ARCH;
    checks.push(check(
        "architecture",
        arch == "x86_64",
        arch,
        "every eBPF probe (the probes are built for x86-64 only)",
    ));
    let btf = Path::new("/sys/kernel/btf/vmlinux");
    checks.push(check(
        "kernel BTF",
        btf.exists(),
        match std::fs::metadata(btf) {
            Ok(m) => format!("/sys/kernel/btf/vmlinux, {:.1} MB", m.len() as f64 / 1e6),
            Err(e) => e.to_string(),
        },
        "CO-RE relocation, hence every eBPF probe (needs CONFIG_DEBUG_INFO_BTF=y)",
    ));
    let jit = std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    checks.push(check(
        "BPF JIT",
        jit == "1" || jit == "2",
        format!("net.core.bpf_jit_enable = {jit}"),
        "nothing, but interpreted programs cost several times more per event",
    ));
    let loads = if caps {
        crate::linux::probe_program_types()
    } else {
        Vec::new()
    };
    let load_ok = |name: &str| {
        loads
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| r.clone())
    };
    let perm = match load_ok("raw_tracepoint") {
        Some(Ok(())) => check(
            "bpf permission",
            true,
            "loaded a raw tracepoint program",
            "",
        ),
        Some(Err(e)) => check("bpf permission", false, e, "all eBPF probes and profiling"),
        None => check(
            "bpf permission",
            false,
            "not tried without privileges",
            "all eBPF probes and profiling",
        ),
    };
    checks.push(perm);
    for (name, disables) in [
        (
            "raw_tracepoint",
            "syscall, scheduler, block I/O and process-following probes",
        ),
        ("perf_event", "page-fault counts and cpu-clock profiling"),
        ("uprobe", "user function latency (MPI, OpenMP, any symbol)"),
        (
            "kprobe",
            "kernel-function latency (hpcscope uses tracepoints instead)",
        ),
        (
            "fentry",
            "BTF trampolines (hpcscope uses tracepoints instead)",
        ),
    ] {
        let (ok, detail) = match load_ok(name) {
            Some(Ok(())) => (true, "program loads".to_string()),
            Some(Err(e)) => (false, e),
            None => (false, "not tried without privileges".to_string()),
        };
        checks.push(check(&format!("prog {name}"), ok, detail, disables));
    }
    let tracefs = Path::new("/sys/kernel/tracing/events").exists()
        || Path::new("/sys/kernel/debug/tracing/events").exists();
    checks.push(check(
        "tracefs",
        tracefs,
        if tracefs { "mounted".into() } else { "not mounted (mount -t tracefs nodev /sys/kernel/tracing)".to_string() },
        "bpftrace tracepoints and `perf trace`; hpcscope attaches raw tracepoints by name and needs none",
    ));
    let kp = Path::new("/sys/bus/event_source/devices/kprobe").exists();
    checks.push(check(
        "kprobes",
        kp,
        if kp {
            "kprobe PMU present".into()
        } else {
            "no kprobe PMU (CONFIG_KPROBES off?)".to_string()
        },
        "kernel-function probes; hpcscope's probes use tracepoints and need none",
    ));
    let up = Path::new("/sys/bus/event_source/devices/uprobe").exists();
    checks.push(check(
        "uprobes",
        up,
        if up {
            "uprobe PMU present".into()
        } else {
            "no uprobe PMU".to_string()
        },
        "user function latency (--function, --mpi, --openmp) and USDT probes (--usdt)",
    ));
    let refctr = crate::linux::uprobe_ref_ctr_shift();
    checks.push(check(
        "uprobe reference counters",
        refctr.is_some(),
        match refctr {
            Some(s) => {
                format!("ref_ctr_offset at config bit {s}: the kernel raises USDT semaphores")
            }
            None => "no ref_ctr_offset in the uprobe PMU's format (before Linux 4.20)".into(),
        },
        "USDT probes guarded by a semaphore (--usdt refuses them; unguarded ones still work)",
    ));
    perf_and_tool_checks(&mut checks);
    checks.push(exact_sve_check());
    checks.push(native_engine_check());
    Doctor {
        kernel: kernel_release(),
        cpus: hpcscope_host::facts::logical_cpus() as usize,
        checks,
    }
}

/// The perf events, the perf_event_paranoid level, and the tools beside hpcscope (QEMU,
/// cross compilers, bpftrace).
fn perf_and_tool_checks(checks: &mut Vec<Check>) {
    let sw = perf_event_opens(1, 0); // PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK
    checks.push(check(
        "perf software events",
        sw.is_ok(),
        sw.err().unwrap_or_else(|| "cpu-clock opens".into()),
        "`hpcscope profile` and page-fault counts",
    ));
    let hw = perf_event_opens(0, 0); // PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES
    checks.push(check(
        "perf hardware events",
        hw.is_ok(),
        hw.err()
            .map(|e| format!("cycles: {e} (no PMU, e.g. a VM)"))
            .unwrap_or_else(|| "cycles opens".into()),
        "hardware counters (`hpcscope counters`; eq. 3.12's factors in `merge`); profiling falls back to cpu-clock",
    ));
    let paranoid = hpcscope_host::perf::paranoid_text().unwrap_or_else(|| "unknown".into());
    checks.push(check("perf_event_paranoid", true, paranoid, ""));
    // The emulator `hpcscope mix` would run ($HPCSCOPE_QEMU first, as mix does).
    let q = hpcscope_host::tools::qemu(std::env::consts::ARCH)
        .or_else(|_| hpcscope_host::tools::qemu("aarch64"))
        .map(|p| p.display().to_string());
    checks.push(check(
        "qemu user mode",
        q.is_ok(),
        q.unwrap_or_else(|e| match e {
            hpcscope_host::tools::ToolError::BadOverride { .. } => e.to_string(),
            _ => "not found (apt-get install qemu-user)".into(),
        }),
        "`hpcscope mix` instruction mixes and cross-ISA runs",
    ));
    let cc = which(&["aarch64-linux-gnu-gcc", "riscv64-linux-gnu-gcc"]);
    checks.push(check(
        "cross compilers",
        cc.is_some(),
        cc.unwrap_or_else(|| "none (apt-get install gcc-aarch64-linux-gnu)".into()),
        "building the reference workloads for other ISAs",
    ));
    let bt = which(&["bpftrace"]);
    checks.push(check(
        "bpftrace",
        bt.is_some(),
        bt.unwrap_or_else(|| "not found (apt-get install bpftrace)".into()),
        "the bpftrace comparison in bench/trace",
    ));
}

/// Whether the native engine (DynamoRIO and hpcscope's client) is built, as
/// `scripts/build-dynamorio.sh` installs it.
pub fn native_engine_check() -> Check {
    use hpcscope_host::tools;
    let dir = tools::dynamorio_dir();
    let missing = tools::dynamorio_files(&dir)
        .into_iter()
        .find(|f| !f.is_file());
    Check {
        name: format!("native engine (DynamoRIO {})", tools::DYNAMORIO_VERSION),
        ok: missing.is_none(),
        detail: match missing {
            None => format!("{} (`mix --engine auto` counts x86-64 programs here natively)", dir.display()),
            Some(f) => format!(
                "{} is missing (run scripts/build-dynamorio.sh: about 7 minutes on 2 cores)",
                f.display()
            ),
        },
        disables: "counting x86-64 programs natively, AVX-512 included (`hpcscope mix` counts under QEMU, which has no AVX-512)".into(),
    }
}

/// Whether `hpcscope mix` counts SVE exactly: QEMU 10 (plugin API v4) built into the cache
/// by `scripts/build-qemu.sh`, and the plugin built for that API.
pub fn exact_sve_check() -> Check {
    use hpcscope_host::tools;
    let qemu = tools::cached_qemu("aarch64");
    let plugin = tools::plugin_for_api(4);
    let (ok, detail) = match (&qemu, &plugin) {
        (Some(q), Ok(p)) => (
            true,
            format!(
                "{} and the API v4 plugin {}",
                q.display(),
                p.display()
            ),
        ),
        (None, _) => (
            false,
            format!(
                "no QEMU {} in {} (run scripts/build-qemu.sh: about 5 minutes on 2 cores)",
                tools::CACHED_QEMU_VERSION,
                tools::cached_qemu_dir().display()
            ),
        ),
        (Some(_), Err(_)) => (
            false,
            "QEMU 10 is built but not the API v4 plugin (cargo build --release -p hpcscope-qemu-plugin --no-default-features --features api-v4 --target-dir target/plugin-v4)".to_string(),
        ),
    };
    Check {
        name: "exact SVE (QEMU 10, plugin API v4)".into(),
        ok,
        detail,
        disables: "SVE FLOPs by active lanes and SVE loads/stores in `hpcscope mix` cache simulation (QEMU 7.2 counts every lane, needs --cache-binary)".into(),
    }
}
