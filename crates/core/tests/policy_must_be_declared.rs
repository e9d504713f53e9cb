//! The retry-policy rule, "a job must declare a positive execution timeout, an
//! attempt limit or retry expiry, and a backoff when it does external I/O", with the seed's "state
//! the jitter rule" (`missing_jitter.rs`), is enforced by the compiler: each file under
//! `tests/ui/` leaves one declaration out and must not compile.

#[test]
fn a_policy_without_its_declarations_does_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
