// Only a type that implements `Plugin` can be submitted.
#[derive(Default)]
pub struct Greeter;

dsh_core::submit_plugin!(Greeter);

fn main() {}
