// A descriptor built at run time is not a static: the link-time registry cannot hold it.
use dsh_core::{BoxError, Context, PluginDescriptor};

fn apply(_: &Context) -> Result<(), BoxError> {
    Ok(())
}

fn main() {
    let descriptor = PluginDescriptor::new("local", apply);
    println!("{}", descriptor.name());
    dsh_core::submit_plugin!(descriptor);
}
