//! The bundled reference workloads: their sources (embedded, so that `demo` and `validate`
//! work from an installed binary), what each stands for, and their builds for several
//! vector widths and for aarch64.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Every source file of `workloads/src`.
pub const SOURCES: &[(&str, &str)] = &[
    ("cg.c", include_str!("../../../workloads/src/cg.c")),
    ("cg_omp.c", include_str!("../../../workloads/src/cg_omp.c")),
    ("common.h", include_str!("../../../workloads/src/common.h")),
    ("daxpy.c", include_str!("../../../workloads/src/daxpy.c")),
    ("dot.c", include_str!("../../../workloads/src/dot.c")),
    ("edge.c", include_str!("../../../workloads/src/edge.c")),
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
}

/// The demo's workloads.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "triad",
        args: &["1000000", "10"],
        what: "STREAM triad (bandwidth-bound)",
    },
    Workload {
        name: "stencil",
        args: &["1000", "25"],
        what: "2D 5-point stencil",
    },
    Workload {
        name: "gemm",
        args: &["300", "5"],
        what: "dense matrix multiply (compute-bound)",
    },
    Workload {
        name: "cg",
        args: &["100000", "20"],
        what: "sparse conjugate gradient, in the spirit of MiniFE",
    },
    Workload {
        name: "edge",
        args: &["100000", "10"],
        what: "unstructured edge-flux loop, in the spirit of MG-CFD",
    },
    Workload {
        name: "montecarlo",
        args: &["150000", "1"],
        what: "Monte-Carlo particle transport, in the spirit of Quicksilver",
    },
    Workload {
        name: "nbody",
        args: &["1000", "2"],
        what: "N-body",
    },
];

/// The OpenMP workloads of the node scope: each runs its kernel's parallel region, which
/// GCC outlines into `kernel_<name>._omp_fn.0` (the region they are characterized and timed
/// in); threads from `OMP_NUM_THREADS`.
pub const NODE_WORKLOADS: &[Workload] = &[
    Workload {
        name: "triad_omp",
        args: &["2000000", "10"],
        what: "OpenMP STREAM triad (bandwidth-bound, balanced)",
    },
    Workload {
        name: "stencil_omp",
        args: &["1000", "25"],
        what: "OpenMP 2D 5-point stencil (balanced)",
    },
    Workload {
        name: "cg_omp",
        args: &["100000", "20"],
        what: "OpenMP conjugate gradient, one parallel region (balanced, barriers)",
    },
    Workload {
        name: "trmv_omp",
        args: &["2000", "10"],
        what: "OpenMP triangular matrix-vector product (imbalanced: 1/4 and 3/4 of the work with two threads)",
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
    if names.is_empty() {
        return Ok((WORKLOADS.iter().collect(), NODE_WORKLOADS.iter().collect()));
    }
    let (mut single, mut node) = (Vec::new(), Vec::new());
    for n in names {
        if let Some(w) = WORKLOADS.iter().find(|w| w.name == n) {
            single.push(w);
        } else if let Some(w) = NODE_WORKLOADS.iter().find(|w| w.name == n) {
            node.push(w);
        } else {
            anyhow::bail!(
                "--workloads: no workload named '{n}'\n  fix: choose among {}",
                WORKLOADS
                    .iter()
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
    /// aarch64 NEON.
    pub neon: Option<PathBuf>,
    /// aarch64 SVE (vector-length agnostic).
    pub sve: Option<PathBuf>,
}

fn have(tool: &str) -> bool {
    hpcscope_host::tools::on_path(tool).is_some()
}

/// Writes the embedded sources and builds every variant this machine's compilers allow.
pub fn build(dir: &Path, names: &[&str], notes: &mut Vec<String>) -> Result<Vec<Builds>> {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).with_context(|| format!("cannot create {}", src.display()))?;
    for (f, text) in SOURCES {
        std::fs::write(src.join(f), text)
            .with_context(|| format!("cannot write {}", src.join(f).display()))?;
    }
    let x86 = std::env::consts::ARCH == "x86_64" && have("gcc");
    let a64 = have("aarch64-linux-gnu-gcc");
    if !x86 {
        return Err(hpcscope_core::Failure::environment("the demo builds its workloads with gcc for x86-64: install gcc (apt-get install gcc) on an x86-64 machine").into());
    }
    if !a64 {
        notes.push("aarch64-linux-gnu-gcc is missing (apt-get install gcc-aarch64-linux-gnu): no NEON or SVE builds, no vector-length study".into());
    }
    let common = [
        "-O3",
        "-std=c11",
        "-D_POSIX_C_SOURCE=200809L",
        "-fno-omit-frame-pointer",
    ];
    let mut out = Vec::new();
    for n in names {
        let mut b = Builds::default();
        let c = src.join(format!("{n}.c"));
        let omp: &[&str] = if n.ends_with("_omp") {
            &["-fopenmp"]
        } else {
            &[]
        };
        let cc = |variant: &str, compiler: &str, flags: &[&str]| -> Result<PathBuf> {
            let d = dir.join(variant);
            std::fs::create_dir_all(&d)?;
            let exe = d.join(n);
            let o = Command::new(compiler)
                .args(common)
                .args(omp)
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
        };
        b.sse2 = Some(cc("x86-64", "gcc", &["-march=x86-64"])?);
        b.avx2 = Some(cc("x86-64-v3", "gcc", &["-march=x86-64-v3"])?);
        if a64 {
            b.neon = Some(cc(
                "aarch64-neon",
                "aarch64-linux-gnu-gcc",
                &["-march=armv8-a", "-static"],
            )?);
            b.sve = Some(cc(
                "aarch64-sve",
                "aarch64-linux-gnu-gcc",
                &["-march=armv8.2-a+sve", "-static"],
            )?);
        }
        out.push(b);
    }
    Ok(out)
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
