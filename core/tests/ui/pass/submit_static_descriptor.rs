// The intended use, from another crate: a static descriptor submitted by path is registered.
use dsh_core::{BoxError, Context, PluginDescriptor, ServiceKey};
use std::sync::Arc;

pub struct Clock(u64);

fn apply(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(Clock(42)))?;
    Ok(())
}

pub static CLOCK: PluginDescriptor =
    PluginDescriptor::new("ui-clock", apply).provides(&[ServiceKey::of::<Clock>()]);

dsh_core::submit_plugin!(CLOCK);

mod nested {
    pub static OTHER: dsh_core::PluginDescriptor =
        dsh_core::PluginDescriptor::new("ui-other", super::apply_nothing);
}

fn apply_nothing(_: &Context) -> Result<(), BoxError> {
    Ok(())
}

dsh_core::submit_plugin!(nested::OTHER);

fn main() {
    let names: Vec<&str> = dsh_core::registered().iter().map(|d| d.name()).collect();
    assert_eq!(names, ["ui-clock", "ui-other"]);
    let ctx = Context::from_registry(&Default::default()).unwrap();
    assert_eq!(ctx.expect::<Clock>().0, 42);
}
