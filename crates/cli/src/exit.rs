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

/// The longest error message printed, characters; the rest is counted.
const MAX_MESSAGE: usize = 8000;

/// The message of `err` as printed: its chain joined with `: `, each link once (a link
/// whose text an outer link already says is left out), control characters escaped (a name
/// read from a file cannot send escape sequences to the terminal), and at most
/// [`MAX_MESSAGE`] characters.
pub fn message(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for e in err.chain() {
        let s = e.to_string();
        let s = s.trim();
        if s.is_empty() || out.contains(s) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(s);
    }
    let out = hpcscope_report::text::escape_control(&out).into_owned();
    hpcscope_core::error::shorten(&out, MAX_MESSAGE)
}

/// The exit code of a command that prints a finding and still succeeds (1: `regress check`
/// flags a regression, `project --measured` a measurement outside its interval, `merge` a
/// rank that failed, a partial `mix` run).
pub fn finding() -> std::process::ExitCode {
    std::process::ExitCode::from(ErrorKind::Finding.exit_code())
}

/// The exit code of a command that checked its inputs, reported every bad one and went on
/// with the others (2: `machine validate` with an invalid file).
pub fn bad_input() -> std::process::ExitCode {
    std::process::ExitCode::from(ErrorKind::Input.exit_code())
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
        hpcscope_core::load::BadLimit,
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
    fn messages_say_each_thing_once_and_escape_control_characters() {
        let io = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        );
        let e = anyhow::Error::new(hpcscope_counters::Error::Io {
            path: "f.csv".into(),
            source: io,
        });
        assert_eq!(message(&e), "f.csv: stream did not contain valid UTF-8");
        let e = anyhow::anyhow!("region 'a\x1b[31mb' is missing").context("reading p.json");
        assert_eq!(
            message(&e),
            "reading p.json: region 'a\\x1b[31mb' is missing"
        );
        let e = anyhow::anyhow!("{}", "x".repeat(100_000));
        assert!(message(&e).len() < 9000);
    }

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
