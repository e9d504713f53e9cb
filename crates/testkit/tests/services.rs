//! The private service instances start, answer on their own ports, restart, and stop when
//! dropped, leaving the shared services alone.

#![cfg(unix)]

use oprec_testkit::services::{PrivatePostgres, PrivateRabbit, PrivateRedis, port_open};

#[test]
fn private_postgres_starts_restarts_and_stops() {
    let pg = PrivatePostgres::builder()
        .setting("application_name", "oprec-testkit")
        .start();
    assert_ne!(pg.port(), 5432);
    assert!(pg.is_up());
    assert!(pg.url().ends_with(&format!(":{}/postgres", pg.port())));
    pg.restart();
    assert!(pg.is_up());
    pg.stop();
    assert!(!pg.is_up());
    pg.start_again();
    assert!(pg.is_up());
    let (port, data) = (pg.port(), pg.data_dir());
    drop(pg);
    assert!(!port_open(port), "still listening after drop");
    assert!(!data.exists(), "folder left behind");
}

#[test]
fn private_redis_restarts_empty() {
    let mut redis = PrivateRedis::start();
    assert_ne!(redis.port(), 6379);
    assert!(redis.is_up());
    redis.restart();
    assert!(redis.is_up());
    redis.stop();
    assert!(!redis.is_up());
    redis.start_again();
    assert!(redis.is_up());
    let port = redis.port();
    drop(redis);
    assert!(!port_open(port));
}

#[test]
fn private_rabbit_node_starts_and_restarts() {
    let mut rabbit = PrivateRabbit::start();
    assert_ne!(rabbit.port(), 5672);
    assert!(rabbit.is_up());
    assert!(rabbit.node().ends_with("@localhost"));
    rabbit.restart();
    assert!(rabbit.is_up());
    let port = rabbit.port();
    drop(rabbit);
    assert!(!port_open(port));
    assert!(port_open(5672), "the shared RabbitMQ must still be up");
}
