//! The native engine: the program runs on the machine itself under DynamoRIO with
//! hpcscope's client (crates/dr-client), which writes the same counts report as the QEMU
//! plugin at exit. AVX-512 programs run (QEMU has no AVX-512) at close to native speed.
//!
//! The record stream (for the cache simulation) comes through a pipe, written by the
//! client's inline code (crates/dr-client/src/stream.rs); the per-block breakdown with
//! `tbs=on`; `--scope` with `scope=`; x86-64, dynamically linked programs only. DynamoRIO and the client come from
//! scripts/build-dynamorio.sh (hpcscope's cache directory).

use std::fs::File;
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::elf::Arch;
use crate::engine::qemu::{quiet_fixed_layout, tail, tempdir, wait};
use crate::engine::{Engine, Finished, Launch, PluginOutput, RecordStream, Running, transport};
use crate::error::MixError;

/// The DynamoRIO version scripts/build-dynamorio.sh builds.
pub use hpcscope_host::tools::DYNAMORIO_VERSION;

/// DynamoRIO's build and the client.
#[derive(Debug, Clone)]
pub struct NativeEngine {
    /// The directory scripts/build-dynamorio.sh installs into (lib64/, ext/, client/).
    pub dir: PathBuf,
}

impl NativeEngine {
    /// The build in hpcscope's cache directory.
    pub fn from_cache() -> Result<Self, MixError> {
        Self::at(hpcscope_host::tools::dynamorio_dir())
    }

    /// The build in `dir`, checked.
    pub fn at(dir: PathBuf) -> Result<Self, MixError> {
        let e = NativeEngine { dir };
        for f in hpcscope_host::tools::dynamorio_files(&e.dir) {
            if !f.is_file() {
                return Err(MixError::Missing {
                    message: format!(
                        "the native engine needs DynamoRIO and hpcscope's client: {} is missing",
                        f.display()
                    ),
                    fix: "run scripts/build-dynamorio.sh (or use --engine qemu)".into(),
                });
            }
        }
        Ok(e)
    }

    /// The client library.
    pub fn client(&self) -> PathBuf {
        hpcscope_host::tools::dynamorio_client(&self.dir)
    }
}

fn ranges(v: &[(u64, u64)]) -> String {
    v.iter()
        .map(|(a, b)| format!("0x{a:x}-0x{b:x}"))
        .collect::<Vec<_>>()
        .join("+")
}

impl Engine for NativeEngine {
    fn counted_by(&self) -> String {
        format!(
            "counted natively under DynamoRIO {DYNAMORIO_VERSION} with hpcscope's client (AVX-512 masked FLOPs by active lanes)"
        )
    }

    fn collector(&self) -> &'static str {
        "hpcscope mix (DynamoRIO 11.90 client)"
    }

    fn emulated(&self) -> bool {
        false
    }

    /// None: the program runs at native speed (counting costs x1.2 to x2.3 native), a
    /// small part of the time its stream takes to simulate, and its thread waits on the
    /// full pipe the rest of the run, so the simulation may use every CPU (on a 2-CPU
    /// host, one worker per machine of `-m A -m B` instead of both on the reading thread:
    /// x0.70 and x0.88 of the wall time on triad_stencil and cg with another process
    /// loading the host, the same user CPU; docs/emulators.md, "The native engine").
    fn busy_cpus(&self) -> usize {
        0
    }

    fn start(&self, req: &Launch) -> Result<Box<dyn Running>, MixError> {
        let refuse = |what: &str| {
            Err(MixError::Usage {
                message: format!("the native engine does not do {what} yet"),
                fix: "use --engine qemu".into(),
            })
        };
        if req.arch != Arch::X86_64 {
            return refuse(&format!("{} programs", req.arch.name()));
        }
        let dir = tempdir()?;
        let out_json = dir.join("counts.json");
        // The process started is this one's child: its descendants (a forked child, a
        // program it execs) are left out by the client (see crates/dr-client).
        let mut args = format!("out={},owner={}", out_json.display(), std::process::id());
        if !req.regions.is_empty() {
            args.push_str(&format!(",region={}", ranges(&req.regions)));
        }
        if !req.scopes.is_empty() {
            args.push_str(&format!(",scope={}", ranges(&req.scopes)));
        }
        if req.tbs {
            args.push_str(",tbs=on");
        }
        // The record stream through a plain pipe: the write end is inherited by the
        // program, where the client writes; the read end is ours.
        let mut pipe_fds = [-1i32; 2];
        if let Some(stream) = &req.stream {
            pipe_fds = transport::stream_pipe()?;
            args.push_str(&format!(
                ",memfd={},coalesce={}",
                pipe_fds[1], stream.coalesce
            ));
            if let Some(gate) = &stream.gate {
                args.push_str(&format!(",sample={gate}"));
            }
        }
        let stderr_path = dir.join("stderr");
        let stderr_file = File::create(&stderr_path)
            .map_err(|e| MixError::Run(format!("cannot create a temporary file: {e}")))?;
        let libs = format!(
            "{}:{}",
            self.dir.join("lib64/release").display(),
            self.dir.join("ext/lib64/release").display()
        );
        let ld_path = match std::env::var("LD_LIBRARY_PATH") {
            Ok(p) if !p.is_empty() => format!("{libs}:{p}"),
            _ => libs,
        };
        let start = Instant::now();
        let mut cmd = if req.static_binary {
            // A statically linked program never runs the dynamic loader that LD_PRELOAD
            // needs: DynamoRIO's early injection, as drrun's. The kernel starts
            // libdynamorio.so, which loads the program itself (DYNAMORIO_EXE_PATH; its
            // arguments after the program's own argv[0]) and takes over from its first
            // instruction. (Not for every program: under it the dynamic loader's start
            // runs instrumented, some 30 ms more a run.)
            let program = launchable(&req.program)?;
            let mut cmd = Command::new(self.dir.join("lib64/release/libdynamorio.so"));
            std::os::unix::process::CommandExt::arg0(&mut cmd, &req.program);
            cmd.env("DYNAMORIO_EXE_PATH", &program);
            cmd
        } else {
            let mut cmd = Command::new(&req.program);
            cmd.env("LD_PRELOAD", "libdrpreload.so libdynamorio.so");
            cmd
        };
        hpcscope_host::child::die_with_parent(&mut cmd);
        quiet_fixed_layout(&mut cmd);
        let child = cmd
            .args(&req.args)
            .envs(req.env.iter().map(|(k, v)| (k, v)))
            .env("DYNAMORIO_RUNUNDER", "1")
            .env(
                "DYNAMORIO_OPTIONS",
                format!(
                    "-code_api -client_lib '{};0;{args}'",
                    self.client().display()
                ),
            )
            .env("LD_LIBRARY_PATH", ld_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr_file)
            .spawn();
        let stream = if req.stream.is_some() {
            // SAFETY: closing our copy of the write end so that the end of the stream
            // arrives when the program exits.
            unsafe { libc::close(pipe_fds[1]) };
            // SAFETY: the read end is a valid descriptor we own from here on.
            Some(RecordStream::Records(unsafe {
                File::from_raw_fd(pipe_fds[0])
            }))
        } else {
            None
        };
        let child = child.map_err(|e| MixError::Program {
            path: req.program.display().to_string(),
            message: format!("cannot start it: {e}"),
            fix: "check that it is an executable of this machine".into(),
        })?;
        Ok(Box::new(NativeRun {
            stream,
            child,
            dir,
            out_json,
            stderr_path,
            start,
            timeout: req.timeout,
        }))
    }
}

/// The program running under DynamoRIO.
struct NativeRun {
    stream: Option<RecordStream>,
    child: std::process::Child,
    dir: PathBuf,
    out_json: PathBuf,
    stderr_path: PathBuf,
    start: Instant,
    timeout: Option<std::time::Duration>,
}

impl Running for NativeRun {
    fn take_stream(&mut self) -> Option<RecordStream> {
        self.stream.take()
    }

    fn finish(mut self: Box<Self>) -> Result<Finished, MixError> {
        let ending = wait(&mut self.child, self.timeout)?;
        let wall_s = self.start.elapsed().as_secs_f64();
        let counts = match std::fs::read_to_string(&self.out_json) {
            Ok(t) => Some(serde_json::from_str::<PluginOutput>(&t).map_err(|e| {
                MixError::Run(format!("the DynamoRIO client's output is unreadable: {e}"))
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

/// The file DynamoRIO loads for `program`: found on PATH when it names no directory (as
/// the shell would), and executable by this user (DynamoRIO maps any file it is given).
fn launchable(program: &Path) -> Result<PathBuf, MixError> {
    let refuse = |why: String| MixError::Program {
        path: program.display().to_string(),
        message: format!("cannot start it: {why}"),
        fix: "check that it is an executable of this machine".into(),
    };
    let found = if program.components().count() == 1 {
        hpcscope_host::tools::resolve_program(&program.to_string_lossy())
            .ok_or_else(|| refuse("not found on PATH".into()))?
    } else {
        program.to_path_buf()
    };
    let c = std::ffi::CString::new(found.as_os_str().as_encoded_bytes())
        .map_err(|_| refuse("its path holds a NUL byte".into()))?;
    // SAFETY: access(2) on a valid C string.
    if unsafe { libc::access(c.as_ptr(), libc::X_OK) } != 0 {
        return Err(refuse(std::io::Error::last_os_error().to_string()));
    }
    Ok(found)
}

/// Whether `dir` holds a DynamoRIO build and the client (tests skip without one).
pub fn built(dir: &Path) -> bool {
    NativeEngine::at(dir.to_path_buf()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Ending, StreamRequest, Totals};

    fn launch(program: PathBuf, args: &[&str]) -> Launch {
        Launch {
            program,
            args: args.iter().map(|s| s.to_string()).collect(),
            arch: Arch::X86_64,
            static_binary: false,
            sve_bits: None,
            regions: Vec::new(),
            scopes: Vec::new(),
            env: Vec::new(),
            tbs: false,
            timeout: Some(std::time::Duration::from_secs(60)),
            stream: None,
        }
    }

    /// The engine built by scripts/build-dynamorio.sh, or None (the test is skipped).
    fn engine() -> Option<NativeEngine> {
        match NativeEngine::from_cache() {
            Ok(e) => Some(e),
            Err(e) => {
                eprintln!("skipped: DynamoRIO is not built ({e})");
                None
            }
        }
    }

    /// A daxpy of n doubles, reps times, built with AVX2 (no FMA contraction): the client's
    /// FLOPs are the analytical 2 n reps, on 256-bit registers but the remainder's.
    #[test]
    fn counts_an_avx2_kernel_exactly() {
        let Some(engine) = engine() else { return };
        if std::process::Command::new("gcc")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("skipped: no gcc");
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path().join("k.c");
        std::fs::write(
            &src,
            "#include <stdlib.h>\n\
             __attribute__((noinline)) void k(long n, double *y, const double *x, double a) {\n\
               for (long i = 0; i < n; i++) y[i] += a * x[i];\n}\n\
             int main(int c, char **v) { long n = atol(v[1]), r = atol(v[2]);\n\
               double *x = calloc(n, 8), *y = calloc(n, 8);\n\
               for (long i = 0; i < r; i++) k(n, y, x, (double)(i + 2));\n\
               return y[0] != 0; }\n",
        )
        .expect("write");
        let bin = dir.path().join("k");
        let ok = std::process::Command::new("gcc")
            .args(["-O3", "-march=x86-64-v3", "-ffp-contract=off", "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .expect("gcc runs");
        assert!(ok.success());
        // With the per-block breakdown: each block's counts add up to the totals.
        let mut l = launch(bin, &["1003", "7"]);
        l.tbs = true;
        let f = engine
            .start(&l)
            .expect("starts")
            .finish()
            .expect("finishes");
        assert_eq!(f.ending, Ending::Success, "{}", f.stderr_tail);
        let c = f.counts.expect("a report");
        assert!(!c.tbs.is_empty());
        let sum = |g: fn(&crate::engine::TbCounts) -> u64| c.tbs.iter().map(g).sum::<u64>();
        assert_eq!(sum(|b| b.flops), c.totals.flops);
        assert_eq!(sum(|b| b.instructions), c.totals.instructions);
        let t = c.totals;
        assert_eq!(t.flops, 2 * 1003 * 7);
        // 1003 = 250 x 4 + 3: 250 iterations on 4 lanes (a mul and an add each), the other 3
        // elements in the remainder (xmm or scalar, as gcc chose), per repetition.
        assert_eq!(t.fp_by_width["f64_256"].flops, 2 * 1000 * 7);
        let by_width: u64 = t.fp_by_width.values().map(|w| w.flops).sum();
        assert_eq!(by_width, t.flops);
    }

    /// A dot product built with -ffast-math (a vectorized reduction): the partial sums'
    /// tail after the loop is left out by the FLOP rule, as under QEMU, so the FLOPs are the
    /// source's 2 n per call, whatever the vector width.
    #[test]
    fn a_reduction_tail_counts_no_flops() {
        let Some(engine) = engine() else { return };
        let src = "#include <stdlib.h>\n\
             __attribute__((noipa)) double k(long n, const double *x, const double *y) {\n\
               double s = 0; for (long i = 0; i < n; i++) s += x[i] * y[i]; return s;\n}\n\
             volatile double sink;\n\
             int main(int c, char **v) { long n = atol(v[1]), r = atol(v[2]);\n\
               double *x = calloc(n, 8), *y = calloc(n, 8);\n\
               for (long i = 0; i < r; i++) sink = k(n, x, y);\n\
               return 0; }\n";
        for march in ["x86-64", "x86-64-v3"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let flags = ["-O3", "-ffast-math", &format!("-march={march}")];
            let Some(bin) = build(dir.path(), src, &flags) else {
                return;
            };
            let f = engine
                .start(&launch(bin.clone(), &["1000", "9"]))
                .expect("starts")
                .finish()
                .expect("finishes");
            assert_eq!(f.ending, Ending::Success, "{}", f.stderr_tail);
            let t = f.counts.expect("a report").totals;
            assert_eq!(t.flops, 2 * 1000 * 9, "{march}: {t:?}");
            assert!(t.flops_excluded > 0, "{march}: the tail's lanes: {t:?}");
            // With the memory stream, long enough to fill the records' buffer many times:
            // each full buffer faults on its guard page, and DynamoRIO builds the faulting
            // block again to translate the fault, on its small signal stack (the rule's
            // analysis there overflowed it: SIGSEGV in the client).
            let (t, ld, st, _) = stream_run(&engine, bin, &["200000", "3"]);
            assert_eq!(t.flops, 2 * 200000 * 3, "{march}: {t:?}");
            assert_eq!((ld, st), (t.bytes_loaded, t.bytes_stored), "{march}");
        }
    }

    /// Two threads each run the kernel: each thread's counts are its own.
    #[test]
    fn counts_each_thread() {
        let Some(engine) = engine() else { return };
        if std::process::Command::new("gcc")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("skipped: no gcc");
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path().join("t.c");
        std::fs::write(
            &src,
            "#include <pthread.h>\n#include <stdlib.h>\n\
             __attribute__((noinline)) void k(long n, double *y, const double *x, double a) {\n\
               for (long i = 0; i < n; i++) y[i] += a * x[i];\n}\n\
             static void *w(void *p) { long n = (long)p; double *x = calloc(n, 8), *y = calloc(n, 8);\n\
               for (long i = 0; i < 5; i++) k(n, y, x, (double)(i + 2));\n\
               free(x); free(y); return 0; }\n\
             int main(void) { pthread_t a, b;\n\
               pthread_create(&a, 0, w, (void *)1000L); pthread_create(&b, 0, w, (void *)3000L);\n\
               pthread_join(a, 0); pthread_join(b, 0); return 0; }\n",
        )
        .expect("write");
        let bin = dir.path().join("t");
        let ok = std::process::Command::new("gcc")
            .args(["-O2", "-pthread", "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .expect("gcc runs");
        assert!(ok.success());
        let f = engine
            .start(&launch(bin, &[]))
            .expect("starts")
            .finish()
            .expect("finishes");
        assert_eq!(f.ending, Ending::Success, "{}", f.stderr_tail);
        let counts = f.counts.expect("a report");
        // The main thread and two workers, in start order; the workers' FLOPs are 2 n x 5
        // (which worker starts first is up to the scheduler).
        assert_eq!(counts.threads.len(), 3, "{:?}", counts.threads);
        assert_eq!(counts.threads[0].totals.flops, 0);
        let mut workers: Vec<u64> = counts.threads[1..].iter().map(|t| t.totals.flops).collect();
        workers.sort();
        assert_eq!(workers, vec![2 * 1000 * 5, 2 * 3000 * 5]);
        assert_eq!(counts.totals.flops, 2 * 4000 * 5);
    }

    /// AVX-512 masked tails and gathers: the stream carries each active element, the
    /// counts count its bytes, and both agree with the analytical bytes.
    #[test]
    fn the_stream_carries_masked_lanes_and_gathered_elements() {
        let Some(engine) = engine() else { return };
        if !std::arch::is_x86_feature_detected!("avx512f") {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let src = "#include <immintrin.h>\n#include <stdlib.h>\n\
             __attribute__((noinline)) void tail(long n, double *a, const double *b, double s) {\n\
               long i = n & ~7L; __mmask8 m = (__mmask8)((1u << (n - i)) - 1);\n\
               __m512d r = _mm512_mask_mul_pd(_mm512_maskz_loadu_pd(m, b + i), m,\n\
                 _mm512_set1_pd(s), _mm512_maskz_loadu_pd(m, a + i));\n\
               _mm512_mask_storeu_pd(a + i, m, r); }\n\
             __attribute__((noinline)) void gather(long n, double *y, const double *x, const int *idx) {\n\
               for (long i = 0; i + 8 <= n; i += 8)\n\
                 _mm512_storeu_pd(y + i, _mm512_i32gather_pd(_mm256_loadu_si256((const __m256i *)(idx + i)), x, 8)); }\n\
             int main(int c, char **v) { long n = atol(v[1]), r = atol(v[2]);\n\
               double *x = malloc(n * 8), *y = malloc(n * 8); int *idx = malloc(n * 4);\n\
               for (long i = 0; i < n; i++) { idx[i] = (int)((i * 7) % n); x[i] = y[i] = 0; }\n\
               for (long i = 0; i < r; i++) { tail(n, y, x, 2.0); gather(n, y, x, idx); }\n\
               return y[0] != 0; }\n";
        let Some(bin) = build(dir.path(), src, &["-O2", "-march=x86-64-v4"]) else {
            return;
        };
        let (t, ld, st, _) = stream_run(&engine, bin.clone(), &["1003", "5"]);
        assert_eq!((ld, st), (t.bytes_loaded, t.bytes_stored), "{t:?}");
        // The tail: 3 active lanes of one multiply, per repetition: 2 loads and a store
        // of 3 x 8 bytes (and the return address `ret` loads).
        let (t, ld, st, _) = stream_run_in(&engine, bin.clone(), &["1003", "5"], Some("tail"));
        assert_eq!((ld, st), (t.bytes_loaded, t.bytes_stored), "{t:?}");
        assert_eq!(t.fp_by_width["f64_512"].flops, 3 * 5);
        assert_eq!((t.bytes_loaded, t.bytes_stored), ((2 * 24 + 8) * 5, 24 * 5));
        // The gathers' 8-byte elements (125 x 8 per repetition) are dynamic bytes; the
        // index loads (32 bytes), stores (64) and `ret` are not.
        let (t, ld, st, _) = stream_run_in(&engine, bin, &["1003", "5"], Some("gather"));
        assert_eq!((ld, st), (t.bytes_loaded, t.bytes_stored), "{t:?}");
        assert_eq!(t.bytes_dynamic, 1000 * 8 * 5);
        assert_eq!(t.bytes_loaded, (1000 * 8 + 1000 * 4 + 8) * 5);
        assert_eq!(t.bytes_stored, 1000 * 8 * 5);
    }

    /// Builds C source `src` with gcc and `flags`; None (skipped) without gcc.
    fn build(dir: &Path, src: &str, flags: &[&str]) -> Option<PathBuf> {
        let c = dir.join("p.c");
        std::fs::write(&c, src).expect("write");
        let bin = dir.join("p");
        match std::process::Command::new("gcc")
            .args(flags)
            .arg("-o")
            .arg(&bin)
            .arg(&c)
            .status()
        {
            Ok(s) => {
                assert!(s.success(), "gcc {flags:?} failed");
                Some(bin)
            }
            Err(_) => {
                eprintln!("skipped: no gcc");
                None
            }
        }
    }

    /// Runs `bin` with the record stream (64-byte coalescing) and returns the counts and
    /// (bytes loaded, bytes stored, thread markers) of the stream.
    fn stream_run(engine: &NativeEngine, bin: PathBuf, args: &[&str]) -> (Totals, u64, u64, u64) {
        let (c, ld, st, markers) = stream_report(engine, bin, args, None);
        (c.totals, ld, st, markers)
    }

    /// [`stream_run`] counting and streaming function `function` only, when given.
    fn stream_run_in(
        engine: &NativeEngine,
        bin: PathBuf,
        args: &[&str],
        function: Option<&str>,
    ) -> (Totals, u64, u64, u64) {
        let (c, ld, st, markers) = stream_report(engine, bin, args, function);
        (c.totals, ld, st, markers)
    }

    /// [`stream_run_in`] with the whole report.
    fn stream_report(
        engine: &NativeEngine,
        bin: PathBuf,
        args: &[&str],
        function: Option<&str>,
    ) -> (PluginOutput, u64, u64, u64) {
        let mut l = launch(bin.clone(), args);
        if let Some(f) = function {
            let elf = crate::elf::ElfInfo::read(&bin).expect("an ELF");
            let s = elf.function(f, &bin).expect("the function");
            l.regions = vec![(s.addr, s.addr + s.size)];
        }
        l.stream = Some(StreamRequest {
            coalesce: 64,
            gate: None,
        });
        let mut run = engine.start(&l).expect("starts");
        let stream = run.take_stream().expect("a stream");
        let reader = std::thread::spawn(move || {
            let (mut ld, mut st, mut markers) = (0u64, 0u64, 0u64);
            stream
                .for_each_batch(|b| {
                    for r in b {
                        let rec = hpcscope_plugin_format::Record(r.0);
                        match rec.top() {
                            0x7f => markers += 1,
                            0x7c..=0x7e => {}
                            _ if rec.is_write() => st += rec.count() << rec.size_shift(),
                            _ => ld += rec.count() << rec.size_shift(),
                        }
                    }
                })
                .expect("a readable stream");
            (ld, st, markers)
        });
        let f = run.finish().expect("finishes");
        assert_eq!(f.ending, Ending::Success, "{}", f.stderr_tail);
        let (ld, st, markers) = reader.join().expect("reader");
        let c = f.counts.expect("a report");
        let s = c.mem_stream.clone().expect("stream statistics");
        assert_eq!(s.dropped, 0);
        (c, ld, st, markers)
    }

    /// A program that forks a child doing the same work, and runs a shell command
    /// (`system`: the shell is exec'd in a child, under DynamoRIO too): only the process
    /// started is counted and streamed, and the processes it created are counted. Before,
    /// the children wrote their records into the parent's stream (and a report over its
    /// own, the last to exit winning).
    #[test]
    fn only_the_process_started_is_counted_and_streamed() {
        let Some(engine) = engine() else { return };
        let dir = tempfile::tempdir().expect("tempdir");
        let src = "#include <stdlib.h>\n#include <unistd.h>\n#include <sys/wait.h>\n\
             __attribute__((noipa)) void k(long n, double *y, const double *x, double a) {\n\
               for (long i = 0; i < n; i++) y[i] += a * x[i];\n}\n\
             int main(int c, char **v) { long n = atol(v[1]);\n\
               double *x = calloc(n, 8), *y = calloc(n, 8);\n\
               pid_t p = fork();\n\
               if (p == 0) { for (int r = 0; r < 5; r++) k(n, y, x, 2.0); _exit(0); }\n\
               waitpid(p, 0, 0);\n\
               if (system(\"exec true\") != 0) return 2;\n\
               k(n, y, x, 3.0);\n\
               return 0; }\n";
        let Some(bin) = build(dir.path(), src, &["-O2", "-ffp-contract=off"]) else {
            return;
        };
        let (c, ld, st, _) = stream_report(&engine, bin, &["100003"], None);
        // The parent's one call: 2 n FLOPs; the child's five are not there.
        assert_eq!(c.totals.flops, 2 * 100003, "{:?}", c.totals);
        assert_eq!((ld, st), (c.totals.bytes_loaded, c.totals.bytes_stored));
        // fork() and system()'s own (clone, or vfork where the C library uses it).
        assert!(c.forked_processes >= 2, "{}", c.forked_processes);
    }

    /// The stream carries the bytes the counts count, load by load and store by store,
    /// for a vector kernel, `rep movsb`/`rep stosq`, and AVX-512 masked tails.
    #[test]
    fn the_stream_carries_the_counted_bytes() {
        let Some(engine) = engine() else { return };
        let dir = tempfile::tempdir().expect("tempdir");
        let src = "#include <stdlib.h>\n\
             __attribute__((noinline)) void k(long n, double *y, const double *x, double a) {\n\
               for (long i = 0; i < n; i++) y[i] += a * x[i];\n}\n\
             __attribute__((noinline)) void cp(void *d, const void *s, long n) {\n\
               __asm__ volatile(\"rep movsb\" : \"+D\"(d), \"+S\"(s), \"+c\"(n) :: \"memory\"); }\n\
             __attribute__((noinline)) void st(void *d, long n) {\n\
               __asm__ volatile(\"rep stosq\" : \"+D\"(d), \"+c\"(n) : \"a\"(0L) : \"memory\"); }\n\
             int main(int c, char **v) { long n = atol(v[1]), r = atol(v[2]);\n\
               double *x = calloc(n, 8), *y = calloc(n, 8);\n\
               for (long i = 0; i < r; i++) k(n, y, x, (double)(i + 2));\n\
               cp(y, x, 8 * n + 0); st(x, n - 1);\n\
               return y[0] != 0; }\n";
        for flags in [
            &["-O2", "-march=x86-64-v3", "-ffp-contract=off"][..],
            &["-O3", "-march=x86-64-v4", "-mprefer-vector-width=512"][..],
        ] {
            let Some(bin) = build(dir.path(), src, flags) else {
                return;
            };
            if flags[1].ends_with("v4") && !std::arch::is_x86_feature_detected!("avx512f") {
                eprintln!("skipped the AVX-512 build: no AVX-512 here");
                continue;
            }
            let (t, ld, st, markers) = stream_run(&engine, bin, &["1003", "7"]);
            assert_eq!(t.flops, 2 * 1003 * 7, "{flags:?}");
            assert_eq!((ld, st), (t.bytes_loaded, t.bytes_stored), "{flags:?}");
            // The kernel's 2 loads and 1 store of 8 bytes per element, the copy's 8n
            // bytes each way and the 8(n - 1) bytes stored by rep stosq, among others.
            assert!(
                t.bytes_loaded >= 7 * 1003 * 16 + 8 * 1003,
                "{flags:?}: {t:?}"
            );
            assert!(
                t.bytes_stored >= 7 * 1003 * 8 + 8 * 1003 + 8 * 1002,
                "{flags:?}: {t:?}"
            );
            assert!(t.bytes_dynamic >= 2 * 8 * 1003 + 8 * 1002, "{flags:?}");
            assert!(markers >= 2, "{markers}");
        }
    }
}
