// The registry makes the plugin value with `Default`: a plugin that carries state it cannot
// default is loaded with `Context::builder().add_plugin(value)` instead.
use dsh_core::{BoxError, NoConfig, Plugin, Scope};

pub struct Backend {
    pub url: String,
}

impl Plugin for Backend {
    const NAME: &'static str = "backend";
    type Config = NoConfig;
    type Deps = ();
    fn apply(&self, _: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
        Ok(())
    }
}

dsh_core::submit_plugin!(Backend);

fn main() {}
