use chrono::Duration;
use oprec_core::RetryPolicy;

fn main() {
    // A kind must say whether it calls something external; if it does, `external_io` demands the
    // ladder in the same call, so "external I/O without a ladder" cannot be written at all.
    let _ = RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(3)
        .jitter(oprec_core::Jitter::None)
        .build();
}
