//! The one place where an error becomes an exit code: the error chain is walked from the
//! outside in, and the first error that knows its kind ([`hpcscope_core::Classify`]) decides
//! (0 success, 1 a finding, 2 bad input or usage, 3 an environment limit; README.md).

use std::error::Error as StdError;

use hpcscope_core::{Classify, ErrorKind};

/// The kind of `err`: that of the outermost error in its chain that has one; I/O errors by
/// their cause (a permission or a full disk is an environment limit); input otherwise.
pub fn kind_of(err: &anyhow::Error) -> ErrorKind {
    err.chain().find_map(classify).unwrap_or(ErrorKind::Input)
}

/// The exit code of `err`.
pub fn code_of(err: &anyhow::Error) -> u8 {
    kind_of(err).exit_code()
}

fn classify(e: &(dyn StdError + 'static)) -> Option<ErrorKind> {
    macro_rules! kinds {
        ($($t:ty),* $(,)?) => {
            $(
                if let Some(x) = e.downcast_ref::<$t>() {
                    return Some(x.kind());
                }
            )*
        };
    }
    kinds!(
        hpcscope_core::Failure,
        hpcscope_core::Error,
        hpcscope_core::InputError,
        hpcscope_bench::BenchError,
        hpcscope_mix::MixError,
        hpcscope_counters::Error,
        hpcscope_trace::TraceError,
        hpcscope_history::HistoryError,
        hpcscope_models::ModelError,
    );
    e.downcast_ref::<std::io::Error>()
        .map(hpcscope_core::kind::io_kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outermost_typed_error_decides_through_context() {
        let bench = hpcscope_bench::BenchError::Environment {
            what: "cannot pin".into(),
            fix: "x".into(),
        };
        let e = anyhow::Error::new(bench).context("measuring this machine");
        assert_eq!(code_of(&e), 3);
        let e = anyhow::Error::new(hpcscope_mix::MixError::Missing {
            message: "no qemu".into(),
            fix: "install it".into(),
        })
        .context("the program could not be characterized");
        assert_eq!(code_of(&e), 3);
        let e = anyhow::anyhow!("a plain message");
        assert_eq!(code_of(&e), 2);
        let e = anyhow::Error::new(hpcscope_core::Failure::finding("outside")).context("x");
        assert_eq!(code_of(&e), 1);
        let e = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
            .context("cannot write");
        assert_eq!(code_of(&e), 3);
    }
}
