//! The transport conformance suite against a real RabbitMQ.

mod common;

use common::setup;

oprec_testkit::transport_conformance_tests!(setup);
