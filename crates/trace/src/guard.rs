//! The last line of defence around the libraries that read files hpcscope did not write
//! (inferno's collapser and flame graph): a panic inside one, on input its authors did not
//! expect, becomes an error that names the input instead of ending hpcscope with exit 101.
//!
//! hpcscope checks and prepares the input before it calls the library (see
//! [`crate::perf_script`]); the guard is for the faults nobody found yet. The panic's own report
//! is not printed (the error carries its message): a process-wide panic hook, installed once,
//! stays silent while the guarded call runs on this thread and hands every other panic to the
//! hook that was there before.

use std::cell::Cell;
use std::sync::Once;

thread_local! {
    static GUARDED: Cell<bool> = const { Cell::new(false) };
}

static HOOK: Once = Once::new();

/// A panic caught by [`no_panic`]: its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caught(pub String);

/// Runs `f`, turning a panic inside it into `Err` with the panic's message.
pub fn no_panic<T>(f: impl FnOnce() -> T) -> Result<T, Caught> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = GUARDED.with(|g| g.replace(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    r.map_err(|p| {
        Caught(
            p.downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message_and_the_next_call_works() {
        let e = no_panic(|| -> u32 { panic!("inside {}", 42) }).unwrap_err();
        assert_eq!(e, Caught("inside 42".into()));
        let e = no_panic(|| -> u32 { panic!("static") }).unwrap_err();
        assert_eq!(e.0, "static");
        assert_eq!(no_panic(|| 7), Ok(7));
        // Nested: the inner guard restores the outer one's state.
        let r = no_panic(|| {
            let _ = no_panic(|| -> u32 { panic!("inner") });
            panic!("outer")
        });
        assert_eq!(r, Err::<(), _>(Caught("outer".into())));
    }
}
