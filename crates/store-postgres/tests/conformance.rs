//! The Store conformance suite and the retry scenarios against a real PostgreSQL: each test runs in a
//! fresh schema of the database named by `OPREC_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`), so tests run in parallel. With no PostgreSQL the
//! tests fail; they never skip.

mod common;

oprec_testkit::store_conformance_tests!(common::setup);

oprec_testkit::operator_conformance_tests!(common::setup);

oprec_testkit::retention_conformance_tests!(common::setup);
oprec_testkit::archive_conformance_tests!(common::setup);
