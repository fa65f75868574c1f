//! The ways clients, receivers and engines are put together: `actors`
//! (request-reply and one-way, on troupe) and `locked` (the sync variant:
//! client threads and locks, no actors). Each builds the system for a
//! `RunConfig`, runs the clients and hands back a `verify::RawRun`.

pub mod actors;
pub mod locked;
