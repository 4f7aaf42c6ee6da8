// Only a `PluginDescriptor` can be submitted.
pub static NOT_A_DESCRIPTOR: &str = "greeter";

dsh_core::submit_plugin!(NOT_A_DESCRIPTOR);

fn main() {}
