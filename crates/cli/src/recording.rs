//! `--record` for the commands that produce results: the numbers of a result go into the
//! run history (`hpcscope history`, `hpcscope regress`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

/// `--record [--db FILE]`, flattened into each command that can record its result.
#[derive(Args, Debug, Clone, Default)]
pub struct RecordFlags {
    /// Also keep this result's numbers in the run history (see `hpcscope history`).
    #[arg(long)]
    pub record: bool,
    /// History store for --record (default: $HPCSCOPE_DB, else the per-user store).
    #[arg(long, value_name = "FILE", requires = "record")]
    pub db: Option<PathBuf>,
}

impl RecordFlags {
    /// Records `numbers` (every number in the JSON value becomes a metric, named by its
    /// path) as one run of `source` for `command`; returns a line to print, if recorded.
    pub fn store(
        &self,
        source: &str,
        command: &str,
        numbers: &serde_json::Value,
    ) -> Result<Option<String>> {
        if !self.record {
            return Ok(None);
        }
        let id = hpcscope_history::store::record_json_result(
            self.db.as_deref(),
            source,
            command,
            &[],
            numbers,
        )?;
        Ok(Some(format!("recorded as run {id} in the history store")))
    }
}
