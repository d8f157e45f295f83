//! Everything that talks to QEMU: installation, the translation callback, threads, exit.
//!
//! The `qemu-plugin` crate installs the plugin; every callback is registered here on the
//! raw API, because the translation callback needs the raw instruction handles and a reset
//! (below) unregisters everything.
//!
//! Counting: while the guest has one thread, each translation block (TB) has a counter of
//! its own that one inline `ADD_U64` per execution increments (the cheapest instrumentation
//! there is). Inline adds are not atomic, so when a second guest thread starts (QEMU creates
//! a second vCPU) the plugin asks QEMU to reset its instrumentation: the code cache is
//! flushed, and every TB translated from then on counts its executions per vCPU with an
//! execution callback ([`vcpu`]). The inline counts from before belong to vCPU 0, the only
//! one there was. `scope=` counts with callbacks from the start.

use std::ffi::{CStr, c_uint, c_void};
use std::fs::{File, OpenOptions};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use qemu_plugin::install::{Args, Info};
use qemu_plugin::sys::{
    qemu_plugin_cb_flags, qemu_plugin_id_t, qemu_plugin_insn_disas, qemu_plugin_insn_vaddr,
    qemu_plugin_mem_rw, qemu_plugin_register_atexit_cb, qemu_plugin_register_vcpu_exit_cb,
    qemu_plugin_register_vcpu_init_cb, qemu_plugin_register_vcpu_insn_exec_cb,
    qemu_plugin_register_vcpu_mem_cb, qemu_plugin_register_vcpu_tb_exec_cb,
    qemu_plugin_register_vcpu_tb_trans_cb, qemu_plugin_reset, qemu_plugin_tb,
    qemu_plugin_tb_get_insn, qemu_plugin_tb_n_insns, qemu_plugin_tb_vaddr,
};
use qemu_plugin::{HasCallbacks, PluginId, Register, register};

use crate::api::{self, InlineCounters};
use crate::args::{Config, QEMU_DEFAULT_VL_BITS, cpu_model_from_qemu_args, sve_vl_from_qemu_args};
use crate::isa::{
    Classifier, Counter, MemKind, N_COUNTERS, aarch64::Aarch64, flops_by_width_index,
    x86_64::X86_64,
};
use crate::memtrace::{Audit, MemDesc};
use crate::report::RunInfo;
use crate::tally::{Executions, TbStatic, tally};
use crate::{elf, memtrace, scope, vcpu};

/// A counted translation: its static counts and, in the inline phase, its counter.
struct TbRecord {
    stat: TbStatic,
    /// Handle of the inline counter (in [`InlineCounters`]), 0 when counted per vCPU.
    inline: usize,
}

struct State {
    config: Config,
    /// SVE vector length used (aarch64), and where it came from.
    vl: Option<(u32, &'static str)>,
    target: String,
    classifier: Box<dyn Classifier>,
    tbs: Vec<TbRecord>,
    arena: InlineCounters,
    /// The plugin API version QEMU runs.
    qemu_api: u32,
    /// Load bias of the main binary, added to `region=` addresses; known at the first
    /// translation (plugins are installed before QEMU loads the binary).
    load_bias: Option<u64>,
}

// SAFETY: the raw counter addresses and scoreboards are only read (volatile) by the
// snapshot thread and at exit.
unsafe impl Send for State {}

static STATE: OnceLock<Mutex<State>> = OnceLock::new();
static PLUGIN_ID: AtomicU64 = AtomicU64::new(0);
/// Set once a second vCPU exists: translations from then on count per vCPU.
static PER_VCPU: AtomicBool = AtomicBool::new(false);
/// The governing predicates of SVE FP instructions can be read (API v4, an SVE CPU).
static PREDICATES: AtomicBool = AtomicBool::new(false);
/// Executions of predicated instructions whose predicate could not be read.
static PREDICATE_FAILURES: AtomicU64 = AtomicU64::new(0);

struct Plugin;

impl HasCallbacks for Plugin {}

/// Bad plugin arguments or tables: say what is wrong and stop QEMU before the guest runs
/// (exit status 2, bad input), rather than returning an error the `qemu-plugin` crate
/// turns into a panic.
fn fail(msg: String) -> qemu_plugin::Error {
    eprintln!("hpcscope-qemu-plugin: {msg}");
    std::process::exit(2);
}

/// QEMU's own command line (`/proc/self/cmdline` of the QEMU process) and `QEMU_CPU`.
fn qemu_command_line() -> (Vec<String>, Option<String>) {
    let qemu_args: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    (qemu_args, std::env::var("QEMU_CPU").ok())
}

/// The SVE vector length: `vl=` if given, else what QEMU's own command line asks for
/// (`/proc/self/cmdline` of the QEMU process, and `QEMU_CPU`). Warns when they disagree.
fn sve_vector_length(config: &Config) -> (u32, &'static str) {
    let (qemu_args, env_cpu) = qemu_command_line();
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
        "aarch64" => {
            let mut a = Aarch64::new(
                custom.as_deref().unwrap_or(crate::isa::aarch64::TABLE),
                vl.map_or(QEMU_DEFAULT_VL_BITS, |(bits, _)| bits),
            )
            .map_err(|e| e.to_string())?;
            let (qemu_args, env_cpu) = qemu_command_line();
            a.set_cpu_model(cpu_model_from_qemu_args(&qemu_args, env_cpu.as_deref()).as_deref());
            a.set_sve_accesses_reported(api::SVE_ACCESSES_REPORTED);
            Box::new(a)
        }
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
        // SAFETY: the caller handed these descriptors to the plugin for the ring.
        let ring = config
            .mem_ring
            .map(|(r, t)| unsafe { (File::from_raw_fd(r), File::from_raw_fd(t)) });
        memtrace::open(file, ring, config.coalesce, config.sample.as_ref())
            .map_err(|e| format!("memory stream: {e}"))?;
        enable_inline(&config)?;
    }
    crate::fork::watch();
    vcpu::set_regions(config.regions.len());
    if !config.scopes.is_empty() {
        // Scoped blocks count with callbacks from the start; translations follow the
        // scope while the guest has one thread.
        PER_VCPU.store(true, Ordering::Relaxed);
        scope::enable_switching();
    }
    Ok(State {
        config,
        vl,
        target,
        classifier,
        tbs: Vec::new(),
        arena: InlineCounters::default(),
        qemu_api: u32::try_from(info.version.current).unwrap_or(0),
        load_bias: None,
    })
}

/// Turns on the records written by QEMU's translated code (`meminline=`) where asked for,
/// or by default where this QEMU has them and no `scope=` is given.
#[cfg(not(feature = "api-v1"))]
fn enable_inline(config: &Config) -> Result<(), String> {
    match config.mem_inline {
        Some(false) => Ok(()),
        Some(true) => memtrace::inline::enable(),
        None if config.scopes.is_empty() && memtrace::inline::available() => {
            memtrace::inline::enable()
        }
        None => Ok(()),
    }
}

#[cfg(feature = "api-v1")]
fn enable_inline(config: &Config) -> Result<(), String> {
    match config.mem_inline {
        Some(true) => Err(
            "meminline=on needs QEMU 10 built by scripts/build-qemu.sh and the plugin built for its API (v4)".into(),
        ),
        _ => Ok(()),
    }
}

impl Register for Plugin {
    fn register_default(
        &mut self,
        id: PluginId,
        args: &Args,
        info: &Info,
    ) -> qemu_plugin::Result<()> {
        let state = setup(args, info).map_err(fail)?;
        let out = state.config.out.clone();
        STATE
            .set(Mutex::new(state))
            .map_err(|_| fail("installed twice".into()))?;
        PLUGIN_ID.store(id, Ordering::Relaxed);
        register_callbacks(id);
        if let Some(out) = out {
            start_snapshots(out);
        }
        Ok(())
    }
}

register!(Plugin);

/// Every callback of the plugin (at installation, and again after a reset).
fn register_callbacks(id: qemu_plugin_id_t) {
    // SAFETY: registering plain callbacks for this plugin id.
    unsafe {
        qemu_plugin_register_vcpu_tb_trans_cb(id, Some(on_tb_trans));
        qemu_plugin_register_vcpu_init_cb(id, Some(on_vcpu_init));
        qemu_plugin_register_vcpu_exit_cb(id, Some(on_vcpu_exit));
        qemu_plugin_register_atexit_cb(id, Some(on_atexit), std::ptr::null_mut());
    }
}

extern "C" fn on_vcpu_init(id: qemu_plugin_id_t, vcpu: c_uint) {
    #[cfg(not(feature = "api-v1"))]
    if vcpu == 0 {
        // The predicate registers' handles (the same for every vCPU).
        PREDICATES.store(api::predicate::init() >= 8, Ordering::Relaxed);
    }
    // A new guest thread: its slot (and thread number) starts here.
    let _ = vcpu::get(vcpu);
    #[cfg(not(feature = "api-v1"))]
    memtrace::inline::vcpu_init(vcpu);
    memtrace::thread_started(vcpu);
    if vcpu != 0 {
        // Several threads: their batches of the memory stream interleave more finely.
        memtrace::set_threaded();
    }
    if vcpu != 0 {
        // Several threads: every block instrumented, for good (a reset if needed).
        scope::lock();
    }
    if vcpu != 0 && !PER_VCPU.swap(true, Ordering::AcqRel) {
        // A second guest thread: from now on count per vCPU. The reset flushes the code
        // cache (so no block with an inline counter runs again) and unregisters our
        // callbacks, which `on_reset` registers again.
        // SAFETY: plain API call; QEMU calls `on_reset` once the vCPUs are stopped.
        unsafe { qemu_plugin_reset(id, Some(on_reset)) };
    }
}

extern "C" fn on_reset(id: qemu_plugin_id_t) {
    // The vCPUs are stopped and no block with an inline counter runs again.
    if let Some(Ok(mut st)) = STATE.get().map(|m| m.lock()) {
        st.arena.freeze();
    }
    scope::after_reset();
    register_callbacks(id);
}

/// Asks QEMU to flush the code cache and reinstall the callbacks (`on_reset`) before the
/// next block runs: the translations of `scope=` mode follow the depth ([`scope`]).
pub fn request_reset() {
    // SAFETY: plain API call; QEMU calls `on_reset` once the vCPUs are stopped.
    unsafe { qemu_plugin_reset(PLUGIN_ID.load(Ordering::Relaxed), Some(on_reset)) };
}

extern "C" fn on_vcpu_exit(_id: qemu_plugin_id_t, vcpu: c_uint) {
    memtrace::flush_vcpu(vcpu);
    if !EXITED.load(Ordering::Acquire) {
        memtrace::thread_ended(vcpu);
        vcpu::retire(vcpu);
    }
}

extern "C" fn on_atexit(_id: qemu_plugin_id_t, _: *mut c_void) {
    on_exit();
}

/// Execution callback of a TB counted per vCPU; `ud` is its counter id.
extern "C" fn on_tb_count(vcpu: c_uint, ud: *mut c_void) {
    vcpu::get(vcpu).count_tb(ud as usize as u32);
}

/// Sparse static counts of one TB, per region.
fn sparse(per_region: &[(usize, [u64; N_COUNTERS])]) -> Vec<(u16, u8, u32)> {
    let mut out = Vec::new();
    for (r, v) in per_region {
        for (k, x) in v.iter().enumerate() {
            if *x != 0 {
                out.push((*r as u16, k as u8, *x as u32));
            }
        }
    }
    out
}

#[allow(clippy::too_many_lines)]
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
    let restricted = scoped || !st.config.regions.is_empty();
    let stream = memtrace::streaming();
    let audit = st.config.audit.is_some();
    let pass_cb = if scoped {
        memtrace::on_mem_scoped
    } else {
        memtrace::on_mem
    };
    // SAFETY: `tb` and its instructions are valid for the duration of this callback.
    unsafe {
        let n = qemu_plugin_tb_n_insns(tb);
        let insns: Vec<_> = (0..n).map(|i| qemu_plugin_tb_get_insn(tb, i)).collect();
        let owned: Vec<Vec<u8>> = insns.iter().map(|&insn| api::insn_bytes(insn)).collect();
        let bytes: Vec<&[u8]> = owned.iter().map(|b| b.as_slice()).collect();
        let mut infos = st.classifier.classify_block(&bytes);
        if scoped
            && !scope::instrument_all()
            && !insns
                .iter()
                .any(|&i| st.config.in_scope(qemu_plugin_insn_vaddr(i)))
        {
            // Outside every scope function while none runs: no callbacks (see `scope`),
            // but for the accesses of helpers (see `on_mem_drop`).
            for (&insn, info) in insns.iter().zip(&infos) {
                if info.helper && (info.loads || info.stores || info.counted_from_reports()) {
                    qemu_plugin_register_vcpu_mem_cb(
                        insn,
                        Some(memtrace::on_mem_drop),
                        qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                        qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW,
                        std::ptr::null_mut(),
                    );
                }
            }
            return;
        }
        // With readable predicates: the FLOPs each instruction's callback counts from its
        // predicate (its own, and those of the unpredicated instructions that follow it).
        if PREDICATES.load(Ordering::Relaxed) {
            let mut lanes: Vec<Vec<LaneFlops>> = vec![Vec::new(); infos.len()];
            for i in 0..infos.len() {
                let pc = qemu_plugin_insn_vaddr(insns[i]);
                let Some(r) = st.config.region_of(pc) else {
                    continue;
                };
                // Counted where the predicate that governs the lanes whose results are used
                // is read: at the reader (`lanes_of`, then with this instruction's own
                // predicate too), else at the instruction itself.
                let reader = infos[i]
                    .lanes_of
                    .map(usize::from)
                    .filter(|&j| infos.get(j).is_some_and(|x| x.pg.is_some()));
                let (at, and) = match (infos[i].pg, reader) {
                    (own, Some(j)) => (j, own),
                    (Some(_), None) => (i, None),
                    (None, None) => continue,
                };
                let Some(fp) = infos[i].fp.as_mut() else {
                    continue;
                };
                if fp.counted_lanes.is_some() {
                    continue;
                }
                fp.active_lanes = true;
                lanes[at].push(LaneFlops {
                    and,
                    region: r as u32,
                    esize: fp.precision.bits() / 8,
                    lanes: fp.lanes(),
                    flops_per_lane: fp.flops_per_lane,
                    width_index: flops_by_width_index(fp.precision, fp.vector_bits),
                });
            }
            let vl_bits = st.vl.map_or(0, |v| v.0);
            for (k, items) in lanes.iter_mut().enumerate() {
                let Some(pg) = infos[k].pg else { continue };
                if items.is_empty() {
                    continue;
                }
                let desc: &'static PredFp = Box::leak(Box::new(PredFp {
                    scoped,
                    pg,
                    vl_bits,
                    items: std::mem::take(items),
                }));
                qemu_plugin_register_vcpu_insn_exec_cb(
                    insns[k],
                    Some(on_predicated_fp),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_R_REGS,
                    desc as *const PredFp as *mut c_void,
                );
            }
        }
        let mut per_region: Vec<(usize, [u64; N_COUNTERS])> = Vec::new();
        let mut inline_records = false;
        for (&insn, info) in insns.iter().zip(&infos) {
            let pc = qemu_plugin_insn_vaddr(insn);
            let region = st.config.region_of(pc);
            let in_scope = scoped && st.config.in_scope(pc);
            let memory = info.loads || info.stores || info.counted_from_reports();
            let kind = info.mem_kind;
            let needs_desc =
                audit || info.counted_from_reports() || (kind == MemKind::Clipped && stream);
            // A return that loads its address (x86's `ret`) leaves the scope in its memory
            // callback, after its access is streamed: an execution callback runs before
            // the instruction, and the outermost return's access would be lost.
            let leaves_after_access = in_scope
                && info.returns
                && memory
                && stream
                && kind == MemKind::Exact
                && !needs_desc
                && region.is_some();
            if in_scope && info.returns && !leaves_after_access {
                qemu_plugin_register_vcpu_insn_exec_cb(
                    insn,
                    Some(scope::on_return),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    std::ptr::null_mut(),
                );
            }
            let Some(r) = region else {
                if restricted && info.helper && memory {
                    qemu_plugin_register_vcpu_mem_cb(
                        insn,
                        Some(memtrace::on_mem_drop),
                        qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                        qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW,
                        std::ptr::null_mut(),
                    );
                }
                continue;
            };
            match per_region.iter_mut().find(|(k, _)| *k == r) {
                Some((_, v)) => info.add_to(v),
                None => {
                    let mut v = [0u64; N_COUNTERS];
                    info.add_to(&mut v);
                    per_region.push((r, v));
                }
            }
            if !memory {
                continue;
            }
            if leaves_after_access {
                qemu_plugin_register_vcpu_mem_cb(
                    insn,
                    Some(memtrace::on_mem_return),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW,
                    std::ptr::null_mut(),
                );
                continue;
            }
            if !needs_desc {
                if stream && kind == MemKind::Exact && memtrace::inline::on() {
                    #[cfg(not(feature = "api-v1"))]
                    memtrace::inline::register(insn);
                    inline_records = true;
                } else if stream && kind == MemKind::Exact {
                    qemu_plugin_register_vcpu_mem_cb(
                        insn,
                        Some(pass_cb),
                        qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                        qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW,
                        std::ptr::null_mut(),
                    );
                }
                continue;
            }
            let audit_rec = audit.then(|| {
                let d = qemu_plugin_insn_disas(insn);
                let disas = if d.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(d).to_string_lossy().into_owned()
                };
                let a = memtrace::audit_register(Audit {
                    pc,
                    disas,
                    kind,
                    load_bytes: u64::from(info.load_bytes),
                    store_bytes: u64::from(info.store_bytes),
                    executions: AtomicU64::new(0),
                    emitted_loaded: AtomicU64::new(0),
                    emitted_stored: AtomicU64::new(0),
                    reported: AtomicU64::new(0),
                });
                api::count_insn(insn, &a.executions);
                a
            });
            // SVE contiguous accesses, reported per element: merged in the stream.
            let merge = stream
                && info.sve
                && kind == MemKind::Dynamic
                && memtrace::sve_contiguous(&api::insn_bytes(insn));
            let desc: &'static MemDesc = Box::leak(Box::new(MemDesc {
                kind,
                region: r as u32,
                scoped,
                load_bytes: info.load_bytes,
                store_bytes: info.store_bytes,
                audit: audit_rec,
                merge,
            }));
            let ud = desc as *const MemDesc as *mut c_void;
            if merge {
                qemu_plugin_register_vcpu_insn_exec_cb(
                    insn,
                    Some(memtrace::on_merge_exec),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    ud,
                );
            }
            if kind == MemKind::Clipped {
                qemu_plugin_register_vcpu_insn_exec_cb(
                    insn,
                    Some(memtrace::on_insn_clip),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    ud,
                );
            }
            if kind != MemKind::Unreported || audit {
                qemu_plugin_register_vcpu_mem_cb(
                    insn,
                    Some(memtrace::on_mem_desc),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW,
                    ud,
                );
            }
        }
        if inline_records {
            // The buffer is emptied at the start of a block once it is full.
            #[cfg(not(feature = "api-v1"))]
            memtrace::inline::register_check(tb);
        }
        let vaddr = qemu_plugin_tb_vaddr(tb);
        let entry = scoped && st.config.is_scope_entry(vaddr);
        if per_region.is_empty() && !entry {
            return;
        }
        let id = st.tbs.len() as u32;
        let mut inline = 0usize;
        if scoped {
            let ud = Box::into_raw(Box::new(scope::ScopeTb { id, entry }));
            qemu_plugin_register_vcpu_tb_exec_cb(
                tb,
                Some(scope::on_tb),
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                ud as *mut c_void,
            );
        } else if PER_VCPU.load(Ordering::Acquire) {
            qemu_plugin_register_vcpu_tb_exec_cb(
                tb,
                Some(on_tb_count),
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                id as usize as *mut c_void,
            );
        } else {
            inline = st.arena.add(tb);
        }
        st.tbs.push(TbRecord {
            stat: TbStatic {
                id,
                vaddr,
                counts: sparse(&per_region),
            },
            inline,
        });
    }
}

/// The FLOPs of one SVE FP instruction counted from a predicate's active lanes.
#[derive(Clone)]
#[cfg_attr(feature = "api-v1", allow(dead_code))]
struct LaneFlops {
    /// The instruction's own predicate, when it is counted at a predicated reader of its
    /// result: only lanes active under both count.
    and: Option<u8>,
    region: u32,
    /// Element size in bytes.
    esize: u32,
    /// Lanes of the vector length counted.
    lanes: u32,
    flops_per_lane: u32,
    /// Counter of the FLOPs of its width bucket.
    width_index: usize,
}

/// A predicated SVE instruction whose predicate's active lanes give the FLOPs of itself
/// and of the unpredicated instructions whose results it reads (one per instruction and
/// translation, never freed).
#[cfg_attr(feature = "api-v1", allow(dead_code))]
struct PredFp {
    scoped: bool,
    /// Governing predicate register.
    pg: u8,
    vl_bits: u32,
    items: Vec<LaneFlops>,
}

/// Execution callback (with register access) of a predicated SVE instruction.
extern "C" fn on_predicated_fp(vcpu: c_uint, ud: *mut c_void) {
    // SAFETY: `ud` is the leaked PredFp registered with this instruction.
    let d = unsafe { &*(ud as *const PredFp) };
    if d.scoped && !scope::active(vcpu) {
        return;
    }
    let v = vcpu::get(vcpu);
    for it in &d.items {
        #[cfg(not(feature = "api-v1"))]
        let read = api::predicate::active(d.pg, it.and, it.esize, d.vl_bits);
        #[cfg(feature = "api-v1")]
        let read: Option<u32> = None;
        let active = match read {
            Some(n) => n.min(it.lanes),
            None => {
                PREDICATE_FAILURES.fetch_add(1, Ordering::Relaxed);
                it.lanes
            }
        };
        let r = it.region as usize;
        let flops = u64::from(active * it.flops_per_lane);
        v.add_dynamic(r, Counter::Flops as usize, flops);
        v.add_dynamic(r, it.width_index, flops);
        v.add_dynamic(
            r,
            Counter::FlopsInactive as usize,
            u64::from((it.lanes - active) * it.flops_per_lane),
        );
    }
}

/// Where the main binary was loaded relative to its link-time addresses (0 unless PIE).
fn load_bias() -> u64 {
    let Some((path, start)) = api::binary_and_start_code() else {
        eprintln!(
            "hpcscope-qemu-plugin: this QEMU does not tell plugins where the program is loaded \
             (qemu_plugin_start_code is missing); region addresses are taken as run-time \
             addresses (right for programs not built as PIE)"
        );
        return 0;
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
static EXITED: AtomicBool = AtomicBool::new(false);
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
            while !EXITED.load(Ordering::Acquire) {
                std::thread::sleep(SNAPSHOT_PERIOD);
                if EXITED.load(Ordering::Acquire) {
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

/// Where one guest thread's executions are.
#[derive(Clone, Copy)]
enum Source<'a> {
    Running(&'a vcpu::Vcpu),
    Finished(&'a vcpu::Finished),
}

/// Executions as the plugin kept them: inline counters (thread 0), per-vCPU counters of
/// running threads, and the records of finished ones.
struct Live<'a> {
    /// Inline counter address per TB id (0: none).
    inline: &'a [usize],
    /// (thread number, vCPU index, source), and the position of each thread number.
    threads: Vec<(u32, u32, Source<'a>)>,
    by_thread: std::collections::HashMap<u32, usize>,
}

impl<'a> Live<'a> {
    fn new(
        inline: &'a [usize],
        live: &'a [(u32, &'a vcpu::Vcpu)],
        finished: &'a [vcpu::Finished],
    ) -> Self {
        let threads: Vec<(u32, u32, Source<'a>)> = live
            .iter()
            .map(|(i, v)| (v.thread, *i, Source::Running(v)))
            .chain(
                finished
                    .iter()
                    .map(|f| (f.thread, f.vcpu, Source::Finished(f))),
            )
            .collect();
        let by_thread = threads.iter().enumerate().map(|(k, t)| (t.0, k)).collect();
        Live {
            inline,
            threads,
            by_thread,
        }
    }

    fn source(&self, thread: u32) -> Option<Source<'a>> {
        self.by_thread.get(&thread).map(|&k| self.threads[k].2)
    }
}

impl Executions for Live<'_> {
    fn threads(&self) -> Vec<(u32, u32)> {
        self.threads.iter().map(|t| (t.0, t.1)).collect()
    }

    fn executions(&self, thread: u32, tb: &TbStatic) -> u64 {
        let counter = self.inline.get(tb.id as usize).copied().unwrap_or(0);
        let inline = if thread == 0 && counter != 0 {
            // SAFETY: the counter lives in the arena, which is never freed; read volatile
            // because the guest may still be incrementing it.
            unsafe { std::ptr::read_volatile(counter as *const u64) }
        } else {
            0
        };
        inline
            + match self.source(thread) {
                Some(Source::Running(v)) => v.executions(tb.id),
                Some(Source::Finished(f)) => f.execs.get(&tb.id).copied().unwrap_or(0),
                None => 0,
            }
    }

    fn dynamic(&self, thread: u32, region: usize) -> [u64; N_COUNTERS] {
        match self.source(thread) {
            Some(Source::Running(v)) => v.dynamic(region),
            Some(Source::Finished(f)) => f.dynamic.get(region).copied().unwrap_or([0; N_COUNTERS]),
            None => [0; N_COUNTERS],
        }
    }
}

/// The summary JSON of the counts so far; `mem` is the stream statistics at exit (None for
/// a snapshot taken while the guest runs, which then says `"partial": true`).
fn render(mem: Option<(u64, u64)>) -> Option<String> {
    // Copy what the tally needs and let translations go on meanwhile.
    let (stats, inline, target, vl, regions, scopes, load_bias, streamed, with_tbs, qemu_api) = {
        let st = STATE.get()?.lock().ok()?;
        (
            st.tbs
                .iter()
                .map(|t| t.stat.clone())
                .collect::<Vec<TbStatic>>(),
            st.tbs
                .iter()
                .map(|t| st.arena.address(t.inline))
                .collect::<Vec<usize>>(),
            st.target.clone(),
            st.vl,
            st.config.regions.clone(),
            st.config.scopes.clone(),
            st.load_bias.unwrap_or(0),
            st.config.mem,
            st.config.tbs,
            st.qemu_api,
        )
    };
    let t = vcpu::with_all(|live, finished| {
        tally(
            &stats,
            regions.len(),
            &Live::new(&inline, live, finished),
            with_tbs,
        )
    });
    let snapshot = mem.is_none();
    let run = RunInfo {
        target: &target,
        vl,
        regions: &regions,
        scopes: &scopes,
        load_bias,
        mem_records: if streamed { mem } else { None },
        counting: if PER_VCPU.load(Ordering::Relaxed) {
            "per_vcpu"
        } else {
            "inline"
        },
        lost_executions: vcpu::lost(),
        predication: if PREDICATES.load(Ordering::Relaxed) {
            "active_lanes"
        } else {
            "full_lanes"
        },
        plugin_api: api::PLUGIN_API,
        qemu_api,
        predicate_failures: PREDICATE_FAILURES.load(Ordering::Relaxed),
    };
    let mut json = crate::report::summary(&run, &t, with_tbs);
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

/// The audit report (`audit=`): per instruction address, executions, bytes per execution
/// from the encoding, and what reached the stream.
fn write_audit(path: &std::path::Path) {
    use std::collections::BTreeMap;
    let mut per_pc: BTreeMap<u64, serde_json::Value> = BTreeMap::new();
    for a in memtrace::audits() {
        let execs = a.executions.load(Ordering::Relaxed);
        let e = per_pc.entry(a.pc).or_insert_with(|| {
            serde_json::json!({
                "pc": a.pc, "disas": a.disas, "kind": format!("{:?}", a.kind).to_lowercase(),
                "executions": 0u64, "load_bytes": a.load_bytes, "store_bytes": a.store_bytes,
                "streamed_loaded": 0u64, "streamed_stored": 0u64, "reported": 0u64,
            })
        });
        let add = |e: &mut serde_json::Value, k: &str, n: u64| {
            e[k] = serde_json::json!(e[k].as_u64().unwrap_or(0) + n);
        };
        add(e, "executions", execs);
        add(
            e,
            "streamed_loaded",
            a.emitted_loaded.load(Ordering::Relaxed),
        );
        add(
            e,
            "streamed_stored",
            a.emitted_stored.load(Ordering::Relaxed),
        );
        add(e, "reported", a.reported.load(Ordering::Relaxed));
    }
    let rows: Vec<serde_json::Value> = per_pc
        .into_values()
        .filter(|e| e["executions"].as_u64().unwrap_or(0) > 0)
        .collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({ "instructions": rows }))
        .unwrap_or_default();
    if let Err(e) = std::fs::write(path, text + "\n") {
        eprintln!("hpcscope-qemu-plugin: audit={}: {e}", path.display());
    }
}

fn on_exit() {
    EXITED.store(true, Ordering::Release);
    if crate::fork::is_child() {
        // A child the guest forked: its parent reports (see `fork`).
        return;
    }
    let mem = memtrace::finish();
    let Some(text) = render(Some(mem)) else {
        return;
    };
    let (out, audit) = STATE
        .get()
        .and_then(|m| m.lock().ok())
        .map(|st| (st.config.out.clone(), st.config.audit.clone()))
        .unwrap_or_default();
    if let Some(a) = audit {
        write_audit(&a);
    }
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
