//! The memory stream (`memfd=N`): every access of the counted instructions as a record of
//! `hpcscope_plugin_format`'s stream, in the QEMU plugin's framing, for `hpcscope mix`'s
//! cache simulation.
//!
//! The instrumented code writes the records itself: before an instruction, for each of its
//! memory operands, its address (computed by drutil from the application's registers) and
//! the record's top byte (size and direction, known when the block is built) go into the
//! thread's drx trace buffer (64 Ki records, a guard page behind it). A full buffer faults
//! on the guard page; drx then hands it to [`full`], which applies coalescing
//! (`coalesce=B`), and writes the batch after its thread's marker (and two skip records
//! when set sampling's gate left accesses out) with one locked write to the pipe. An
//! instruction's records are written from the last to the first, so that only the first
//! store of an instruction can reach the guard page (the records before it in the buffer
//! are then whole).
//!
//! With set sampling (`sample=`), the gate runs in the instrumented code, before a record
//! is written ([`insert_inline`]): an access none of whose lines is in a sampled class is
//! not written, and what was left out is derived with each batch from the blocks'
//! execution counters ([`crate::take_left_out`]); a kept one is written and its buffer
//! pointer moved on at once,
//! so that a guard page met by a later record of the same instruction finds it handed over.
//! The clean calls below gate their records as they write them; an operand wider than a
//! line is written whole, and once such code exists every batch goes through
//! [`gate_in_place`].
//!
//! What the instrumented code cannot know before the instruction runs goes through a clean
//! call ([`dynamic_access`]): `rep movs`/`stos`/`lods` (the range from `rcx`, `rsi`, `rdi`
//! and the direction flag), gathers and scatters (each active element, from DynamoRIO's
//! address computation under the mask), and masked AVX-512 moves (each active lane's
//! element, from the mask register). The same call adds the bytes of the string
//! instructions, gathers and scatters to the thread's counters, whether or not the stream
//! is on. Not streamed: `xsave`/`xrstor` (their size depends on the processor's state) and
//! `repe cmps`/`scas` (where they stop is known only after they run): the counts say how
//! many executions were left out.

use std::ffi::c_void;
use std::fs::File;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use dynamorio_sys as dr;
use hpcscope_plugin_format::gate::{SampleGate, gate_in_place};
use hpcscope_plugin_format::{
    MAGIC, coalesce_in_place, end_marker, record, skip_record, thread_marker,
};

use crate::classify::Info;

/// Records of a thread's buffer (512 KiB).
pub const BUF_RECORDS: usize = 1 << 16;

/// The stream's settings (client arguments `memfd=`, `coalesce=`, `sample=`).
#[derive(Debug)]
pub struct Config {
    pub fd: i32,
    /// Coalescing block minus one (0: none).
    pub mask: u64,
    pub gate: Option<SampleGate>,
}

static CONFIG: OnceLock<Config> = OnceLock::new();
static SINK: Mutex<Option<ManuallyDrop<File>>> = Mutex::new(None);
static BUF: AtomicPtr<dr::drx_buf_t> = AtomicPtr::new(std::ptr::null_mut());
/// Set sampling's gate as the instrumented code reads it: one byte per class (1: sampled),
/// for the whole run (null without `sample=`).
static GATE_TABLE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
/// Whether some instrumented code writes records the gate has not seen (operands wider
/// than a line): batches then go through [`gate_in_place`]; else every record in them was
/// gated where it was written.
static UNGATED: AtomicBool = AtomicBool::new(false);
static BROKEN: AtomicBool = AtomicBool::new(false);
/// Records written, and lost after a write error.
pub static WRITTEN: AtomicU64 = AtomicU64::new(0);
pub static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Executions of instructions whose accesses the stream leaves out.
pub static UNSTREAMED: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" {
    fn fcntl(fd: std::ffi::c_int, cmd: std::ffi::c_int, ...) -> std::ffi::c_int;
}
/// Linux `F_SETPIPE_SZ`.
const F_SETPIPE_SZ: std::ffi::c_int = 1031;

/// Writes nothing more (a forked child: the pipe is its parent's).
pub fn silence() {
    BROKEN.store(true, Ordering::Relaxed);
}

/// Whether the stream is on.
#[inline]
pub fn on() -> bool {
    !BUF.load(Ordering::Relaxed).is_null()
}

/// Opens the stream: the header, and the threads' buffers.
pub fn open(cfg: Config) -> Result<(), String> {
    // SAFETY: the descriptor hpcscope passed (inherited, open for writing); never closed
    // here (ManuallyDrop): the program may outlive the client's exit event.
    let mut f = ManuallyDrop::new(unsafe { File::from_raw_fd(cfg.fd) });
    // SAFETY: fcntl on that descriptor; failure (not a pipe) is harmless.
    unsafe { fcntl(cfg.fd, F_SETPIPE_SZ, 1 << 20) };
    f.write_all(MAGIC)
        .map_err(|e| format!("cannot write the memory stream (memfd={}): {e}", cfg.fd))?;
    *SINK.lock().unwrap_or_else(|e| e.into_inner()) = Some(f);
    if let Some(g) = &cfg.gate {
        let table: Vec<u8> = (0..g.modulus).map(|c| u8::from(g.line(c))).collect();
        GATE_TABLE.store(table.leak().as_mut_ptr(), Ordering::Relaxed);
    }
    let _ = CONFIG.set(cfg);
    // SAFETY: drx is initialized (dr_client_main) before this.
    let buf = unsafe { dr::drx_buf_create_trace_buffer(BUF_RECORDS * 8, Some(full)) };
    if buf.is_null() {
        return Err("cannot create the threads' record buffers (drx_buf)".into());
    }
    BUF.store(buf, Ordering::Relaxed);
    Ok(())
}

fn write_words(words: &[u64]) {
    if BROKEN.load(Ordering::Relaxed) {
        DROPPED.fetch_add(words.len() as u64, Ordering::Relaxed);
        return;
    }
    let mut sink = SINK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = sink.as_mut() else {
        return;
    };
    // SAFETY: plain words viewed as their bytes (little-endian on x86-64).
    let bytes = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 8) };
    if f.write_all(bytes).is_ok() {
        WRITTEN.fetch_add(words.len() as u64, Ordering::Relaxed);
    } else {
        BROKEN.store(true, Ordering::Relaxed);
        DROPPED.fetch_add(words.len() as u64, Ordering::Relaxed);
    }
}

/// Writes a batch of the records of the thread of `dc`: gated, coalesced, after its
/// marker, with the accesses its instrumented code left out since the last batch.
fn write_batch(dc: *mut c_void, v: &mut [u64]) {
    let Some(cfg) = CONFIG.get() else { return };
    let thread = crate::thread_number(dc);
    let mut n = v.len();
    let mut skipped = (0, 0);
    if let Some(g) = &cfg.gate {
        let bytes = v.iter().map(|r| 1u64 << ((r >> 56) & 0xf)).sum();
        let left_out = crate::take_left_out(dc, n as u64, bytes, false);
        let (kept, a, b) = if UNGATED.load(Ordering::Relaxed) {
            gate_in_place(v, g)
        } else {
            (n, 0, 0)
        };
        (n, skipped) = (kept, (a + left_out[0], b + left_out[1]));
    }
    let n = coalesce_in_place(&mut v[..n], cfg.mask);
    if n == 0 && skipped.0 == 0 {
        return;
    }
    let mut words = Vec::with_capacity(n + 3);
    words.push(thread_marker(thread));
    if skipped.0 > 0 {
        words.push(skip_record(skipped.0, false));
        words.push(skip_record(skipped.1, true));
    }
    words.extend_from_slice(&v[..n]);
    write_words(&words);
}

/// drx's callback of a full buffer (and of a thread's last records, at its exit). Records
/// written outside every `scope=` function are dropped (see [`crate::counting`]).
unsafe extern "C" fn full(dc: *mut c_void, base: *mut c_void, size: usize) {
    if !crate::counting(dc) {
        return;
    }
    // SAFETY: drx hands the thread's own buffer, `size` bytes of records.
    let v = unsafe { std::slice::from_raw_parts_mut(base.cast::<u64>(), size / 8) };
    write_batch(dc, v);
}

/// Drops the records of the thread of `dc` not handed over yet (written outside every
/// scope, which the thread now enters).
///
/// # Safety
/// `dc` is the running thread's context.
pub unsafe fn discard(dc: *mut c_void) {
    let buf = BUF.load(Ordering::Relaxed);
    if !buf.is_null() {
        // SAFETY: the thread's own buffer.
        unsafe { dr::drx_buf_set_buffer_ptr(dc, buf, dr::drx_buf_get_buffer_base(dc, buf)) };
    }
    // And the accesses its clean calls wrote and left out there.
    crate::forget_batch(dc);
}

/// Hands over the records of the thread of `dc` written so far (inside a scope, which the
/// thread now leaves).
///
/// # Safety
/// `dc` is the running thread's context.
pub unsafe fn flush(dc: *mut c_void) {
    let buf = BUF.load(Ordering::Relaxed);
    if buf.is_null() {
        return;
    }
    // SAFETY: the thread's own buffer, records from its base to its pointer.
    unsafe {
        let base = dr::drx_buf_get_buffer_base(dc, buf).cast::<u64>();
        let p = dr::drx_buf_get_buffer_ptr(dc, buf).cast::<u64>();
        let n = p.offset_from(base).max(0) as usize;
        write_batch(dc, std::slice::from_raw_parts_mut(base, n));
        dr::drx_buf_set_buffer_ptr(dc, buf, base.cast());
    }
}

/// A thread started: its marker alone.
pub fn thread_started(thread: u32) {
    if on() {
        write_words(&[thread_marker(thread)]);
    }
}

/// A thread exits (after drx handed its last records to [`full`]): the rest of what its
/// gate left out (see [`crate::take_left_out`]), then its end marker.
pub fn thread_ended(dc: *mut c_void, thread: u32) {
    if !on() {
        return;
    }
    if CONFIG.get().is_some_and(|c| c.gate.is_some()) {
        let [a, b] = crate::take_left_out(dc, 0, 0, true);
        if a > 0 {
            write_words(&[
                thread_marker(thread),
                skip_record(a, false),
                skip_record(b, true),
            ]);
        }
    }
    write_words(&[end_marker(thread)]);
}

/// The gated operands of an instruction written inline, and their bytes, per execution
/// (None without set sampling's gate): what [`insert_inline`] writes through the gate, an
/// operand wider than a line included (written whole, for the batch's gate).
///
/// # Safety
/// `instr` is an instruction of the block being built.
pub unsafe fn gated_operands(instr: *mut dr::instr_t) -> Option<(u64, u64)> {
    CONFIG.get().and_then(|c| c.gate.as_ref())?;
    if GATE_TABLE.load(Ordering::Relaxed).is_null() {
        return None;
    }
    // SAFETY: the caller's instruction.
    let ops = unsafe { inline_operands(instr) };
    Some((
        ops.len() as u64,
        ops.iter().map(|(_, top)| 1u64 << (top & 0xf)).sum(),
    ))
}

/// The top byte of a record of `bytes` bytes (rounded up to a power of two, at most
/// 2^12), `store` or not; None for an operand of no fixed size.
fn top_byte(bytes: u32, store: bool) -> Option<u8> {
    if bytes == 0 {
        return None;
    }
    let shift = bytes.next_power_of_two().trailing_zeros().min(12);
    Some((record(0, shift, store) >> 56) as u8)
}

/// The memory operands of `instr` written inline: (operand, record top byte), loads then
/// stores (the QEMU plugin's order), gathers', scatters' and unsized ones left out.
unsafe fn inline_operands(instr: *mut dr::instr_t) -> Vec<(dr::opnd_t, u8)> {
    let mut ops = Vec::new();
    // SAFETY: queries on the instruction being instrumented.
    unsafe {
        for (n, store) in [
            (dr::instr_num_srcs(instr), false),
            (dr::instr_num_dsts(instr), true),
        ] {
            for i in 0..n.max(0) as u32 {
                let o = if store {
                    dr::instr_get_dst(instr, i)
                } else {
                    dr::instr_get_src(instr, i)
                };
                if dr::opnd_is_memory_reference(o) == 0 || dr::opnd_is_vsib(o) != 0 {
                    continue;
                }
                if let Some(top) = top_byte(dr::opnd_size_in_bytes(dr::opnd_get_size(o)), store) {
                    ops.push((o, top));
                }
            }
        }
    }
    ops
}

/// How an instruction's accesses reach the stream.
pub enum Plan {
    /// None (no access, or not in a counted range).
    Nothing,
    /// Written inline.
    Inline,
    /// Through [`dynamic_access`].
    Dynamic(Kind),
    /// Left out (counted in [`UNSTREAMED`]).
    Unstreamed,
}

/// What [`dynamic_access`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `rep movs` (load and store), `rep stos` (store), `rep lods` (load) of `elem`-byte
    /// elements.
    RepString { load: bool, store: bool, elem: u32 },
    /// A gather or scatter of `elem`-byte elements.
    Vector { store: bool, elem: u32 },
    /// A masked move of `lanes` `elem`-byte lanes under opmask register `mask`.
    Masked {
        store: bool,
        elem: u32,
        lanes: u32,
        mask: dr::reg_id_t,
    },
}

/// The plan of an instruction counted in region `region`.
pub unsafe fn plan(instr: *mut dr::instr_t, info: &Info, name: &str) -> Plan {
    if !info.loads && !info.stores {
        return Plan::Nothing;
    }
    // SAFETY: queries on the instruction being instrumented.
    unsafe {
        let mem_elem = || {
            let n = dr::instr_num_srcs(instr).max(0) as u32;
            let m = dr::instr_num_dsts(instr).max(0) as u32;
            (0..n)
                .map(|i| dr::instr_get_src(instr, i))
                .chain((0..m).map(|i| dr::instr_get_dst(instr, i)))
                .find(|o| dr::opnd_is_memory_reference(*o) != 0)
                .map_or(0, |o| dr::opnd_size_in_bytes(dr::opnd_get_size(o)))
        };
        let op = dr::instr_get_opcode(instr);
        let rep = [
            (dr::OP_rep_movs, true, true),
            (dr::OP_rep_stos, false, true),
            (dr::OP_rep_lods, true, false),
        ]
        .into_iter()
        .find(|r| r.0 as i32 == op);
        if let Some((_, load, store)) = rep {
            let elem = mem_elem();
            if elem == 0 {
                return Plan::Unstreamed;
            }
            return Plan::Dynamic(Kind::RepString { load, store, elem });
        }
        // `repe cmps`, `repne scas`...: where they stop is known after they ran.
        if name.starts_with("rep") {
            return Plan::Unstreamed;
        }
        if dr::instr_is_gather(instr) != 0 || dr::instr_is_scatter(instr) != 0 {
            return Plan::Dynamic(Kind::Vector {
                store: dr::instr_is_scatter(instr) != 0,
                elem: mem_elem().max(1),
            });
        }
        if let (Some(mask), Some(elem), None) = (info.mask, info.mask_elem_bytes, info.fp) {
            let bytes = info.load_bytes.max(info.store_bytes);
            return Plan::Dynamic(Kind::Masked {
                store: info.stores,
                elem,
                lanes: (bytes / elem.max(1)).max(1),
                mask,
            });
        }
        if info.dynamic_mem {
            return Plan::Unstreamed;
        }
    }
    Plan::Inline
}

/// Writes the records of `instr`'s memory operands into the thread's buffer, before it
/// (with set sampling, those its gate keeps: see the module's documentation).
pub unsafe fn insert_inline(dc: *mut c_void, bb: *mut dr::instrlist_t, instr: *mut dr::instr_t) {
    // SAFETY: drmgr's insertion phase on the block being built.
    unsafe {
        let ops = inline_operands(instr);
        if ops.is_empty() {
            return;
        }
        match (
            CONFIG.get().and_then(|c| c.gate.as_ref()),
            GATE_TABLE.load(Ordering::Relaxed),
        ) {
            (Some(g), table) if !table.is_null() => insert_gated(dc, bb, instr, &ops, g, table),
            _ => insert_all(dc, bb, instr, &ops),
        }
    }
}

/// Loads the thread's buffer pointer into `ptr` and writes a record at `off` bytes from
/// it: the address in `addr`, then its top byte `top` (size and direction).
unsafe fn store_record(
    dc: *mut c_void,
    bb: *mut dr::instrlist_t,
    instr: *mut dr::instr_t,
    ptr: dr::reg_id_t,
    addr: dr::reg_id_t,
    top: u8,
    off: i16,
) {
    let buf = BUF.load(Ordering::Relaxed);
    // SAFETY: the caller's block, being built; `ptr` and `addr` reserved by the caller.
    unsafe {
        dr::drx_buf_insert_load_buf_ptr(dc, buf, bb, instr, ptr);
        for (value, size, at) in [
            (dr::opnd_create_reg(addr), dr::OPSZ_8, off),
            (
                dr::opnd_create_immed_int(i64::from(top as i8), dr::OPSZ_1 as _),
                dr::OPSZ_1,
                off + 7,
            ),
        ] {
            let null = dr::DR_REG_NULL as _;
            dr::drx_buf_insert_buf_store(dc, buf, bb, instr, ptr, null, value, size as _, at);
        }
    }
}

/// Every record of `ops`, `instr`'s memory operands.
unsafe fn insert_all(
    dc: *mut c_void,
    bb: *mut dr::instrlist_t,
    instr: *mut dr::instr_t,
    ops: &[(dr::opnd_t, u8)],
) {
    let buf = BUF.load(Ordering::Relaxed);
    // SAFETY: drmgr's insertion phase on the block being built.
    unsafe {
        let (mut ptr, mut addr): (dr::reg_id_t, dr::reg_id_t) = (0, 0);
        if dr::drreg_reserve_aflags(dc, bb, instr) != dr::drreg_status_t_DRREG_SUCCESS
            || dr::drreg_reserve_register(dc, bb, instr, std::ptr::null_mut(), &mut ptr)
                != dr::drreg_status_t_DRREG_SUCCESS
            || dr::drreg_reserve_register(dc, bb, instr, std::ptr::null_mut(), &mut addr)
                != dr::drreg_status_t_DRREG_SUCCESS
        {
            dr::dr_abort_with_code(1);
        }
        // Last record first: only the first store can meet the guard page.
        for (k, (o, top)) in ops.iter().enumerate().rev() {
            if dr::drutil_insert_get_mem_addr(dc, bb, instr, *o, addr, ptr) == 0 {
                dr::dr_abort_with_code(1);
            }
            store_record(dc, bb, instr, ptr, addr, *top, (8 * k) as i16);
        }
        dr::drx_buf_insert_update_buf_ptr(
            dc,
            buf,
            bb,
            instr,
            ptr,
            dr::DR_REG_NULL as _,
            (8 * ops.len()) as u16,
        );
        dr::drreg_unreserve_register(dc, bb, instr, addr);
        dr::drreg_unreserve_register(dc, bb, instr, ptr);
        dr::drreg_unreserve_aflags(dc, bb, instr);
    }
}

/// Inserts `i` before `at` as instrumentation (not the application's).
unsafe fn meta(bb: *mut dr::instrlist_t, at: *mut dr::instr_t, i: *mut dr::instr_t) {
    // SAFETY: the caller's block, being built.
    unsafe { dr::instrlist_meta_preinsert(bb, at, i) };
}

/// `[base + index + disp]`, `size` bytes.
unsafe fn mem(base: dr::reg_id_t, index: dr::reg_id_t, disp: i32, size: u32) -> dr::opnd_t {
    // SAFETY: operand construction only.
    unsafe { dr::opnd_create_base_disp(base, index, 1, disp, size as _) }
}

/// The records of `ops` that set sampling's gate `g` keeps (`table`: its byte per class),
/// each written and committed on its own. Per operand, in the instrumented code:
///
/// ```text
///     addr  <- the operand's address
///     t     <- table
///     ptr   <- (addr >> line) & (classes - 1);  cmp byte [t + ptr], 0;  jnz keep
///     ptr   <- ((addr + size - 1) >> line) & (classes - 1);  cmp byte [t + ptr], 0;  jz done
/// keep:
///     ptr   <- the buffer pointer;  [ptr] <- addr, top byte;  the buffer pointer <- ptr + 8
/// done:
/// ```
///
/// (The second test only for an access of more than one byte; with one test, `jz done`.)
/// What it leaves out is not counted here: [`crate::take_left_out`] derives it from the
/// blocks' execution counters when a batch is handed over (two additions to the same two
/// words on every access left out cost a third of the gate's time on a random-access code,
/// a chain through memory). An access wider than a line is written whole, for the batch's
/// gate.
unsafe fn insert_gated(
    dc: *mut c_void,
    bb: *mut dr::instrlist_t,
    instr: *mut dr::instr_t,
    ops: &[(dr::opnd_t, u8)],
    g: &SampleGate,
    table: *mut u8,
) {
    let buf = BUF.load(Ordering::Relaxed);
    // SAFETY: drmgr's insertion phase on the block being built; the branches stay inside
    // the instrumentation of this instruction, between the registers' reservation and
    // release (drreg's spills before, restores after).
    unsafe {
        let (mut ptr, mut addr, mut t): (dr::reg_id_t, dr::reg_id_t, dr::reg_id_t) = (0, 0, 0);
        if dr::drreg_reserve_aflags(dc, bb, instr) != dr::drreg_status_t_DRREG_SUCCESS
            || dr::drreg_reserve_register(dc, bb, instr, std::ptr::null_mut(), &mut ptr)
                != dr::drreg_status_t_DRREG_SUCCESS
            || dr::drreg_reserve_register(dc, bb, instr, std::ptr::null_mut(), &mut addr)
                != dr::drreg_status_t_DRREG_SUCCESS
            || dr::drreg_reserve_register(dc, bb, instr, std::ptr::null_mut(), &mut t)
                != dr::drreg_status_t_DRREG_SUCCESS
        {
            dr::dr_abort_with_code(1);
        }
        let reg = |r: dr::reg_id_t| dr::opnd_create_reg(r);
        let imm = |v: i64, size: u32| dr::opnd_create_immed_int(v, size as _);
        let classes = (g.modulus - 1) as i64;
        let line_bytes = 1u64 << g.line_shift;
        for (o, top) in ops {
            let size = 1u64 << (top & 0xf);
            if dr::drutil_insert_get_mem_addr(dc, bb, instr, *o, addr, ptr) == 0 {
                dr::dr_abort_with_code(1);
            }
            let keep = dr::instr_create_0dst_0src(dc, dr::OP_LABEL as _);
            let done = dr::instr_create_0dst_0src(dc, dr::OP_LABEL as _);
            if size > line_bytes {
                UNGATED.store(true, Ordering::Relaxed);
            } else {
                meta(
                    bb,
                    instr,
                    dr::instr_create_1dst_1src(
                        dc,
                        dr::OP_mov_imm as _,
                        reg(t),
                        dr::opnd_create_immed_int64(table as i64, dr::OPSZ_8 as _),
                    ),
                );
                // The class of the access's first byte's line, then of its last byte's.
                let tests = if size == 1 { 1 } else { 2 };
                for k in 0..tests {
                    let last = k == 1;
                    let first = if last {
                        dr::instr_create_1dst_1src(
                            dc,
                            dr::OP_lea as _,
                            reg(ptr),
                            mem(addr, dr::DR_REG_NULL as _, (size - 1) as i32, dr::OPSZ_0),
                        )
                    } else {
                        dr::instr_create_1dst_1src(dc, dr::OP_mov_ld as _, reg(ptr), reg(addr))
                    };
                    meta(bb, instr, first);
                    let shift = imm(i64::from(g.line_shift), dr::OPSZ_1);
                    meta(
                        bb,
                        instr,
                        dr::instr_create_1dst_2src(dc, dr::OP_shr as _, reg(ptr), shift, reg(ptr)),
                    );
                    meta(
                        bb,
                        instr,
                        dr::instr_create_1dst_2src(
                            dc,
                            dr::OP_and as _,
                            reg(ptr),
                            imm(classes, dr::OPSZ_4),
                            reg(ptr),
                        ),
                    );
                    meta(
                        bb,
                        instr,
                        dr::instr_create_0dst_2src(
                            dc,
                            dr::OP_cmp as _,
                            mem(t, ptr, 0, dr::OPSZ_1),
                            imm(0, dr::OPSZ_1),
                        ),
                    );
                    // The last test skips the record when its class is not kept either;
                    // an earlier one goes to it when its class is.
                    let (op, to) = if k + 1 == tests {
                        (dr::OP_jz, done)
                    } else {
                        (dr::OP_jnz, keep)
                    };
                    meta(
                        bb,
                        instr,
                        dr::instr_create_0dst_1src(dc, op as _, dr::opnd_create_instr(to)),
                    );
                }
            }
            meta(bb, instr, keep);
            store_record(dc, bb, instr, ptr, addr, *top, 0);
            dr::drx_buf_insert_update_buf_ptr(dc, buf, bb, instr, ptr, dr::DR_REG_NULL as _, 8);
            meta(bb, instr, done);
        }
        dr::drreg_unreserve_register(dc, bb, instr, t);
        dr::drreg_unreserve_register(dc, bb, instr, addr);
        dr::drreg_unreserve_register(dc, bb, instr, ptr);
        dr::drreg_unreserve_aflags(dc, bb, instr);
    }
}

/// What the clean call before a dynamic access needs: the instruction (a copy), what to
/// compute, and the counter array its bytes go to (None: outside the counted ranges).
pub struct Dynamic {
    pub instr: *mut dr::instr_t,
    pub kind: Kind,
    pub region: Option<usize>,
}

/// Inserts the clean call of a dynamic access before `instr`.
pub unsafe fn insert_dynamic(
    dc: *mut c_void,
    bb: *mut dr::instrlist_t,
    instr: *mut dr::instr_t,
    kind: Kind,
    region: Option<usize>,
) {
    // SAFETY: as above; the copy lives in DynamoRIO's global heap for the whole run (a
    // block built again makes another: a few bytes per build).
    unsafe {
        let copy = dr::instr_clone(usize::MAX as *mut c_void, instr);
        let d = Box::into_raw(Box::new(Dynamic {
            instr: copy,
            kind,
            region,
        }));
        dr::dr_insert_clean_call_ex(
            dc,
            bb,
            instr,
            dynamic_access as *mut c_void,
            dr::dr_cleancall_save_t_DR_CLEANCALL_READS_APP_CONTEXT,
            1,
            dr::opnd_create_immed_int(d as i64, dr::OPSZ_8 as _),
        );
    }
}

/// Appends records to the running thread's buffer (writing it out when full).
struct Appender {
    dc: *mut c_void,
    base: *mut u64,
    end: *mut u64,
    p: *mut u64,
    on: bool,
}

impl Appender {
    unsafe fn new(dc: *mut c_void) -> Appender {
        let buf = BUF.load(Ordering::Relaxed);
        if buf.is_null() {
            let n = std::ptr::null_mut();
            return Appender {
                dc,
                base: n,
                end: n,
                p: n,
                on: false,
            };
        }
        // SAFETY: the thread's own buffer.
        unsafe {
            let base = dr::drx_buf_get_buffer_base(dc, buf).cast::<u64>();
            let size = dr::drx_buf_get_buffer_size(dc, buf) / 8;
            Appender {
                dc,
                base,
                end: base.add(size),
                p: dr::drx_buf_get_buffer_ptr(dc, buf).cast::<u64>(),
                on: true,
            }
        }
    }

    #[inline]
    fn push(&mut self, rec: u64) {
        if !self.on {
            return;
        }
        // Gated here, as the instrumented code gates its records.
        if let Some(g) = CONFIG.get().and_then(|c| c.gate.as_ref())
            && !g.keeps(rec)
        {
            crate::add_skipped(self.dc, 1, 1 << ((rec >> 56) & 0xf));
            return;
        }
        if self.p >= self.end {
            if crate::counting(self.dc) {
                // SAFETY: the records from base to p are this thread's.
                let n = unsafe { self.p.offset_from(self.base) } as usize;
                let v = unsafe { std::slice::from_raw_parts_mut(self.base, n) };
                write_batch(self.dc, v);
            }
            self.p = self.base;
        }
        // SAFETY: below end.
        unsafe {
            *self.p = rec;
            self.p = self.p.add(1);
        }
        crate::add_dynamic_kept(self.dc, 1 << ((rec >> 56) & 0xf));
    }

    /// The accesses of `[start, start + len)`, one direction (see [`pieces`]).
    fn range(&mut self, start: u64, len: u64, store: bool) {
        for (a, shift) in pieces(start, len) {
            self.push(record(a, shift, store));
        }
    }
}

/// `[start, start + len)` as accesses of power-of-two sizes, none crossing a 64-byte line,
/// the largest first in each line: (address, log2 of the size).
pub fn pieces(start: u64, len: u64) -> impl Iterator<Item = (u64, u32)> {
    let (mut a, end) = (start, start.saturating_add(len));
    std::iter::from_fn(move || {
        if a >= end {
            return None;
        }
        let line_end = (a | 63).saturating_add(1).min(end);
        let shift = 63 - (line_end - a).leading_zeros();
        let piece = (a, shift);
        a += 1 << shift;
        Some(piece)
    })
}

impl Drop for Appender {
    fn drop(&mut self) {
        if self.on {
            // SAFETY: the thread's own buffer pointer, inside it.
            unsafe {
                dr::drx_buf_set_buffer_ptr(self.dc, BUF.load(Ordering::Relaxed), self.p.cast())
            };
        }
    }
}

/// The clean call before a dynamic access: its records, and the bytes of string
/// instructions, gathers and scatters.
unsafe extern "C" fn dynamic_access(d: *const Dynamic) {
    // SAFETY: `d` is a leaked `Dynamic` of insert_dynamic; the machine context is the
    // application's at the instruction (DR_CLEANCALL_READS_APP_CONTEXT).
    unsafe {
        let d = &*d;
        let dc = dr::dr_get_current_drcontext();
        let mut mc: dr::dr_mcontext_t = std::mem::zeroed();
        mc.size = std::mem::size_of::<dr::dr_mcontext_t>();
        mc.flags = dr::dr_mcontext_flags_t::DR_MC_ALL;
        if dr::dr_get_mcontext(dc, &mut mc) == 0 {
            UNSTREAMED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let stream = d.region.is_some() && on();
        let mut out = Appender::new(dc);
        out.on &= stream;
        let (mut loaded, mut stored) = (0u64, 0u64);
        match d.kind {
            Kind::RepString { load, store, elem } => {
                let n = mc.__bindgen_anon_7.rcx as u64;
                let bytes = n.saturating_mul(u64::from(elem));
                let down = mc.__bindgen_anon_9.xflags as u64 & 0x400 != 0;
                let first = |p: u64| {
                    if down {
                        p.wrapping_sub(bytes).wrapping_add(u64::from(elem))
                    } else {
                        p
                    }
                };
                if load {
                    out.range(first(mc.__bindgen_anon_2.rsi as u64), bytes, false);
                    loaded = bytes;
                }
                if store {
                    out.range(first(mc.__bindgen_anon_1.rdi as u64), bytes, true);
                    stored = bytes;
                }
            }
            Kind::Vector { store, elem } => {
                let shift = elem.next_power_of_two().trailing_zeros().min(12);
                let mut i = 0;
                let mut addr: dr::app_pc = std::ptr::null_mut();
                let mut w: dr::bool_ = 0;
                while dr::instr_compute_address_ex(d.instr, &mut mc, i, &mut addr, &mut w) != 0 {
                    out.push(record(addr as u64, shift, store));
                    i += 1;
                }
                let bytes = u64::from(i) * u64::from(elem);
                if store {
                    stored = bytes;
                } else {
                    loaded = bytes;
                }
            }
            Kind::Masked {
                store,
                elem,
                lanes,
                mask,
            } => {
                let k = (mask - dr::DR_REG_K0 as dr::reg_id_t) as usize;
                let bits = mc.opmask.get(k).copied().unwrap_or(0) as u64;
                let bits = if lanes >= 64 {
                    bits
                } else {
                    bits & ((1 << lanes) - 1)
                };
                let mut base: dr::app_pc = std::ptr::null_mut();
                let mut w: dr::bool_ = 0;
                if out.on
                    && dr::instr_compute_address_ex(d.instr, &mut mc, 0, &mut base, &mut w) != 0
                {
                    let e = u64::from(elem);
                    let mut l = 0u32;
                    while l < lanes {
                        if bits >> l & 1 == 0 {
                            l += 1;
                            continue;
                        }
                        let run = (bits >> l).trailing_ones().min(lanes - l);
                        out.range(base as u64 + u64::from(l) * e, u64::from(run) * e, store);
                        l += run;
                    }
                }
                // Masked moves' bytes are counted inline (lib.rs).
            }
        }
        if let Some(r) = d.region {
            crate::add_dynamic_bytes(r, loaded, stored);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_range_inside_lines() {
        for (start, len) in [
            (0u64, 0u64),
            (0, 64),
            (3, 1),
            (0x1003, 200),
            (60, 8),
            (7, 4096),
        ] {
            let mut next = start;
            for (a, shift) in pieces(start, len) {
                assert_eq!(a, next, "{start} {len}");
                let size = 1u64 << shift;
                assert_eq!(a / 64, (a + size - 1) / 64, "{a:#x} {size} crosses a line");
                next = a + size;
            }
            assert_eq!(next, start + len, "{start} {len}");
        }
        // A whole line is one access.
        assert_eq!(pieces(128, 64).collect::<Vec<_>>(), vec![(128, 6)]);
    }

    #[test]
    fn top_bytes() {
        assert_eq!(top_byte(8, false), Some(3));
        assert_eq!(top_byte(64, true), Some(0x80 | 6));
        // A 10-byte x87 operand is recorded as 16 bytes; none above 4 KiB.
        assert_eq!(top_byte(10, false), Some(4));
        assert_eq!(top_byte(1 << 14, false), Some(12));
        assert_eq!(top_byte(0, false), None);
    }
}
