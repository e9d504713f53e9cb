//! One connection handle for both deployments: a single Redis (a reconnecting connection
//! manager) or a Redis Cluster (a cluster connection that routes each command to the node holding
//! its keys' slot and follows the cluster's changes).

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterConfig;
use redis::cluster_async::ClusterConnection;
use redis::{Client, Cmd, Pipeline, RedisFuture, RedisResult, Value};

use crate::endpoint::Target;

/// A connection to a Redis or a Redis Cluster; cheap to clone, every clone shares it.
#[derive(Clone)]
pub(crate) enum Conn {
    /// One server.
    Single(ConnectionManager),
    /// A cluster.
    Cluster(ClusterConnection),
}

impl Conn {
    /// A connection that opens on first use and reopens after the server (or a node) restarts.
    /// `response_timeout` bounds each command; `None` leaves blocking reads their own wait.
    pub fn lazy(
        target: &Target,
        connect_timeout: Duration,
        connect_retries: usize,
        response_timeout: Option<Duration>,
    ) -> RedisResult<Conn> {
        match target {
            Target::Single(client) => {
                let options = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_number_of_retries(connect_retries)
                    .set_max_delay(Duration::from_secs(1))
                    .set_response_timeout(response_timeout);
                ConnectionManager::new_lazy_with_config(Client::clone(client), options)
                    .map(Conn::Single)
            }
            Target::Cluster(client) => {
                // A blocking read is bounded by the caller; an hour stands for "no bound" here.
                let response = response_timeout.unwrap_or(Duration::from_secs(3600));
                let config = ClusterConfig::new()
                    .set_connection_timeout(connect_timeout)
                    .set_response_timeout(response);
                Ok(Conn::Cluster(
                    client.get_pending_async_connection_with_config(config),
                ))
            }
        }
    }

    /// Whether this is a cluster connection (keys of different slots need separate commands).
    pub fn is_cluster(&self) -> bool {
        matches!(self, Conn::Cluster(_))
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}
