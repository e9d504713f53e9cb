use chrono::Duration;
use oprec_core::{Ladder, RetryPolicy};

// Every other declaration is there: the jitter rule is not stated, so there is no `build`.
fn main() {
    let _ = RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(6)
        .external_io(Ladder::schedule_secs(&[0, 60, 300]))
        .build();
}
