// The macro takes the path of a static descriptor, not an expression that builds one.
use dsh_core::{BoxError, Context};

fn apply(_: &Context) -> Result<(), BoxError> {
    Ok(())
}

dsh_core::submit_plugin!(dsh_core::PluginDescriptor::new("inline", apply));

fn main() {}
