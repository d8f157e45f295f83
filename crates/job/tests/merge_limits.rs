//! A rank file that claims an absurd job size must not make `merge` list (and hold in
//! memory) billions of missing ranks. The fixture was written by
//! `hpcscope record --run-dir DIR --job-id j1 -- true`.

use hpcscope_job::merge::{MAX_RANKS, merge_job};

#[test]
fn a_forged_job_size_is_bounded_and_reported() {
    let text = include_str!("data/rank-result.json");
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    v["context"]["size"] = u32::MAX.into();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rank-000000.n.json"),
        serde_json::to_string(&v).unwrap(),
    )
    .unwrap();
    // Before, this listed 4,294,967,295 ranks.
    let m = merge_job(dir.path(), None).unwrap();
    assert!(m.size <= MAX_RANKS, "{}", m.size);
    let problems = serde_json::to_string(&m).unwrap();
    assert!(problems.contains("a damaged file?"), "{problems}");
}
