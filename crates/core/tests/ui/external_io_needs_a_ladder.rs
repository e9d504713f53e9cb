use chrono::Duration;
use oprec_core::RetryPolicy;

fn main() {
    let _ = RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .give_up_after(Duration::hours(48))
        .external_io()
        .jitter(oprec_core::Jitter::None)
        .build();
}
