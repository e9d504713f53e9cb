use chrono::Duration;
use oprec_core::{Ladder, RetryPolicy};

fn main() {
    let _ = RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .external_io(Ladder::schedule_secs(&[0, 60, 300]))
        .jitter(oprec_core::Jitter::None)
        .build();
}
