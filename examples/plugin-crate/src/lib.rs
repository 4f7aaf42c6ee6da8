//! A sibling capability in a crate of its own: `Greeter`, a service that greets by session,
//! provided by the plugin `example-greeter`, which requires the session store and documents
//! its config with a JSON Schema. Built (and its test run) by `cargo test --workspace`.

use dsh::core::submit_plugin;
use dsh::session::{SessionId, SessionStore};
use dsh::{schema_of, BoxError, ConfigSchema, Dep, Plugin, Scope, ServiceKey};
use std::sync::Arc;

/// The service: a greeting for each live session.
pub struct Greeter {
    store: Dep<SessionStore>,
    greeting: String,
}

impl Greeter {
    /// `"{greeting}, session {id} ({n} events)"`, or `None` when the session is not live.
    pub fn greet(&self, id: &SessionId) -> Option<String> {
        let session = self.store.get().ok()?.get(id)?;
        Some(format!(
            "{}, session {id} ({} events)",
            self.greeting,
            session.len()
        ))
    }
}

/// The plugin's config: `{"greeting": "hello"}`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GreeterConfig {
    /// The word each greeting starts with.
    pub greeting: String,
}

impl Default for GreeterConfig {
    fn default() -> GreeterConfig {
        GreeterConfig {
            greeting: "hello".into(),
        }
    }
}

/// The plugin `example-greeter`: requires the session store, provides [`Greeter`].
#[derive(Default)]
pub struct GreeterPlugin;

impl Plugin for GreeterPlugin {
    const NAME: &'static str = "example-greeter";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Greeter>()];
    const CONFIG_SCHEMA: Option<ConfigSchema> = Some(schema_of::<GreeterConfig>);
    type Config = GreeterConfig;
    type Deps = Dep<SessionStore>;

    fn apply(
        &self,
        scope: &Scope,
        config: GreeterConfig,
        store: Dep<SessionStore>,
    ) -> Result<(), BoxError> {
        scope.provide(Arc::new(Greeter {
            store,
            greeting: config.greeting,
        }))?;
        Ok(())
    }
}

submit_plugin!(GreeterPlugin);

#[cfg(test)]
mod tests {
    use super::*;
    use dsh::session::{CreateOptions, SessionPlugin};
    use dsh::Context;

    #[test]
    fn the_greeter_greets_a_live_session_by_its_config() {
        let mut config = dsh::ContextConfig::default();
        config.set_config("example-greeter", serde_json::json!({"greeting": "hi"}));
        let ctx = Context::builder()
            .add_plugin(SessionPlugin)
            .add_plugin(GreeterPlugin)
            .with_config(config)
            .build()
            .unwrap();
        let store = ctx.expect::<SessionStore>();
        let session = store
            .create(None, CreateOptions::at("/work/project"))
            .unwrap();
        let greeting = ctx.expect::<Greeter>().greet(session.id()).unwrap();
        assert_eq!(greeting, format!("hi, session {} (0 events)", session.id()));
    }
}
