//! The rank files `hpcscope merge` reads: up to four files of a job (the input split at
//! `\n---\n`) in a run directory, merged. Never a panic; a file that cannot be read is
//! reported, not dropped.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("temporary directory");
    let job = dir.path().join("job");
    std::fs::create_dir(&job).expect("job directory");
    let mut parts: Vec<&[u8]> = Vec::new();
    let mut rest = data;
    while parts.len() < 3 {
        match rest.windows(5).position(|w| w == b"\n---\n") {
            Some(i) => {
                parts.push(&rest[..i]);
                rest = &rest[i + 5..];
            }
            None => break,
        }
    }
    parts.push(rest);
    for (i, p) in parts.iter().enumerate() {
        let name = if i % 2 == 0 {
            format!("rank-{:06}.node0.json", i / 2)
        } else {
            format!("rank-{:06}.node0.start.json", i / 2)
        };
        std::fs::write(job.join(name), p).expect("write a rank file");
    }
    let _ = hpcscope_job::merge::merge_job(&job, None);
});
