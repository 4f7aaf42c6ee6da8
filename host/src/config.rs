//! Host configuration: the store and the plugin switches. Store precedence: `--store` >
//! `DSH_STORE` > the config file (a `root` in the `dsh-session-jsonl` settings, else
//! `"store"`) > the platform data directory. A store value is `jsonl:DIR`, `sqlite:FILE`,
//! `postgres:URL` (or a `postgres://` / `postgresql://` URL as it is) or a plain DIR (JSONL).

use crate::cli::Cli;
use crate::error::CliError;
use dsh::session::SessionPersistence;
use dsh::{ContextConfig, Plugin, PluginSettings};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The config file: `{"store": "STORE", "plugins": {...}}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    store: Option<PathBuf>,
    #[serde(default)]
    plugins: BTreeMap<String, PluginSettings>,
}

/// A persistence backend a store value can name: its plugin and the config field that
/// receives the location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Backend {
    plugin: &'static str,
    field: &'static str,
}

/// The default backend: a plain store value is a JSONL folder.
const JSONL: Backend = Backend {
    plugin: dsh::session_jsonl::SessionJsonlPlugin::NAME,
    field: "root",
};

/// The SQLite backend: `sqlite:FILE`, the file in the plugin's `path`.
const SQLITE: Backend = Backend {
    plugin: dsh::session_sqlite::SessionSqlitePlugin::NAME,
    field: "path",
};

/// The PostgreSQL backend: `postgres:URL`, the URL in the plugin's `url`.
const POSTGRES: Backend = Backend {
    plugin: POSTGRES_PLUGIN,
    field: "url",
};

/// The PostgreSQL plugin's name, also in a build without it (which has no
/// `SessionPostgresPlugin` to read `NAME` from, and refuses a `postgres:` store naming the
/// plugin and its feature). A build with it checks that the two agree.
const POSTGRES_PLUGIN: &str = "dsh-session-postgres";

#[cfg(feature = "session-postgres")]
const _: () = assert!(same_name(
    POSTGRES_PLUGIN,
    dsh::session_postgres::SessionPostgresPlugin::NAME
));

/// Whether two plugin names are equal, at compile time (for the names a build without the
/// plugin must spell out).
#[cfg(any(feature = "session-fork", feature = "session-postgres"))]
pub const fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The backend a `KIND:` prefix names (`jsonl:DIR`, `sqlite:FILE`, `postgres:URL`); `None`
/// for another kind.
/// A new backend is one arm here.
fn backend_of(kind: &str) -> Option<Backend> {
    match kind {
        "jsonl" => Some(JSONL),
        "sqlite" => Some(SQLITE),
        "postgres" | "postgresql" => Some(POSTGRES),
        _ => None,
    }
}

/// Parses a store value: `KIND:LOCATION` for a kind [`backend_of`] knows, else a plain JSONL
/// folder (a folder whose name has a colon can be written `jsonl:DIR` or `./DIR`).
///
/// Errors: `CONFIG_INVALID` for an unknown kind (a prefix of lowercase letters before the
/// colon, e.g. `sqlit:x`), an empty location, or a value that is not UTF-8.
fn parse_store(store: &Path) -> Result<(Backend, String), CliError> {
    let Some(text) = store.to_str() else {
        return Err(CliError::new(
            "CONFIG_INVALID",
            format!("the store {} is not valid UTF-8", store.display()),
        ));
    };
    let (backend, location) = match text.split_once(':') {
        Some((kind, location))
            if !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase()) =>
        {
            let backend = backend_of(kind).ok_or_else(|| {
                CliError::new(
                    "CONFIG_INVALID",
                    format!(
                        "unknown store kind \"{kind}\" in \"{text}\": use jsonl:DIR, sqlite:FILE, postgres:URL or a plain DIR"
                    ),
                )
            })?;
            (backend, location)
        }
        _ => (JSONL, text),
    };
    // `postgres://HOST/DB` is a whole URL, not the kind `postgres` with location `//HOST/DB`.
    let location = if backend == POSTGRES && location.starts_with("//") {
        text
    } else {
        location
    };
    if location.is_empty() {
        return Err(CliError::new(
            "CONFIG_INVALID",
            format!("the store \"{text}\" names no location: pass --store DIR or KIND:LOCATION"),
        ));
    }
    Ok((backend, location.to_owned()))
}

/// Resolves the context configuration of one run from the command line, the environment and
/// the config file. The store value (`--store`, else `DSH_STORE`, else the config file's
/// `"store"`, else the platform data directory as a JSONL folder) picks the backend: its
/// plugin is enabled with the location in its config, and every other plugin that provides
/// `SessionPersistence` is disabled. Without a store value, a JSONL `root` already set in the
/// config file's plugin settings is kept as it is.
///
/// Errors: `CONFIG_INVALID` when the config file cannot be read or parsed, the store value
/// is refused ([`parse_store`]), or no store can be determined.
pub fn resolve(cli: &Cli) -> Result<ContextConfig, CliError> {
    let file = match &cli.config {
        Some(path) => read_config(path)?,
        None => ConfigFile::default(),
    };
    let explicit = cli.store.clone().or_else(|| {
        std::env::var_os("DSH_STORE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let mut context = ContextConfig {
        plugins: file.plugins,
    };
    require_persistence(&mut context);
    for name in &cli.disable {
        context.set_enabled(name, false);
    }
    let configured_root = context
        .plugins
        .get(JSONL.plugin)
        .is_some_and(|settings| settings.config.get(JSONL.field).is_some());
    let store = match explicit {
        Some(store) => store,
        None if configured_root => return Ok(context),
        None => file.store.or_else(default_store).ok_or_else(|| {
            CliError::new(
                "CONFIG_INVALID",
                "no store directory: pass --store DIR or set DSH_STORE",
            )
        })?,
    };
    let (backend, location) = parse_store(&store)?;
    let linked = persistence_plugins();
    if !linked.contains(&backend.plugin) {
        let feature = backend.plugin.trim_start_matches("dsh-");
        return Err(CliError::new(
            "CONFIG_INVALID",
            format!(
                "this build of dsh does not contain the plugin {} that the store \"{}\" needs: \
                 build dsh with the Cargo feature {feature}",
                backend.plugin,
                store.display()
            ),
        ));
    }
    for other in linked {
        if other != backend.plugin {
            context.set_enabled(other, false);
        }
    }
    let settings = context
        .plugins
        .entry(backend.plugin.to_owned())
        .or_default();
    if settings.enabled.is_none() {
        settings.enabled = Some(true);
    }
    match &mut settings.config {
        serde_json::Value::Object(map) => {
            map.insert(backend.field.into(), location.into());
        }
        other => *other = serde_json::json!({ backend.field: location }),
    }
    Ok(context)
}

/// The `dsh` host's sessions must persist: the session plugin's `persistence` is `required`
/// unless the config file says otherwise, so a store whose backend failed is an error
/// (`CAPABILITY_UNAVAILABLE`, naming the backend plugin and why), never a silent in-memory run.
fn require_persistence(context: &mut ContextConfig) {
    let name = <dsh::session::SessionPlugin as dsh::Plugin>::NAME;
    let settings = context.plugins.entry(name.to_owned()).or_default();
    match &mut settings.config {
        serde_json::Value::Object(map) => {
            map.entry("persistence")
                .or_insert_with(|| "required".into());
        }
        config @ serde_json::Value::Null => {
            *config = serde_json::json!({ "persistence": "required" })
        }
        // Any other value is refused by the plugin's config check, naming it.
        _ => {}
    }
}

/// The names of the linked plugins that provide `SessionPersistence`.
fn persistence_plugins() -> Vec<&'static str> {
    let key = dsh::ServiceKey::of::<dyn SessionPersistence>();
    dsh::registered()
        .into_iter()
        .filter(|p| p.manifest().provides().contains(&key))
        .map(|p| p.name())
        .collect()
}

fn read_config(path: &Path) -> Result<ConfigFile, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::new(
            "CONFIG_INVALID",
            format!("cannot read config file {}: {e}", path.display()),
        )
    })?;
    let invalid = |e: String| {
        CliError::new(
            "CONFIG_INVALID",
            format!("invalid config file {}: {e}", path.display()),
        )
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    if !value.is_object() {
        return Err(invalid("the config must be a JSON object".into()));
    }
    serde_json::from_value(value).map_err(|e| invalid(e.to_string()))
}

/// The embedded default store: `<platform data dir>/dsh/sessions`.
fn default_store() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("dsh").join("sessions"))
}
