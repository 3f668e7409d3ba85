//! Runs the memory part of `bench server` through the real binary against redis-server alone,
//! on N = 2,000 entries per workload: server start and stop on ephemeral ports, the pipelined
//! loader with every reply checked, the read-back check, the tables and the JSON file. densekv
//! is not needed (`--no-densekv`: its columns must read n/a). About ten seconds.

use std::process::Command;

#[test]
fn quick_memory_suite_against_redis_server() {
    assert!(
        Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok(),
        "redis-server is not installed: scripts/check.sh installs it (this test needs it)"
    );
    let out_dir = std::env::temp_dir().join(format!("densekv-bench-server-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args([
            "server",
            "--quick",
            "--only",
            "memory",
            "--no-densekv",
            "--no-docs",
        ])
        .arg("--out-dir")
        .arg(&out_dir)
        .output()
        .expect("bench binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "bench server --quick failed\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("[memory 8/8]"),
        "progress missing:\n{stderr}"
    );
    assert!(
        stdout.contains("densekv B/entry"),
        "table missing:\n{stdout}"
    );

    let json = std::fs::read_to_string(out_dir.join("server.json")).expect("server.json written");
    let report: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    let rows = report["memory"].as_array().expect("memory rows");
    assert_eq!(rows.len(), 8, "one row per workload");
    for row in rows {
        assert_eq!(row["entries"], 2000, "{row}");
        assert_eq!(row["redis"]["outcome"]["status"], "ok", "{row}");
        assert_eq!(row["redis"]["verified_entries"], 1000, "{row}");
        let per_entry = row["redis_rss_per_entry"].as_f64().expect("redis figure");
        assert!(per_entry > 0.0 && per_entry < 10_000.0, "{row}");
        assert!(
            row["redis_used_per_entry"]
                .as_f64()
                .is_some_and(|u| u > 0.0),
            "{row}"
        );
        assert_eq!(
            row["densekv"]["outcome"]["status"], "not_applicable",
            "{row}"
        );
        assert!(row["rss_ratio"].is_null(), "{row}");
    }
    assert!(report["throughput"].as_array().is_some_and(Vec::is_empty));
    assert!(report["failures"].as_array().is_some_and(Vec::is_empty));
    assert!(report["machine"]["nproc"].as_u64().is_some_and(|n| n >= 1));
    let _ = std::fs::remove_dir_all(&out_dir);
}
