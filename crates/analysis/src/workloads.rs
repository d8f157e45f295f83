//! The bundled reference workloads: their sources (embedded, so that `demo` and `validate`
//! work from an installed binary), what each stands for, and their builds for several
//! vector widths and for aarch64.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use hpcscope_core::point::ChangeKind;

/// Every source file of `workloads/src`.
pub const SOURCES: &[(&str, &str)] = &[
    ("cg.c", include_str!("../../../workloads/src/cg.c")),
    ("cg_omp.c", include_str!("../../../workloads/src/cg_omp.c")),
    ("common.h", include_str!("../../../workloads/src/common.h")),
    ("daxpy.c", include_str!("../../../workloads/src/daxpy.c")),
    ("dot.c", include_str!("../../../workloads/src/dot.c")),
    ("edge.c", include_str!("../../../workloads/src/edge.c")),
    ("gather.c", include_str!("../../../workloads/src/gather.c")),
    ("gemm.c", include_str!("../../../workloads/src/gemm.c")),
    (
        "montecarlo.c",
        include_str!("../../../workloads/src/montecarlo.c"),
    ),
    ("nbody.c", include_str!("../../../workloads/src/nbody.c")),
    ("spmv.c", include_str!("../../../workloads/src/spmv.c")),
    (
        "stencil.c",
        include_str!("../../../workloads/src/stencil.c"),
    ),
    (
        "stencil_omp.c",
        include_str!("../../../workloads/src/stencil_omp.c"),
    ),
    ("triad.c", include_str!("../../../workloads/src/triad.c")),
    (
        "triad_omp.c",
        include_str!("../../../workloads/src/triad_omp.c"),
    ),
    (
        "trmv_omp.c",
        include_str!("../../../workloads/src/trmv_omp.c"),
    ),
    (
        "triad_stencil.c",
        include_str!("../../../workloads/src/triad_stencil.c"),
    ),
];

/// A bundled workload: name, arguments, and what it stands for.
#[derive(Debug)]
pub struct Workload {
    /// Source file stem and `kernel_<name>` function.
    pub name: &'static str,
    /// Arguments (size, repetitions) sized for a few tens of milliseconds natively.
    pub args: &'static [&'static str],
    /// What it is.
    pub what: &'static str,
    /// Whether its source builds in single precision too (`-DREAL=float`): the protocol's
    /// precision pairs. Not Monte-Carlo's, whose random walk (and so its FLOPs) would change.
    pub float: bool,
}

/// The demo's workloads.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "triad",
        args: &["1000000", "10"],
        what: "STREAM triad (bandwidth-bound)",
        float: true,
    },
    Workload {
        name: "stencil",
        args: &["1000", "25"],
        what: "2D 5-point stencil",
        float: true,
    },
    Workload {
        name: "gemm",
        args: &["300", "5"],
        what: "dense matrix multiply (compute-bound)",
        float: true,
    },
    Workload {
        name: "cg",
        args: &["100000", "20"],
        what: "sparse conjugate gradient, in the spirit of MiniFE",
        float: true,
    },
    Workload {
        name: "edge",
        args: &["100000", "10"],
        what: "unstructured edge-flux loop, in the spirit of MG-CFD",
        float: true,
    },
    Workload {
        name: "montecarlo",
        args: &["150000", "1"],
        what: "Monte-Carlo particle transport, in the spirit of Quicksilver",
        float: false,
    },
    Workload {
        name: "nbody",
        args: &["1000", "2"],
        what: "N-body",
        float: true,
    },
];

/// The workloads of the validation protocol beside the demo's: a gather-heavy loop, whose
/// AVX2 build gathers with `vgatherdpd` and may run slower than its SSE2 build (a pair where
/// the wider build can lose).
pub const PROTOCOL_EXTRA: &[Workload] = &[Workload {
    name: "gather",
    args: &["1000000", "10"],
    what: "random-permutation gather y[i] += a * x[p[i]] (AVX2 gathers)",
    float: false,
}];

/// The OpenMP workloads of the node scope: each runs its kernel's parallel region, which
/// GCC outlines into `kernel_<name>._omp_fn.0` (the region they are characterized and timed
/// in); threads from `OMP_NUM_THREADS`.
pub const NODE_WORKLOADS: &[Workload] = &[
    Workload {
        name: "triad_omp",
        args: &["2000000", "10"],
        what: "OpenMP STREAM triad (bandwidth-bound, balanced)",
        float: false,
    },
    Workload {
        name: "stencil_omp",
        args: &["1000", "25"],
        what: "OpenMP 2D 5-point stencil (balanced)",
        float: false,
    },
    Workload {
        name: "cg_omp",
        args: &["100000", "20"],
        what: "OpenMP conjugate gradient, one parallel region (balanced, barriers)",
        float: false,
    },
    Workload {
        name: "trmv_omp",
        args: &["2000", "10"],
        what: "OpenMP triangular matrix-vector product (imbalanced: 1/4 and 3/4 of the work with two threads)",
        float: false,
    },
];

impl Workload {
    /// Whether this is an OpenMP workload (built with `-fopenmp`).
    pub fn is_openmp(&self) -> bool {
        self.name.ends_with("_omp")
    }

    /// The function its work is counted and timed in: `kernel_<name>`, or for an OpenMP
    /// workload the parallel region GCC outlines from it.
    pub fn region(&self) -> String {
        if self.is_openmp() {
            format!("kernel_{}._omp_fn.0", self.name)
        } else {
            format!("kernel_{}", self.name)
        }
    }
}

/// The workloads named, from the demo's and the node scope's (all of both when none): an
/// unknown name is an error that lists the known ones.
pub fn selected_all(names: &[String]) -> Result<(Vec<&'static Workload>, Vec<&'static Workload>)> {
    selected_among(names, &WORKLOADS.iter().collect::<Vec<_>>())
}

/// [`selected_all`] for the validation protocol: the demo's workloads and
/// [`PROTOCOL_EXTRA`].
pub fn selected_protocol(
    names: &[String],
) -> Result<(Vec<&'static Workload>, Vec<&'static Workload>)> {
    selected_among(
        names,
        &WORKLOADS.iter().chain(PROTOCOL_EXTRA).collect::<Vec<_>>(),
    )
}

fn selected_among(
    names: &[String],
    singles: &[&'static Workload],
) -> Result<(Vec<&'static Workload>, Vec<&'static Workload>)> {
    if names.is_empty() {
        return Ok((singles.to_vec(), NODE_WORKLOADS.iter().collect()));
    }
    let (mut single, mut node) = (Vec::new(), Vec::new());
    for n in names {
        if let Some(w) = singles.iter().find(|w| w.name == n) {
            single.push(*w);
        } else if let Some(w) = NODE_WORKLOADS.iter().find(|w| w.name == n) {
            node.push(w);
        } else {
            anyhow::bail!(
                "--workloads: no workload named '{n}'\n  fix: choose among {}",
                singles
                    .iter()
                    .copied()
                    .chain(NODE_WORKLOADS)
                    .map(|w| w.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok((single, node))
}

/// Builds of one workload.
#[derive(Debug, Clone, Default)]
pub struct Builds {
    /// x86-64 baseline (SSE2).
    pub sse2: Option<PathBuf>,
    /// x86-64-v3 (AVX2 + FMA).
    pub avx2: Option<PathBuf>,
    /// x86-64-v4 with 512-bit vectors preferred (AVX-512), where [`hpcscope_mix::engine::avx512_counted_here`].
    pub avx512: Option<PathBuf>,
    /// aarch64 NEON.
    pub neon: Option<PathBuf>,
    /// aarch64 SVE (vector-length agnostic).
    pub sve: Option<PathBuf>,
}

fn have(tool: &str) -> bool {
    hpcscope_host::tools::on_path(tool).is_some()
}

/// The flags of the AVX-512 builds: x86-64-v4, 512-bit vectors preferred (gcc's default
/// for x86-64-v4 is 256-bit vectors).
pub const AVX512_FLAGS: &[&str] = &["-O3", "-march=x86-64-v4", "-mprefer-vector-width=512"];

/// Says once (the demo builds twice) why there are no AVX-512 builds.
fn note_no_avx512(notes: &mut Vec<String>) {
    #[cfg(target_arch = "x86_64")]
    let why = if std::arch::is_x86_feature_detected!("avx512f") {
        "the native engine that counts them (scripts/build-dynamorio.sh) is not built or not chosen (HPCSCOPE_ENGINE)"
    } else {
        "this machine has no AVX-512"
    };
    #[cfg(not(target_arch = "x86_64"))]
    let why = "this machine is not x86-64";
    let n = format!("no AVX-512 builds: {why}");
    if !notes.contains(&n) {
        notes.push(n);
    }
}

/// Writes the embedded sources and builds every variant this machine's compilers allow.
pub fn build(dir: &Path, names: &[&str], notes: &mut Vec<String>) -> Result<Vec<Builds>> {
    let src = write_sources(dir)?;
    let x86 = std::env::consts::ARCH == "x86_64" && have("gcc");
    let a64 = have("aarch64-linux-gnu-gcc");
    if !x86 {
        return Err(hpcscope_core::Failure::environment("the demo builds its workloads with gcc for x86-64: install gcc (apt-get install gcc) on an x86-64 machine").into());
    }
    if !a64 {
        notes.push("aarch64-linux-gnu-gcc is missing (apt-get install gcc-aarch64-linux-gnu): no NEON or SVE builds, no vector-length study".into());
    }
    let avx512 = hpcscope_mix::engine::avx512_counted_here();
    if !avx512 {
        note_no_avx512(notes);
    }
    let mut out = Vec::new();
    for n in names {
        let b = Builds {
            sse2: Some(compile(
                dir,
                &src,
                n,
                "x86-64",
                "gcc",
                &["-O3", "-march=x86-64"],
            )?),
            avx2: Some(compile(
                dir,
                &src,
                n,
                "x86-64-v3",
                "gcc",
                &["-O3", "-march=x86-64-v3"],
            )?),
            avx512: if avx512 {
                Some(compile(dir, &src, n, "x86-64-v4", "gcc", AVX512_FLAGS)?)
            } else {
                None
            },
            neon: if a64 {
                Some(compile(
                    dir,
                    &src,
                    n,
                    "aarch64-neon",
                    "aarch64-linux-gnu-gcc",
                    &["-O3", "-march=armv8-a", "-static"],
                )?)
            } else {
                None
            },
            sve: if a64 {
                Some(compile(
                    dir,
                    &src,
                    n,
                    "aarch64-sve",
                    "aarch64-linux-gnu-gcc",
                    &["-O3", "-march=armv8.2-a+sve", "-static"],
                )?)
            } else {
                None
            },
        };
        out.push(b);
    }
    Ok(out)
}

/// One build of the bundled validation protocol.
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    /// Label (`gcc -O3 AVX2`).
    pub label: &'static str,
    /// Directory of the build under the build directory.
    pub dir: &'static str,
    /// Compiler.
    pub compiler: &'static str,
    /// Flags besides the common ones.
    pub flags: &'static [&'static str],
}

/// The builds of the bundled protocol: three vector widths with gcc -O3, the two vector
/// widths with clang -O3, gcc -O2, AVX-512 (where it is counted), and a float build of the
/// workloads that have one ([`Workload::float`]).
pub const PROTOCOL_BUILDS: &[Recipe] = &[
    Recipe {
        label: "gcc -O3 scalar",
        dir: "gcc-O3-scalar",
        compiler: "gcc",
        flags: &[
            "-O3",
            "-march=x86-64",
            "-fno-tree-vectorize",
            "-fno-tree-slp-vectorize",
        ],
    },
    Recipe {
        label: "gcc -O3 SSE2",
        dir: "gcc-O3-sse2",
        compiler: "gcc",
        flags: &["-O3", "-march=x86-64"],
    },
    Recipe {
        label: "gcc -O3 AVX2",
        dir: "gcc-O3-avx2",
        compiler: "gcc",
        flags: &["-O3", "-march=x86-64-v3"],
    },
    Recipe {
        label: "clang -O3 SSE2",
        dir: "clang-O3-sse2",
        compiler: "clang",
        flags: &["-O3", "-march=x86-64"],
    },
    Recipe {
        label: "clang -O3 AVX2",
        dir: "clang-O3-avx2",
        compiler: "clang",
        flags: &["-O3", "-march=x86-64-v3"],
    },
    Recipe {
        label: "gcc -O2 AVX2",
        dir: "gcc-O2-avx2",
        compiler: "gcc",
        flags: &["-O2", "-march=x86-64-v3"],
    },
    Recipe {
        label: "gcc -O3 AVX-512",
        dir: "gcc-O3-avx512",
        compiler: "gcc",
        flags: AVX512_FLAGS,
    },
    Recipe {
        label: "gcc -O3 AVX2 float",
        dir: "gcc-O3-avx2-float",
        compiler: "gcc",
        flags: &["-O3", "-march=x86-64-v3", "-DREAL=float"],
    },
];

/// The index of the AVX-512 recipe in [`PROTOCOL_BUILDS`] (built where
/// [`hpcscope_mix::engine::avx512_counted_here`]).
pub const AVX512_RECIPE: usize = 6;

/// The index of the float recipe in [`PROTOCOL_BUILDS`] (built for the workloads whose
/// source has a float build, [`Workload::float`]).
pub const FLOAT_RECIPE: usize = 7;

/// What a pair of builds changes.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// The vector width (gcc -O3: scalar, SSE2, AVX2).
    VectorWidth,
    /// The compiler (gcc or clang, same width).
    Compiler,
    /// The optimization level (-O2 or -O3).
    OptimizationLevel,
    /// The floating-point precision (double and float builds, gcc -O3 AVX2).
    Precision,
    /// Two builds a user gave.
    Builds,
    /// The same binary on two machines (`hosts validate`).
    Machine,
}

impl Change {
    /// The kind of change whose error a projection of this pair states.
    pub fn kind(self) -> ChangeKind {
        match self {
            Change::VectorWidth => ChangeKind::VectorWidth,
            Change::Compiler => ChangeKind::Compiler,
            Change::OptimizationLevel => ChangeKind::OptimizationLevel,
            Change::Precision => ChangeKind::Precision,
            Change::Builds => ChangeKind::Builds,
            Change::Machine => ChangeKind::SameIsaMachine,
        }
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Change::VectorWidth => "vector width",
            Change::Compiler => "compiler",
            Change::OptimizationLevel => "optimization level",
            Change::Precision => "precision",
            Change::Builds => "builds",
            Change::Machine => "machine",
        })
    }
}

/// The pairs of the bundled protocol (indices into [`PROTOCOL_BUILDS`]), each in both
/// directions: 12 per workload, 16 where the AVX-512 builds run, 2 more where a float build
/// is made. The point estimate is fitted on the vector-width pairs only
/// ([`Change::VectorWidth`]); the compiler, optimization-level and precision pairs, whose
/// clang, -O2 and float builds it never saw, check it.
pub const PROTOCOL_PAIRS: &[(usize, usize, Change)] = &[
    (0, 1, Change::VectorWidth),
    (1, 2, Change::VectorWidth),
    (0, 2, Change::VectorWidth),
    (2, AVX512_RECIPE, Change::VectorWidth),
    (0, AVX512_RECIPE, Change::VectorWidth),
    (1, 3, Change::Compiler),
    (2, 4, Change::Compiler),
    (5, 2, Change::OptimizationLevel),
    (2, FLOAT_RECIPE, Change::Precision),
];

/// Builds every recipe of [`PROTOCOL_BUILDS`] of each workload `names` into
/// `DIR/<recipe dir>/<name>`; a compiler that is missing skips its builds with a note.
/// Returns, per workload, `(recipe index, path)` of the builds made.
pub fn build_protocol(
    dir: &Path,
    workloads: &[&Workload],
    notes: &mut Vec<String>,
) -> Result<Vec<Vec<(usize, PathBuf)>>> {
    let src = write_sources(dir)?;
    if std::env::consts::ARCH != "x86_64" || !have("gcc") {
        return Err(hpcscope_core::Failure::environment("the validation protocol builds the workloads with gcc for x86-64: install gcc (apt-get install gcc) on an x86-64 machine").into());
    }
    let mut missing: Vec<&str> = Vec::new();
    let avx512 = hpcscope_mix::engine::avx512_counted_here();
    if !avx512 {
        note_no_avx512(notes);
    }
    let mut out = Vec::new();
    for w in workloads {
        let n = w.name;
        let mut v = Vec::new();
        for (i, r) in PROTOCOL_BUILDS.iter().enumerate() {
            if (i == AVX512_RECIPE && !avx512) || (i == FLOAT_RECIPE && !w.float) {
                continue;
            }
            if !have(r.compiler) {
                if !missing.contains(&r.compiler) {
                    missing.push(r.compiler);
                }
                continue;
            }
            v.push((i, compile(dir, &src, n, r.dir, r.compiler, r.flags)?));
        }
        out.push(v);
    }
    for c in missing {
        notes.push(format!(
            "{c} is missing (apt-get install {c}): its builds and their pairs are left out"
        ));
    }
    Ok(out)
}

/// Builds workload `name` as a host record's build `march` (`x86-64`, `x86-64-v3`: gcc -O3
/// with that `-march`, `-fopenmp` for the OpenMP ones) into `DIR/<march>/<name>`.
pub fn build_one(dir: &Path, name: &str, march: &str) -> Result<PathBuf> {
    if std::env::consts::ARCH != "x86_64" || !have("gcc") {
        return Err(hpcscope_core::Failure::environment(
            "the host records' builds are made with gcc for x86-64: install gcc (apt-get install gcc) on an x86-64 machine",
        )
        .into());
    }
    let src = write_sources(dir)?;
    compile(
        dir,
        &src,
        name,
        march,
        "gcc",
        &["-O3", &format!("-march={march}")],
    )
}

fn write_sources(dir: &Path) -> Result<PathBuf> {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).with_context(|| format!("cannot create {}", src.display()))?;
    for (f, text) in SOURCES {
        std::fs::write(src.join(f), text)
            .with_context(|| format!("cannot write {}", src.join(f).display()))?;
    }
    Ok(src)
}

/// Compiles workload `name` from `src` into `dir/variant/name`.
fn compile(
    dir: &Path,
    src: &Path,
    name: &str,
    variant: &str,
    compiler: &str,
    flags: &[&str],
) -> Result<PathBuf> {
    let c = src.join(format!("{name}.c"));
    let d = dir.join(variant);
    std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    let exe = d.join(name);
    let o = Command::new(compiler)
        .args([
            "-std=c11",
            "-D_POSIX_C_SOURCE=200809L",
            "-fno-omit-frame-pointer",
        ])
        // The OpenMP workloads (`*_omp`) need the OpenMP runtime.
        .args(if name.ends_with("_omp") {
            &["-fopenmp"][..]
        } else {
            &[]
        })
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&c)
        .arg("-lm")
        .output()
        .with_context(|| format!("cannot run {compiler}"))?;
    if !o.status.success() {
        bail!(
            "{compiler} failed on {}:\n{}",
            c.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Ok(exe)
}

/// The workloads named (all when none): an unknown name is an error that lists the known
/// ones.
pub fn selected(names: &[String]) -> Result<Vec<&'static Workload>> {
    if names.is_empty() {
        return Ok(WORKLOADS.iter().collect());
    }
    names
        .iter()
        .map(|n| {
            WORKLOADS.iter().find(|w| w.name == n).ok_or_else(|| {
                anyhow::anyhow!(
                    "--workloads: no workload named '{n}'\n  fix: choose among {}",
                    WORKLOADS
                        .iter()
                        .map(|w| w.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
        })
        .collect()
}

/// The threads of a node section: given, or this machine's CPUs (at least 2).
pub fn node_threads(t: Option<u32>) -> Result<u32> {
    match t {
        Some(0 | 1) => anyhow::bail!(hpcscope_core::InputError::new(
            "--threads",
            "",
            "must be at least 2",
            "the node section compares one thread with several: give 2 or more"
        )),
        Some(t) => Ok(t),
        None => Ok(hpcscope_host::facts::logical_cpus().max(2)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The float build of a workload counts the same FLOPs and half the bytes of its double
    /// build, and only the workloads marked `float` get one.
    #[test]
    fn the_float_build_halves_the_bytes_and_keeps_the_flops() {
        if std::env::consts::ARCH != "x86_64" || !have("gcc") {
            println!("skipping: the protocol's builds need gcc on x86-64");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let triad = WORKLOADS.iter().find(|w| w.name == "triad").unwrap();
        let mc = WORKLOADS.iter().find(|w| w.name == "montecarlo").unwrap();
        assert!(triad.float && !mc.float);
        let mut notes = Vec::new();
        let b = build_protocol(dir.path(), &[triad, mc], &mut notes).unwrap();
        let has_float = |v: &Vec<(usize, PathBuf)>| v.iter().any(|(r, _)| *r == FLOAT_RECIPE);
        assert!(has_float(&b[0]) && !has_float(&b[1]));
        let line = |recipe: usize| {
            let exe = &b[0].iter().find(|(r, _)| *r == recipe).unwrap().1;
            let o = Command::new(exe).args(["1000", "3"]).output().unwrap();
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            let v = |k: &str| {
                out.split_whitespace()
                    .find_map(|kv| kv.strip_prefix(k))
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap()
            };
            (v("flops="), v("bytes="))
        };
        let (fd, bd) = line(2);
        let (ff, bf) = line(FLOAT_RECIPE);
        assert_eq!((fd, bd), (6000.0, 72000.0));
        assert_eq!((ff, bf), (fd, bd / 2.0));
    }
}
