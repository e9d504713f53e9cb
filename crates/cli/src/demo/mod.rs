//! The parts of `oprec demo`: a simulated shipping provider and the kind that calls it, the retry
//! scenarios, the driver that moves the virtual clock from event to event, and the
//! report. The command itself is `crate::commands::demo`.

pub(crate) mod driver;
pub(crate) mod provider;
pub(crate) mod report;
pub(crate) mod scenarios;
