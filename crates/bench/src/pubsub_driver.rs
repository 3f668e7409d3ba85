//! The pub/sub suite's two measurements, each against a server already listening on a port (so
//! they run against any server, and the tests below run them against a redis-server they start):
//!
//! ```text
//! throughput  S subscribers (SUBSCRIBE bench.pubsub, or PSUBSCRIBE news.*), all confirmed;
//!             P publisher connections, each M/P messages as PUBLISH <channel> PPP:SSSSSSSSSSSS
//!             in pipelined batches of D (channel: bench.pubsub, or news.<sequence mod 1000>),
//!             every reply :S; the clock runs from the publishers' start until the last
//!             subscriber has all M messages, each publisher's in order, none twice
//!             → messages/s = M / that time (deliveries/s = S × messages/s)
//! fanout      S subscribers on bench.pubsub; one publisher, PUBLISH bench.pubsub <send ns> one
//!             at a time at R messages/s on a fixed grid for T s (reply :S each time); every
//!             subscriber takes receive ns − send ns for every message
//!             → p50, p99, p99.9 and max over all S × R × T deliveries
//! ```
//!
//! Why these: the first is the rate at which the server turns PUBLISH into deliveries when
//! nobody waits (one subscriber: the command path; a hundred: the fan-out loop and the output
//! buffers), the second how long a delivery waits when the server writes one message to many
//! sockets, spread over its io-threads. The send and receive times are read from one monotonic
//! clock in this process, so no clock offset enters the latency; what does enter is the
//! harness's own scheduling on the shared cores, the same for both servers.
//!
//! A measurement counts only if every subscriber received every message: a lost, duplicated or
//! reordered message, a PUBLISH reply that is not the subscriber count, or a subscriber still
//! short when the time bound passes makes it an `Err`, never a figure.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::pubsub_subscribers::{Check, Pool, PoolSpec, Subscription};
use crate::pubsub_wire::sequence_payload;
use crate::server_resp::{Connection, Reply, encode};

/// The channel of the channel and fan-out scenarios.
pub const CHANNEL: &str = "bench.pubsub";
/// The pattern of the pattern scenario, and the channels published to match it.
pub const PATTERN: &str = "news.*";
/// Distinct channels `news.<n>` the pattern scenario publishes to.
pub const PATTERN_CHANNELS: u64 = 1000;
/// How long a PUBLISH reply may take.
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// One throughput measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThroughputParams {
    pub subscribers: usize,
    /// PSUBSCRIBE news.* and publishes to news.<n>, rather than one channel.
    pub pattern: bool,
    pub publishers: usize,
    /// PUBLISH commands per pipelined write.
    pub depth: usize,
    /// Messages per publisher.
    pub messages_per_publisher: u64,
    pub subscriber_threads: usize,
}

/// What a throughput measurement found.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ThroughputResult {
    /// Messages published (every subscriber received each).
    pub messages: u64,
    /// From the publishers' start until the last publisher's last reply.
    pub publish_secs: f64,
    /// From the publishers' start until the last subscriber's last message.
    pub deliver_secs: f64,
    pub messages_per_sec: f64,
    pub deliveries_per_sec: f64,
}

/// One fan-out latency measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FanoutParams {
    pub subscribers: usize,
    pub rate_per_sec: u32,
    pub secs: f64,
    pub subscriber_threads: usize,
}

impl FanoutParams {
    /// Messages the publisher sends.
    pub fn messages(&self) -> u64 {
        ((f64::from(self.rate_per_sec) * self.secs).round() as u64).max(1)
    }
}

/// What a fan-out measurement found; latencies in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FanoutResult {
    pub messages: u64,
    pub deliveries: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// Sends that left more than one interval behind their slot on the grid (the publisher
    /// waited on a slow reply).
    pub late_sends: u64,
}

/// The nearest-rank `p` quantile (0 < p ≤ 1) of sorted `values`.
pub fn quantile(sorted: &[u64], p: f64) -> Option<u64> {
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
}

/// The channel message `sequence` of a throughput run goes to.
fn channel(pattern: bool, sequence: u64) -> String {
    if pattern {
        format!("news.{}", sequence % PATTERN_CHANNELS)
    } else {
        CHANNEL.to_owned()
    }
}

/// `Err` unless `reply` is `:receivers`.
fn check_receivers(reply: &Reply, receivers: usize) -> Result<(), String> {
    match reply {
        Reply::Integer(n) if usize::try_from(*n) == Ok(receivers) => Ok(()),
        other => Err(format!("PUBLISH replied {other}, not :{receivers}")),
    }
}

/// One publisher's messages in batches of `depth`; returns when its last reply came.
fn publish_all(
    mut connection: Connection,
    publisher: usize,
    params: ThroughputParams,
    start: &Barrier,
) -> Result<Instant, String> {
    let mut encoded = Vec::new();
    start.wait();
    let mut sequence = 0;
    while sequence < params.messages_per_publisher {
        let end = (sequence + params.depth as u64).min(params.messages_per_publisher);
        encoded.clear();
        for s in sequence..end {
            let (channel, payload) = (channel(params.pattern, s), sequence_payload(publisher, s));
            encode(
                &["PUBLISH", channel.as_str(), payload.as_str()],
                &mut encoded,
            );
        }
        let replies = connection
            .pipeline(&encoded, (end - sequence) as usize)
            .map_err(|e| format!("publisher {publisher}: {e}"))?;
        for reply in &replies {
            check_receivers(reply, params.subscribers)
                .map_err(|e| format!("publisher {publisher}: {e}"))?;
        }
        sequence = end;
    }
    Ok(Instant::now())
}

/// Publishes from `params.publishers` threads at once; returns the start and the last end.
fn run_publishers(port: u16, params: ThroughputParams) -> Result<(Instant, Instant), String> {
    let connections = (0..params.publishers)
        .map(|_| Connection::open(port, REPLY_TIMEOUT).map_err(|e| format!("publisher: {e}")))
        .collect::<Result<Vec<_>, String>>()?;
    let barrier = Arc::new(Barrier::new(params.publishers + 1));
    let handles: Vec<_> = connections
        .into_iter()
        .enumerate()
        .map(|(publisher, connection)| {
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || publish_all(connection, publisher, params, &barrier))
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let mut ended = started;
    let mut first_error = None;
    for handle in handles {
        match handle.join() {
            Ok(Ok(end)) => ended = ended.max(end),
            Ok(Err(e)) => first_error = first_error.or(Some(e)),
            Err(_) => first_error = first_error.or(Some("a publisher panicked".to_owned())),
        }
    }
    first_error.map_or(Ok((started, ended)), Err)
}

/// The throughput measurement against the server on `port`, bounded by `limit`.
pub fn throughput(
    port: u16,
    params: ThroughputParams,
    limit: Duration,
) -> Result<ThroughputResult, String> {
    let messages = params.messages_per_publisher * params.publishers as u64;
    let subscription = if params.pattern {
        Subscription::Pattern(PATTERN.to_owned())
    } else {
        Subscription::Channel(CHANNEL.to_owned())
    };
    let began = Instant::now();
    let mut pool = Pool::start(&PoolSpec {
        port,
        connections: params.subscribers,
        threads: params.subscriber_threads,
        subscription,
        expected: messages,
        check: Check::Sequence {
            publishers: params.publishers,
        },
    })?;
    pool.wait_subscribed(limit)?;
    let (started, published) = run_publishers(port, params)?;
    let outcome = pool.finish(limit.saturating_sub(began.elapsed()))?;
    let Some(finished) = outcome.finished else {
        return Err(format!(
            "not every subscriber received the {messages} messages within the time bound: {}",
            shortfall(&outcome.received, messages)
        ));
    };
    let deliver_secs = finished.duration_since(started).as_secs_f64();
    let messages_per_sec = messages as f64 / deliver_secs;
    Ok(ThroughputResult {
        messages,
        publish_secs: published.duration_since(started).as_secs_f64(),
        deliver_secs,
        messages_per_sec,
        deliveries_per_sec: messages_per_sec * params.subscribers as f64,
    })
}

/// "k of n subscribers short, fewest m" for an error message.
fn shortfall(received: &[u64], expected: u64) -> String {
    let short = received.iter().filter(|&&r| r < expected).count();
    let fewest = received.iter().min().copied().unwrap_or(0);
    format!(
        "{short} of {} subscribers short, the fewest received {fewest}",
        received.len()
    )
}

/// Sends the fan-out's messages on a fixed grid, one at a time; returns the late sends.
fn publish_timed(
    port: u16,
    params: FanoutParams,
    origin: Instant,
    limit: Duration,
) -> Result<u64, String> {
    let mut connection =
        Connection::open(port, REPLY_TIMEOUT).map_err(|e| format!("publisher: {e}"))?;
    let interval = Duration::from_secs(1) / params.rate_per_sec.max(1);
    let started = Instant::now();
    let mut late = 0;
    for index in 0..params.messages() {
        let due = interval * u32::try_from(index).unwrap_or(u32::MAX);
        let now = started.elapsed();
        if now < due {
            thread::sleep(due.saturating_sub(now));
        } else if now > due + interval {
            late += 1;
        }
        if started.elapsed() > limit {
            return Err(format!("publishing took over {} s", limit.as_secs()));
        }
        let sent_ns = origin.elapsed().as_nanos() as u64;
        let reply = connection
            .command(&["PUBLISH", CHANNEL, sent_ns.to_string().as_str()])
            .map_err(|e| format!("publisher: {e}"))?;
        check_receivers(&reply, params.subscribers)?;
    }
    Ok(late)
}

/// The fan-out latency measurement against the server on `port`, bounded by `limit`.
pub fn fanout(port: u16, params: FanoutParams, limit: Duration) -> Result<FanoutResult, String> {
    let messages = params.messages();
    let origin = Instant::now();
    let mut pool = Pool::start(&PoolSpec {
        port,
        connections: params.subscribers,
        threads: params.subscriber_threads,
        subscription: Subscription::Channel(CHANNEL.to_owned()),
        expected: messages,
        check: Check::Latency { origin },
    })?;
    pool.wait_subscribed(limit)?;
    let late_sends = publish_timed(port, params, origin, limit)?;
    let outcome = pool.finish(limit.saturating_sub(origin.elapsed()))?;
    if outcome.finished.is_none() {
        return Err(format!(
            "not every subscriber received the {messages} messages within the time bound: {}",
            shortfall(&outcome.received, messages)
        ));
    }
    let mut latencies = outcome.latencies_ns;
    latencies.sort_unstable();
    let ms = |p: f64| quantile(&latencies, p).map_or(f64::NAN, |ns| ns as f64 / 1e6);
    Ok(FanoutResult {
        messages,
        deliveries: latencies.len() as u64,
        p50_ms: ms(0.50),
        p99_ms: ms(0.99),
        p999_ms: ms(0.999),
        max_ms: ms(1.0),
        late_sends,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::{FanoutParams, ThroughputParams, channel, fanout, quantile, throughput};
    use crate::server_proc::{ServerKind, ServerProcess};

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let values: Vec<u64> = (1..=1000).collect();
        assert_eq!(quantile(&values, 0.5), Some(500));
        assert_eq!(quantile(&values, 0.99), Some(990));
        assert_eq!(quantile(&values, 0.999), Some(999));
        assert_eq!(quantile(&values, 1.0), Some(1000));
        assert_eq!(quantile(&[7], 0.001), Some(7));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(channel(true, 1042), "news.42");
        assert_eq!(channel(false, 1042), "bench.pubsub");
    }

    /// Both measurements, small, against a redis-server this test starts (on an ephemeral port,
    /// stopped by pid when the test ends): the driver's whole path, subscriptions to drained
    /// counts, on the server whose behaviour densekv's must match.
    #[test]
    fn the_driver_measures_a_real_redis_server() {
        let redis = ServerProcess::start_with(
            ServerKind::Redis,
            Path::new("redis-server"),
            &["--maxclients".to_owned(), "4000".to_owned()],
        )
        .expect("redis-server starts (the suite's tests need it, as the workspace's do)");
        let limit = Duration::from_secs(60);
        for (subscribers, pattern) in [(1, false), (5, false), (3, true)] {
            let params = ThroughputParams {
                subscribers,
                pattern,
                publishers: 3,
                depth: 16,
                messages_per_publisher: 1000,
                subscriber_threads: 2,
            };
            let result = throughput(redis.port, params, limit).unwrap();
            assert_eq!(result.messages, 3000);
            // The last delivery may precede the publisher's reading of its last reply: the
            // server writes the subscribers' copies before the reply, so no order is asserted.
            assert!(result.messages_per_sec > 0.0 && result.deliver_secs > 0.0);
        }
        let params = FanoutParams {
            subscribers: 50,
            rate_per_sec: 200,
            secs: 0.25,
            subscriber_threads: 2,
        };
        let result = fanout(redis.port, params, limit).unwrap();
        assert_eq!((result.messages, result.deliveries), (50, 2500));
        assert!(result.p50_ms > 0.0 && result.p50_ms <= result.p99_ms);
        assert!(result.p99_ms <= result.p999_ms && result.p999_ms <= result.max_ms);
    }
}
