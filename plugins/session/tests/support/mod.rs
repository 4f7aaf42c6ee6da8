//! Helpers shared by the session crate's integration tests.
#![allow(dead_code)] // each test file uses its own subset

pub mod corpus;
pub mod generated;
pub mod loaded;
