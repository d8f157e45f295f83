//! The LIKWID marker API (`likwid-marker.h`, `likwid.h`) on hpcscope's markers: a code
//! instrumented for likwid-perfctr builds unchanged against `include/likwid-marker.h` (or
//! links against this library instead of liblikwid) and its regions are measured by
//! `hpcscope counters run --markers`.
//!
//! | LIKWID | here |
//! |---|---|
//! | `LIKWID_MARKER_INIT` (`likwid_markerInit`) | reads the environment, as `hpcscope_markers_init` |
//! | `LIKWID_MARKER_THREADINIT` | nothing: a thread's counters open at its first region |
//! | `LIKWID_MARKER_REGISTER(tag)` | returns 0: regions are created at their first start |
//! | `LIKWID_MARKER_START(tag)`, `_STOP(tag)` | `hpcscope_region_start`, `_stop` |
//! | `LIKWID_MARKER_RESET(tag)` | zeroes the region's counts in the calling thread |
//! | `LIKWID_MARKER_GET(tag, n, events, time, count)` | the calling thread's counts so far |
//! | `LIKWID_MARKER_SWITCH` | nothing: hpcscope runs one event group per run of the program |
//! | `LIKWID_MARKER_CLOSE` | writes the results, as `hpcscope_markers_close` |

#![allow(non_snake_case)]

use std::ffi::{c_char, c_double, c_int};

/// `likwid_markerInit`.
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerInit() {
    let _ = crate::init();
}

/// `likwid_markerThreadInit`: nothing to do, a thread's counters open at its first region.
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerThreadInit() {}

/// `likwid_markerNextGroup`: hpcscope counts one event group per run of the program.
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerNextGroup() {}

/// `likwid_markerRegisterRegion`: regions are created at their first start; returns 0.
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerRegisterRegion(_tag: *const c_char) -> c_int {
    0
}

/// `likwid_markerStartRegion`: starts region `tag` in the calling thread; returns 0.
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerStartRegion(tag: *const c_char) -> c_int {
    crate::hpcscope_region_start(tag);
    0
}

/// `likwid_markerStopRegion`: stops region `tag` in the calling thread; returns 0.
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerStopRegion(tag: *const c_char) -> c_int {
    crate::hpcscope_region_stop(tag);
    0
}

/// `likwid_markerResetRegion`: zeroes region `tag`'s counts in the calling thread; 0 when
/// done, -1 for a region this thread has not started (or markers not counting).
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerResetRegion(tag: *const c_char) -> c_int {
    let Some(name) = crate::name_bytes(tag) else {
        return -1;
    };
    if !crate::is_active() {
        return -1;
    }
    match crate::with_state(|s| s.reset(name)) {
        Some(true) => 0,
        _ => -1,
    }
}

/// `likwid_markerGetRegion`: the calling thread's counts of region `tag` so far. On entry
/// `*nr_events` is the room in `events`; on return, the number of events written (0 when
/// the region is unknown), `*time` the region's time in seconds and `*count` its calls.
///
/// # Safety
/// As in LIKWID: the pointers are valid, `events` holds `*nr_events` doubles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn likwid_markerGetRegion(
    tag: *const c_char,
    nr_events: *mut c_int,
    events: *mut c_double,
    time: *mut c_double,
    count: *mut c_int,
) {
    let found = crate::name_bytes(tag)
        .filter(|_| crate::is_active())
        .and_then(|name| crate::with_state(|s| s.region_values(name, crate::ns_per_tick())))
        .flatten();
    let (vals, t, calls) = found.unwrap_or_default();
    // SAFETY: the caller passes valid pointers (LIKWID's contract); each is checked for null.
    unsafe {
        if !nr_events.is_null() {
            let room = usize::try_from(*nr_events).unwrap_or(0);
            let n = vals.len().min(room);
            if !events.is_null() {
                for (i, v) in vals.iter().take(n).enumerate() {
                    *events.add(i) = *v;
                }
            }
            *nr_events = n as c_int;
        }
        if !time.is_null() {
            *time = t;
        }
        if !count.is_null() {
            *count = c_int::try_from(calls).unwrap_or(c_int::MAX);
        }
    }
}

/// `likwid_markerClose`: writes the results now (they are also written at exit).
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerClose() {
    crate::hpcscope_markers_close();
}
