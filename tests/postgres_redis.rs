//! The runtime scenarios on the postgres + redis rig.

oprec_e2e::e2e_scenarios!(oprec_e2e::rigs::postgres_redis);
