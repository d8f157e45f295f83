// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hpcscope probes: syscalls, scheduler, page faults, block and file I/O, user-function
 * latency (uprobe slots, with the message sizes of MPI calls), USDT probe hits, rates over
 * time (a ring of per-CPU interval buckets) and cpu-clock stack samples.
 *
 * Everything is aggregated here, in per-CPU, per-thread or per-process maps (the tables
 * that grow with the target are allocated at run time, up to a size the loader sets from
 * it; a failed insert is counted, never silent); user space reads the maps
 * once at the end (and drains a small ring buffer of process lifecycle events). Which
 * processes count is decided by `tracked()`: a tgid present in `targets` (the launched or
 * attached process and every process it forks), or, when `cfg_cgroup` is set, membership in
 * that cgroup v2, or everything when `cfg_all` is set. Which probes run is decided by the
 * loader, which loads and attaches only the programs asked for.
 *
 * Kernel requirements: BTF (CO-RE relocations), raw tracepoints, tracepoints, perf
 * software events, uprobes, ring buffers (5.8+). No kprobes, no fentry.
 */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "hpcscope.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load (.rodata). */
const volatile u64 cfg_cgroup = 0;
const volatile u8 cfg_all = 0;
const volatile u8 cfg_timeline = 0;
const volatile u8 cfg_fileio = 0;
/* Size histograms of the read/write family (with the file probe). */
const volatile u8 cfg_iosizes = 0;
/* The target's processes ran before the probes attached (a pid, a cgroup, the machine):
 * a system call in flight then returns with no start, and is counted untimed. */
const volatile u8 cfg_running = 0;
/* Length of one interval of the rate series, ns (0: no series). */
const volatile u64 cfg_rate_ns = 0;
/* Per uprobe slot: the arguments that give a message's size (all zero: none). */
const volatile struct msg_args cfg_msg_args[UPROBE_SLOTS] = {};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, struct sc_start);
} sc_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct sc_slot);
} sc_slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sc_key);
	__type(value, struct sc_stats);
} sc_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, struct thread_stats);
} threads SEC(".maps");

/*
 * Clock (bpf_ktime_get_ns): [0] when the window opens, before the probes are attached (set
 * by the loader); [1] the origin of the rate series: set by the loader once every probe is
 * attached for a running target, by the first exec of a traced process (hs_exec) for a
 * launched command, so that the intervals start with the program; [2] when the window
 * closes (set by the loader when the trace ends, 0 before): from then on no probe counts
 * anything, so the tables user space reads and the events it drains describe one window.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, u32);
	__type(value, u64);
} trace_start SEC(".maps");

/*
 * The kernel's run time (se.sum_exec_runtime) of each thread that existed when the trace
 * started, as /proc/<tid>/schedstat gave it then; set by the loader for the threads of a
 * launched command, an attached PID or a cgroup. It bounds the first slice of a thread
 * whose switch-in was not seen.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, u32);
	__type(value, u64);
} runtime_base SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HIST_SLOTS);
	__type(key, u32);
	__type(value, u64);
} runq_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HIST_SLOTS);
	__type(key, u32);
	__type(value, u64);
} offcpu_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct fd_key);
	__type(value, struct fd_stats);
} fd_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct fd_key);
	__type(value, struct fd_path);
} fd_paths SEC(".maps");

/* Current generation of each (tgid, fd) (key with gen = 0). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct fd_key);
	__type(value, u32);
} fd_gens SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct fd_path);
} path_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, u64);
	__type(value, struct blk_start);
} blk_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 256);
	__type(key, u32);
	__type(value, struct blk_stats);
} blk_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(u32));
	__uint(value_size, 127 * sizeof(u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sample_key);
	__type(value, u64);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, u32);
	__type(value, struct fn_frames);
} fn_frames SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct fn_key);
	__type(value, struct fn_stats);
} fn_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct msg_key);
	__type(value, struct msg_stats);
} msg_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct usdt_key);
	__type(value, u64);
} usdt_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct io_size_key);
	__type(value, struct io_size_stats);
} io_sizes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RATE_SLOTS);
	__type(key, u32);
	__type(value, struct rate_bucket);
} rates SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");

/* One all-zero value, the initial value of new entries (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct blk_stats);
} zeroes SEC(".maps");

static __always_inline void *zero_value(void)
{
	u32 z = 0;
	return bpf_map_lookup_elem(&zeroes, &z);
}

static __always_inline struct sc_slot *slot_get(void)
{
	u32 zero = 0;
	return bpf_map_lookup_elem(&sc_slot, &zero);
}

/* What could not be recorded, per LOST_* index (hpcscope.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOST_SLOTS);
	__type(key, u32);
	__type(value, u64);
} drops SEC(".maps");

static __always_inline void count_drop(u32 which)
{
	u64 *v = bpf_map_lookup_elem(&drops, &which);
	if (v)
		(*v)++;
}

#define ENOMEM 12
#define EEXIST 17

/*
 * bpf_map_update_elem that counts a failure (a full map, no memory, a contended bucket)
 * under `lost`; a key another CPU inserted first (-EEXIST with BPF_NOEXIST) is no loss.
 */
static __always_inline long map_insert(void *map, const void *key, const void *val, u64 flags,
				       u32 lost)
{
	long err = bpf_map_update_elem(map, key, val, flags);
	if (err && err != -EEXIST)
		count_drop(lost);
	return err;
}

/* The entry of `key` in `map`, made all-zero first if it is new (a failed insert counted in
 * `lost`); NULL when there is none. */
static __always_inline void *lookup_or_zero(void *map, const void *key, u32 lost)
{
	void *v = bpf_map_lookup_elem(map, key);
	void *zero;

	if (v)
		return v;
	zero = zero_value();
	if (!zero)
		return NULL;
	map_insert(map, key, zero, BPF_NOEXIST, lost);
	return bpf_map_lookup_elem(map, key);
}

/* Slot of v in a log2 histogram: 0 for 0, else floor(log2 v) + 1 (BCC's bpf_log2l). */
static __always_inline u32 log2_slot(u64 v)
{
	u32 r = 0, shift;
	if (v == 0)
		return 0;
	shift = (v > 0xFFFFFFFFULL) << 5;
	v >>= shift;
	r = shift;
	shift = (v > 0xFFFF) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	r += 1;
	if (r >= HIST_SLOTS)
		r = HIST_SLOTS - 1;
	return r;
}

static __always_inline bool tgid_tracked(u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/* The window is closed: the trace has ended and user space is reading the tables. */
static __always_inline bool window_closed(void)
{
	u32 two = 2;
	u64 *end = bpf_map_lookup_elem(&trace_start, &two);
	return end && *end;
}

static __always_inline bool tracked_current(void)
{
	if (window_closed())
		return false;
	if (cfg_all)
		return true;
	if (cfg_cgroup)
		return bpf_get_current_cgroup_id() == cfg_cgroup;
	return tgid_tracked(bpf_get_current_pid_tgid() >> 32);
}

static __always_inline bool tracked_task(struct task_struct *t)
{
	if (window_closed())
		return false;
	if (cfg_all)
		return true;
	if (cfg_cgroup)
		return BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id) == cfg_cgroup;
	return tgid_tracked(BPF_CORE_READ(t, tgid));
}

static __always_inline void hist_add(void *map, u64 v)
{
	u32 slot = log2_slot(v);
	u64 *c = bpf_map_lookup_elem(map, &slot);
	if (c)
		(*c)++;
}

/*
 * The bucket of the rate series for time `now` on this CPU (NULL without a series or before
 * the start). Interval k lives in slot k % RATE_SLOTS; a slot still holding an older
 * interval (already read by user space, which reads each interval once it is over) starts
 * over.
 */
static __always_inline struct rate_bucket *rate_get(u64 now)
{
	u32 one = 1, slot;
	u64 *startp, k;
	struct rate_bucket *b;

	if (!cfg_rate_ns)
		return NULL;
	startp = bpf_map_lookup_elem(&trace_start, &one);
	if (!startp || !*startp || now < *startp)
		return NULL;
	k = (now - *startp) / cfg_rate_ns;
	slot = (u32)k & (RATE_SLOTS - 1);
	b = bpf_map_lookup_elem(&rates, &slot);
	if (!b)
		return NULL;
	if (b->epoch != k + 1) {
		b->epoch = k + 1;
		b->syscalls = 0;
		b->faults = 0;
		b->read_bytes = 0;
		b->write_bytes = 0;
		b->switches = 0;
	}
	return b;
}

/* ------------------------------------------------------------------ processes */

static __always_inline void emit(u32 kind, u32 tgid, u32 tid, u64 ts, u64 dur, u64 arg,
				 const char *comm_src, bool comm_current)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(0);
		return;
	}
	e->kind = kind;
	e->tgid = tgid;
	e->tid = tid;
	e->cpu = bpf_get_smp_processor_id();
	e->ts = ts;
	e->dur = dur;
	e->arg = arg;
	if (comm_current)
		bpf_get_current_comm(e->comm, sizeof(e->comm));
	else if (comm_src)
		bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), comm_src);
	else
		e->comm[0] = 0;
	bpf_ringbuf_submit(e, 0);
}

/* sched_process_fork(struct task_struct *parent, struct task_struct *child) */
SEC("raw_tracepoint/sched_process_fork")
int hs_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (void *)ctx->args[0];
	struct task_struct *child = (void *)ctx->args[1];
	u32 ptgid = BPF_CORE_READ(parent, tgid);
	u32 ctgid = BPF_CORE_READ(child, tgid);
	u8 one = 1;

	if (ptgid == ctgid)
		return 0; /* a new thread: same tgid, already covered */
	if (cfg_all || cfg_cgroup) {
		if (!tracked_task(child))
			return 0;
	} else {
		if (!tgid_tracked(ptgid))
			return 0;
		map_insert(&targets, &ctgid, &one, BPF_ANY, LOST_TARGETS);
	}
	emit(EV_FORK, ctgid, ctgid, bpf_ktime_get_ns(), 0, ptgid, 0, true);
	return 0;
}

/* sched_process_exec(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) */
SEC("raw_tracepoint/sched_process_exec")
int hs_exec(struct bpf_raw_tracepoint_args *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	u64 now = bpf_ktime_get_ns();
	if (!tracked_current())
		return 0;
	if (cfg_rate_ns) {
		u32 one = 1;
		u64 *origin = bpf_map_lookup_elem(&trace_start, &one);
		if (origin && *origin == 0)
			*origin = now;
	}
	emit(EV_EXEC, id >> 32, (u32)id, now, 0, 0, 0, true);
	return 0;
}

/* sched_process_exit(struct task_struct *p[, bool group_dead]) */
SEC("raw_tracepoint/sched_process_exit")
int hs_exit(struct bpf_raw_tracepoint_args *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id;
	struct thread_stats *t;

	struct sc_slot *c = slot_get();
	if (c && c->tid == tid) {
		c->pending = 0;
		c->tid = 0;
	}
	bpf_map_delete_elem(&sc_starts, &tid);
	if (!tracked_current())
		return 0;
	t = bpf_map_lookup_elem(&threads, &tid);
	if (t)
		t->exited = 1;
	emit(EV_EXIT, id >> 32, tid, bpf_ktime_get_ns(), 0, 0, 0, true);
	return 0;
}

/* ------------------------------------------------------------------ syscalls */

#define NR_read 0
#define NR_write 1
#define NR_open 2
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_readv 19
#define NR_writev 20
#define NR_dup 32
#define NR_dup2 33
#define NR_fcntl 72
#define NR_dup3 292
#define NR_openat 257
#define NR_preadv 295
#define NR_pwritev 296
#define NR_openat2 437
#define NR_clone 56
#define NR_fork 57
#define NR_vfork 58
#define NR_clone3 435

#define F_DUPFD 0
#define F_DUPFD_CLOEXEC 1030

/* Moves this CPU's in-flight syscall to the per-thread hash. */
static __always_inline void slot_spill(struct sc_slot *c)
{
	struct sc_start s = { .ts = c->ts, .arg0 = c->arg0, .nr = c->nr, .tgid = c->tgid };
	u32 tid = c->tid;
	map_insert(&sc_starts, &tid, &s, BPF_ANY, LOST_SC_STARTS);
	c->pending = 0;
}

/*
 * sys_enter(struct pt_regs *regs, long id)
 *
 * The hottest program. On the fast path (the same tracked thread as the last syscall on
 * this CPU) it costs a per-CPU array access and a clock read; the target check runs when
 * another thread takes the CPU.
 */
SEC("raw_tracepoint/sys_enter")
int hs_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id;
	u64 arg0 = 0, arg1 = 0;
	u32 nr = (u32)ctx->args[1];
	struct sc_slot *c = slot_get();

	if (!c || window_closed())
		return 0;
	/* The slot only caches "this thread is tracked": a program can be preempted, so the
	 * start of the call itself goes to the per-thread hash, never to per-CPU state. */
	if (c->tid != tid || c->tgid != (u32)(id >> 32)) {
		if (!tracked_current())
			return 0;
		c->tid = tid;
		c->tgid = id >> 32;
	}
	if (cfg_fileio) {
		struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
		switch (nr) {
		case NR_read:
		case NR_write:
		case NR_pread64:
		case NR_pwrite64:
		case NR_readv:
		case NR_writev:
		case NR_preadv:
		case NR_pwritev:
		case NR_open:
		case NR_dup:
		case NR_dup2:
		case NR_dup3:
			arg0 = BPF_CORE_READ(regs, di);
			break;
		case NR_fcntl:
			arg0 = BPF_CORE_READ(regs, di);
			arg1 = BPF_CORE_READ(regs, si);
			break;
		case NR_openat:
		case NR_openat2:
			arg0 = BPF_CORE_READ(regs, si);
			break;
		}
	}
	struct sc_start st = {
		.ts = bpf_ktime_get_ns(), .arg0 = arg0, .arg1 = arg1, .nr = nr, .tgid = id >> 32
	};
	map_insert(&sc_starts, &tid, &st, BPF_ANY, LOST_SC_STARTS);
	return 0;
}

/* sched_switch, with the syscall probe: a thread leaving the CPU mid-syscall takes its
 * start time along (to the hash). */
SEC("raw_tracepoint/sched_switch")
int hs_sc_switch(struct bpf_raw_tracepoint_args *ctx)
{
	struct sc_slot *c = slot_get();
	if (c && c->pending && c->tid == (u32)bpf_get_current_pid_tgid())
		slot_spill(c);
	return 0;
}

/*
 * A descriptor not opened during the trace (generation 0) that has no path yet: it was
 * inherited at fork, so it is the file its parent has on that number now (a shell's
 * redirection of a command's output). The parent's entry exists only if it was traced.
 */
static __always_inline void inherit_path(u32 tgid, s32 fd)
{
	struct fd_key k = { .tgid = tgid, .fd = fd };
	struct task_struct *task;
	struct fd_key pk = { .fd = fd };
	struct fd_path *p;
	u32 *g;

	if (bpf_map_lookup_elem(&fd_paths, &k))
		return;
	task = (void *)bpf_get_current_task();
	pk.tgid = BPF_CORE_READ(task, real_parent, tgid);
	g = bpf_map_lookup_elem(&fd_gens, &pk);
	pk.gen = g ? *g : 0;
	p = bpf_map_lookup_elem(&fd_paths, &pk);
	if (p)
		map_insert(&fd_paths, &k, p, BPF_NOEXIST, LOST_FILES);
}

/* 1 for the read family, 2 for the write family (the calls the file probe follows), else 0. */
static __always_inline u32 rw_dir(u32 nr)
{
	switch (nr) {
	case NR_read:
	case NR_pread64:
	case NR_readv:
	case NR_preadv:
		return 1;
	case NR_write:
	case NR_pwrite64:
	case NR_writev:
	case NR_pwritev:
		return 2;
	}
	return 0;
}

/* A successful read or write of `ret` bytes, in the thread's size histogram. */
static __always_inline void io_size_add(u32 tgid, u32 tid, u32 dir, u64 ret)
{
	struct io_size_key k = { .tgid = tgid, .tid = tid, .dir = dir };
	struct io_size_stats *st = lookup_or_zero(&io_sizes, &k, LOST_IOSIZE);
	if (!st)
		return;
	/* Per thread: only this thread updates the entry. */
	st->calls++;
	st->bytes += ret;
	st->hist[log2_slot(ret) % HIST_SLOTS]++;
}

static __always_inline void fileio_exit(u32 tgid, struct sc_start *s, s64 ret)
{
	struct fd_key k = { .tgid = tgid };
	bool is_read;
	u32 *g;

	switch (s->nr) {
	case NR_open:
	case NR_openat:
	case NR_openat2: {
		u32 zero = 0;
		struct fd_path *p;
		if (ret < 0)
			return;
		p = bpf_map_lookup_elem(&path_scratch, &zero);
		if (!p)
			return;
		k.fd = (s32)ret;
		g = bpf_map_lookup_elem(&fd_gens, &k);
		u32 gen = g ? *g + 1 : 1;
		map_insert(&fd_gens, &k, &gen, BPF_ANY, LOST_FILES);
		if (bpf_probe_read_user_str(p->path, sizeof(p->path), (void *)s->arg0) < 0)
			return;
		k.gen = gen;
		map_insert(&fd_paths, &k, p, BPF_ANY, LOST_FILES);
		return;
	}
	case NR_fcntl:
		if (s->arg1 != F_DUPFD && s->arg1 != F_DUPFD_CLOEXEC)
			return;
		/* fall through */
	case NR_dup:
	case NR_dup2:
	case NR_dup3: {
		/* The new descriptor is a new generation with the old one's path. */
		struct fd_key old = { .tgid = tgid, .fd = (s32)s->arg0 };
		if (ret < 0 || (s32)ret == old.fd)
			return;
		g = bpf_map_lookup_elem(&fd_gens, &old);
		old.gen = g ? *g : 0;
		k.fd = (s32)ret;
		g = bpf_map_lookup_elem(&fd_gens, &k);
		u32 gen = g ? *g + 1 : 1;
		map_insert(&fd_gens, &k, &gen, BPF_ANY, LOST_FILES);
		struct fd_path *p = bpf_map_lookup_elem(&fd_paths, &old);
		if (!p)
			return;
		k.gen = gen;
		map_insert(&fd_paths, &k, p, BPF_ANY, LOST_FILES);
		return;
	}
	case NR_read:
	case NR_pread64:
	case NR_readv:
	case NR_preadv:
		is_read = true;
		break;
	case NR_write:
	case NR_pwrite64:
	case NR_writev:
	case NR_pwritev:
		is_read = false;
		break;
	default:
		return;
	}
	if (ret <= 0)
		return;
	k.fd = (s32)s->arg0;
	g = bpf_map_lookup_elem(&fd_gens, &k);
	k.gen = g ? *g : 0;
	if (!g)
		inherit_path(tgid, k.fd);
	struct fd_stats *st = lookup_or_zero(&fd_stats, &k, LOST_FILES);
	if (!st)
		return;
	/* Threads of a process share its descriptors: atomic adds. */
	if (is_read) {
		__sync_fetch_and_add(&st->read_bytes, ret);
		__sync_fetch_and_add(&st->reads, 1);
	} else {
		__sync_fetch_and_add(&st->write_bytes, ret);
		__sync_fetch_and_add(&st->writes, 1);
	}
}

/*
 * A system call that returns with no start recorded: one already in flight when the probes
 * attached (a process traced by pid, blocked in read or a sleep), counted without a time,
 * as strace counts the call it finds a process in. Not the return of a new child from
 * clone, fork or vfork (the parent's call is the one counted), nor a thread not traced.
 */
static __noinline int sc_exit_untimed(struct bpf_raw_tracepoint_args *ctx, u64 id, s64 ret)
{
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
	struct sc_key k = {};
	struct sc_stats *st;
	u32 nr = (u32)BPF_CORE_READ(regs, orig_ax);

	if (!cfg_running)
		return 0;
	if (nr == NR_clone || nr == NR_clone3 || nr == NR_fork || nr == NR_vfork)
		return 0;
	if (!tracked_current())
		return 0;
	k.tgid = id >> 32;
	k.tid = (u32)id;
	k.nr = nr;
	st = lookup_or_zero(&sc_stats, &k, LOST_SC_STATS);
	if (!st)
		return 0;
	st->count++;
	st->untimed++;
	if (ret < 0)
		st->errors++;
	return 0;
}

/* sys_exit(struct pt_regs *regs, long ret) */
SEC("raw_tracepoint/sys_exit")
int hs_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id;
	s64 ret = (s64)ctx->args[1];
	
	struct sc_start start;
	struct sc_key k = {};
	struct sc_stats *st;
	u64 lat, now;

	{
		struct sc_start *s = bpf_map_lookup_elem(&sc_starts, &tid);
		if (!s || s->ts == 0)
			return sc_exit_untimed(ctx, id, ret);
		start.ts = s->ts;
		start.arg0 = s->arg0;
		start.arg1 = s->arg1;
		start.nr = s->nr;
		s->ts = 0;
	}
	now = bpf_ktime_get_ns();
	lat = now - start.ts;
	k.tgid = id >> 32;
	k.tid = tid;
	k.nr = start.nr;
	st = lookup_or_zero(&sc_stats, &k, LOST_SC_STATS);
	if (!st)
		return 0;
	if (st->count == st->untimed || lat < st->min_ns)
		st->min_ns = lat;
	st->count++;
	if (ret < 0)
		st->errors++;
	st->total_ns += lat;
	if (lat > st->max_ns)
		st->max_ns = lat;
	st->hist[log2_slot(lat) % HIST_SLOTS]++;
	if (cfg_rate_ns || cfg_iosizes) {
		u32 dir = rw_dir(start.nr);
		struct rate_bucket *b = rate_get(now);
		if (b) {
			b->syscalls++;
			if (dir == 1 && ret > 0)
				b->read_bytes += ret;
			else if (dir == 2 && ret > 0)
				b->write_bytes += ret;
		}
		if (cfg_iosizes && dir && ret >= 0)
			io_size_add(k.tgid, tid, dir, ret);
	}
	if (cfg_fileio)
		fileio_exit(k.tgid, &start, ret);
	return 0;
}

/* ------------------------------------------------------------------ scheduler */

static __always_inline struct thread_stats *thread_get(u32 tid, u32 tgid)
{
	struct thread_stats *t = bpf_map_lookup_elem(&threads, &tid);
	if (t)
		return t;
	struct thread_stats zero = {};
	zero.tgid = tgid;
	map_insert(&threads, &tid, &zero, BPF_NOEXIST, LOST_THREADS);
	return bpf_map_lookup_elem(&threads, &tid);
}

/*
 * The slice that ends now for a thread whose switch-in was not seen: the kernel switches
 * some threads in without a sched_switch event (a new task started on another CPU and
 * moved away by the migration thread shows up first as `prev`), and a thread already
 * running when the trace began has had no switch-in at all. Its length comes from the
 * kernel's own run time of the thread (se.sum_exec_runtime, brought up to date before
 * sched_switch fires): since its last switch-out, else since the trace began (the run
 * time the loader read then), else, for a thread born during the trace, since its birth.
 * Only a thread that existed at the start and whose run time then is unknown (a
 * system-wide trace) falls back to "running since the start".
 */
static __always_inline u64 unseen_slice(struct thread_stats *t, struct task_struct *prev, u32 tid,
					u64 now, u64 runtime)
{
	u32 zero = 0;
	u64 *startp = bpf_map_lookup_elem(&trace_start, &zero);
	u64 start = startp ? *startp : 0;
	u64 since_start = (start && now > start) ? now - start : 0;
	u64 d;

	if (t->last_runtime) {
		d = runtime > t->last_runtime ? runtime - t->last_runtime : 0;
		if (t->last_off_ts && now > t->last_off_ts && d > now - t->last_off_ts)
			d = now - t->last_off_ts;
		return d;
	}
	u64 *base = bpf_map_lookup_elem(&runtime_base, &tid);
	if (base)
		d = runtime > *base ? runtime - *base : 0;
	else if (BPF_CORE_READ(prev, start_time) >= start)
		d = runtime; /* born during the trace: all its run time is in it */
	else
		d = since_start;
	return d < since_start ? d : since_start;
}

/* sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
 *              unsigned int prev_state) */
SEC("raw_tracepoint/sched_switch")
int hs_sched_switch(struct bpf_raw_tracepoint_args *ctx)
{
	bool preempt = (bool)ctx->args[0];
	struct task_struct *prev = (void *)ctx->args[1];
	struct task_struct *next = (void *)ctx->args[2];
	u64 prev_state = ctx->args[3];
	u64 now = bpf_ktime_get_ns();
	u64 id = bpf_get_current_pid_tgid(); /* current is still prev here */
	struct thread_stats *t;

	if (tracked_current()) {
		t = thread_get((u32)id, id >> 32);
		if (t) {
			u64 runtime = BPF_CORE_READ(prev, se.sum_exec_runtime);
			u64 on = t->last_on_ts, d;
			bpf_get_current_comm(t->comm, sizeof(t->comm));
			if (on) {
				d = now - on;
				/* No longer than the scheduler's run time of the slice. */
				if (t->on_runtime && runtime >= t->on_runtime &&
				    runtime - t->on_runtime < d)
					d = runtime - t->on_runtime;
			} else {
				d = unseen_slice(t, prev, (u32)id, now, runtime);
				on = now - d;
				/* The time off the CPU before the unseen switch-in. */
				if (t->last_off_ts && on > t->last_off_ts)
					t->off_cpu_ns += on - t->last_off_ts;
			}
			t->on_cpu_ns += d;
			if (cfg_timeline && d)
				emit(EV_ONCPU, id >> 32, (u32)id, on, d, 0, 0, true);
			t->last_runtime = runtime ? runtime : 1;
			t->last_on_ts = 0;
			t->on_runtime = 0;
			t->last_off_ts = now;
			if (cfg_rate_ns) {
				struct rate_bucket *b = rate_get(now);
				if (b)
					b->switches++;
			}
			if (preempt || prev_state == 0) {
				t->invol_switches++;
				t->wake_ts = now; /* still runnable: waits in the run queue */
			} else {
				t->vol_switches++;
				t->wake_ts = 0;
			}
		}
	}
	if (tracked_task(next)) {
		u32 ntid = BPF_CORE_READ(next, pid);
		if (ntid == 0)
			return 0;
		t = thread_get(ntid, BPF_CORE_READ(next, tgid));
		if (!t)
			return 0;
		if (t->last_off_ts) {
			u64 d = now - t->last_off_ts;
			t->off_cpu_ns += d;
			hist_add(&offcpu_hist, d);
		}
		if (t->wake_ts) {
			u64 d = now - t->wake_ts;
			t->runq_ns += d;
			if (d > t->runq_max_ns)
				t->runq_max_ns = d;
			hist_add(&runq_hist, d);
			t->wake_ts = 0;
		}
		t->last_off_ts = 0;
		t->last_on_ts = now;
		t->on_runtime = BPF_CORE_READ(next, se.sum_exec_runtime);
		t->last_cpu = bpf_get_smp_processor_id();
	}
	return 0;
}

static __always_inline int on_wakeup(struct task_struct *p)
{
	struct thread_stats *t;
	if (!tracked_task(p))
		return 0;
	t = thread_get(BPF_CORE_READ(p, pid), BPF_CORE_READ(p, tgid));
	if (!t)
		return 0;
	t->wake_ts = bpf_ktime_get_ns();
	__sync_fetch_and_add(&t->wakeups, 1);
	return 0;
}

/* sched_wakeup(struct task_struct *p) */
SEC("raw_tracepoint/sched_wakeup")
int hs_sched_wakeup(struct bpf_raw_tracepoint_args *ctx)
{
	return on_wakeup((void *)ctx->args[0]);
}

/* sched_wakeup_new(struct task_struct *p) */
SEC("raw_tracepoint/sched_wakeup_new")
int hs_sched_wakeup_new(struct bpf_raw_tracepoint_args *ctx)
{
	return on_wakeup((void *)ctx->args[0]);
}

/* sched_migrate_task(struct task_struct *p, int dest_cpu) */
SEC("raw_tracepoint/sched_migrate_task")
int hs_sched_migrate(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *p = (void *)ctx->args[0];
	struct thread_stats *t;
	if (!tracked_task(p))
		return 0;
	t = thread_get(BPF_CORE_READ(p, pid), BPF_CORE_READ(p, tgid));
	if (t)
		__sync_fetch_and_add(&t->migrations, 1);
	return 0;
}

/* ------------------------------------------------------------------ page faults */

static __always_inline int on_fault(bool major)
{
	u64 id;
	struct thread_stats *t;
	if (!tracked_current())
		return 0;
	id = bpf_get_current_pid_tgid();
	t = thread_get((u32)id, id >> 32);
	if (!t)
		return 0;
	if (major)
		t->major_faults++;
	else
		t->minor_faults++;
	if (cfg_rate_ns) {
		struct rate_bucket *b = rate_get(bpf_ktime_get_ns());
		if (b)
			b->faults++;
	}
	return 0;
}

/* perf software event PERF_COUNT_SW_PAGE_FAULTS_MIN, period 1 */
SEC("perf_event")
int hs_fault_minor(struct bpf_perf_event_data *ctx)
{
	return on_fault(false);
}

/* perf software event PERF_COUNT_SW_PAGE_FAULTS_MAJ, period 1 */
SEC("perf_event")
int hs_fault_major(struct bpf_perf_event_data *ctx)
{
	return on_fault(true);
}

/* ------------------------------------------------------------------ block I/O */

/*
 * Raw tracepoints (no tracefs needed). The request pointer is the key from issue to
 * completion; the device is the request queue's disk. Counted for the whole machine, not
 * per target: most requests are issued by kernel threads (writeback, device mapper,
 * io_uring workers) on a process's behalf, so the issuing context says little.
 */

/* Operations of a request (the low bits of cmd_flags: enum req_op, stable since 4.10). */
#define REQ_OP_MASK 0xff
#define REQ_OP_READ 0
#define REQ_OP_WRITE 1
#define REQ_OP_ZONE_APPEND 7

/* block_rq_issue(struct request *rq) */
SEC("raw_tracepoint/block_rq_issue")
int hs_block_issue(struct bpf_raw_tracepoint_args *ctx)
{
	struct request *rq = (void *)ctx->args[0];
	u64 key = (u64)rq;
	struct blk_start s;
	u32 op = BPF_CORE_READ(rq, cmd_flags) & REQ_OP_MASK;
	s.ts = bpf_ktime_get_ns();
	s.bytes = BPF_CORE_READ(rq, __data_len);
	s.data = op == REQ_OP_READ || op == REQ_OP_WRITE || op == REQ_OP_ZONE_APPEND;
	map_insert(&blk_starts, &key, &s, BPF_ANY, LOST_BLOCK);
	return 0;
}

/* block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes) */
SEC("raw_tracepoint/block_rq_complete")
int hs_block_complete(struct bpf_raw_tracepoint_args *ctx)
{
	struct request *rq = (void *)ctx->args[0];
	u64 key = (u64)rq;
	struct blk_start *s;
	struct blk_stats *st;
	u64 lat;
	u32 dev;

	s = bpf_map_lookup_elem(&blk_starts, &key);
	if (!s)
		return 0;
	lat = bpf_ktime_get_ns() - s->ts;
	dev = ((u32)BPF_CORE_READ(rq, q, disk, major) << 20) | (u32)BPF_CORE_READ(rq, q, disk, first_minor);
	st = lookup_or_zero(&blk_stats, &dev, LOST_BLOCK);
	if (st && !s->data) {
		st->other_count++;
		st->other_bytes += s->bytes;
	} else if (st) {
		st->count++;
		st->bytes += s->bytes;
		st->total_ns += lat;
		if (lat > st->max_ns)
			st->max_ns = lat;
		st->lat_hist[log2_slot(lat) % HIST_SLOTS]++;
		st->size_hist[log2_slot(s->bytes) % HIST_SLOTS]++;
	}
	bpf_map_delete_elem(&blk_starts, &key);
	return 0;
}

/* ------------------------------------------------------------------ cpu-clock samples */

SEC("perf_event")
int hs_cpu_sample(struct bpf_perf_event_data *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	struct sample_key k = {};
	u64 one = 1, *c;

	if ((u32)id == 0)
		return 0; /* idle */
	if (!tracked_current())
		return 0;
	k.tgid = id >> 32;
	k.tid = (u32)id;
	k.kstack = bpf_get_stackid(ctx, &stacks, 0);
	k.ustack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	/*
	 * -EEXIST: another stack holds the bucket; -ENOMEM: no room. (-EFAULT: no stack.)
	 * Then the sample goes to user space whole, stacks copied, through the ring buffer;
	 * only when the ring buffer is full is it counted without its stack.
	 */
	if (k.kstack == -EEXIST || k.kstack == -ENOMEM || k.ustack == -EEXIST ||
	    k.ustack == -ENOMEM) {
		struct stack_event *se = bpf_ringbuf_reserve(&events, sizeof(*se), 0);

		if (se) {
			se->kind = EV_STACK;
			se->tgid = k.tgid;
			se->tid = k.tid;
			se->pad = 0;
			se->ubytes = bpf_get_stack(ctx, se->ustack, sizeof(se->ustack),
						   BPF_F_USER_STACK);
			se->kbytes = bpf_get_stack(ctx, se->kstack, sizeof(se->kstack), 0);
			bpf_get_current_comm(se->comm, sizeof(se->comm));
			bpf_ringbuf_submit(se, 0);
			return 0;
		}
		count_drop(LOST_STACKS);
	}
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	c = bpf_map_lookup_elem(&samples, &k);
	if (c)
		__sync_fetch_and_add(c, 1);
	else
		map_insert(&samples, &k, &one, BPF_NOEXIST, LOST_SAMPLES);
	return 0;
}

/* ------------------------------------------------------------------ uprobe slots */

/*
 * Argument n (1 to 6) of a function, at its entry (x86-64 System V: registers). Every
 * register is loaded at its own fixed offset and the value picked afterwards: a switch
 * over the loads lets clang compute the context offset, which the verifier refuses.
 */
static __always_inline u64 reg_arg(struct pt_regs *ctx, u8 n)
{
	u64 a1 = ctx->di, a2 = ctx->si, a3 = ctx->dx, a4 = ctx->cx, a5 = ctx->r8, a6 = ctx->r9;

	return n == 1 ? a1 : n == 2 ? a2 : n == 3 ? a3 : n == 4 ? a4 : n == 5 ? a5 : n == 6 ? a6 : 0;
}

/*
 * A message-passing call's size, at its entry: calls and the sum of element counts per
 * (process, slot, datatype handle). Datatype sizes are not known here (a handle is a
 * pointer or an encoded int), so user space turns handles into bytes.
 */
static __always_inline void msg_enter(struct pt_regs *ctx, u32 slot, u32 tgid)
{
	struct msg_args a = cfg_msg_args[slot];
	struct msg_key k = { .tgid = tgid, .slot = slot };
	struct msg_stats *st;
	s32 count;

	if (a.count_arg == 0)
		return;
	count = (s32)reg_arg(ctx, a.count_arg);
	k.dtype = reg_arg(ctx, a.dtype_arg);
	if (a.dtype_bits == 32)
		k.dtype = (u32)k.dtype;
	st = bpf_map_lookup_elem(&msg_stats, &k);
	if (!st) {
		struct task_struct *task = (void *)bpf_get_current_task();
		struct msg_stats z = {};
		z.entry_ip = ctx->ip;
		z.exe_code = BPF_CORE_READ(task, mm, start_code);
		map_insert(&msg_stats, &k, &z, BPF_NOEXIST, LOST_MSGS);
		st = bpf_map_lookup_elem(&msg_stats, &k);
		if (!st)
			return;
	}
	/* Threads of a process may call at once (MPI_THREAD_MULTIPLE): atomic adds. */
	__sync_fetch_and_add(&st->calls, 1);
	if (count > 0)
		__sync_fetch_and_add(&st->elements, count);
}

static __always_inline int fn_enter(struct pt_regs *ctx, u32 slot)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id;
	struct fn_frames *f;

	if (!tracked_current())
		return 0;
	if (slot < UPROBE_SLOTS)
		msg_enter(ctx, slot, id >> 32);
	f = bpf_map_lookup_elem(&fn_frames, &tid);
	if (!f) {
		struct fn_frames zero = {};
		map_insert(&fn_frames, &tid, &zero, BPF_NOEXIST, LOST_FUNCS);
		f = bpf_map_lookup_elem(&fn_frames, &tid);
		if (!f)
			return 0;
	}
	u32 d = f->depth;
	if (d < USTACK_DEPTH) {
		f->slot[d & (USTACK_DEPTH - 1)] = slot;
		f->ts[d & (USTACK_DEPTH - 1)] = bpf_ktime_get_ns();
	} else {
		count_drop(1);
	}
	f->depth = d + 1;
	return 0;
}

static __always_inline int fn_exit(u32 slot)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id;
	struct fn_frames *f = bpf_map_lookup_elem(&fn_frames, &tid);
	struct fn_key k = {};
	struct fn_stats *st;
	u64 now, lat, start;
	u32 d;

	if (!f || f->depth == 0)
		return 0;
	now = bpf_ktime_get_ns();
	d = f->depth - 1;
	f->depth = d;
	if (d >= USTACK_DEPTH)
		return 0;
	if (f->slot[d & (USTACK_DEPTH - 1)] != slot)
		return 0; /* unbalanced (longjmp, probe attached mid-call) */
	start = f->ts[d & (USTACK_DEPTH - 1)];
	lat = now - start;
	k.tgid = id >> 32;
	k.tid = tid;
	k.slot = slot;
	st = lookup_or_zero(&fn_stats, &k, LOST_FUNCS);
	if (!st)
		return 0;
	if (st->count == 0)
		st->min_ns = ~0ULL;
	st->count++;
	st->total_ns += lat;
	if (lat > st->max_ns)
		st->max_ns = lat;
	if (lat < st->min_ns)
		st->min_ns = lat;
	st->hist[log2_slot(lat) % HIST_SLOTS]++;
	if (cfg_timeline)
		emit(EV_FUNC, k.tgid, tid, start, lat, slot, 0, true);
	return 0;
}

#define SLOT(n)                                                                  \
	SEC("uprobe") int hs_fn_enter_##n(struct pt_regs *ctx) { return fn_enter(ctx, n); } \
	SEC("uretprobe") int hs_fn_exit_##n(struct pt_regs *ctx) { return fn_exit(n); }

SLOT(0) SLOT(1) SLOT(2) SLOT(3) SLOT(4) SLOT(5) SLOT(6) SLOT(7)
SLOT(8) SLOT(9) SLOT(10) SLOT(11) SLOT(12) SLOT(13) SLOT(14) SLOT(15)
SLOT(16) SLOT(17) SLOT(18) SLOT(19) SLOT(20) SLOT(21) SLOT(22) SLOT(23)
SLOT(24) SLOT(25) SLOT(26) SLOT(27) SLOT(28) SLOT(29) SLOT(30) SLOT(31)

/* ------------------------------------------------------------------ USDT probes */

/*
 * A USDT probe site (a nop the compiler left where the program's DTRACE_PROBE/STAP_PROBE
 * macro stood) reached: one hit per thread and slot; with a timeline, an instant event.
 * The loader attaches every site of one PROVIDER:NAME to one slot, with the kernel raising
 * the probe's semaphore (uprobe ref_ctr_offset) when it has one. The probe's arguments
 * are not read.
 */
static __always_inline int usdt_hit(u32 slot)
{
	u64 id = bpf_get_current_pid_tgid();
	struct usdt_key k = {};
	u64 *c;

	if (!tracked_current())
		return 0;
	k.tgid = id >> 32;
	k.tid = (u32)id;
	k.slot = slot;
	c = bpf_map_lookup_elem(&usdt_stats, &k);
	if (c) {
		(*c)++; /* per thread: only this thread updates it */
	} else {
		u64 one = 1;
		map_insert(&usdt_stats, &k, &one, BPF_NOEXIST, LOST_USDT);
	}
	if (cfg_timeline)
		emit(EV_USDT, k.tgid, k.tid, bpf_ktime_get_ns(), 0, slot, 0, true);
	return 0;
}

#define USDT(n) \
	SEC("uprobe") int hs_usdt_##n(struct pt_regs *ctx) { return usdt_hit(n); }

USDT(0) USDT(1) USDT(2) USDT(3) USDT(4) USDT(5) USDT(6) USDT(7)
USDT(8) USDT(9) USDT(10) USDT(11) USDT(12) USDT(13) USDT(14) USDT(15)

/* ------------------------------------------------------------------ kernel functions */

/*
 * Kernel-function latency through a kprobe/kretprobe pair (slot UPROBE_SLOTS), for kernels
 * that have kprobes; elsewhere the loader says so and uses the syscall tracepoints.
 */
SEC("kprobe")
int hs_kfunc_enter(struct pt_regs *ctx)
{
	return fn_enter(ctx, UPROBE_SLOTS);
}

SEC("kretprobe")
int hs_kfunc_exit(struct pt_regs *ctx)
{
	return fn_exit(UPROBE_SLOTS);
}

/* Loaded only by `hpcscope doctor`, to learn whether BPF trampolines are allowed. */
SEC("fentry/vfs_read")
int hs_fentry_check(unsigned long long *ctx)
{
	return 0;
}
