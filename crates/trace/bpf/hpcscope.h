/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared between the BPF programs and the Rust loader (crates/trace/src/linux/abi.rs mirrors
 * every struct here field by field; a change here needs the same change there).
 */
#ifndef HPCSCOPE_H
#define HPCSCOPE_H

#define HIST_SLOTS 48
#define USTACK_DEPTH 8
#define UPROBE_SLOTS 32
#define USDT_SLOTS 16
/* Buckets of the rate series: a ring (power of two) that user space drains as it goes. */
#define RATE_SLOTS 1024
#define PATH_LEN 256
#define COMM_LEN 16

/* Ring-buffer event kinds. */
#define EV_EXEC 1
#define EV_EXIT 2
#define EV_FORK 3
#define EV_ONCPU 4
#define EV_FUNC 5
#define EV_USDT 6
#define EV_STACK 7 /* a cpu-clock sample whose stack the stack map could not hold */

/*
 * Indexes of the per-CPU `drops` counters: what the probes could not record. Every failed
 * map insert is counted under the map's index (user space reports each non-zero count and
 * marks the result partial).
 */
#define LOST_RINGBUF 0    /* lifecycle/timeline events: ring buffer full */
#define LOST_DEEP 1       /* probed calls nested deeper than USTACK_DEPTH */
#define LOST_TARGETS 2    /* forked processes not followed: targets full */
#define LOST_SC_STARTS 3  /* system calls not timed: in-flight table full */
#define LOST_SC_STATS 4   /* system calls not counted: sc_stats full */
#define LOST_THREADS 5    /* scheduler/fault events of threads not in threads */
#define LOST_FILES 6      /* file I/O: fd_stats, fd_paths or fd_gens full */
#define LOST_BLOCK 7      /* block requests: blk_starts or blk_stats full */
#define LOST_SAMPLES 8    /* cpu-clock samples: samples full */
#define LOST_STACKS 9     /* stacks not stored: stack map full or bucket taken */
#define LOST_FUNCS 10     /* probed calls: fn_frames or fn_stats full */
#define LOST_MSGS 11      /* MPI message counts: msg_stats full */
#define LOST_USDT 12      /* USDT probe hits: usdt_stats full */
#define LOST_IOSIZE 13    /* read/write sizes: io_sizes full */
#define LOST_SLOTS 14

/*
 * Statistics are kept per thread (tid), so that only the thread itself ever updates an
 * entry (no atomics, no per-CPU copies); user space sums the threads of each process.
 */
struct sc_key {
	u32 tgid;
	u32 tid;
	u32 nr;
	u32 pad;
};

struct sc_stats {
	u64 count;
	u64 errors;
	u64 total_ns;
	u64 max_ns;
	u64 min_ns;
	u64 untimed; /* of count: in flight when the probes attached (no start time) */
	u64 hist[HIST_SLOTS];
};

/* A syscall in flight (arg0 and arg1: the file probe's arguments, when it runs). */
struct sc_start {
	u64 ts;
	u64 arg0;
	u64 arg1;
	u32 nr;
	u32 tgid;
};

/*
 * Per CPU: the syscall in flight of the tracked thread that last entered one on this CPU
 * (tid, tgid also cache "this thread is tracked"). A thread leaving the CPU with a syscall
 * in flight moves it to the sc_starts hash (sched_switch), so the slot is only ever read
 * by the thread that wrote it.
 */
struct sc_slot {
	u64 ts;
	u64 arg0;
	u32 nr;
	u32 tgid;
	u32 tid;
	u32 pending;
};

struct thread_stats {
	u32 tgid;
	/* The CPU of the last switch-in (the CPU of a slice still open when the trace ends). */
	u32 last_cpu;
	char comm[COMM_LEN];
	u64 on_cpu_ns;
	u64 off_cpu_ns;
	u64 runq_ns;
	u64 runq_max_ns;
	u64 vol_switches;
	u64 invol_switches;
	u64 migrations;
	u64 wakeups;
	u64 minor_faults;
	u64 major_faults;
	u64 last_on_ts;
	u64 last_off_ts;
	u64 wake_ts;
	u64 exited;
	/* The kernel's run time of the thread (se.sum_exec_runtime) at its last switch-out. */
	u64 last_runtime;
	/* The same at its last switch-in (0: not seen): a slice lasts at most the run time the
	 * scheduler gave it, which leaves out the time a virtual machine's CPU was taken by its
	 * host (steal time, with paravirtual time accounting). */
	u64 on_runtime;
};

/* gen counts the opens of this descriptor number seen during the trace (0: opened before). */
struct fd_key {
	u32 tgid;
	s32 fd;
	u32 gen;
	u32 pad;
};

struct fd_stats {
	u64 read_bytes;
	u64 write_bytes;
	u64 reads;
	u64 writes;
};

struct fd_path {
	char path[PATH_LEN];
};

/* data: 1 for a read or write (a transfer), 0 for a flush, discard, write-zeroes... */
struct blk_start {
	u64 ts;
	u64 bytes;
	u64 data;
};

/*
 * count, bytes and the histograms: reads and writes; other_count and other_bytes: the
 * requests that transfer nothing (flush, discard, secure erase, write-zeroes: their size
 * is a range of the device, not data moved).
 */
struct blk_stats {
	u64 count;
	u64 bytes;
	u64 other_count;
	u64 other_bytes;
	u64 total_ns;
	u64 max_ns;
	u64 lat_hist[HIST_SLOTS];
	u64 size_hist[HIST_SLOTS];
};

struct sample_key {
	u32 tgid;
	u32 tid;
	s32 kstack;
	s32 ustack;
	char comm[COMM_LEN];
};

struct fn_key {
	u32 tgid;
	u32 tid;
	u32 slot;
	u32 pad;
};

struct fn_stats {
	u64 count;
	u64 total_ns;
	u64 max_ns;
	u64 min_ns;
	u64 hist[HIST_SLOTS];
};

/*
 * Per uprobe slot, set by the loader: which arguments of the probed function (1 to 6, the
 * x86-64 argument registers) hold a message's element count and its datatype handle; 0 for
 * none (no message is read). dtype_bits is 32 where the handle is an int (MPICH and its
 * ABI: the upper half of the register is undefined), 64 where it is a pointer (Open MPI).
 */
struct msg_args {
	u8 count_arg;
	u8 dtype_arg;
	u8 dtype_bits;
	u8 pad;
};

struct msg_key {
	u32 tgid;
	u32 slot;
	u64 dtype;
};

/*
 * Calls of one probed function with one datatype, and the sum of their element counts
 * (negative counts, erroneous calls, add nothing). Set when the entry is created, so user
 * space can turn pointer handles into names without the process's memory map: entry_ip, the
 * probed function's address in the process (the library's load bias is that minus the
 * symbol's address in the file), and exe_code, the start of the main program's code
 * (mm->start_code: its load bias plus the lowest address of its executable segments).
 */
struct msg_stats {
	u64 calls;
	u64 elements;
	u64 entry_ip;
	u64 exe_code;
};

/* Hits of one USDT probe (a slot: every site of one PROVIDER:NAME) in one thread. */
struct usdt_key {
	u32 tgid;
	u32 tid;
	u32 slot;
	u32 pad;
};

/*
 * One interval of the rate series, on one CPU (per-CPU array, so no atomics). epoch is the
 * interval's number plus one: a program finding an older epoch in its slot starts the slot
 * over; user space keeps a CPU's copy only when its epoch is the interval it reads.
 */
struct rate_bucket {
	u64 epoch;
	u64 syscalls;
	u64 faults;
	u64 read_bytes;
	u64 write_bytes;
	u64 switches;
};

/* dir: 1 read, 2 write (the read/write family of system calls). */
struct io_size_key {
	u32 tgid;
	u32 tid;
	u32 dir;
	u32 pad;
};

/* Successful calls (return value >= 0), their bytes, and a log2 histogram of the sizes. */
struct io_size_stats {
	u64 calls;
	u64 bytes;
	u64 hist[HIST_SLOTS];
};

struct fn_frames {
	u32 depth;
	u32 slot[USTACK_DEPTH];
	u32 pad;
	u64 ts[USTACK_DEPTH];
};

struct event {
	u32 kind;
	u32 tgid;
	u32 tid;
	u32 cpu;
	u64 ts;
	u64 dur;
	u64 arg;
	char comm[COMM_LEN];
};

/*
 * A cpu-clock sample sent whole through the ring buffer: its stacks, as bpf_get_stack copies
 * them (innermost first), when the stack map could not store one of them (its hash bucket
 * held another stack, or the map was full). The sample then reaches user space with its
 * frames instead of being counted without its stack.
 */
#define STACK_FRAMES 127
struct stack_event {
	u32 kind; /* EV_STACK */
	u32 tgid;
	u32 tid;
	s32 ubytes; /* bytes of ustack copied; negative: an error (no user stack) */
	s32 kbytes; /* bytes of kstack copied; negative: an error */
	u32 pad;
	char comm[COMM_LEN];
	u64 ustack[STACK_FRAMES];
	u64 kstack[STACK_FRAMES];
};

#endif
