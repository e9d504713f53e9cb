//! The operation model test (oprec-testkit's `model_tests!`) against SQLite: every generated
//! sequence runs on a fresh database file.

mod common;

// A sequence costs milliseconds here (a schema costs more on PostgreSQL), so SQLite runs more.
oprec_testkit::model_tests!(common::setup, cases = 160);
