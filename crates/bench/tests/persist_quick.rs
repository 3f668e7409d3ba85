//! Runs `bench persist` through the real binary on 20,000 keys with redis-server in both slots
//! (`--densekv <redis-server>`), so the harness is checked without building densekv: servers in
//! temporary directories, DEBUG POPULATE, BGSAVE under an overwrite with the child's memory
//! found, redis-benchmark with and without saves, SAVE, restarts and cross loads, the tables
//! and the JSON file. No timing is asserted. About ten seconds.

use std::path::PathBuf;
use std::process::Command;

fn redis_server() -> PathBuf {
    let found = Command::new("sh")
        .args(["-c", "command -v redis-server"])
        .output()
        .expect("sh runs");
    let path = String::from_utf8_lossy(&found.stdout).trim().to_owned();
    assert!(
        !path.is_empty(),
        "redis-server is not installed: scripts/check.sh installs it (this test needs it)"
    );
    PathBuf::from(path)
}

#[test]
fn quick_persist_suite_with_redis_server_in_both_slots() {
    let out_dir =
        std::env::temp_dir().join(format!("densekv-bench-persist-test-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["persist", "--quick", "--n", "20000", "--requests", "2000"])
        // redis-server in the densekv slot takes Redis's kind of delay.
        .args(["--densekv-delay", "-10", "--no-docs", "--densekv"])
        .arg(redis_server())
        .arg("--out-dir")
        .arg(&out_dir)
        .output()
        .expect("bench binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stdout.contains("peak/before"),
        "table missing:\n{stdout}\n{stderr}"
    );

    let json = std::fs::read_to_string(out_dir.join("persist.json")).expect("persist.json written");
    let report: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert!(
        report["failures"].as_array().is_some_and(Vec::is_empty),
        "{}\n{stderr}",
        report["failures"]
    );
    let bgsave = report["bgsave_rounds"].as_array().expect("bgsave rounds");
    assert_eq!(bgsave.len(), 2);
    for round in bgsave {
        assert_eq!(round["child_seen"], true, "{round}");
        assert!(round["peak_bytes"].as_u64() >= round["before_bytes"].as_u64());
    }
    let latency = report["latency_rounds"].as_array().expect("latency rounds");
    assert_eq!(latency.len(), 4, "set and get on both servers");
    assert!(
        latency
            .iter()
            .all(|l| l["saves_started"].as_u64() > Some(0))
    );
    let speed = report["speed_rounds"].as_array().expect("speed rounds");
    assert_eq!(speed.len(), 2);
    for round in speed {
        assert!(round["loaded_secs"].is_f64(), "{round}");
        assert!(round["cross_loaded_secs"].is_f64(), "{round}");
    }
    assert_eq!(report["headlines"].as_array().map(Vec::len), Some(5));
    let _ = std::fs::remove_dir_all(&out_dir);
}
