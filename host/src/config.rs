//! [`HostConfig`]: the configuration of a dsh host (where sessions are stored, which plugins
//! run and with what settings), resolved from its sources, and the context built from it.
//!
//! Sources, highest precedence first ([`Sources`]):
//! 1. flags: a store value (`--store`), plugins to disable (`--disable NAME`);
//! 2. the environment: `DSH_STORE`;
//! 3. the config file (JSON): `{"store": "STORE", "plugins": {"NAME": {"enabled": BOOL,
//!    "config": {...}}}}`; a `"root"` in the `dsh-session-jsonl` plugin's config stands for
//!    the store when no flag or variable names one;
//! 4. the platform data directory as a JSONL folder (e.g. `~/.local/share/dsh/sessions`).
//!
//! A store value ([`Store`]) picks the backend: its plugin is enabled with the location in its
//! config and every other linked backend plugin is disabled. Sessions must persist: the session
//! plugin's `persistence` is `required` unless the file's settings for `dsh-session` say
//! otherwise, so a backend that failed to start is an error, never a silent in-memory store.
//!
//! Plugin names the build does not contain (in the file or in `--disable`) follow one policy,
//! [`UnknownPlugins`]: by default they are reported as warnings and their settings ignored (a
//! config written for a build with more plugins still works); in strict mode they are a
//! `CONFIG_INVALID` error.

use crate::error::HostError;
use crate::regular_file::{read_regular, ReadRefused};
use crate::store::{Backend, Store};
use dsh::session::backend::SessionPersistence;
use dsh::{Context, ContextConfig, Plugin, PluginSettings};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What to do with a plugin name the build does not contain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnknownPlugins {
    /// Ignore its settings, with a warning ([`HostConfig::warnings`], and a `tracing` warning
    /// when the context is built).
    #[default]
    Warn,
    /// Refuse the configuration: `CONFIG_INVALID` naming the plugin.
    Refuse,
}

/// Where a host's configuration comes from: each source is optional ([`HostConfig::resolve`]
/// applies them in order of precedence).
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// A store value given as a flag (`--store`).
    pub store: Option<PathBuf>,
    /// The store value from the environment (`DSH_STORE`; empty counts as unset).
    pub env_store: Option<PathBuf>,
    /// The config file.
    pub config_file: Option<PathBuf>,
    /// Plugins to disable whatever the file says (`--disable`).
    pub disable: Vec<String>,
    /// What to do with plugin names the build does not contain.
    pub unknown_plugins: UnknownPlugins,
}

impl Sources {
    /// Sources with the store from `DSH_STORE` (when set and not empty), nothing else.
    pub fn from_env() -> Sources {
        Sources {
            env_store: std::env::var_os("DSH_STORE")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from),
            ..Sources::default()
        }
    }

    /// These sources reading the config file `path`.
    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Sources {
        self.config_file = Some(path.into());
        self
    }

    /// These sources with the store value `store`, as a flag.
    pub fn store(mut self, store: impl Into<PathBuf>) -> Sources {
        self.store = Some(store.into());
        self
    }

    /// These sources disabling `plugin`, as a flag.
    pub fn disable(mut self, plugin: impl Into<String>) -> Sources {
        self.disable.push(plugin.into());
        self
    }

    /// These sources refusing plugin names the build does not contain.
    pub fn strict(mut self) -> Sources {
        self.unknown_plugins = UnknownPlugins::Refuse;
        self
    }
}

/// The config file: `{"$schema": "URL", "store": "STORE", "plugins": {...}}` (`$schema`, for
/// editors, is read and ignored; [`crate::schema::config_schema`] is the file's schema).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default, rename = "$schema")]
    _schema: Option<String>,
    #[serde(default)]
    store: Option<PathBuf>,
    #[serde(default)]
    plugins: BTreeMap<String, PluginSettings>,
}

/// A host's resolved configuration: the store and every plugin's settings, ready to build a
/// context ([`HostConfig::build`]) or to reconfigure a running one with
/// ([`HostConfig::context_config`]).
///
/// ```no_run
/// # fn main() -> Result<(), dsh_host::HostError> {
/// let config = dsh_host::HostConfig::resolve(&dsh_host::Sources::from_env().config_file("dsh.json"))?;
/// let ctx = config.build()?;
/// let store = ctx.expect::<dsh::session::SessionStore>();
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct HostConfig {
    /// The store; `None` when the config file configures the JSONL plugin's `root` itself and
    /// no flag or variable names a store.
    pub store: Option<Store>,
    /// Each plugin's settings (from the file, with `--disable` applied), keyed by instance
    /// name; names the build does not contain are already reported and removed.
    pub plugins: BTreeMap<String, PluginSettings>,
    warnings: Vec<String>,
}

impl HostConfig {
    /// Resolves the configuration from `sources` ([module documentation](self) for the
    /// precedence).
    ///
    /// # Errors
    /// `CONFIG_INVALID` when the config file cannot be read (missing, not a regular file, over
    /// [`MAX_CONFIG_FILE_BYTES`]: the message names the file and says why; a FIFO or a device
    /// is refused without being read, so this never blocks on one) or is not a valid config
    /// (the message names the file and the field), a store value is refused ([`Store::parse`]), the
    /// store needs a backend plugin this build lacks (the message names the Cargo feature), no
    /// store can be determined, or (strict mode) a plugin name is unknown.
    pub fn resolve(sources: &Sources) -> Result<HostConfig, HostError> {
        let file = match &sources.config_file {
            Some(path) => read_config_file(path)?,
            None => ConfigFile::default(),
        };
        let mut plugins = file.plugins;
        for name in &sources.disable {
            plugins.entry(name.clone()).or_default().enabled = Some(false);
        }
        let warnings = drop_unknown(&mut plugins, sources.unknown_plugins)?;
        let configured_root = plugins
            .get(Backend::JSONL.plugin)
            .is_some_and(|settings| settings.config.get(Backend::JSONL.field).is_some());
        let written = match sources.store.clone().or_else(|| sources.env_store.clone()) {
            Some(store) => Some(store),
            None if configured_root => None,
            None => Some(file.store.or_else(default_store).ok_or_else(|| {
                HostError::new(
                    dsh::codes::CONFIG_INVALID,
                    "no store directory: pass --store DIR or set DSH_STORE",
                )
            })?),
        };
        let store = written.as_deref().map(Store::parse).transpose()?;
        if let Some(store) = &store {
            if !linked_backends().contains(&store.backend.plugin) {
                let feature = store.backend.plugin.trim_start_matches("dsh-");
                return Err(HostError::new(
                    dsh::codes::CONFIG_INVALID,
                    format!(
                        "this build of dsh does not contain the plugin {} that the store \"{store}\" \
                         needs: build it with the Cargo feature {feature}",
                        store.backend.plugin,
                    ),
                ));
            }
        }
        Ok(HostConfig {
            store,
            plugins,
            warnings,
        })
    }

    /// What resolving reported without refusing: each plugin name the build does not contain,
    /// with the source that named it. Empty in strict mode (such names are errors there).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The context configuration: the plugins' settings, the store's backend enabled with the
    /// location in its config and every other linked backend disabled, and persistence
    /// required of the session plugin unless its settings say otherwise.
    pub fn context_config(&self) -> ContextConfig {
        let mut context = ContextConfig {
            plugins: self.plugins.clone(),
        };
        require_persistence(&mut context);
        if let Some(store) = &self.store {
            for other in linked_backends() {
                if other != store.backend.plugin {
                    context.set_enabled(other, false);
                }
            }
            let settings = context
                .plugins
                .entry(store.backend.plugin.to_owned())
                .or_default();
            settings.enabled.get_or_insert(true);
            match &mut settings.config {
                Value::Object(map) => {
                    map.insert(store.backend.field.into(), store.location.clone().into());
                }
                other => *other = serde_json::json!({ store.backend.field: store.location }),
            }
        }
        context
    }

    /// A context holding every plugin linked into the program ([`linked_plugins`]: the
    /// facade's group and the link-time registry), configured by
    /// [`HostConfig::context_config`]. Each warning of [`HostConfig::warnings`] is logged as a
    /// `tracing` warning.
    ///
    /// # Errors
    /// The context's build errors ([`dsh::CoreError`], with their codes).
    pub fn build(&self) -> Result<Context, HostError> {
        for warning in &self.warnings {
            tracing::warn!("{warning}");
        }
        Ok(Context::builder()
            .add_plugins(linked_plugins())
            .with_config(self.context_config())
            .build()?)
    }
}

/// Removes from `plugins` the entries naming no plugin linked into the program (an instance
/// name `plugin:label` counts by its plugin), returning a warning for each, or refuses the
/// first one under [`UnknownPlugins::Refuse`].
fn drop_unknown(
    plugins: &mut BTreeMap<String, PluginSettings>,
    policy: UnknownPlugins,
) -> Result<Vec<String>, HostError> {
    let linked = linked_plugins().names();
    let unknown: Vec<String> = plugins
        .keys()
        .filter(|name| {
            let plugin = name
                .split_once(':')
                .map_or(name.as_str(), |(plugin, _)| plugin);
            !linked.contains(&plugin)
        })
        .cloned()
        .collect();
    let mut warnings = Vec::new();
    for name in unknown {
        let message = format!("this build of dsh has no plugin \"{name}\"");
        if policy == UnknownPlugins::Refuse {
            return Err(HostError::new(
                dsh::codes::CONFIG_INVALID,
                format!("{message}: remove it from the config or --disable"),
            ));
        }
        warnings.push(format!("{message}; its settings are ignored"));
        plugins.remove(&name);
    }
    Ok(warnings)
}

/// Sets the session plugin's `persistence` to `required` unless its settings name one, so a
/// store whose backend failed is an error (`CAPABILITY_UNAVAILABLE`, naming the backend plugin
/// and why), never a silent in-memory run.
fn require_persistence(context: &mut ContextConfig) {
    let name = <dsh::session::SessionPlugin as Plugin>::NAME;
    let settings = context.plugins.entry(name.to_owned()).or_default();
    match &mut settings.config {
        Value::Object(map) => {
            map.entry("persistence")
                .or_insert_with(|| "required".into());
        }
        config @ Value::Null => *config = serde_json::json!({ "persistence": "required" }),
        // Any other value is refused by the plugin's config check, naming it.
        _ => {}
    }
}

/// The plugins a host builds its context from: the facade's group
/// ([`dsh::default_plugins`], the plugins this build ships, linked because the group names
/// them) and every other plugin of the link-time registry (plugins a host links that the
/// facade does not know), sorted by name as the registry is.
pub fn linked_plugins() -> dsh::PluginGroup {
    dsh::default_plugins().with_registered()
}

/// The names of the linked plugins that provide `SessionPersistence`.
fn linked_backends() -> Vec<&'static str> {
    let key = dsh::ServiceKey::of::<dyn SessionPersistence>();
    linked_plugins()
        .into_iter()
        .filter(|p| p.manifest().provides().contains(&key))
        .map(|p| p.name())
        .collect()
}

/// The most bytes a config file may hold: 16 MiB (a config is a few hundred bytes; a larger
/// file is refused with `CONFIG_INVALID` before it is read).
pub const MAX_CONFIG_FILE_BYTES: u64 = 16 << 20;

/// Checks the config of every plugin entry of the config file at `path` (inside groups too)
/// against its plugin's config type, starting nothing: one line per refusal, named by its
/// path in the file (`plugins.dsh-session-jsonl.config.compression: unknown variant ...`);
/// empty when every config is accepted. (A command runs without a plugin whose config is
/// refused: that plugin fails, and the command says so when it needs it.)
///
/// # Errors
/// `CONFIG_INVALID` when the file cannot be read or is not a config file (as
/// [`HostConfig::resolve`]).
pub fn check_plugin_configs(path: &Path) -> Result<Vec<String>, HostError> {
    let file = read_grouped(path)?;
    Ok(crate::schema::check_plugin_configs(&file.plugins))
}

/// The config file at `path` ([`read_grouped`]) with its groups dissolved.
fn read_config_file(path: &Path) -> Result<ConfigFile, HostError> {
    let mut file = read_grouped(path)?;
    // Groups (`group:NAME` entries) are a way to write the file: dissolved here, so every
    // later step (switches, unknown names, the store's backend) sees one entry per instance.
    let grouped = ContextConfig {
        plugins: std::mem::take(&mut file.plugins),
    };
    file.plugins = grouped
        .flatten()
        .map_err(|e| invalid_file(path, e.to_string()))?
        .into_owned()
        .plugins;
    Ok(file)
}

/// `CONFIG_INVALID` naming the config file at `path` and why it is invalid.
fn invalid_file(path: &Path, why: String) -> HostError {
    HostError::new(
        dsh::codes::CONFIG_INVALID,
        format!("invalid config file {}: {why}", path.display()),
    )
}

/// Reads and checks the config file at `path`, as written (its groups kept): a regular file
/// (links followed) of at most [`MAX_CONFIG_FILE_BYTES`], read as [`read_regular`] reads
/// (never blocking on a FIFO, never reading a device).
///
/// # Errors
/// `CONFIG_INVALID` naming the file: missing or unreadable, not a regular file (saying what it
/// is), too large, not JSON, not an object, or a member that is not part of the format or a
/// wrongly typed value (naming its path: `plugins.dsh-session.enabeld: unknown field ...`).
fn read_grouped(path: &Path) -> Result<ConfigFile, HostError> {
    let bytes = read_regular(path, MAX_CONFIG_FILE_BYTES).map_err(|refused| {
        let why = match refused {
            ReadRefused::TooLarge { len: Some(len), .. } => format!(
                "it holds {len} bytes, more than the {} MiB a config file may hold",
                MAX_CONFIG_FILE_BYTES >> 20
            ),
            ReadRefused::TooLarge { len: None, .. } => format!(
                "it grew past the {} MiB a config file may hold while it was read",
                MAX_CONFIG_FILE_BYTES >> 20
            ),
            other => other.to_string(),
        };
        HostError::new(
            dsh::codes::CONFIG_INVALID,
            format!("cannot read the config file {}: {why}", path.display()),
        )
    })?;
    let invalid = |e: String| invalid_file(path, e);
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
    if !value.is_object() {
        return Err(invalid("the config must be a JSON object".into()));
    }
    serde_path_to_error::deserialize(&value).map_err(|e| {
        let path = e.path().to_string();
        match path.as_str() {
            "." => invalid(e.into_inner().to_string()),
            _ => invalid(format!("{path}: {}", e.into_inner())),
        }
    })
}

/// The embedded default store: `<platform data dir>/dsh/sessions`.
fn default_store() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("dsh").join("sessions"))
}
