//! The host layer as a library: `HostConfig` resolves the same sources, in the same order, as
//! the `dsh` binary, and builds a context whose store is where the sources say.

use dsh::session::{SessionStore, StoreError};
use dsh::ContextConfig;
use dsh_host::{Backend, HostConfig, Sources};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A config file under `dir` holding `value`.
fn config_file(dir: &Path, value: Value) -> PathBuf {
    let path = dir.join("dsh.json");
    std::fs::write(&path, value.to_string()).expect("the config file is written");
    path
}

/// The JSONL root the context config hands the JSONL plugin.
fn jsonl_root(config: &ContextConfig) -> Option<String> {
    let settings = config.plugins.get(Backend::JSONL.plugin)?;
    Some(settings.config.get("root")?.as_str()?.to_owned())
}

#[test]
fn a_store_flag_beats_the_environment_which_beats_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = config_file(dir.path(), json!({"store": "/from/file"}));
    let sources = Sources {
        store: Some("/from/flag".into()),
        env_store: Some("/from/env".into()),
        config_file: Some(file.clone()),
        ..Sources::default()
    };
    let root = |sources: &Sources| {
        jsonl_root(&HostConfig::resolve(sources).unwrap().context_config()).unwrap()
    };
    assert_eq!(root(&sources), "/from/flag");
    let sources = Sources {
        store: None,
        ..sources
    };
    assert_eq!(root(&sources), "/from/env");
    let sources = Sources {
        env_store: None,
        ..sources
    };
    assert_eq!(root(&sources), "/from/file");
}

#[test]
fn a_jsonl_root_in_the_file_stands_for_the_store_unless_a_flag_names_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = config_file(
        dir.path(),
        json!({"store": "/ignored", "plugins": {"dsh-session-jsonl": {"config": {"root": "/root"}}}}),
    );
    let config = HostConfig::resolve(&Sources::default().config_file(&file)).unwrap();
    assert_eq!(config.store, None);
    assert_eq!(
        jsonl_root(&config.context_config()).as_deref(),
        Some("/root")
    );
    let config =
        HostConfig::resolve(&Sources::default().config_file(&file).store("/flag")).unwrap();
    assert_eq!(
        jsonl_root(&config.context_config()).as_deref(),
        Some("/flag")
    );
}

#[test]
fn a_store_value_enables_its_backend_and_disables_the_others() {
    let config = HostConfig::resolve(&Sources::default().store("sqlite:/tmp/x.db")).unwrap();
    let context = config.context_config();
    let sqlite = &context.plugins[Backend::SQLITE.plugin];
    assert_eq!(sqlite.enabled, Some(true));
    assert_eq!(sqlite.config, json!({"path": "/tmp/x.db"}));
    assert_eq!(context.plugins[Backend::JSONL.plugin].enabled, Some(false));
}

#[test]
fn sessions_must_persist_unless_the_file_says_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let persistence = |config: &HostConfig| {
        config.context_config().plugins["dsh-session"].config["persistence"].clone()
    };
    let config = HostConfig::resolve(&Sources::default().store(dir.path())).unwrap();
    assert_eq!(persistence(&config), "required");
    let file = config_file(
        dir.path(),
        json!({"plugins": {"dsh-session": {"config": {"persistence": "optional"}}}}),
    );
    let config =
        HostConfig::resolve(&Sources::default().store(dir.path()).config_file(file)).unwrap();
    assert_eq!(persistence(&config), "optional");
}

#[test]
fn unknown_plugin_names_are_warnings_by_default_and_errors_in_strict_mode() {
    let dir = tempfile::tempdir().unwrap();
    let file = config_file(
        dir.path(),
        json!({"plugins": {"dsh-nope": {"enabled": true}}}),
    );
    let sources = Sources::default()
        .store(dir.path())
        .config_file(&file)
        .disable("dsh-gone");
    let config = HostConfig::resolve(&sources).unwrap();
    assert_eq!(
        config.warnings(),
        [
            "this build of dsh has no plugin \"dsh-gone\"; its settings are ignored",
            "this build of dsh has no plugin \"dsh-nope\"; its settings are ignored",
        ]
    );
    assert!(!config.plugins.contains_key("dsh-nope"));
    config
        .build()
        .expect("the context builds without the unknown entries");
    let error = HostConfig::resolve(&sources.strict()).unwrap_err();
    assert_eq!(error.code, "CONFIG_INVALID");
    assert!(error.message.contains("\"dsh-gone\""), "{}", error.message);
}

#[test]
fn an_invalid_config_file_is_refused_naming_the_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = config_file(dir.path(), json!({"stor": "/x"}));
    let error = HostConfig::resolve(&Sources::default().config_file(&file)).unwrap_err();
    assert_eq!(error.code, "CONFIG_INVALID");
    assert!(error.message.contains(&file.display().to_string()));
    assert!(error.message.contains("stor"), "{}", error.message);
}

#[test]
fn the_built_context_stores_sessions_where_the_sources_say() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("sessions");
    let config = HostConfig::resolve(&Sources::default().store(&store_dir)).unwrap();
    let ctx = config.build().unwrap();
    let store = ctx.expect::<SessionStore>();
    let session = store.create(None, Default::default()).unwrap();
    session
        .append(dsh::session::EventDraft::turn_start(1))
        .unwrap();
    store.flush(&session).unwrap();
    let id = session.id().clone();
    drop(ctx);
    let again = config.build().unwrap();
    let stored = again.expect::<SessionStore>().load(&id).unwrap();
    assert_eq!(stored.events().len(), 1);
    assert!(store_dir.exists());
}

#[test]
fn a_backend_that_fails_to_start_is_an_error_not_a_memory_store() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_folder = dir.path().join("file");
    std::fs::write(&not_a_folder, "x").unwrap();
    let config = HostConfig::resolve(&Sources::default().store(&not_a_folder)).unwrap();
    let ctx = config.build().unwrap();
    let store = ctx.expect::<SessionStore>();
    let refused = store.create(None, Default::default()).unwrap_err();
    assert!(
        matches!(refused, StoreError::Unavailable { .. }),
        "{refused:?}"
    );
}

/// `HostConfig::resolve` on a thread, failing the test when it has not returned after a
/// minute (a read blocked on a FIFO); a test of a hang leaves the blocked thread behind.
fn resolve_within(sources: Sources) -> Result<HostConfig, dsh_host::HostError> {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(HostConfig::resolve(&sources));
    });
    result
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("HostConfig::resolve returns instead of blocking on the file")
}

/// A config file that is not a regular file, or larger than 16 MiB, is refused before it is
/// read: `CONFIG_INVALID` naming the file and saying why. (Run this test under a memory limit
/// to see a regression fail fast: `/dev/zero` read to its end never ends.)
#[cfg(unix)]
#[test]
fn a_config_file_that_is_special_or_too_large_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let link = dir.path().join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let big = dir.path().join("big.json");
    std::fs::write(&big, format!("{{}}{}", " ".repeat(16 << 20))).unwrap();
    for (file, why) in [
        (fifo.as_path(), "it is a FIFO, not a regular file"),
        (
            Path::new("/dev/zero"),
            "it is a character device, not a regular file",
        ),
        (
            link.as_path(),
            "it is a character device, not a regular file",
        ),
        (big.as_path(), "more than the 16 MiB a config file may hold"),
    ] {
        let error = resolve_within(Sources::default().store(dir.path()).config_file(file))
            .expect_err("refused");
        assert_eq!(error.code, "CONFIG_INVALID", "{file:?}: {}", error.message);
        assert!(
            error
                .message
                .starts_with(&format!("cannot read the config file {}: ", file.display()))
                && error.message.contains(why),
            "{file:?}: {}",
            error.message
        );
    }
}

#[test]
fn groups_in_the_config_file_switch_their_entries_and_a_jsonl_root_inside_one_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let file = config_file(
        dir.path(),
        json!({"plugins": {
            "group:storage": {"plugins": {"dsh-session-jsonl": {"config": {"root": "/grouped"}}}},
            "group:extras": {"enabled": false, "plugins": {"dsh-session-sqlite": {"enabled": true}}}
        }}),
    );
    let config = HostConfig::resolve(&Sources::default().config_file(&file)).unwrap();
    assert_eq!(config.store, None, "the grouped root stands for the store");
    let context = config.context_config();
    assert_eq!(jsonl_root(&context).as_deref(), Some("/grouped"));
    assert_eq!(context.plugins["dsh-session-sqlite"].enabled, Some(false));
    assert!(config.warnings().is_empty(), "{:?}", config.warnings());

    let twice = config_file(
        dir.path(),
        json!({"plugins": {
            "dsh-session-sqlite": {},
            "group:g": {"plugins": {"dsh-session-sqlite": {}}}
        }}),
    );
    let error = HostConfig::resolve(&Sources::default().config_file(&twice)).unwrap_err();
    assert_eq!(error.code, "CONFIG_INVALID");
    assert!(
        error.message.contains("configured twice"),
        "{}",
        error.message
    );
}
