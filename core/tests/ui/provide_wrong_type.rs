// A `Provide<T>` handle provides a `T` and nothing else: a plugin cannot provide a service it
// does not declare through a handle it does not have.
use dsh_core::{plugin_fn, Provide};
use std::sync::Arc;

pub struct Clock;
pub struct Calendar;

fn main() {
    let _ = plugin_fn("clock", |_, clock: Provide<Clock>| {
        clock.provide(Arc::new(Calendar))?;
        Ok(())
    });
}
