// The service keys of a descriptor must be `'static`: a slice borrowed from a local is not.
use dsh_core::{BoxError, Context, PluginDescriptor, ServiceKey};

pub struct Clock;

fn apply(_: &Context) -> Result<(), BoxError> {
    Ok(())
}

fn main() {
    let keys = vec![ServiceKey::of::<Clock>()];
    let descriptor = PluginDescriptor::new("borrowed", apply).requires(&keys);
    drop(descriptor);
}
