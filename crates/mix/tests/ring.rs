//! The plugin's shared ring (`memring=`) carries the same records as its plain stream: a
//! batch lost, duplicated or put out of order fails these tests. The stream is read back
//! here from the ring by the plugin README's protocol (a small ring, so that the plugin
//! waits for slots), and through `mix`'s own reader.

mod common;
use hpcscope_test_support::build_plugin;

use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use hpcscope_mix::QemuEngine;
use hpcscope_mix::engine::{Ending, Transport};
use hpcscope_mix::run::{self, Outcome, Request};
use hpcscope_mix::{Arch, Placement};
use hpcscope_plugin_format::{
    END_TOP, MAGIC, MARKER_TOP, RING_MAGIC, RING_SLOT_RECORDS as SLOT_WORDS, SKIP_TOP, notice_parts,
};

const GATE: &str = include_str!("data/gate.c");
const THREADS: &str = include_str!("data/ring_threads.c");

/// How the test programs are built.
const X86: &[&str] = &["-O2", "-march=x86-64"];

fn ready() -> Option<tempfile::TempDir> {
    if !common::qemu_and_gcc() {
        return None;
    }
    Some(tempfile::tempdir().unwrap())
}

/// The plain stream of `bin args` (`memout=`), and what the program printed.
fn plain_stream(dir: &Path, bin: &Path, args: &[&str]) -> (Vec<u8>, String) {
    let path = dir.join("plain.stream");
    let out = Command::new("qemu-x86_64")
        .arg("-plugin")
        .arg(format!(
            "{},out={},mem=on,memout={}",
            build_plugin().display(),
            dir.join("plain.json").display(),
            path.display()
        ))
        .arg(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let s = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    (s, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The stream of `bin args` through a ring of `slots` slots, put back together as the
/// plain stream (each notice replaced by its slot's words), and what the program printed.
fn ring_stream(dir: &Path, bin: &Path, args: &[&str], slots: u32) -> (Vec<u8>, String) {
    let len = slots as usize * SLOT_WORDS * 8;
    let (mut pipe, mut sv) = ([-1i32; 2], [-1i32; 2]);
    // SAFETY: plain system calls on descriptors made here; ours are closed below or owned
    // by the `File`s made from them.
    let (ring_fd, base) = unsafe {
        let fd = libc::memfd_create(c"ring-test".as_ptr(), 0);
        assert!(fd >= 0);
        assert_eq!(libc::ftruncate(fd, len as libc::off_t), 0);
        let base = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        assert_ne!(base, libc::MAP_FAILED);
        assert_eq!(libc::pipe(pipe.as_mut_ptr()), 0);
        assert_eq!(
            libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()),
            0
        );
        libc::fcntl(pipe[0], libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(sv[1], libc::F_SETFD, libc::FD_CLOEXEC);
        (fd, base as *const u64)
    };
    let token = |slot: u32| {
        let b = slot.to_le_bytes();
        // SAFETY: 4 bytes from a local buffer on our socket.
        unsafe { libc::send(sv[1], b.as_ptr().cast(), 4, libc::MSG_NOSIGNAL) };
    };
    for s in 0..slots {
        token(s);
    }
    let child = Command::new("qemu-x86_64")
        .arg("-plugin")
        .arg(format!(
            "{},out={},mem=on,memfd={},memring={ring_fd}:{}",
            build_plugin().display(),
            dir.join("ring.json").display(),
            pipe[1],
            sv[0]
        ))
        .arg(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // SAFETY: QEMU has its copies; the read end is ours.
    let mut notices = unsafe {
        for fd in [ring_fd, pipe[1], sv[0]] {
            libc::close(fd);
        }
        std::fs::File::from_raw_fd(pipe[0])
    };
    // Each notice as it comes: the plugin waits for the slot's token to go on.
    let mut head = [0u8; 8];
    notices.read_exact(&mut head).unwrap();
    assert_eq!(&head, RING_MAGIC);
    let mut stream = MAGIC.to_vec();
    let mut used = 0;
    let mut word = [0u8; 8];
    while notices.read_exact(&mut word).is_ok() {
        let w = u64::from_le_bytes(word);
        let Some((slot, n)) = notice_parts(w) else {
            stream.extend_from_slice(&word);
            continue;
        };
        assert!(slot < slots && n <= SLOT_WORDS, "notice {w:#x}");
        // SAFETY: inside the mapping; the plugin leaves the slot alone until its token.
        let recs = unsafe { std::slice::from_raw_parts(base.add(slot as usize * SLOT_WORDS), n) };
        for r in recs {
            stream.extend_from_slice(&r.to_le_bytes());
        }
        used += 1;
        token(slot);
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    // SAFETY: our mapping and socket, no longer used.
    unsafe {
        libc::munmap(base as *mut libc::c_void, len);
        libc::close(sv[1]);
    }
    // More batches than slots: the plugin waited for slots to come back.
    assert!(used > slots as usize, "{used} batches in {slots} slots");
    (stream, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Each thread's records (after the header, markers left out), in order.
fn per_thread(stream: &[u8]) -> std::collections::BTreeMap<u32, Vec<u64>> {
    let mut m: std::collections::BTreeMap<u32, Vec<u64>> = Default::default();
    let mut thread = 0;
    for w in stream[8..].chunks_exact(8) {
        let w = u64::from_le_bytes(w.try_into().unwrap());
        match w >> 56 {
            MARKER_TOP => thread = w as u32,
            END_TOP | SKIP_TOP => {}
            _ => m.entry(thread).or_default().push(w),
        }
    }
    m
}

#[test]
fn one_thread_streams_the_same_bytes_through_the_ring() {
    let Some(dir) = ready() else { return };
    let Some(bin) = common::gcc(dir.path(), "gate", GATE, X86) else {
        eprintln!("skipping: gcc cannot build the test program");
        return;
    };
    let (plain, _) = plain_stream(dir.path(), &bin, &["100000"]);
    let (ring, _) = ring_stream(dir.path(), &bin, &["100000"], 2);
    assert!(plain.len() > 8 * 500_000, "{} bytes", plain.len());
    assert_eq!(plain.len(), ring.len());
    // Compared whole, and said where they part if they do.
    if let Some(i) = plain.iter().zip(&ring).position(|(a, b)| a != b) {
        panic!("the streams differ from byte {i} of {}", plain.len());
    }
}

#[test]
fn threads_stream_the_same_records_through_the_ring() {
    let Some(dir) = ready() else { return };
    let Some(bin) = common::gcc(
        dir.path(),
        "threads",
        THREADS,
        &["-O2", "-march=x86-64", "-pthread"],
    ) else {
        eprintln!("skipping: gcc cannot build the test program");
        return;
    };
    let args = ["4", "3"];
    let (plain, out_p) = plain_stream(dir.path(), &bin, &args);
    let (ring, out_r) = ring_stream(dir.path(), &bin, &args, 3);
    // Every thread's accesses to its array: the same sequence in every run (the rest,
    // the library's own work around the threads, depends on timing).
    let range = |out: &str| {
        let mut f = out.split_whitespace();
        let base = u64::from_str_radix(f.next().unwrap().trim_start_matches("0x"), 16).unwrap();
        let size: u64 = f.next().unwrap().parse().unwrap();
        base..base + size
    };
    let (rp, rr) = (range(&out_p), range(&out_r));
    assert_eq!(rp, rr, "the array moved between runs");
    let kernel = |s: &[u8]| {
        per_thread(s)
            .into_iter()
            .map(|(t, v)| {
                let k: Vec<u64> = v
                    .into_iter()
                    .filter(|r| rp.contains(&(r & ((1 << 56) - 1))))
                    .collect();
                (t, k)
            })
            .collect::<Vec<_>>()
    };
    let (kp, kr) = (kernel(&plain), kernel(&ring));
    assert_eq!(
        kp.len(),
        4,
        "threads {:?}",
        kp.iter().map(|k| k.0).collect::<Vec<_>>()
    );
    for ((tp, p), (tr, r)) in kp.iter().zip(&kr) {
        assert_eq!(tp, tr);
        // 3 passes over 2^16 elements: a load, a store and a load each.
        assert_eq!(p.len(), 9 << 16, "thread {tp}");
        assert_eq!(p.len(), r.len(), "thread {tp}");
        if let Some(i) = p.iter().zip(r).position(|(a, b)| a != b) {
            panic!("thread {tp}: record {i} differs");
        }
    }
}

/// The QEMU engine of these tests, its stream through `transport`.
fn qemu(transport: Transport) -> QemuEngine {
    QemuEngine::new("qemu-x86_64".into(), build_plugin()).via(transport)
}

fn request(bin: &Path, args: &[&str], timeout: Option<Duration>) -> Request {
    Request {
        program: bin.to_path_buf(),
        args: args.iter().map(|a| a.to_string()).collect(),
        arch: Arch::X86_64,
        static_binary: false,
        sve_bits: None,
        regions: Vec::new(),
        scopes: Vec::new(),
        nodes: ["cascadelake-8260", "graviton2"]
            .iter()
            .map(|id| hpcscope_mix::node(&hpcscope_core::library::builtin(id).unwrap()).unwrap())
            .collect(),
        placement: Placement::Compact,
        env: Vec::new(),
        tbs: false,
        timeout,
        sample: None,
        stream_gate: true,
    }
}

#[test]
fn mix_counts_the_same_through_the_ring_and_the_pipe() {
    let Some(dir) = ready() else { return };
    let Some(bin) = common::gcc(dir.path(), "gate", GATE, X86) else {
        eprintln!("skipping: gcc cannot build the test program");
        return;
    };
    let req = request(&bin, &["100000"], None);
    let ring = run::run(&qemu(Transport::Ring), &req).unwrap();
    let pipe = run::run(&qemu(Transport::Pipe), &req).unwrap();
    for o in [&ring, &pipe] {
        assert_eq!(o.ending, Ending::Success, "{}", o.stderr_tail);
    }
    assert!(ring.records > 500_000, "{}", ring.records);
    assert_eq!(ring.records, pipe.records);
    // Every counter of every level, node and thread.
    assert_eq!(ring.caches, pipe.caches);
    assert_eq!(ring.thread_caches, pipe.thread_caches);
    let w = |o: &Outcome| o.counts.as_ref().unwrap().mem_stream.clone().unwrap();
    assert_eq!((w(&ring).records, w(&ring).dropped), (w(&pipe).records, 0));
}

#[test]
fn a_guest_killed_mid_stream_ends_the_ring_reader() {
    let Some(dir) = ready() else { return };
    // Streams, then dies of SIGKILL in the middle of a batch (QEMU with it: no exit
    // callback, no final flush).
    let src = r#"
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    long n = 1 << 20;
    volatile double *a = malloc(n * sizeof *a);
    for (int r = 0; r < 4; r++)
        for (long i = 0; i < n; i++)
            a[i] = a[i] + 1.0;
    kill(getpid(), SIGKILL);
    return 0;
}
"#;
    let Some(bin) = common::gcc(dir.path(), "killed", src, X86) else {
        eprintln!("skipping: gcc cannot build the test program");
        return;
    };
    let o = run::run(
        &qemu(Transport::Ring),
        &request(&bin, &[], Some(Duration::from_secs(120))),
    )
    .unwrap();
    assert_eq!(o.ending, Ending::Signal(libc::SIGKILL), "{}", o.stderr_tail);
    // The batches announced before the end were simulated; the one being filled is lost.
    assert!(o.records > 7 << 20, "{}", o.records);
    assert!(o.records < 9 << 20, "{}", o.records);
}
