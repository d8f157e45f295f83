//! The reference workloads, embedded so that `hpcscope demo` and `hpcscope validate` work
//! from an installed binary: (file name, source text) of `workloads/src`.

/// Every source file of `workloads/src`.
pub const SOURCES: &[(&str, &str)] = &[
    ("cg.c", include_str!("../../../workloads/src/cg.c")),
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
    ("triad.c", include_str!("../../../workloads/src/triad.c")),
    (
        "triad_stencil.c",
        include_str!("../../../workloads/src/triad_stencil.c"),
    ),
];
