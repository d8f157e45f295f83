//! One run specification: the program, how it runs (arguments, environment, threads, time
//! limit, placement on the simulated cores), what is counted (functions, scopes) and how
//! the caches are simulated (sampling). `mix`, `analyze`, `validate` and the demo embed it,
//! and it is checked once, by [`RunSpec::validate`]: its errors are typed
//! ([`SpecError`]), and the command line says them in its own words.

use std::path::PathBuf;
use std::time::Duration;

use hpcscope_cachesim::Placement;

use crate::sampling::SampleSpec;

/// What to run and count.
#[derive(Debug, Clone, Default)]
pub struct RunSpec {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the program's environment, natively and under emulation (after
    /// `OMP_NUM_THREADS` when [`RunSpec::threads`] is given).
    pub env: Vec<(String, String)>,
    /// Time limit of each run: a native timing run still going after this long is stopped
    /// and no native time is used; an emulation is stopped with its counts so far kept,
    /// marked partial.
    pub timeout: Option<Duration>,
    /// Threads to run the program with (`OMP_NUM_THREADS`; None: the environment's).
    pub threads: Option<u32>,
    /// How the program's threads are placed on each simulated node's cores.
    pub placement: Placement,
    /// Count only inside these functions (their own instructions, not their callees').
    pub functions: Vec<String>,
    /// Count while these functions run, callees included.
    pub scope: Vec<String>,
    /// Simulate the caches in sampled windows or sets and extrapolate (None: every access).
    pub sample: Option<SampleSpec>,
    /// The engine that counts (None: `HPCSCOPE_ENGINE`, else auto; see
    /// [`crate::engine::Choice`]).
    pub engine: Option<crate::engine::Choice>,
}

/// A run specification that cannot be run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// A time limit that is not a positive number of seconds.
    #[error("a time limit of {0} s: give a positive number of seconds")]
    Timeout(f64),
    /// No threads.
    #[error("0 threads: give the number of threads to run the program with (1 or more)")]
    NoThreads,
}

impl hpcscope_core::Classify for SpecError {
    fn kind(&self) -> hpcscope_core::ErrorKind {
        hpcscope_core::ErrorKind::Input
    }
}

impl RunSpec {
    /// A time limit of `seconds` (None: none), which must be a positive number.
    pub fn timeout_of(seconds: Option<f64>) -> Result<Option<Duration>, SpecError> {
        match seconds {
            Some(t) if t.is_finite() && t > 0.0 => Ok(Some(Duration::from_secs_f64(t))),
            Some(t) => Err(SpecError::Timeout(t)),
            None => Ok(None),
        }
    }

    /// Whether the specification can be run.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.threads == Some(0) {
            return Err(SpecError::NoThreads);
        }
        if let Some(t) = self.timeout
            && t.is_zero()
        {
            return Err(SpecError::Timeout(0.0));
        }
        Ok(())
    }

    /// The variables added to the program's environment: `OMP_NUM_THREADS` for
    /// [`RunSpec::threads`], then [`RunSpec::env`].
    pub fn environment(&self) -> Vec<(String, String)> {
        self.threads
            .map(|t| ("OMP_NUM_THREADS".to_string(), t.to_string()))
            .into_iter()
            .chain(self.env.iter().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_specification_is_checked_once_with_typed_errors() {
        assert_eq!(
            RunSpec::timeout_of(Some(-1.0)),
            Err(SpecError::Timeout(-1.0))
        );
        assert!(RunSpec::timeout_of(Some(f64::NAN)).is_err());
        assert_eq!(
            RunSpec::timeout_of(Some(2.5)),
            Ok(Some(Duration::from_millis(2500)))
        );
        let spec = RunSpec {
            threads: Some(0),
            ..RunSpec::default()
        };
        assert_eq!(spec.validate(), Err(SpecError::NoThreads));
        let spec = RunSpec {
            threads: Some(4),
            env: vec![("OMP_PROC_BIND".into(), "true".into())],
            ..RunSpec::default()
        };
        assert_eq!(spec.validate(), Ok(()));
        assert_eq!(
            spec.environment(),
            [
                ("OMP_NUM_THREADS".to_string(), "4".to_string()),
                ("OMP_PROC_BIND".to_string(), "true".to_string())
            ]
        );
    }
}
