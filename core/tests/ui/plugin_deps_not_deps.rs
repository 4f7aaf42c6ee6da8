// A plugin type's `Deps` is a set of dependency handles: a service type itself (or an `Arc`
// of one) is not.
use dsh_core::{BoxError, NoConfig, Plugin, Scope};
use std::sync::Arc;

pub struct Store;

pub struct Reader;

impl Plugin for Reader {
    const NAME: &'static str = "reader";
    type Config = NoConfig;
    type Deps = Arc<Store>;
    fn apply(&self, _: &Scope, _: NoConfig, _store: Arc<Store>) -> Result<(), BoxError> {
        Ok(())
    }
}

fn main() {}
