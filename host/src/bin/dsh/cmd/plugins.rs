//! `dsh plugins`: every plugin of the context, disabled ones included.

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;
use dsh_host::{HostConfig, Sources};
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::Path;

/// `[{name, plugin, id, version, state, generation, provides, requires, optional, pendingOn,
/// error, parent}]`: `name` is the instance name (the plugin name, or `plugin:label` for a
/// further instance), `plugin` the plugin name, `id` the instance number (from 1), `error`
/// `{code, message}` for a failed instance else `null`, `parent` the instance that loaded it
/// (`null` for a root instance), and `realm` the isolation realm it resolves services in (only
/// for an instance in one, absent for the root realm). With `dot`, the dependency graph in Graphviz DOT instead
/// (printed as is, also with `--json`, where it is the one JSON string).
pub fn run(app: &App, dot: bool) -> Output {
    if dot {
        let graph = app.ctx.graph().to_dot();
        return Output::ok(serde_json::Value::String(graph.clone()), graph);
    }
    let plugins = app.ctx.plugins();
    let json = Value::Array(
        plugins
            .iter()
            .map(|p| {
                let mut entry = json!({
                    "name": p.name,
                    "plugin": p.plugin,
                    "id": p.id.get(),
                    "version": p.version,
                    "state": p.state.as_str(),
                    "generation": p.generation,
                    "provides": p.provides,
                    "requires": p.requires,
                    "optional": p.optional,
                    "pendingOn": p.pending_on,
                    "error": p.error,
                    "parent": p.parent,
                });
                if let Some(realm) = &p.realm {
                    entry["realm"] = json!(realm);
                }
                entry
            })
            .collect(),
    );
    let mut human = String::new();
    // The names in one column as wide as the longest.
    let width = plugins.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in &plugins {
        let _ = write!(human, "{:<width$} {:<9}", p.name, p.state.as_str());
        if let Some(realm) = &p.realm {
            let _ = write!(human, " in realm {realm}");
        }
        if !p.provides.is_empty() {
            let _ = write!(human, " provides {}", p.provides.join(", "));
        }
        if !p.pending_on.is_empty() {
            let _ = write!(human, " (waiting for {})", p.pending_on.join(", "));
        }
        if let Some(error) = &p.error {
            let _ = write!(human, " error: {}", error.message());
        }
        human.push('\n');
    }
    Output::ok(json, human)
}

/// `dsh plugins --plan NEW_CONFIG`: the plan of reconciling the context with the
/// configuration `sources` give when their config file is `new_config`, as
/// [`dsh::Context::plan`] computes it, without applying it. JSON: the plan's document
/// (`{"steps": [{instance, plugin, action, state, reason}]}`); text: one line per step that
/// changes something, or `no changes`.
///
/// # Errors
///
/// The new configuration's (`CONFIG_INVALID` naming the file or the field,
/// `UNKNOWN_PLUGIN`, `DEPENDENCY_CYCLE`, ...).
pub fn plan(app: &App, mut sources: Sources, new_config: &Path) -> Result<Output, HostError> {
    sources.config_file = Some(new_config.to_path_buf());
    let config = HostConfig::resolve(&sources)?;
    // The new config's unknown plugin names are what a plan is looked at for: say so.
    for warning in config.warnings() {
        eprintln!("warning: {warning}");
    }
    let plan = app.ctx.plan(&config.context_config())?;
    let json = serde_json::to_value(&plan).expect("a plan serializes");
    Ok(Output::ok(json, plan.to_string()))
}
