// The intended use, from another crate: a `Plugin + Default` type submitted by its path is
// registered, and a context built from the registry applies it.
use dsh_core::{BoxError, Context, NoConfig, Plugin, Scope, ServiceKey};
use std::sync::Arc;

pub struct Clock(u64);

#[derive(Default)]
pub struct ClockPlugin;

impl Plugin for ClockPlugin {
    const NAME: &'static str = "ui-clock";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Clock>()];
    type Config = NoConfig;
    type Deps = ();
    fn apply(&self, scope: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
        scope.provide(Arc::new(Clock(42)))?;
        Ok(())
    }
}

dsh_core::submit_plugin!(ClockPlugin);

mod nested {
    use dsh_core::{BoxError, NoConfig, Plugin, Scope};

    #[derive(Default)]
    pub struct Other;

    impl Plugin for Other {
        const NAME: &'static str = "ui-other";
        type Config = NoConfig;
        type Deps = ();
        fn apply(&self, _: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
            Ok(())
        }
    }
}

dsh_core::submit_plugin!(nested::Other);

fn main() {
    let names: Vec<&str> = dsh_core::registered().iter().map(|p| p.name()).collect();
    assert_eq!(names, ["ui-clock", "ui-other"]);
    let ctx = Context::from_registry(&Default::default()).unwrap();
    assert_eq!(ctx.expect::<Clock>().0, 42);
}
