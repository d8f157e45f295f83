//! Function regions without recompiling: a uprobe on a function's entry and a uretprobe on
//! its return, each sampling on every hit with `PERF_SAMPLE_READ` of a group that also holds
//! the counters. Entry and return samples of one thread pair up (nesting and recursion
//! included) and the counter deltas between them are the function's region.
//!
//! Limits: only the command's main thread is followed (a per-task event with `inherit`
//! cannot be mmapped; per-CPU events would lift this); functions are found in the ELF
//! symbol tables (`.symtab`, `.dynsym`) of the executable itself, not of shared libraries.

use std::path::Path;

use hpcscope_host::perf::{
    EventSpec, FORMAT_GROUP, FORMAT_ID, FORMAT_TOTAL_TIME_ENABLED as FORMAT_ENABLED,
    FORMAT_TOTAL_TIME_RUNNING as FORMAT_RUNNING, PERF_FLAG_FD_CLOEXEC, PerfEventAttr,
    RECORD_SAMPLE, RingBuffer, SAMPLE_IDENTIFIER, SAMPLE_READ, SAMPLE_TID, SAMPLE_TIME,
    perf_event_open,
};

use crate::error::{Error, Result};
use crate::raw::{Collector, Count, RawData};

/// File offset of function `name` in ELF file `path` (what a uprobe needs): its address in
/// the symbol tables (`.symtab`, then `.dynsym`), through the loadable segment holding it.
pub fn function_offset(path: &Path, name: &str) -> Result<u64> {
    let data =
        hpcscope_core::load::read_bytes(path).map_err(|e| crate::import::read_error(path, e))?;
    let bad = |m: &str| Error::Input(format!("{}: {m}", path.display()));
    let file = object::File::parse(&*data)
        .map_err(|e| bad(&format!("not an ELF file this host can read ({e})")))?;
    if file.format() != object::BinaryFormat::Elf {
        return Err(bad("not an ELF file"));
    }
    let functions = hpcscope_host::elf::Functions::of(&file);
    let addr = functions
        .named(name)
        .map(|s| s.addr)
        .ok_or_else(|| {
            bad(&format!(
                "no function '{name}' in the symbol tables (stripped binary, or a C++ name that needs its mangled form)"
            ))
        })?;
    functions.file_offset(addr).ok_or_else(|| {
        bad(&format!(
            "function '{name}' at {addr:#x} is in no loadable segment"
        ))
    })
}

fn open(attr: &PerfEventAttr, pid: libc::pid_t, group: i32) -> std::io::Result<i32> {
    perf_event_open(attr, pid, -1, group, PERF_FLAG_FD_CLOEXEC)
}

/// Runs `argv` with regions on the entry and return of each function in `functions`
/// (symbols of the executable `argv[0]` resolves to), counting the software events.
#[allow(clippy::too_many_lines)]
pub fn collect_functions(
    argv: &[String],
    functions: &[String],
    events: &[EventSpec],
) -> Result<RawData> {
    crate::perf::check_paranoid(2, "uprobes on your own command")?;
    let exe = which(&argv[0]).ok_or_else(|| Error::Input(format!("cannot find '{}'", argv[0])))?;
    let uprobe_type: u32 = std::fs::read_to_string(Path::new(crate::perf::SYSFS_PMUS).join("uprobe/type"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| Error::Env(crate::error::EnvLimit::Syscall {
            call: "uprobe PMU".into(),
            message: "no uprobe PMU in /sys/bus/event_source/devices (kernel without CONFIG_UPROBE_EVENTS)".into(),
        }))?;
    let path_c = std::ffi::CString::new(exe.display().to_string())
        .map_err(|_| Error::Input("path with a NUL byte".into()))?;
    let offsets: Vec<u64> = functions
        .iter()
        .map(|f| function_offset(&exe, f))
        .collect::<Result<_>>()?;
    let mut raw = RawData::new("functions", "uprobes", Collector::Perf);
    // Fork, stop before exec, attach, release (as perf::run_once does).
    let c_argv: Vec<std::ffi::CString> = argv
        .iter()
        .filter_map(|a| std::ffi::CString::new(a.as_bytes()).ok())
        .collect();
    let mut argv_p: Vec<*const libc::c_char> = c_argv.iter().map(|c| c.as_ptr()).collect();
    argv_p.push(std::ptr::null());
    let mut go = [0 as libc::c_int; 2];
    // SAFETY: pipe2 on a 2-int array.
    if unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::Input("pipe2 failed".into()));
    }
    // SAFETY: getpid before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the child only calls async-signal-safe functions on prepared data.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        unsafe {
            // The measured program dies with hpcscope.
            hpcscope_host::child::in_child_after_fork(parent);
            libc::close(go[1]);
            let mut b = 0u8;
            libc::read(go[0], (&mut b as *mut u8).cast(), 1);
            libc::execvp(argv_p[0], argv_p.as_ptr());
            libc::_exit(127);
        }
    }
    // SAFETY: closing our read end.
    unsafe {
        libc::close(go[0]);
    }
    let read_format = FORMAT_GROUP | FORMAT_ID | FORMAT_ENABLED | FORMAT_RUNNING;
    let mut rings: Vec<(usize, i32, i32, RingBuffer)> = Vec::new();
    let mut fds = Vec::new();
    // A per-task event with `inherit` cannot be mmapped (the kernel wants per-CPU events
    // then): the main thread only.
    let inherit = false;
    raw.warnings
        .push("function regions follow the command's main thread only".into());
    for (fi, off) in offsets.iter().enumerate() {
        let mk = |ret: bool, inh: bool| PerfEventAttr {
            type_: uprobe_type,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: u64::from(ret),
            config1: path_c.as_ptr() as u64,
            config2: *off,
            sample_period: 1,
            sample_type: SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME | SAMPLE_READ,
            read_format,
            // enable_on_exec | inherit | disabled
            flags: (1 << 12) | u64::from(inh) << 1 | 1,
            wakeup_events: 1,
            ..PerfEventAttr::default()
        };
        let leader = open(&mk(false, inherit), pid, -1)
            .map_err(|e| Error::Input(format!("uprobe on {}: {e}", functions[fi])))?;
        let ret = open(&mk(true, inherit), pid, leader)
            .map_err(|e| Error::Input(format!("uretprobe on {}: {e}", functions[fi])))?;
        for ev in events {
            let a = PerfEventAttr {
                type_: ev.type_,
                size: std::mem::size_of::<PerfEventAttr>() as u32,
                config: ev.config,
                read_format,
                flags: u64::from(inherit) << 1,
                ..PerfEventAttr::default()
            };
            match open(&a, pid, leader) {
                Ok(fd) => fds.push(fd),
                Err(e) => raw.warnings.push(format!("{}: {e}", ev.name)),
            }
        }
        let ring = RingBuffer::map(leader, 64).map_err(|e| Error::Input(format!("mmap: {e}")))?;
        // The return probe writes into the leader's ring.
        // SAFETY: PERF_EVENT_IOC_SET_OUTPUT (0x2405) with another perf fd of this process.
        unsafe {
            libc::ioctl(ret, 0x2405 as _, leader);
        }
        fds.push(ret);
        fds.push(leader);
        rings.push((fi, leader, ret, ring));
    }
    // SAFETY: release the child.
    unsafe {
        libc::write(go[1], [1u8].as_ptr().cast(), 1);
        libc::close(go[1]);
    }
    // Poll the rings while the child runs.
    let mut records: Vec<(usize, Vec<u8>)> = Vec::new();
    loop {
        let mut st = 0;
        // SAFETY: non-blocking wait for our child.
        let r = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
        for (fi, _, _, ring) in &mut rings {
            ring.drain(|r| records.push((*fi, r.bytes.to_vec())));
        }
        if r == pid {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // Pair entries and returns per thread.
    let mut ids: std::collections::HashMap<u64, (usize, bool)> = std::collections::HashMap::new();
    for (fi, leader, ret, _) in &rings {
        for (fd, is_ret) in [(*leader, false), (*ret, true)] {
            let mut id = 0u64;
            // SAFETY: PERF_EVENT_IOC_ID (0x80082407) writes a u64.
            unsafe {
                libc::ioctl(fd, 0x8008_2407u64 as _, &mut id as *mut u64);
            }
            ids.insert(id, (*fi, is_ret));
        }
    }
    // (function, thread) -> open calls: (entry time, group values at entry).
    type Open = Vec<(u64, Vec<u64>)>;
    let mut stacks: std::collections::HashMap<(usize, u32), Open> =
        std::collections::HashMap::new();
    let names: Vec<String> = events.iter().map(|e| e.name.clone()).collect();
    for (_, rec) in records {
        let ty = u32::from_le_bytes(rec[0..4].try_into().expect("4"));
        if ty != RECORD_SAMPLE || rec.len() < 56 {
            continue;
        }
        let u64_at = |o: usize| u64::from_le_bytes(rec[o..o + 8].try_into().expect("8"));
        // header, identifier, pid/tid, time, then the group read.
        let Some(&(fi, is_ret)) = ids.get(&u64_at(8)) else {
            continue;
        };
        let tid = u32::from_le_bytes(rec[20..24].try_into().expect("4"));
        let time = u64_at(24);
        let nr = u64_at(32) as usize;
        let mut o = 56;
        let mut vals = Vec::new();
        for _ in 0..nr {
            if o + 16 > rec.len() {
                break;
            }
            vals.push(u64_at(o));
            o += 16;
        }
        let st = stacks.entry((fi, tid)).or_default();
        if !is_ret {
            st.push((time, vals));
        } else if let Some((t0, v0)) = st.pop() {
            let t = raw.thread_mut(&functions[fi], u64::from(tid));
            t.time_s = Some(t.time_s.unwrap_or(0.0) + time.saturating_sub(t0) as f64 * 1e-9);
            t.calls = Some(t.calls.unwrap_or(0) + 1);
            // Group order: entry probe, return probe, then the counters.
            for (k, name) in names.iter().enumerate() {
                let (a, b) = (
                    v0.get(k + 2).copied().unwrap_or(0),
                    vals.get(k + 2).copied().unwrap_or(0),
                );
                let e = t.counters.entry(name.clone()).or_insert(Count::of(0.0));
                e.value = e.value.map(|x| x + b.saturating_sub(a) as f64);
            }
        }
    }
    for fd in fds {
        // SAFETY: closing fds we opened.
        unsafe {
            libc::close(fd);
        }
    }
    drop(rings);
    if raw.regions.is_empty() {
        raw.warnings
            .push(format!("no call of {} completed", functions.join(", ")));
    }
    Ok(raw)
}

fn which(cmd: &str) -> Option<std::path::PathBuf> {
    hpcscope_host::tools::resolve_program(cmd).and_then(|p| std::fs::canonicalize(p).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_regions_through_uprobes() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("f.c");
        std::fs::write(
            &src,
            "#include <stdlib.h>\n__attribute__((noinline)) double work(int n){volatile double s=0;for(int i=0;i<n;i++)s+=i*0.5;return s;}\nint main(){double t=0;for(int i=0;i<3;i++)t+=work(2000000);return t<0;}\n",
        )
        .unwrap();
        let exe = dir.path().join("f");
        let ok = std::process::Command::new("cc")
            .args(["-O1", "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            println!("skipping test - no C compiler");
            return;
        }
        let off = function_offset(&exe, "work").unwrap();
        // The same offset as the symbol's own (`nm`), minus its segment's load address.
        assert!(off > 0);
        // Not an ELF, and an ELF cut short: errors that name the file, no panic.
        let junk = dir.path().join("junk");
        std::fs::write(&junk, b"#!/bin/sh\necho\n").unwrap();
        assert!(
            function_offset(&junk, "work")
                .unwrap_err()
                .to_string()
                .contains("junk")
        );
        let cut = dir.path().join("cut");
        std::fs::write(&cut, &std::fs::read(&exe).unwrap()[..200]).unwrap();
        assert!(function_offset(&cut, "work").is_err());
        assert!(
            function_offset(&exe, "nope")
                .unwrap_err()
                .to_string()
                .contains("no function 'nope'")
        );
        let ev = vec![EventSpec::parse("task-clock").unwrap()];
        let raw = match collect_functions(&[exe.display().to_string()], &["work".to_string()], &ev)
        {
            Ok(r) => r,
            Err(e) => {
                println!("skipping test - uprobes not usable here: {e}");
                return;
            }
        };
        let r = raw
            .regions
            .iter()
            .find(|r| r.name == "work")
            .unwrap_or_else(|| panic!("{:?}", raw.warnings));
        let a = r.aggregate();
        assert_eq!(a.calls, Some(3));
        assert!(a.time_s.unwrap() > 0.0);
        assert!(a.counters["task-clock"].value.unwrap() > 0.0);
    }
}
