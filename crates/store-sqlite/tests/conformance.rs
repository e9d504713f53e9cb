//! The Store and OperatorStore conformance suites and the retry scenarios against SQLite: each test
//! runs on a fresh database file in its own temporary directory, so tests run in parallel.

mod common;

oprec_testkit::store_conformance_tests!(common::setup);

oprec_testkit::operator_conformance_tests!(common::setup);

oprec_testkit::retention_conformance_tests!(common::setup);
oprec_testkit::archive_conformance_tests!(common::setup);
