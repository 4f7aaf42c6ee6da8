// A closure plugin receives its dependencies as handles: `Dep<T>` (required), `Option<Dep<T>>`
// or `Optional<T>` (optional), or a tuple of them. A bare `Arc<T>` is not one: the core could
// neither declare it nor tell the plugin when the service goes.
use dsh_core::plugin_fn;
use std::sync::Arc;

pub struct Store;

fn main() {
    let _ = plugin_fn("needs-store", |_, _store: Arc<Store>| Ok(()));
}
