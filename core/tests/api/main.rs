//! Integration tests of the second design of dsh-core: the three bugs of the first design
//! (each failed there), plugin handles and tickets, typed dependency handles, several
//! instances of one plugin, record collection, and link safety.

mod bugs;
mod deps;
mod handles;
mod instances;
mod links;

use std::sync::{Arc, Mutex};

/// An ordered record of what plugins, disposers and listeners did, cloned into them.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    /// The entries so far, emptying the log.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}
