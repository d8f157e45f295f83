//! JSON Schemas of a parallel job's files (see `hpcscope_analysis::schema` for the others):
//! `hpcscope schema NAME` prints one, `docs/schemas/NAME.schema.json` keeps each (a test
//! checks they are current).

use hpcscope_core::schema::{make, text};

/// The schemas: name and what it describes.
pub const NAMES: &[(&str, &str)] = &[
    (
        "rank",
        "the result file a rank of a parallel job writes into the run directory (`--run-dir`)",
    ),
    (
        "merge",
        "`merge --format json` of one job: per-rank times, POP efficiencies, problems",
    ),
    (
        "merge-all",
        "`merge --all --format json`: every job of a run directory merged on its own",
    ),
];

/// The schema called `name`, as pretty-printed JSON; `None` for a name not listed here.
pub fn schema(name: &str) -> Option<String> {
    let about = NAMES.iter().find(|(n, _)| *n == name)?.1;
    let s = match name {
        "rank" => make::<crate::rank::RankResult>(name, about, true),
        "merge" => make::<crate::merge::MergedJob>(name, about, true),
        "merge-all" => make::<crate::merge::MergedRuns>(name, about, true),
        _ => return None,
    };
    Some(text(&s))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// docs/schemas holds the current schemas; `HPCSCOPE_BLESS=1 cargo test -p hpcscope-job
    /// schema` rewrites them after a format change.
    #[test]
    fn the_schemas_in_docs_are_current() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas");
        let stale = hpcscope_core::schema::stale_files(&dir, super::NAMES, super::schema).unwrap();
        assert!(
            stale.is_empty(),
            "stale schemas: {}; run `HPCSCOPE_BLESS=1 cargo test -p hpcscope-job schema` and commit docs/schemas",
            stale.join(", ")
        );
        assert!(super::schema("nothing").is_none());
    }
}
