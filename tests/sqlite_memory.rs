//! The runtime scenarios on the sqlite + memory rig.

oprec_e2e::e2e_scenarios!(oprec_e2e::rigs::sqlite_memory);
