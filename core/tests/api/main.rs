//! Integration tests of the second design of dsh-core: the three bugs of the first design
//! (each failed there), plugin handles and tickets, typed dependency handles, several
//! instances of one plugin, record collection, link safety, and the shapes a port of
//! cordis's tests needs (`porting`), isolation realms (`realms`), and typed provisions
//! (`provide`).

mod bugs;
mod deps;
mod handles;
mod instances;
mod links;
mod porting;
mod provide;
mod realms;

#[path = "../common/mod.rs"]
mod common;

pub use common::Log;
