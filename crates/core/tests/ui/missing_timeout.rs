use oprec_core::{Ladder, RetryPolicy};

fn main() {
    let _ = RetryPolicy::builder()
        .max_attempts(6)
        .external_io(Ladder::schedule_secs(&[0, 60, 300]))
        .jitter(oprec_core::Jitter::None)
        .build();
}
