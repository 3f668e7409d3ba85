//! SLOWLOG with its two CONFIG parameters, against the process itself (durations and timestamps
//! make whole entries unfit for the differential tests): `slowlog-log-slower-than` 0 logs every
//! command, -1 none; `slowlog-max-len` bounds the entries kept; an entry holds the command's
//! arguments, with secrets redacted exactly where redis-server redacts them (compared).

mod support;

use support::{Server, Value, decode};

fn len(client: &mut support::Client) -> i64 {
    match decode(&client.cmd(&["SLOWLOG", "LEN"])) {
        Value::Int(n) => n,
        other => panic!("SLOWLOG LEN answered {other:?}"),
    }
}

#[test]
fn thresholds_and_length_follow_config_set() {
    let server = Server::densekv(&[]);
    let mut client = server.connect();
    // The default threshold (10 ms) keeps quick commands out.
    assert_eq!(client.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    assert_eq!(len(&mut client), 0);
    assert_eq!(
        decode(&client.cmd(&["CONFIG", "GET", "slowlog-*"])),
        decode(
            b"*4\r\n$23\r\nslowlog-log-slower-than\r\n$5\r\n10000\r\n$15\r\nslowlog-max-len\r\n$3\r\n128\r\n"
        )
    );

    assert_eq!(
        client.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        b"+OK\r\n"
    );
    assert_eq!(client.cmd(&["SET", "key", "value"]), b"+OK\r\n");
    let entries = decode(&client.cmd(&["SLOWLOG", "GET", "1"]));
    let newest = &entries.array()[0].array()[3];
    assert!(
        newest.array().iter().any(|a| a.bulk() == b"key"),
        "the newest entry is a command run after the change: {newest:?}"
    );

    assert_eq!(
        client.cmd(&["CONFIG", "SET", "slowlog-max-len", "3"]),
        b"+OK\r\n"
    );
    for i in 0..10 {
        client.cmd(&["SET", "k", &i.to_string()]);
    }
    assert_eq!(len(&mut client), 3);

    assert_eq!(
        client.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]),
        b"+OK\r\n"
    );
    assert_eq!(client.cmd(&["SLOWLOG", "RESET"]), b"+OK\r\n");
    for i in 0..10 {
        client.cmd(&["SET", "k", &i.to_string()]);
    }
    assert_eq!(len(&mut client), 0);

    let refused = client.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-2"]);
    assert!(
        refused.starts_with(b"-ERR CONFIG SET failed"),
        "{refused:?}"
    );
}

/// The arguments of every entry, newest first.
fn logged_arguments(client: &mut support::Client) -> Vec<Vec<Vec<u8>>> {
    decode(&client.cmd(&["SLOWLOG", "GET", "-1"]))
        .array()
        .iter()
        .map(|entry| {
            entry.array()[3]
                .array()
                .iter()
                .map(|a| a.bulk().to_vec())
                .collect()
        })
        .collect()
}

/// Secrets never reach the slow log: AUTH's arguments, HELLO's AUTH pair and the values of
/// CONFIG SET's sensitive directives show as `(redacted)`, exactly where redis-server shows it.
#[test]
fn secrets_are_redacted_as_redis_redacts_them() {
    let (densekv, redis) = Server::pair(&[]);
    let mut logs = Vec::new();
    for server in [&densekv, &redis] {
        let mut c = server.connect();
        c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        c.cmd(&["SLOWLOG", "RESET"]);
        c.cmd(&["AUTH", "hunter2"]);
        c.cmd(&["AUTH", "someone", "hunter2"]);
        c.cmd(&["AUTH", "a", "b", "c"]);
        c.cmd(&["HELLO", "2", "AUTH", "default", "hunter2", "SETNAME", "x"]);
        c.cmd(&["HELLO", "2", "SETNAME", "auth", "AUTH", "u", "p"]);
        c.cmd(&[
            "CONFIG",
            "SET",
            "masterauth",
            "s1",
            "maxmemory",
            "0",
            "masteruser",
            "s2",
        ]);
        c.cmd(&["CONFIG", "SET", "requirepass", ""]);
        let mut args = logged_arguments(&mut c);
        // Drop the SLOWLOG RESET that opens the log (its position is the same on both).
        args.retain(|a| !a[0].eq_ignore_ascii_case(b"slowlog"));
        logs.push(args);
    }
    assert_eq!(logs[0], logs[1]);
    assert!(logs[0].iter().flatten().any(|a| a == b"(redacted)"));
    assert!(
        !logs[0]
            .iter()
            .flatten()
            .any(|a| a == b"hunter2" || a == b"s1")
    );
}
