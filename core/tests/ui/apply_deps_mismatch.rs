// `apply` receives exactly the handles the plugin's `Deps` type declares: asking for another
// service than the one declared does not compile (there is no list to keep in step with the
// body).
use dsh_core::{BoxError, Dep, NoConfig, Plugin, Scope};

pub struct Clock;
pub struct Store;

pub struct Reader;

impl Plugin for Reader {
    const NAME: &'static str = "reader";
    type Config = NoConfig;
    type Deps = Dep<Clock>;
    fn apply(&self, _: &Scope, _: NoConfig, _store: Dep<Store>) -> Result<(), BoxError> {
        Ok(())
    }
}

fn main() {}
