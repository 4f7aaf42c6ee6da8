// `requires` takes a static slice of `ServiceKey`s, not the names of the services.
use dsh_core::{BoxError, Context, PluginDescriptor};

fn apply(_: &Context) -> Result<(), BoxError> {
    Ok(())
}

pub static NEEDY: PluginDescriptor =
    PluginDescriptor::new("needy", apply).requires(&["SessionStore"]);

dsh_core::submit_plugin!(NEEDY);

fn main() {}
