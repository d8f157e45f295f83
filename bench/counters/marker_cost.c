/* Cost of one region start/stop pair, in ns, for three marker APIs:
 *   -DUSE_HPCSCOPE  hpcscope_region_start/stop   (libhpcscope_markers)
 *   -DUSE_LIKWID    LIKWID_MARKER_START/STOP     (liblikwid, run under likwid-perfctr -m)
 *   -DUSE_PAPI      PAPI_hl_region_begin/end     (libpapi high-level API)
 * Usage: ./marker_cost [pairs]   (prints "<api> <ns per pair>")
 * See marker_cost.sh for the builds and the environment each API needs. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(USE_HPCSCOPE)
#include "hpcscope_markers.h"
#define API "hpcscope"
#define INIT() hpcscope_markers_init()
#define START() hpcscope_region_start("bench")
#define STOP() hpcscope_region_stop("bench")
#define FINI() hpcscope_markers_close()
#elif defined(USE_LIKWID)
#define LIKWID_PERFMON
#include <likwid-marker.h>
#define API "likwid"
#define INIT() do { LIKWID_MARKER_INIT; LIKWID_MARKER_REGISTER("bench"); } while (0)
#define START() LIKWID_MARKER_START("bench")
#define STOP() LIKWID_MARKER_STOP("bench")
#define FINI() LIKWID_MARKER_CLOSE
#elif defined(USE_PAPI)
#include <papi.h>
#define API "papi-hl"
#define INIT() do { } while (0)
#define START() PAPI_hl_region_begin("bench")
#define STOP() PAPI_hl_region_end("bench")
#define FINI() PAPI_hl_stop()
#else
#error "define USE_HPCSCOPE, USE_LIKWID or USE_PAPI"
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    long pairs = argc > 1 ? atol(argv[1]) : 200000;
    INIT();
    for (long i = 0; i < 1000; i++) { START(); STOP(); } /* warm up */
    double t0 = now();
    for (long i = 0; i < pairs; i++) { START(); STOP(); }
    double t1 = now();
    printf("%s %.1f\n", API, (t1 - t0) / pairs * 1e9);
    FINI();
    return 0;
}
