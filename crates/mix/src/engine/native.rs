//! The native engine: the program runs on the machine itself under DynamoRIO with
//! hpcscope's client (crates/dr-client), which writes the same counts report as the QEMU
//! plugin at exit. AVX-512 programs run (QEMU has no AVX-512) at close to native speed.
//!
//! Counts only for now: no record stream (the cache simulation needs the QEMU engine), no
//! `--scope`, no per-block breakdown; x86-64 programs only. Selected with
//! `HPCSCOPE_ENGINE=native`; `hpcscope mix` always simulates machines' caches, so it is
//! refused there until the client writes the stream. DynamoRIO and the client come from scripts/build-dynamorio.sh
//! (hpcscope's cache directory).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::elf::Arch;
use crate::engine::qemu::{quiet_fixed_layout, tail, tempdir, wait};
use crate::engine::{Engine, Finished, Launch, PluginOutput, RecordStream, Running};
use crate::error::MixError;

/// The variable that selects the engine (`native`; anything else, or unset: QEMU).
pub const ENGINE_ENV: &str = "HPCSCOPE_ENGINE";

/// The DynamoRIO version scripts/build-dynamorio.sh builds.
pub use hpcscope_host::tools::DYNAMORIO_VERSION;

/// Whether `HPCSCOPE_ENGINE` asks for the native engine.
pub fn asked() -> bool {
    std::env::var(ENGINE_ENV).is_ok_and(|v| v == "native")
}

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
                    fix: "run scripts/build-dynamorio.sh (or unset HPCSCOPE_ENGINE to count under QEMU)"
                        .into(),
                });
            }
        }
        Ok(e)
    }

    /// The client library.
    pub fn client(&self) -> PathBuf {
        self.dir.join("client/libhpcscope_dr_client.so")
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
        "hpcscope mix (DynamoRIO client)"
    }

    fn start(&self, req: &Launch) -> Result<Box<dyn Running>, MixError> {
        let refuse = |what: &str| {
            Err(MixError::Usage {
                message: format!("the native engine does not do {what} yet"),
                fix: "unset HPCSCOPE_ENGINE to run under QEMU".into(),
            })
        };
        if req.arch != Arch::X86_64 {
            return refuse(&format!("{} programs", req.arch.name()));
        }
        if req.stream.is_some() {
            return Err(MixError::Usage {
                message: "the native engine counts only: it does not write the record stream the cache simulation reads yet".into(),
                fix: "unset HPCSCOPE_ENGINE to run under QEMU".into(),
            });
        }
        if !req.scopes.is_empty() {
            return refuse("--scope");
        }
        if req.tbs {
            return refuse("the per-block breakdown");
        }
        let dir = tempdir()?;
        let out_json = dir.join("counts.json");
        let mut args = format!("out={}", out_json.display());
        if !req.regions.is_empty() {
            args.push_str(&format!(",region={}", ranges(&req.regions)));
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
        let mut cmd = Command::new(&req.program);
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
            .env("LD_PRELOAD", "libdrpreload.so libdynamorio.so")
            .env("LD_LIBRARY_PATH", ld_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr_file)
            .spawn()
            .map_err(|e| MixError::Program {
                path: req.program.display().to_string(),
                message: format!("cannot start it: {e}"),
                fix: "check that it is an executable of this machine".into(),
            })?;
        Ok(Box::new(NativeRun {
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
    child: std::process::Child,
    dir: PathBuf,
    out_json: PathBuf,
    stderr_path: PathBuf,
    start: Instant,
    timeout: Option<std::time::Duration>,
}

impl Running for NativeRun {
    fn take_stream(&mut self) -> Option<RecordStream> {
        None
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

/// Whether `dir` holds a DynamoRIO build and the client (tests skip without one).
pub fn built(dir: &Path) -> bool {
    NativeEngine::at(dir.to_path_buf()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Ending, StreamRequest};

    fn launch(program: PathBuf, args: &[&str]) -> Launch {
        Launch {
            program,
            args: args.iter().map(|s| s.to_string()).collect(),
            arch: Arch::X86_64,
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
        let run = engine.start(&launch(bin, &["1003", "7"])).expect("starts");
        let f = run.finish().expect("finishes");
        assert_eq!(f.ending, Ending::Success, "{}", f.stderr_tail);
        let t = f.counts.expect("a report").totals;
        assert_eq!(t.flops, 2 * 1003 * 7);
        // 1003 = 250 x 4 + 3: 250 iterations on 4 lanes (a mul and an add each), the other 3
        // elements in the remainder (xmm or scalar, as gcc chose), per repetition.
        assert_eq!(t.fp_by_width["f64_256"].flops, 2 * 1000 * 7);
        let by_width: u64 = t.fp_by_width.values().map(|w| w.flops).sum();
        assert_eq!(by_width, t.flops);
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

    #[test]
    fn a_stream_is_refused() {
        let Some(engine) = engine() else { return };
        let mut l = launch(PathBuf::from("/bin/true"), &[]);
        l.stream = Some(StreamRequest {
            coalesce: 64,
            gate: None,
        });
        let e = engine.start(&l).err().expect("refused");
        assert!(e.to_string().contains("record stream"), "{e}");
    }
}
