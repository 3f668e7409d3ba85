//! INFO memory and MEMORY PURGE against the process itself: after FLUSHALL and MEMORY PURGE the
//! server's resident memory falls back (the heap gives pages to the OS), `used_memory` drops, and
//! `used_memory_peak` remembers the high-water mark.

mod support;

use support::Server;

fn info_field(info: &[u8], name: &str) -> u64 {
    let text = String::from_utf8_lossy(info);
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{name}:")))
        .unwrap_or_else(|| panic!("INFO has no {name}"));
    line[name.len() + 1..]
        .trim()
        .parse()
        .expect("numeric field")
}

#[test]
fn flushall_and_purge_give_memory_back() {
    let server = Server::densekv(&[]);
    let mut client = server.connect();
    let base_rss = server.rss_kib();
    let value = "v".repeat(100);
    let commands: Vec<Vec<Vec<u8>>> = (0..100_000)
        .map(|i| {
            vec![
                b"SET".to_vec(),
                format!("key:{i:08}").into_bytes(),
                value.clone().into_bytes(),
            ]
        })
        .collect();
    for chunk in commands.chunks(5000) {
        for reply in client.pipeline(chunk) {
            assert_eq!(reply, b"+OK\r\n");
        }
    }
    let loaded = client.command(&[b"INFO", b"memory"]);
    let used = info_field(&loaded, "used_memory");
    let loaded_rss = server.rss_kib();
    assert!(
        used > 10_000_000,
        "100,000 keys of 100 bytes use {used} bytes"
    );
    assert!(
        loaded_rss > base_rss + 10_000,
        "RSS grew from {base_rss} KiB to {loaded_rss} KiB"
    );
    // The cron samples the command counter every 100 ms over a 1.6 s window: let it take two
    // samples after the load so the window brackets it.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let stats = client.command(&[b"INFO", b"stats"]);
    assert!(
        info_field(&stats, "instantaneous_ops_per_sec") > 0,
        "ops/sec sampled by the cron"
    );

    assert_eq!(client.command(&[b"FLUSHALL"]), b"+OK\r\n");
    assert_eq!(client.command(&[b"MEMORY", b"PURGE"]), b"+OK\r\n");
    let after = client.command(&[b"INFO", b"memory"]);
    let used_after = info_field(&after, "used_memory");
    let peak = info_field(&after, "used_memory_peak");
    let rss_after = server.rss_kib();
    assert!(used_after < used / 10, "used_memory {used} -> {used_after}");
    assert!(peak >= used, "peak {peak} remembers {used}");
    assert!(
        rss_after < base_rss + (loaded_rss - base_rss) / 2,
        "RSS {base_rss} -> {loaded_rss} -> {rss_after} KiB: the heap kept what FLUSHALL freed"
    );
}
