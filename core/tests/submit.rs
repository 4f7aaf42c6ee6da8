//! The intended use of `submit_plugin!`, from another crate (this test binary, which registers
//! nothing else): a `Plugin + Default` type submitted by its path is registered, and a context
//! built from the registry applies it. Its misuse does not compile: the cases of `tests/ui`,
//! checked by `tests/registry/ui.rs`. (This case was a trybuild pass case; as an ordinary test
//! it is built with the other tests, and trybuild only checks its compile-fail cases.)

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

#[test]
fn a_default_plugin_submitted_by_its_path_is_registered_and_applied() {
    let names: Vec<&str> = dsh_core::registered().iter().map(|p| p.name()).collect();
    assert_eq!(names, ["ui-clock", "ui-other"]);
    let ctx = Context::from_registry(&Default::default()).unwrap();
    assert_eq!(ctx.expect::<Clock>().0, 42);
}
