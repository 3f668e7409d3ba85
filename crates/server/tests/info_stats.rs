//! INFO's per-command counters against the process itself (they count this test's own
//! commands, so they are unfit for the differential tests): commandstats calls, total commands,
//! keyspace hits and misses, changes since the last save, and CONFIG RESETSTAT. The summing of
//! several threads' cells is `hot_stats.rs`'s unit test: which thread accepts a connection is
//! the kernel's choice, so a test over sockets cannot force them apart.

mod support;

use support::{Server, decode};

/// The value of `field` in INFO `section`.
fn info_field(client: &mut support::Client, section: &str, field: &str) -> String {
    let reply = decode(&client.cmd(&["INFO", section]));
    let text = String::from_utf8_lossy(reply.bulk()).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_owned))
        .unwrap_or_else(|| panic!("INFO {section} has no {field}: {text}"))
}

fn info_u64(client: &mut support::Client, section: &str, field: &str) -> u64 {
    info_field(client, section, field)
        .parse()
        .expect("an integer field")
}

/// `calls=` of `cmdstat_<name>`, 0 when the command has no line.
fn calls(client: &mut support::Client, name: &str) -> u64 {
    let reply = decode(&client.cmd(&["INFO", "commandstats"]));
    let text = String::from_utf8_lossy(reply.bulk()).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:calls=")))
        .map_or(0, |rest| {
            rest.split(',')
                .next()
                .expect("calls")
                .parse()
                .expect("calls")
        })
}

#[test]
fn counters_sum_over_threads_and_reset() {
    let server = Server::densekv(&["--io-threads", "3"]);
    let mut clients: Vec<_> = (0..8).map(|_| server.connect()).collect();
    let mut writes = 0;
    for (i, c) in clients.iter_mut().enumerate() {
        assert_eq!(c.cmd(&["SET", &format!("k{i}"), "v"]), b"+OK\r\n");
        writes += 1;
        for _ in 0..5 {
            assert_eq!(c.cmd(&["GET", &format!("k{i}")]), b"$1\r\nv\r\n");
        }
        for _ in 0..3 {
            assert_eq!(c.cmd(&["GET", "missing"]), b"$-1\r\n");
        }
    }
    let c = &mut clients[0];
    assert_eq!(calls(c, "set"), 8);
    assert_eq!(calls(c, "get"), 64);
    assert_eq!(info_u64(c, "stats", "keyspace_hits"), 40);
    assert_eq!(info_u64(c, "stats", "keyspace_misses"), 24);
    let dirty = info_u64(c, "persistence", "rdb_changes_since_last_save");
    assert!(dirty >= writes, "{dirty} changes counted for {writes} SETs");
    // 72 data commands, plus the INFO calls made above.
    let processed = info_u64(c, "stats", "total_commands_processed");
    assert!(processed >= 72, "{processed} commands processed");

    assert_eq!(c.cmd(&["CONFIG", "RESETSTAT"]), b"+OK\r\n");
    assert_eq!(calls(c, "get"), 0);
    assert_eq!(info_u64(c, "stats", "keyspace_hits"), 0);
    assert_eq!(info_u64(c, "stats", "keyspace_misses"), 0);
    assert_eq!(
        info_u64(c, "persistence", "rdb_changes_since_last_save"),
        dirty,
        "RESETSTAT leaves the changes since the last save"
    );
    assert!(info_u64(c, "stats", "total_commands_processed") < 10);
    for c in &mut clients {
        assert_eq!(c.cmd(&["GET", "k0"]), b"$1\r\nv\r\n");
    }
    let c = &mut clients[0];
    assert_eq!(calls(c, "get"), 8);
    assert_eq!(info_u64(c, "stats", "keyspace_hits"), 8);
    assert_eq!(info_u64(c, "stats", "keyspace_misses"), 0);
}
