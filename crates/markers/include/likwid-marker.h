/*
 * likwid-marker.h for hpcscope: the LIKWID marker API on hpcscope's region markers.
 *
 * A code instrumented for likwid-perfctr builds unchanged against this header: put this
 * directory first on the include path, define LIKWID_PERFMON as for LIKWID, and link with
 * -lhpcscope_markers instead of -llikwid. Its regions are then measured by
 * `hpcscope counters run --markers -- ./app`.
 *
 *   cc -DLIKWID_PERFMON -I<hpcscope>/crates/markers/include app.c -L<lib> -lhpcscope_markers
 *
 * LIKWID_MARKER_SWITCH does nothing (hpcscope counts one event group per run of the
 * program) and LIKWID_MARKER_THREADINIT does nothing (a thread's counters open at its
 * first region); the other macros do what LIKWID's do. Without LIKWID_PERFMON every macro
 * expands to nothing, as in LIKWID.
 */
#ifndef LIKWID_MARKER_H
#define LIKWID_MARKER_H

#ifdef __cplusplus
extern "C" {
#endif

void likwid_markerInit(void);
void likwid_markerThreadInit(void);
void likwid_markerNextGroup(void);
void likwid_markerClose(void);
int likwid_markerRegisterRegion(const char *regionTag);
int likwid_markerStartRegion(const char *regionTag);
int likwid_markerStopRegion(const char *regionTag);
int likwid_markerResetRegion(const char *regionTag);
void likwid_markerGetRegion(const char *regionTag, int *nr_events, double *events, double *time,
                            int *count);

#ifdef __cplusplus
}
#endif

#ifdef LIKWID_PERFMON
#define LIKWID_MARKER_INIT likwid_markerInit()
#define LIKWID_MARKER_THREADINIT likwid_markerThreadInit()
#define LIKWID_MARKER_SWITCH likwid_markerNextGroup()
#define LIKWID_MARKER_REGISTER(regionTag) likwid_markerRegisterRegion(regionTag)
#define LIKWID_MARKER_START(regionTag) likwid_markerStartRegion(regionTag)
#define LIKWID_MARKER_STOP(regionTag) likwid_markerStopRegion(regionTag)
#define LIKWID_MARKER_CLOSE likwid_markerClose()
#define LIKWID_MARKER_RESET(regionTag) likwid_markerResetRegion(regionTag)
#define LIKWID_MARKER_GET(regionTag, nevents, events, time, count) \
    likwid_markerGetRegion(regionTag, nevents, events, time, count)
#else /* LIKWID_PERFMON */
#define LIKWID_MARKER_INIT
#define LIKWID_MARKER_THREADINIT
#define LIKWID_MARKER_SWITCH
#define LIKWID_MARKER_REGISTER(regionTag)
#define LIKWID_MARKER_START(regionTag)
#define LIKWID_MARKER_STOP(regionTag)
#define LIKWID_MARKER_CLOSE
#define LIKWID_MARKER_GET(regionTag, nevents, events, time, count)
#define LIKWID_MARKER_RESET(regionTag)
#endif /* LIKWID_PERFMON */

#endif /* LIKWID_MARKER_H */
