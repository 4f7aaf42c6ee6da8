// The second parameter of a closure plugin is its dependency set, not an argument of any
// type: a `u32` (or a tuple holding one) is not a `Deps`.
use dsh_core::{plugin_fn, Dep};

pub struct Store;

fn main() {
    let _ = plugin_fn("counted", |_, _count: u32| Ok(()));
    let _ = plugin_fn("mixed", |_, (_store, _count): (Dep<Store>, u32)| Ok(()));
}
