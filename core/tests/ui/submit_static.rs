// The first design submitted a static descriptor by path; now the macro takes the plugin's
// type, not a value (a static, a const) of it.
use dsh_core::{BoxError, NoConfig, Plugin, Scope};

#[derive(Default)]
pub struct Hello;

impl Plugin for Hello {
    const NAME: &'static str = "hello";
    type Config = NoConfig;
    type Deps = ();
    fn apply(&self, _: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
        Ok(())
    }
}

pub static HELLO_PLUGIN: Hello = Hello;

dsh_core::submit_plugin!(HELLO_PLUGIN);

fn main() {}
