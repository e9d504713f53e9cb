//! The operation model test (oprec-testkit's `model_tests!`) against a real PostgreSQL: every
//! generated sequence runs in a fresh schema of the database named by `OPREC_TEST_DATABASE_URL`
//! (default `postgres://postgres@127.0.0.1:5432/test`). With no PostgreSQL the test fails; it
//! never skips.

mod common;

oprec_testkit::model_tests!(common::setup);
