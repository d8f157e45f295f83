//! Child processes that die with hpcscope: a measured program must not keep running after
//! hpcscope was stopped (Ctrl-C, `kill`, `kill -9`, a job scheduler's time limit), holding
//! CPUs and skewing the next measurement.
//!
//! Every program hpcscope starts asks the kernel to kill it when hpcscope dies
//! (`PR_SET_PDEATHSIG` with `SIGKILL`, set between `fork` and `exec`); a child whose parent
//! is already gone by then exits at once. The child stays in hpcscope's process group, so a
//! Ctrl-C at the terminal reaches both.
//!
//! The signal is tied to the thread that started the child: start children from a thread
//! that outlives them (the main thread, or the thread that waits for them).

use std::process::Command;

/// Makes the child `cmd` starts die when this process dies.
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: getpid is async-signal-safe; it runs before the fork.
        let parent = unsafe { libc::getpid() };
        // SAFETY: only async-signal-safe calls (prctl, getppid) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                in_child_after_fork(parent);
                Ok(())
            });
        }
    }
    cmd
}

/// For code that forks by hand: call in the child, right after `fork`, with the parent's
/// pid (taken before the fork). Async-signal-safe.
///
/// # Safety
///
/// Call only in a freshly forked child, before `exec`.
pub unsafe fn in_child_after_fork(parent: libc::pid_t) {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl and getppid are async-signal-safe; _exit ends the child at once.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        // The parent died between the fork and the prctl: the signal will never come.
        if libc::getppid() != parent {
            libc::_exit(127);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
}

/// A descriptor on `/dev/null` (close-on-exec), opened before a fork so that the child can
/// send its standard output there with [`stdout_to_in_child`]: a measured program's own
/// output must not mix into hpcscope's (e.g. JSON written to stdout). `None` when it
/// cannot be opened (the child then keeps hpcscope's stdout).
pub fn null_for_child() -> Option<std::os::fd::OwnedFd> {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .ok()
        .map(Into::into)
}

/// In a freshly forked child: makes `fd` (from [`null_for_child`]) its standard output.
/// Async-signal-safe.
///
/// # Safety
///
/// Call only in a freshly forked child, before `exec`.
pub unsafe fn stdout_to_in_child(fd: libc::c_int) {
    // SAFETY: dup2 is async-signal-safe; the new descriptor 1 is not close-on-exec.
    unsafe {
        libc::dup2(fd, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: i32) -> bool {
        // SAFETY: signal 0 only asks whether the process exists.
        let r = unsafe { libc::kill(pid, 0) };
        if r != 0 {
            return false;
        }
        // A zombie (dead, not yet reaped) counts as gone.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().next())
                    != Some("Z")
            })
            .unwrap_or(false)
    }

    #[test]
    fn the_child_dies_when_its_parent_is_killed() {
        // A middle process (a shell) starts a long sleep through this crate's hook...
        // simulated here: the test process forks a parent that spawns `sleep` with the hook
        // and reports the sleep's pid, then is killed with SIGKILL.
        let (r, w) = {
            let mut fds = [0; 2];
            // SAFETY: a valid array for two descriptors.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            (fds[0], fds[1])
        };
        // SAFETY: the forked child only spawns a process, writes a pid and waits.
        let middle = unsafe { libc::fork() };
        assert!(middle >= 0);
        if middle == 0 {
            let child = die_with_parent(Command::new("sleep").arg("30"))
                .spawn()
                .map(|c| c.id() as i32)
                .unwrap_or(-1);
            let b = child.to_ne_bytes();
            // SAFETY: writing 4 bytes from a valid buffer to our pipe.
            unsafe {
                libc::write(w, b.as_ptr().cast(), 4);
                libc::pause();
                libc::_exit(0);
            }
        }
        let mut b = [0u8; 4];
        // SAFETY: reading 4 bytes into a valid buffer.
        assert_eq!(unsafe { libc::read(r, b.as_mut_ptr().cast(), 4) }, 4);
        let sleeper = i32::from_ne_bytes(b);
        assert!(sleeper > 0 && alive(sleeper));
        // SAFETY: killing and reaping our own forked child.
        unsafe {
            libc::kill(middle, libc::SIGKILL);
            libc::waitpid(middle, std::ptr::null_mut(), 0);
        }
        let t0 = std::time::Instant::now();
        while alive(sleeper) && t0.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!alive(sleeper), "the grandchild outlived its killed parent");
    }
}
