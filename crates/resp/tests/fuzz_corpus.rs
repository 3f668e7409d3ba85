//! Replays every file of `fuzz/corpus/resp_parse/` through `resp::fuzz_check`, the body of the
//! `resp_parse` fuzz target, so CI checks the corpus on stable without nightly or libFuzzer.

use std::path::Path;

#[test]
fn replay_fuzz_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/resp_parse");
    let mut replayed = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus directory {}: {e}", dir.display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let data = std::fs::read(&path).expect("readable corpus file");
        resp::fuzz_check(&data);
        replayed += 1;
    }
    assert!(replayed >= 20, "only {replayed} corpus files found");
}
