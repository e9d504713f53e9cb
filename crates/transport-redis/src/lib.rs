//! oprec-redis: the [`Transport`](oprec_core::Transport) on Redis Streams, for deployments that
//! already run Redis and want wake-ups shared among many workers on many hosts.
//!
//! Each wake-up is one stream entry (field `f`, the frame of [`oprec_core::frame`]) read through a
//! consumer group: every entry goes to one worker; one left unacknowledged by a worker that died is
//! taken over by another after [`RedisTransportConfig::claim_idle`]; an acknowledged entry is
//! deleted, so the stream only ever holds what waits or is in flight. Connections reconnect after
//! a Redis restart; a group lost with Redis's data is recreated on the next use.
//!
//! Not here: what a wake-up means. Redis is a doorbell, not a record: losing the stream, purging
//! it or delivering an entry twice loses or repeats no work, because the store decides what is
//! claimable. One stream serves one consumer group; several deployments on one Redis use
//! different streams.

mod config;
mod conn;
mod endpoint;
mod error;
mod reclaim;
mod reply;
mod transport;

pub use config::RedisTransportConfig;
pub use error::backend_error;
pub use transport::RedisTransport;
