//! How many wrong operator tokens the dashboard tolerates: a token bucket per client address and
//! one for everyone together. Each wrong token (at sign-in, or as a bearer token) takes one
//! attempt from both; an empty bucket refuses every try — even with the right token — until it
//! has refilled, with a 429 and the seconds to wait. The global bucket bounds guessing spread over
//! many addresses; its price is that such an attack also locks out the operator for a while.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many wrong tokens are tolerated, from one client address and from all of them together.
#[derive(Clone, Copy, Debug)]
pub struct SignInLimits {
    /// Wrong tokens one address (an IPv6 /64) may send in a row.
    pub per_address_burst: u32,
    /// After this long, one more attempt is allowed to that address.
    pub per_address_every: Duration,
    /// Wrong tokens all addresses together may send in a row.
    pub global_burst: u32,
    /// After this long, one more attempt is allowed to everyone.
    pub global_every: Duration,
}

impl Default for SignInLimits {
    /// Five wrong tokens in a row per address, then one every 12 s; thirty from everyone
    /// together, then one every 2 s.
    fn default() -> Self {
        SignInLimits {
            per_address_burst: 5,
            per_address_every: Duration::from_secs(12),
            global_burst: 30,
            global_every: Duration::from_secs(2),
        }
    }
}

/// Past this many addresses tracked, full buckets are forgotten; past it still, all of them.
const MAX_ADDRESSES: usize = 10_000;

/// A bucket of attempts, refilled with time.
#[derive(Clone, Copy)]
struct Bucket {
    attempts: f64,
    at: Instant,
}

impl Bucket {
    fn full(burst: u32, now: Instant) -> Self {
        Bucket {
            attempts: f64::from(burst),
            at: now,
        }
    }

    fn refill(&mut self, burst: u32, every: Duration, now: Instant) {
        let gained = now.saturating_duration_since(self.at).as_secs_f64() / every.as_secs_f64();
        self.attempts = (self.attempts + gained).min(f64::from(burst));
        self.at = now;
    }

    /// How long until one attempt is available; zero when one is.
    fn wait(&self, every: Duration) -> Duration {
        if self.attempts >= 1.0 {
            Duration::ZERO
        } else {
            every.mul_f64(1.0 - self.attempts)
        }
    }
}

/// The buckets, shared by every request.
pub(crate) struct SignInThrottle {
    limits: SignInLimits,
    state: Mutex<Buckets>,
}

struct Buckets {
    global: Bucket,
    by_address: HashMap<Option<IpAddr>, Bucket>,
}

/// The key of a client address: an IPv6 client usually holds a whole /64, so that is one client.
fn client(peer: Option<IpAddr>) -> Option<IpAddr> {
    peer.map(|ip| match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let mut o = v6.octets();
            o[8..].fill(0);
            IpAddr::from(o)
        }
        v4 => v4,
    })
}

impl SignInThrottle {
    pub(crate) fn new(limits: SignInLimits) -> Self {
        let limits = SignInLimits {
            per_address_burst: limits.per_address_burst.max(1),
            global_burst: limits.global_burst.max(1),
            per_address_every: limits.per_address_every.max(Duration::from_millis(1)),
            global_every: limits.global_every.max(Duration::from_millis(1)),
        };
        SignInThrottle {
            limits,
            state: Mutex::new(Buckets {
                global: Bucket::full(limits.global_burst, Instant::now()),
                by_address: HashMap::new(),
            }),
        }
    }

    /// `Ok` when `peer` may try a token now, else how long it must wait.
    pub(crate) fn check(&self, peer: Option<IpAddr>, now: Instant) -> Result<(), Duration> {
        let l = self.limits;
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.global.refill(l.global_burst, l.global_every, now);
        let mut wait = s.global.wait(l.global_every);
        if let Some(b) = s.by_address.get_mut(&client(peer)) {
            b.refill(l.per_address_burst, l.per_address_every, now);
            wait = wait.max(b.wait(l.per_address_every));
        }
        if wait.is_zero() { Ok(()) } else { Err(wait) }
    }

    /// Counts a wrong token from `peer`.
    pub(crate) fn failed(&self, peer: Option<IpAddr>, now: Instant) {
        let l = self.limits;
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.global.refill(l.global_burst, l.global_every, now);
        s.global.attempts = (s.global.attempts - 1.0).max(0.0);
        if s.by_address.len() >= MAX_ADDRESSES {
            s.by_address.retain(|_, b| {
                b.refill(l.per_address_burst, l.per_address_every, now);
                b.attempts < f64::from(l.per_address_burst)
            });
            if s.by_address.len() >= MAX_ADDRESSES {
                s.by_address.clear();
            }
        }
        let b = s
            .by_address
            .entry(client(peer))
            .or_insert_with(|| Bucket::full(l.per_address_burst, now));
        b.refill(l.per_address_burst, l.per_address_every, now);
        b.attempts = (b.attempts - 1.0).max(0.0);
    }
}

/// Whole seconds to announce in `Retry-After`: rounded up, at least one.
pub(crate) fn retry_after_seconds(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> SignInLimits {
        SignInLimits {
            per_address_burst: 3,
            per_address_every: Duration::from_secs(10),
            global_burst: 5,
            global_every: Duration::from_secs(1),
        }
    }

    #[test]
    fn an_address_is_refused_after_its_burst_and_recovers() {
        let t = SignInThrottle::new(limits());
        let a = Some("192.0.2.7".parse().unwrap());
        let b = Some("192.0.2.8".parse().unwrap());
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(t.check(a, now), Ok(()));
            t.failed(a, now);
        }
        assert_eq!(t.check(a, now), Err(Duration::from_secs(10)));
        assert_eq!(t.check(b, now), Ok(()), "another address may still try");
        assert_eq!(
            t.check(a, now + Duration::from_secs(4)),
            Err(Duration::from_secs(6))
        );
        assert_eq!(t.check(a, now + Duration::from_secs(10)), Ok(()));
    }

    #[test]
    fn many_addresses_together_exhaust_the_global_bucket() {
        let t = SignInThrottle::new(limits());
        let now = Instant::now();
        for i in 0..5u8 {
            t.failed(Some(IpAddr::from([198, 51, 100, i])), now);
        }
        let fresh = Some(IpAddr::from([203, 0, 113, 1]));
        assert_eq!(t.check(fresh, now), Err(Duration::from_secs(1)));
        assert_eq!(t.check(fresh, now + Duration::from_secs(1)), Ok(()));
    }

    #[test]
    fn an_ipv6_client_is_its_slash_64() {
        let t = SignInThrottle::new(limits());
        let now = Instant::now();
        for i in 1..=3u16 {
            t.failed(Some(IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, i])), now);
        }
        let neighbour = Some(IpAddr::from([0x2001, 0xdb8, 0, 1, 0xffff, 0, 0, 9]));
        assert!(t.check(neighbour, now).is_err());
        let elsewhere = Some(IpAddr::from([0x2001, 0xdb8, 0, 2, 0, 0, 0, 1]));
        assert!(t.check(elsewhere, now).is_ok());
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_seconds(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_seconds(Duration::from_secs(2)), 2);
        assert_eq!(retry_after_seconds(Duration::from_millis(2100)), 3);
        assert_eq!(retry_after_seconds(Duration::ZERO), 1);
    }
}
