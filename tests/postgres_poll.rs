//! The runtime scenarios on the postgres + poll rig.

oprec_e2e::e2e_scenarios!(oprec_e2e::rigs::postgres_poll);
