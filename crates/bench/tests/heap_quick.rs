//! Runs `bench heap --quick --passes 2` through the real binary: parent, every child process,
//! the merging of passes, the tables and the JSON file, on tiny sizes (a few seconds even in a
//! debug build).

use std::process::Command;

#[test]
fn quick_heap_suite_writes_every_row() {
    let out_dir = std::env::temp_dir().join(format!("densekv-bench-quick-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["heap", "--quick", "--passes", "2", "--out-dir"])
        .arg(&out_dir)
        .output()
        .expect("bench binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "bench heap --quick failed\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("[36/36]"),
        "progress output missing:\n{stderr}"
    );
    assert!(stdout.contains("time vs mi") && stdout.contains("accounting"));

    let json = std::fs::read_to_string(out_dir.join("heap.json")).expect("heap.json written");
    let report: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    let rows = report["allocators"].as_array().expect("allocator rows");
    assert_eq!(rows.len(), 16, "4 workloads × 4 allocators");
    for row in rows {
        assert!(
            row["median_ns_per_op"].as_f64().is_some_and(|ns| ns > 0.0),
            "{row}"
        );
        if row["allocator"] == "mimalloc" {
            assert_eq!(row["time_vs_mimalloc"].as_f64(), Some(1.0));
        }
    }
    assert_eq!(report["descriptors"].as_array().map(Vec::len), Some(2));
    assert_eq!(report["accounting"].as_array().map(Vec::len), Some(6));
    let raw = report["raw"].as_array().expect("raw reports");
    assert_eq!(raw.len(), 18, "two passes merged per pair");
    assert!(
        raw.iter().all(|r| r["rounds"] == 6),
        "3 quick rounds × 2 passes"
    );
    assert!(report["machine"]["nproc"].as_u64().is_some_and(|n| n >= 1));
    assert!(report["failures"].as_array().is_some_and(Vec::is_empty));
    let _ = std::fs::remove_dir_all(&out_dir);
}
