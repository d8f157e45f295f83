//! The QEMU engine: the program run under QEMU user mode with the hpcscope TCG plugin,
//! which writes the counts report at exit and, when asked, the record stream.

use std::fs::File;
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::elf::Arch;
use crate::engine::transport::{RingSetup, Transport};
use crate::engine::{Ending, Engine, Finished, Launch, PluginOutput, RecordStream, Running};
use crate::error::MixError;

pub mod tools;

fn ranges(v: &[(u64, u64)]) -> String {
    v.iter()
        .map(|(a, b)| format!("0x{a:x}-0x{b:x}"))
        .collect::<Vec<_>>()
        .join("+")
}

/// Environment variable that turns the records written by QEMU's translated code `on` or
/// `off` (default: wherever the emulator has them).
pub const MEMINLINE_ENV: &str = "HPCSCOPE_MEMINLINE";

/// The QEMU engine: a QEMU user-mode emulator and the hpcscope plugin it loads.
#[derive(Debug, Clone)]
pub struct QemuEngine {
    /// QEMU binary.
    pub qemu: PathBuf,
    /// Plugin library.
    pub plugin: PathBuf,
    /// How the record stream travels (the ring unless `HPCSCOPE_MIX_STREAM=pipe`).
    pub transport: Transport,
    /// What counted, for the notes (`counted under ...`); empty when not known.
    pub described: String,
}

impl QemuEngine {
    /// `qemu` loading `plugin`, the stream through the [`Transport`] `HPCSCOPE_MIX_STREAM`
    /// asks for (the ring by default).
    pub fn new(qemu: PathBuf, plugin: PathBuf) -> Self {
        Self {
            qemu,
            plugin,
            transport: Transport::from_env(),
            described: String::new(),
        }
    }

    /// The same engine, the stream through `transport`.
    pub fn via(self, transport: Transport) -> Self {
        Self { transport, ..self }
    }

    /// The emulator for `arch` (the cached QEMU 10 when built, else the one on `PATH` or
    /// `HPCSCOPE_QEMU`) and the plugin for its API, and which they are.
    pub fn for_arch(arch: Arch) -> Result<Self, MixError> {
        let emu = tools::emulator(arch)?;
        let plugin = tools::plugin(&emu)?;
        Ok(Self {
            described: counted_by(&emu),
            ..Self::new(emu.qemu.clone(), plugin)
        })
    }
}

impl Engine for QemuEngine {
    fn counted_by(&self) -> String {
        self.described.clone()
    }

    fn collector(&self) -> &'static str {
        "hpcscope mix (QEMU plugin + cache simulator)"
    }

    fn busy_cpus(&self) -> usize {
        // QEMU's vCPU thread keeps one CPU busy: leave it one.
        1
    }

    fn rerun_note(&self, program: &Path, ending: &Ending) -> Option<String> {
        // QEMU 7.2 kills x86-64 builds that run fine natively with SIGTRAP now and then
        // (bare `qemu-x86_64` too, without the plugin: 3 and 8 of 10 runs of two AVX2
        // OpenMP kernels on a loaded host, none of 40 later).
        (*ending == Ending::Signal(5)).then(|| format!(
            "QEMU killed {} with SIGTRAP (an intermittent fault of QEMU 7.2's user mode, which bare qemu-x86_64 shows too): the emulation was run again",
            program.display()
        ))
    }

    fn start(&self, req: &Launch) -> Result<Box<dyn Running>, MixError> {
        start(self, req).map(|r| Box::new(r) as Box<dyn Running>)
    }
}

/// QEMU running: its child process and scratch directory.
struct QemuRun {
    child: std::process::Child,
    dir: PathBuf,
    out_json: PathBuf,
    stderr_path: PathBuf,
    start: Instant,
    timeout: Option<Duration>,
    stream: Option<RecordStream>,
}

fn start(engine: &QemuEngine, req: &Launch) -> Result<QemuRun, MixError> {
    let dir = tempdir()?;
    let out_json = dir.join("counts.json");
    let mut plugin_args = format!("{},out={}", engine.plugin.display(), out_json.display());
    if let Some(vl) = req.sve_bits {
        plugin_args.push_str(&format!(",vl={vl}"));
    }
    if !req.regions.is_empty() {
        plugin_args.push_str(&format!(",region={}", ranges(&req.regions)));
    }
    if !req.scopes.is_empty() {
        plugin_args.push_str(&format!(",scope={}", ranges(&req.scopes)));
    }
    if req.tbs {
        plugin_args.push_str(",tbs=on");
    }
    let mut pipe_fds = [-1i32; 2];
    let mut ring: Option<RingSetup> = None;
    if let Some(stream) = &req.stream {
        // A plain pipe: the write end is inherited by QEMU, the read end is ours alone.
        pipe_fds = super::transport::stream_pipe()?;
        plugin_args.push_str(&format!(
            ",mem=on,memfd={},coalesce={}",
            pipe_fds[1], stream.coalesce
        ));
        // `HPCSCOPE_MEMINLINE=off` keeps the plugin's callback per access where QEMU could
        // write the records itself (to compare the two; `on` insists on QEMU's records).
        if let Ok(v) = std::env::var(MEMINLINE_ENV)
            && (v == "on" || v == "off")
        {
            plugin_args.push_str(&format!(",meminline={v}"));
        }
        if engine.transport == Transport::Ring {
            ring = RingSetup::new();
            if let Some(r) = &ring {
                plugin_args.push_str(&format!(",memring={}:{}", r.fd, r.token_read));
            }
        }
        if let Some(gate) = &stream.gate {
            plugin_args.push_str(&format!(",sample={gate}"));
        }
    }
    let cpu = match (req.arch, req.sve_bits) {
        (Arch::Aarch64, Some(vl)) => format!("max,sve-default-vector-length={}", vl / 8),
        _ => "max".to_string(),
    };
    let stderr_path = dir.join("stderr");
    let stderr_file = File::create(&stderr_path)
        .map_err(|e| MixError::Run(format!("cannot create a temporary file: {e}")))?;
    let start = Instant::now();
    let mut cmd = Command::new(&engine.qemu);
    // QEMU (and the program in it) dies with hpcscope: a Ctrl-C, `kill`, a scheduler's time
    // limit. The caller waits for it ([`Running::finish`]), so it outlives the child.
    hpcscope_host::child::die_with_parent(&mut cmd);
    quiet_fixed_layout(&mut cmd);
    let guest_arena = req
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == ARENA_VAR)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var(ARENA_VAR).ok());
    let child = cmd
        .envs(req.env.iter().map(|(k, v)| (k, v)))
        .env(ARENA_VAR, "1")
        .args(guest_arena_args(guest_arena.as_deref()))
        .arg("-cpu")
        .arg(&cpu)
        .arg("-plugin")
        .arg(&plugin_args)
        .arg(&req.program)
        .args(&req.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr_file)
        .spawn()
        .map_err(|e| MixError::Missing {
            message: format!("cannot start {}: {e}", engine.qemu.display()),
            fix: "install qemu-user (apt-get install qemu-user)".into(),
        })?;
    let stream = if req.stream.is_some() {
        // SAFETY: closing our copy of the write end so EOF arrives when QEMU exits.
        unsafe { libc::close(pipe_fds[1]) };
        // SAFETY: the read end is a valid descriptor we own from here on.
        let file = unsafe { File::from_raw_fd(pipe_fds[0]) };
        // QEMU has its copies of the ring's descriptors: ours go (the mapping stays).
        Some(match ring.take() {
            Some(r) => RecordStream::Ring(file, r.into_reader()),
            None => RecordStream::Records(file),
        })
    } else {
        None
    };
    Ok(QemuRun {
        child,
        dir,
        out_json,
        stderr_path,
        start,
        timeout: req.timeout,
        stream,
    })
}

impl Running for QemuRun {
    fn take_stream(&mut self) -> Option<RecordStream> {
        self.stream.take()
    }

    fn finish(mut self: Box<Self>) -> Result<Finished, MixError> {
        let ending = wait(&mut self.child, self.timeout)?;
        let wall_s = self.start.elapsed().as_secs_f64();
        // The final counts, or else the plugin's last snapshot (written every 250 ms): QEMU
        // 7.2 skips the plugins' exit callbacks when the guest dies of a signal.
        let partial_json = self.dir.join("counts.json.partial");
        let counts =
            match std::fs::read_to_string(&self.out_json)
                .or_else(|_| std::fs::read_to_string(&partial_json))
            {
                Ok(t) => Some(serde_json::from_str::<PluginOutput>(&t).map_err(|e| {
                    MixError::Run(format!("the plugin's output is unreadable: {e}"))
                })?),
                Err(_) => None,
            };
        let stderr_tail = tail(
            &std::fs::read_to_string(&self.stderr_path).unwrap_or_default(),
            12,
        );
        let _ = std::fs::remove_dir_all(&self.dir);
        Ok(Finished {
            counts,
            ending,
            wall_s,
            stderr_tail,
        })
    }
}

pub(crate) fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

pub(crate) fn tempdir() -> Result<PathBuf, MixError> {
    let base = std::env::temp_dir();
    sweep_stale(&base);
    for i in 0..1000u32 {
        let d = base.join(format!("hpcscope-mix-{}-{i}", std::process::id()));
        if std::fs::create_dir(&d).is_ok() {
            return Ok(d);
        }
    }
    Err(MixError::Run(format!(
        "cannot create a temporary directory in {}",
        base.display()
    )))
}

/// Removes the scratch directories of mix runs whose hpcscope is gone (killed with -9, or
/// the machine lost power): `hpcscope-mix-PID-N` in `base`, owned by this user, where no
/// process PID exists. A directory of a live process (or of a PID reused since) is kept.
/// Returns how many were removed.
fn sweep_stale(base: &Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("hpcscope-mix-"))
            .and_then(|r| r.split_once('-'))
            .filter(|(_, i)| i.parse::<u32>().is_ok())
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(md) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if !md.is_dir() || md.uid() != uid || pid <= 0 {
            continue;
        }
        // SAFETY: signal 0 only checks that the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone && std::fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

pub(crate) fn wait(
    child: &mut std::process::Child,
    timeout: Option<Duration>,
) -> Result<Ending, MixError> {
    let start = Instant::now();
    let mut sent_term = None::<Instant>;
    loop {
        match child.try_wait() {
            Ok(Some(st)) => {
                use std::os::unix::process::ExitStatusExt;
                if sent_term.is_some() {
                    return Ok(Ending::TimedOut);
                }
                return Ok(match (st.code(), st.signal()) {
                    (Some(0), _) => Ending::Success,
                    (Some(c), _) => Ending::Failed(c),
                    (None, Some(s)) => Ending::Signal(s),
                    (None, None) => Ending::Failed(-1),
                });
            }
            Ok(None) => {}
            Err(e) => return Err(MixError::Run(format!("waiting for QEMU: {e}"))),
        }
        if let Some(t) = timeout {
            match sent_term {
                None if start.elapsed() > t => {
                    // SIGTERM lets QEMU run the plugin's exit callback, which writes the
                    // counts so far.
                    // SAFETY: signalling our own child.
                    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                    sent_term = Some(Instant::now());
                }
                Some(s) if s.elapsed() > Duration::from_secs(5) => {
                    let _ = child.kill();
                }
                _ => {}
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The glibc variable that bounds the number of malloc arenas.
const ARENA_VAR: &str = "MALLOC_ARENA_MAX";

/// QEMU's arguments that give the guest its own value of `MALLOC_ARENA_MAX` (`value`, or
/// none) while QEMU itself runs with 1. In user mode the guest's memory and QEMU's share
/// one address space, and QEMU places the guest's large mappings in the gaps between its
/// own: a malloc arena that a thread of QEMU or of the plugin creates reserves 128 MiB at a
/// moment that races the guest's first allocations, so the guest's arrays fell in one of
/// two places from run to run (measured on the bundled CG under QEMU 10: its last four
/// arrays 128 MiB apart in one run in six, cascadelake-8260's L3 hit ratio 57.085 % or
/// 57.408 % with them). With one arena QEMU's threads allocate from the main heap and the
/// layout is the same every time.
fn guest_arena_args(value: Option<&str>) -> [String; 2] {
    match value {
        Some(v) => ["-E".into(), format!("{ARENA_VAR}={v}")],
        None => ["-U".into(), ARENA_VAR.into()],
    }
}

/// What QEMU's process gets before exec: no core file, and the same layout from run to run.
///
/// A guest that dies of a signal makes QEMU write a `qemu_*.core` file into the working
/// directory when core dumps are allowed: not wanted from an analysis. The layout is made
/// the same from run to run (what `setarch -R` does): QEMU 10 maps the guest's memory where
/// the host's address randomization puts it, and where a program's arrays fall moves its
/// conflicts in a cache whose set count is no power of two (the CG workload's L3 hit ratio
/// on cascadelake-8260 was 53.3 % in one run and 57.2 % in the next); QEMU 7.2 places the
/// guest at a fixed base anyway.
pub(crate) fn quiet_fixed_layout(cmd: &mut Command) {
    // SAFETY: setrlimit and personality are async-signal-safe system calls; nothing else
    // runs between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, || {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            let persona = libc::personality(0xffff_ffff);
            if persona != -1 {
                libc::personality(
                    persona as libc::c_ulong | libc::ADDR_NO_RANDOMIZE as libc::c_ulong,
                );
            }
            Ok(())
        });
    }
}

/// Which emulator and plugin API counted the profiles (QEMU 7.2, API v1: predicated SVE
/// instructions count every lane and SVE loads and stores are missing from the memory
/// stream; QEMU 10, API v4: active lanes and every SVE access).
fn counted_by(emu: &hpcscope_host::tools::Emulator) -> String {
    format!(
        "counted under {} ({}) with the plugin for API v{}{}",
        emu.describe(),
        match emu.source {
            "cache" => "built by scripts/build-qemu.sh",
            "HPCSCOPE_QEMU" => "HPCSCOPE_QEMU",
            _ => "on PATH",
        },
        emu.api,
        if emu.api >= 4 {
            ": SVE FLOPs by active lanes, SVE loads and stores in the cache simulation"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_keeps_its_own_arena_setting() {
        assert_eq!(guest_arena_args(None), ["-U", "MALLOC_ARENA_MAX"]);
        assert_eq!(guest_arena_args(Some("4")), ["-E", "MALLOC_ARENA_MAX=4"]);
    }

    #[test]
    fn qemu_runs_without_core_files_and_address_randomization() {
        // A child started as QEMU is: its personality has ADDR_NO_RANDOMIZE (0x0040000),
        // its core file limit is 0.
        let mut cmd = Command::new("sh");
        quiet_fixed_layout(&mut cmd);
        let out = cmd
            .args(["-c", "cat /proc/self/personality; ulimit -c"])
            .output()
            .expect("sh runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let persona =
            u64::from_str_radix(lines.next().expect("a personality").trim(), 16).expect("hex");
        assert_eq!(persona & 0x0040000, 0x0040000, "{text}");
        assert_eq!(lines.next(), Some("0"), "{text}");
    }
}

#[cfg(test)]
mod sweep_tests {
    use super::sweep_stale;

    /// A killed run's scratch directory goes; a live process's and foreign names stay.
    #[test]
    fn stale_scratch_directories_are_swept() {
        let base = tempfile::tempdir().unwrap();
        // A PID that does not exist: above the kernel's maximum.
        let max: i64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(4_194_304);
        let dead = base.path().join(format!("hpcscope-mix-{}-0", max + 1));
        let live = base
            .path()
            .join(format!("hpcscope-mix-{}-3", std::process::id()));
        let other = base.path().join("hpcscope-mix-notapid-0");
        let file = base.path().join(format!("hpcscope-mix-{}-1", max + 1));
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("records"), b"x").unwrap();
        }
        std::fs::write(&file, b"a file, not ours to remove").unwrap();
        assert_eq!(sweep_stale(base.path()), 1);
        assert!(!dead.exists());
        assert!(live.exists() && other.exists() && file.exists());
    }
}
