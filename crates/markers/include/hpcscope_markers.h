/*
 * hpcscope_markers.h: region markers for `hpcscope counters run --markers`.
 *
 * Mark the regions you want measured; each start/stop pair reads the calling thread's
 * event group once at start and once at stop. Regions nest and are per thread. Without
 * `hpcscope counters run --markers` (environment variable HPCSCOPE_MARKERS unset) the calls
 * return at once.
 *
 *   #include <hpcscope_markers.h>
 *   hpcscope_region_start("solve");
 *   solve();
 *   hpcscope_region_stop("solve");
 *
 * Link with -lhpcscope_markers (libhpcscope_markers.so or .a, built by
 * `cargo build --release -p hpcscope-markers`). Names must be NUL-terminated strings that
 * stay valid during the call; passing the same string literal at start and stop is fastest.
 * Results are written at exit to the file named by HPCSCOPE_MARKERS_OUT (JSON).
 */
#ifndef HPCSCOPE_MARKERS_H
#define HPCSCOPE_MARKERS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Reads the environment; returns 1 when the markers count, 0 otherwise. Optional: the first
 * marker does it. Call it before creating threads to keep the first start cheap. */
int hpcscope_markers_init(void);

/* Starts region `name` in the calling thread. */
void hpcscope_region_start(const char *name);

/* Stops region `name` in the calling thread. A stop without a start, or a region left open
 * inside it, is reported in the output; the other regions are kept. */
void hpcscope_region_stop(const char *name);

/* Writes the results now (they are also written at exit). */
void hpcscope_markers_close(void);

#ifdef __cplusplus
}
#endif

#endif /* HPCSCOPE_MARKERS_H */
