//! Everything that talks to QEMU: installation, the translation callback, exit.
//!
//! The `qemu-plugin` crate installs the plugin and parses nothing for us beyond the raw
//! argument strings. The translation callback is registered again here, as a plain
//! `extern "C"` function on the raw API (QEMU keeps one callback per event and plugin, so
//! this replaces the crate's), because it needs the raw instruction handles to attach the
//! inline counter and the bare memory callback.

use std::collections::BTreeMap;
use std::ffi::{CStr, c_void};
use std::fs::{File, OpenOptions};
use std::os::fd::FromRawFd;
use std::sync::{Mutex, OnceLock};

use qemu_plugin::install::{Args, Info};
use qemu_plugin::sys::{
    qemu_plugin_cb_flags, qemu_plugin_id_t, qemu_plugin_insn_data, qemu_plugin_insn_size,
    qemu_plugin_insn_vaddr, qemu_plugin_mem_rw, qemu_plugin_op, qemu_plugin_path_to_binary,
    qemu_plugin_register_vcpu_insn_exec_cb, qemu_plugin_register_vcpu_mem_cb,
    qemu_plugin_register_vcpu_tb_exec_cb, qemu_plugin_register_vcpu_tb_exec_inline,
    qemu_plugin_register_vcpu_tb_trans_cb, qemu_plugin_start_code, qemu_plugin_tb,
    qemu_plugin_tb_get_insn, qemu_plugin_tb_n_insns, qemu_plugin_tb_vaddr,
};
use qemu_plugin::{HasCallbacks, PluginId, Register, VCPUIndex, register};

use crate::args::{Config, QEMU_DEFAULT_VL_BITS, sve_vl_from_qemu_args};
use crate::isa::{Classifier, N_COUNTERS, aarch64::Aarch64, x86_64::X86_64};
use crate::report::{RunInfo, TbCounts, summary};
use crate::{elf, memtrace, scope};

/// Static counts of one translation (sparse: counter index, increment per execution).
struct TbRecord {
    vaddr: u64,
    /// Address of this TB's execution counter in `Arena` (stable, never freed).
    counter: usize,
    counts: Vec<(u8, u32)>,
}

/// Execution counters, allocated in chunks that never move.
#[derive(Default)]
struct Arena {
    chunks: Vec<Box<[u64]>>,
    used: usize,
}

const CHUNK: usize = 4096;

impl Arena {
    fn alloc(&mut self) -> *mut u64 {
        if self.chunks.is_empty() || self.used == CHUNK {
            self.chunks.push(vec![0u64; CHUNK].into_boxed_slice());
            self.used = 0;
        }
        let chunk = self.chunks.last_mut().expect("just pushed");
        let p = &mut chunk[self.used] as *mut u64;
        self.used += 1;
        p
    }
}

struct State {
    config: Config,
    /// SVE vector length used (aarch64), and where it came from.
    vl: Option<(u32, &'static str)>,
    target: String,
    classifier: Box<dyn Classifier>,
    tbs: Vec<TbRecord>,
    arena: Arena,
    /// Load bias of the main binary, added to `region=` addresses; known at the first
    /// translation (plugins are installed before QEMU loads the binary).
    load_bias: Option<u64>,
}

// SAFETY: the raw counter addresses are only dereferenced at exit, after the guest stopped.
unsafe impl Send for State {}

static STATE: OnceLock<Mutex<State>> = OnceLock::new();

struct Plugin;

impl HasCallbacks for Plugin {
    fn on_vcpu_exit(&mut self, _id: PluginId, vcpu: VCPUIndex) -> qemu_plugin::Result<()> {
        memtrace::flush_vcpu(vcpu);
        Ok(())
    }
}

/// Bad plugin arguments or tables: say what is wrong and stop QEMU before the guest runs
/// (exit status 2, bad input), rather than returning an error the `qemu-plugin` crate
/// turns into a panic.
fn fail(msg: String) -> qemu_plugin::Error {
    eprintln!("hpcscope-qemu-plugin: {msg}");
    std::process::exit(2);
}

/// The SVE vector length: `vl=` if given, else what QEMU's own command line asks for
/// (`/proc/self/cmdline` of the QEMU process, and `QEMU_CPU`). Warns when they disagree.
fn sve_vector_length(config: &Config) -> (u32, &'static str) {
    let qemu_args: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let env_cpu = std::env::var("QEMU_CPU").ok();
    let from_qemu = sve_vl_from_qemu_args(&qemu_args, env_cpu.as_deref());
    match (config.vl_bits, from_qemu) {
        (Some(bits), Some(q)) if bits != q => {
            eprintln!(
                "hpcscope-qemu-plugin: vl={bits} but QEMU runs SVE at {q} bits; counting {bits}"
            );
            (bits, "argument")
        }
        (Some(bits), _) => (bits, "argument"),
        (None, Some(q)) => (q, "qemu-command-line"),
        (None, None) => (QEMU_DEFAULT_VL_BITS, "default"),
    }
}

fn setup(args: &Args, info: &Info) -> Result<State, String> {
    let config = Config::parse(&args.raw)?;
    let target = info.target_name.clone();
    let custom = match &config.table {
        Some(p) => {
            Some(std::fs::read_to_string(p).map_err(|e| format!("table={}: {e}", p.display()))?)
        }
        None => None,
    };
    let vl = (target == "aarch64").then(|| sve_vector_length(&config));
    let classifier: Box<dyn Classifier> = match target.as_str() {
        "aarch64" => Box::new(
            Aarch64::new(
                custom.as_deref().unwrap_or(crate::isa::aarch64::TABLE),
                vl.map_or(QEMU_DEFAULT_VL_BITS, |(bits, _)| bits),
            )
            .map_err(|e| e.to_string())?,
        ),
        "x86_64" => Box::new(
            X86_64::new(custom.as_deref().unwrap_or(crate::isa::x86_64::TABLE))
                .map_err(|e| e.to_string())?,
        ),
        t => {
            return Err(format!(
                "guest '{t}' is not supported (x86_64 and aarch64 are)"
            ));
        }
    };
    if config.mem {
        let file = match (config.mem_fd, &config.mem_out) {
            // SAFETY: the caller handed this descriptor to the plugin for the stream.
            (Some(fd), _) => unsafe { File::from_raw_fd(fd) },
            (None, Some(p)) => OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(p)
                .map_err(|e| format!("memout={}: {e}", p.display()))?,
            (None, None) => unreachable!("Config::parse checks a sink is given"),
        };
        memtrace::open(file, config.coalesce).map_err(|e| format!("memory stream: {e}"))?;
    }
    Ok(State {
        config,
        vl,
        target,
        classifier,
        tbs: Vec::new(),
        arena: Arena::default(),
        load_bias: None,
    })
}

impl Register for Plugin {
    fn register(&mut self, id: PluginId, args: &Args, info: &Info) -> qemu_plugin::Result<()> {
        let state = setup(args, info).map_err(fail)?;
        STATE
            .set(Mutex::new(state))
            .map_err(|_| fail("installed twice".into()))?;
        // SAFETY: registering a plain callback for this plugin id.
        unsafe { qemu_plugin_register_vcpu_tb_trans_cb(id, Some(on_tb_trans)) };
        qemu_plugin::qemu_plugin_register_atexit_cb(id, |_| on_exit())?;
        if let Some(out) = STATE
            .get()
            .and_then(|m| m.lock().ok())
            .and_then(|st| st.config.out.clone())
        {
            start_snapshots(out);
        }
        Ok(())
    }
}

register!(Plugin);

extern "C" fn on_tb_trans(_id: qemu_plugin_id_t, tb: *mut qemu_plugin_tb) {
    let Some(Ok(mut st)) = STATE.get().map(|m| m.lock()) else {
        return;
    };
    let st = &mut *st;
    if st.load_bias.is_none() {
        let bias = load_bias();
        for r in st
            .config
            .regions
            .iter_mut()
            .chain(st.config.scopes.iter_mut())
        {
            *r = (r.0.wrapping_add(bias), r.1.wrapping_add(bias));
        }
        st.load_bias = Some(bias);
    }
    let scoped = !st.config.scopes.is_empty();
    let mem_cb = if scoped {
        memtrace::on_mem_scoped
    } else {
        memtrace::on_mem
    };
    let mut v = [0u64; N_COUNTERS];
    let mut any = false;
    // SAFETY: `tb` and its instructions are valid for the duration of this callback.
    unsafe {
        let n = qemu_plugin_tb_n_insns(tb);
        for i in 0..n {
            let insn = qemu_plugin_tb_get_insn(tb, i);
            let pc = qemu_plugin_insn_vaddr(insn);
            let counted = st.config.in_region(pc);
            let in_scope = scoped && st.config.in_scope(pc);
            if !counted && !in_scope {
                continue;
            }
            let len = qemu_plugin_insn_size(insn);
            let bytes = std::slice::from_raw_parts(qemu_plugin_insn_data(insn) as *const u8, len);
            let info = st.classifier.classify(bytes);
            if in_scope && info.returns {
                qemu_plugin_register_vcpu_insn_exec_cb(
                    insn,
                    Some(scope::on_return),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    std::ptr::null_mut(),
                );
            }
            if !counted {
                continue;
            }
            any = true;
            info.add_to(&mut v);
            if st.config.mem {
                qemu_plugin_register_vcpu_mem_cb(
                    insn,
                    Some(mem_cb),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW,
                    std::ptr::null_mut(),
                );
            }
        }
        let vaddr = qemu_plugin_tb_vaddr(tb);
        let entry = scoped && st.config.is_scope_entry(vaddr);
        if !any && !entry {
            return;
        }
        let counter = st.arena.alloc();
        if scoped {
            let ud = Box::into_raw(Box::new(scope::ScopeTb { counter, entry }));
            qemu_plugin_register_vcpu_tb_exec_cb(
                tb,
                Some(scope::on_tb),
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                ud as *mut c_void,
            );
        } else {
            qemu_plugin_register_vcpu_tb_exec_inline(
                tb,
                qemu_plugin_op::QEMU_PLUGIN_INLINE_ADD_U64,
                counter as *mut c_void,
                1,
            );
        }
        let counts = v
            .iter()
            .enumerate()
            .filter(|(_, x)| **x != 0)
            .map(|(k, x)| (k as u8, *x as u32))
            .collect();
        st.tbs.push(TbRecord {
            vaddr,
            counter: counter as usize,
            counts,
        });
    }
}

/// Where the main binary was loaded relative to its link-time addresses (0 unless PIE).
fn load_bias() -> u64 {
    // SAFETY: plain queries; QEMU returns a string we own (never freed: called once).
    let (path, start) = unsafe {
        let p = qemu_plugin_path_to_binary();
        let path = (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned());
        (path, qemu_plugin_start_code())
    };
    let seg = path
        .as_deref()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| elf::exec_segment_start(&b));
    match seg {
        Some(seg) => start.wrapping_sub(seg),
        None => {
            eprintln!(
                "hpcscope-qemu-plugin: cannot read the binary's program headers; \
                 region addresses are taken as run-time addresses"
            );
            0
        }
    }
}

/// Set once the guest has exited: the snapshot thread stops.
static EXITED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Period of the partial snapshots.
const SNAPSHOT_PERIOD: std::time::Duration = std::time::Duration::from_millis(250);

/// Starts a thread that writes the counts so far to `<out>.partial` every 250 ms. QEMU 7.2
/// does not run the plugins' exit callbacks when the guest dies of a signal (a crash, or a
/// driver's SIGTERM at its time limit), so without these snapshots such a run would leave
/// nothing: the driver reads the last snapshot and marks the counts partial.
fn start_snapshots(out: std::path::PathBuf) {
    let partial = partial_path(&out);
    let _ = std::thread::Builder::new()
        .name("hpcscope-snapshots".into())
        .spawn(move || {
            while !EXITED.load(std::sync::atomic::Ordering::Acquire) {
                std::thread::sleep(SNAPSHOT_PERIOD);
                if EXITED.load(std::sync::atomic::Ordering::Acquire) {
                    break;
                }
                if let Some(text) = render(None) {
                    let tmp = partial.with_extension("partial.tmp");
                    if std::fs::write(&tmp, text + "\n").is_ok() {
                        let _ = std::fs::rename(&tmp, &partial);
                    }
                }
            }
        });
}

/// `<out>.partial`: where snapshots go.
pub fn partial_path(out: &std::path::Path) -> std::path::PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".partial");
    std::path::PathBuf::from(s)
}

/// The summary JSON of the counts so far; `mem` is the stream statistics at exit (None for
/// a snapshot taken while the guest runs, which then says `"partial": true`).
fn render(mem: Option<(u64, u64)>) -> Option<String> {
    let st = STATE.get()?.lock().ok()?;
    let mut totals = [0u64; N_COUNTERS];
    let mut per_pc: BTreeMap<u64, TbCounts> = BTreeMap::new();
    for tb in &st.tbs {
        // SAFETY: the counter lives in the arena, which is never freed; read volatile because
        // the guest may still be incrementing it (a snapshot is approximate by nature).
        let execs = unsafe { std::ptr::read_volatile(tb.counter as *const u64) };
        if execs == 0 {
            continue;
        }
        let entry = per_pc.entry(tb.vaddr).or_insert_with(|| TbCounts {
            pc: tb.vaddr,
            executions: 0,
            counts: [0; N_COUNTERS],
        });
        entry.executions += execs;
        for &(k, x) in &tb.counts {
            let add = execs * u64::from(x);
            totals[k as usize] += add;
            entry.counts[k as usize] += add;
        }
    }
    let tbs: Vec<TbCounts> = per_pc.into_values().collect();
    let snapshot = mem.is_none();
    let run = RunInfo {
        target: &st.target,
        vl: st.vl,
        regions: &st.config.regions,
        scopes: &st.config.scopes,
        load_bias: st.load_bias.unwrap_or(0),
        mem_records: if st.config.mem { mem } else { None },
    };
    let mut json = summary(&run, &totals, st.config.tbs.then_some(&tbs[..]));
    if snapshot {
        json["partial"] = serde_json::Value::Bool(true);
    }
    match serde_json::to_string_pretty(&json) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("hpcscope-qemu-plugin: cannot format the summary: {e}");
            None
        }
    }
}

fn on_exit() {
    EXITED.store(true, std::sync::atomic::Ordering::Release);
    let mem = memtrace::finish();
    let Some(text) = render(Some(mem)) else {
        return;
    };
    let out = STATE
        .get()
        .and_then(|m| m.lock().ok())
        .and_then(|st| st.config.out.clone());
    match out {
        Some(p) => {
            if let Err(e) = std::fs::write(&p, text + "\n") {
                eprintln!("hpcscope-qemu-plugin: out={}: {e}", p.display());
            }
            let _ = std::fs::remove_file(partial_path(&p));
        }
        None => eprintln!("{text}"),
    }
}
