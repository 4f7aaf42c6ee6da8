// `apply` receives the plugin's `&Context` and returns `Result<(), BoxError>`.
use dsh_core::PluginDescriptor;

fn apply() {}

pub static WRONG: PluginDescriptor = PluginDescriptor::new("wrong", apply);

dsh_core::submit_plugin!(WRONG);

fn main() {}
