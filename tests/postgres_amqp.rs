//! The runtime scenarios on the postgres + amqp rig.

oprec_e2e::e2e_scenarios!(oprec_e2e::rigs::postgres_amqp);
