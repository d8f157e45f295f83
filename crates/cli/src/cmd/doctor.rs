//! `hpcscope doctor`: what this machine allows (BPF permission, BTF, kprobes, fentry,
//! uprobes, perf events, qemu, cross compilers) and what each missing piece disables.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::output::{Format, Table, emit, render};

/// Arguments of `doctor`.
#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Write the report here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Whether `hpcscope mix` counts SVE exactly: QEMU 10 (plugin API v4) built into the cache
/// by `scripts/build-qemu.sh`, and the plugin built for that API.
fn exact_sve_check() -> hpcscope_trace::doctor::Check {
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
    hpcscope_trace::doctor::Check {
        name: "exact SVE (QEMU 10, plugin API v4)".into(),
        ok,
        detail,
        disables: "SVE FLOPs by active lanes and SVE loads/stores in `hpcscope mix` cache simulation (QEMU 7.2 counts every lane, needs --cache-binary)".into(),
    }
}

/// Runs `doctor`; always exits 0 (it reports, it does not judge).
pub fn run(a: &DoctorArgs) -> Result<ExitCode> {
    let mut d = hpcscope_trace::doctor::run();
    d.checks.push(exact_sve_check());
    let mut t = Table::new(&["check", "ok", "found", "missing disables"]);
    for c in &d.checks {
        t.row(vec![
            c.name.clone(),
            if c.ok { "yes" } else { "no" }.into(),
            c.detail.clone(),
            c.disables.clone(),
        ]);
    }
    let pre = vec![format!("kernel {}, {} CPUs", d.kernel, d.cpus)];
    let post = if d.can_trace() {
        vec!["eBPF tracing and profiling: available".to_string()]
    } else {
        vec!["eBPF tracing and profiling: NOT available (see the rows marked no)".to_string()]
    };
    let text = render(a.format, &d, &pre, &t, &post)?;
    emit(&text, a.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}
