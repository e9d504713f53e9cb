//! The five store traits on [`PgStore`](crate::PgStore), written by core's
//! [`impl_store_traits!`](oprec_core::impl_store_traits): every method forwards to the function of
//! the same name in the module of its concept (`claim::operation_claim_by_ids`, ...), the layout
//! every store crate shares ([`oprec_core::store_layout`]).

oprec_core::impl_store_traits!(crate::PgStore);
