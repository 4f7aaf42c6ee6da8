//! Configuration: the store directory (`--store` > `DSH_STORE` > config `"store"` > platform
//! data directory) and plugin switches from the config file.

mod common;

use common::*;
use serde_json::json;
use std::path::{Path, PathBuf};

/// A sandbox with a session fixture and the three candidate store folders.
struct Setup {
    sandbox: Sandbox,
    fixture: PathBuf,
    flag: PathBuf,
    env: PathBuf,
    file: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let sandbox = Sandbox::new();
        let fixture = sandbox.write("s.jsonl", &complete_session("where"));
        let root = sandbox.root().to_path_buf();
        Setup {
            sandbox,
            fixture,
            flag: root.join("flag-store"),
            env: root.join("env-store"),
            file: root.join("file-store"),
        }
    }

    /// Writes a config file naming `file` as the store (plus `extra` keys) and returns it.
    fn config(&self, value: serde_json::Value) -> PathBuf {
        let path = self.sandbox.root().join("files").join("config.json");
        std::fs::write(&path, value.to_string()).unwrap();
        path
    }

    /// Which candidate folders hold the imported session.
    fn holders(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        for (name, dir) in [
            ("flag", &self.flag),
            ("env", &self.env),
            ("file", &self.file),
        ] {
            if !files_under(dir).is_empty() {
                out.push(name);
            }
        }
        out
    }
}

#[test]
fn the_store_flag_beats_dsh_store_and_the_config_file() {
    let setup = Setup::new();
    let config = setup.config(json!({"store": setup.file}));
    let run = Sandbox::finish(
        setup
            .sandbox
            .command()
            .env("DSH_STORE", &setup.env)
            .arg("--config")
            .arg(&config)
            .arg("--store")
            .arg(&setup.flag)
            .args(["--json", "import"])
            .arg(&setup.fixture),
    );
    run.ok();
    assert_eq!(setup.holders(), ["flag"]);
}

#[test]
fn dsh_store_beats_the_config_file() {
    let setup = Setup::new();
    let config = setup.config(json!({"store": setup.file}));
    let run = Sandbox::finish(
        setup
            .sandbox
            .command()
            .env("DSH_STORE", &setup.env)
            .arg("--config")
            .arg(&config)
            .args(["--json", "import"])
            .arg(&setup.fixture),
    );
    run.ok();
    assert_eq!(setup.holders(), ["env"]);
}

#[test]
fn the_config_file_store_is_used_when_neither_flag_nor_environment_is_set() {
    let setup = Setup::new();
    let config = setup.config(json!({"store": setup.file}));
    let run = Sandbox::finish(
        setup
            .sandbox
            .command()
            .arg("--config")
            .arg(&config)
            .args(["--json", "import"])
            .arg(&setup.fixture),
    );
    run.ok();
    assert_eq!(setup.holders(), ["file"]);
    // The same store is read back through the config file.
    let sessions = Sandbox::finish(
        setup
            .sandbox
            .command()
            .arg("--config")
            .arg(&config)
            .args(["--json", "sessions"]),
    );
    assert_eq!(sessions.ok()[0]["id"], json!("where"));
}

#[test]
fn an_empty_dsh_store_is_ignored() {
    let setup = Setup::new();
    let config = setup.config(json!({"store": setup.file}));
    let run = Sandbox::finish(
        setup
            .sandbox
            .command()
            .env("DSH_STORE", "")
            .arg("--config")
            .arg(&config)
            .args(["--json", "import"])
            .arg(&setup.fixture),
    );
    run.ok();
    assert_eq!(setup.holders(), ["file"]);
}

#[cfg(target_os = "linux")]
#[test]
fn without_any_setting_the_store_is_the_platform_data_directory() {
    let setup = Setup::new();
    let run = Sandbox::finish(
        setup
            .sandbox
            .command()
            .args(["--json", "import"])
            .arg(&setup.fixture),
    );
    run.ok();
    assert!(setup.holders().is_empty());
    let default = setup.sandbox.xdg().join("dsh").join("sessions");
    let stored = stored_file(&default, "where");
    assert!(stored.starts_with(&default), "{}", stored.display());
}

#[test]
fn the_store_flag_beats_a_jsonl_root_in_the_config_file() {
    let setup = Setup::new();
    let config = setup.config(json!({
        "plugins": {"dsh-session-jsonl": {"config": {"root": setup.file}}}
    }));
    let run = Sandbox::finish(
        setup
            .sandbox
            .command()
            .arg("--config")
            .arg(&config)
            .arg("--store")
            .arg(&setup.flag)
            .args(["--json", "import"])
            .arg(&setup.fixture),
    );
    run.ok();
    assert_eq!(setup.holders(), ["flag"]);
}

#[cfg(feature = "session-fork")]
#[test]
fn a_config_file_can_disable_the_fork_plugin() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    let config = sandbox.write(
        "config.json",
        &json!({"plugins": {"dsh-session-fork": {"enabled": false}}}).to_string(),
    );
    let plugins = sandbox
        .json(&[Path::new("--config"), &config, Path::new("plugins")])
        .ok();
    let fork = plugins
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == json!("dsh-session-fork"))
        .expect("the fork plugin is listed")
        .clone();
    assert_eq!(fork["state"], json!("disabled"));
    let before = contents(&sandbox.store());
    sandbox
        .json(&[
            Path::new("--config"),
            &config,
            Path::new("fork"),
            Path::new(EXAMPLE_ID),
        ])
        .error("CAPABILITY_UNAVAILABLE");
    assert_eq!(contents(&sandbox.store()), before);
}

#[cfg(feature = "session-fork")]
#[test]
fn the_disable_flag_beats_a_config_file_that_enables_the_plugin() {
    let sandbox = Sandbox::new();
    let config = sandbox.write(
        "config.json",
        &json!({"plugins": {"dsh-session-fork": {"enabled": true}}}).to_string(),
    );
    let plugins = sandbox
        .json(&[
            Path::new("--config"),
            &config,
            Path::new("--disable"),
            Path::new("dsh-session-fork"),
            Path::new("plugins"),
        ])
        .ok();
    let fork = plugins
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == json!("dsh-session-fork"))
        .expect("listed")
        .clone();
    assert_eq!(fork["state"], json!("disabled"));
}

#[cfg(not(feature = "session-fork"))]
#[test]
fn a_config_file_for_the_fork_plugin_is_accepted_by_a_build_without_it() {
    let sandbox = Sandbox::new();
    let config = sandbox.write(
        "config.json",
        &json!({"plugins": {"dsh-session-fork": {"enabled": false}}}).to_string(),
    );
    let plugins = sandbox
        .json(&[Path::new("--config"), &config, Path::new("plugins")])
        .ok();
    assert!(
        !plugins.to_string().contains("dsh-session-fork"),
        "{plugins}"
    );
}

#[test]
fn a_config_file_can_disable_the_session_plugin() {
    let sandbox = Sandbox::new();
    let config = sandbox.write(
        "config.json",
        &json!({"plugins": {"dsh-session": {"enabled": false}}}).to_string(),
    );
    let plugins = sandbox
        .json(&[Path::new("--config"), &config, Path::new("plugins")])
        .ok();
    let session = plugins
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == json!("dsh-session"))
        .expect("listed")
        .clone();
    assert_eq!(session["state"], json!("disabled"));
}

#[test]
fn a_config_file_that_is_not_json_is_config_invalid() {
    let sandbox = Sandbox::new();
    let config = sandbox.write("config.json", "{ not json");
    let message = sandbox
        .json(&[Path::new("--config"), &config, Path::new("plugins")])
        .error("CONFIG_INVALID");
    assert!(message.contains("config.json"), "{message}");
    assert!(!sandbox.store().exists());
}

#[test]
fn a_config_file_with_an_unknown_field_is_config_invalid() {
    let sandbox = Sandbox::new();
    let config = sandbox.write("config.json", r#"{"stor": "/tmp/x"}"#);
    sandbox
        .json(&[Path::new("--config"), &config, Path::new("sessions")])
        .error("CONFIG_INVALID");
}

#[test]
fn a_config_file_with_a_wrongly_typed_switch_is_config_invalid() {
    let sandbox = Sandbox::new();
    let config = sandbox.write(
        "config.json",
        r#"{"plugins": {"dsh-session-fork": {"enabled": "no"}}}"#,
    );
    sandbox
        .json(&[Path::new("--config"), &config, Path::new("plugins")])
        .error("CONFIG_INVALID");
}

#[test]
fn a_missing_config_file_is_config_invalid() {
    let sandbox = Sandbox::new();
    let missing = sandbox.root().join("files").join("missing.json");
    sandbox
        .json(&[Path::new("--config"), &missing, Path::new("plugins")])
        .error("CONFIG_INVALID");
}

#[test]
fn a_config_file_naming_a_plugin_this_build_lacks_is_ignored() {
    let sandbox = Sandbox::new();
    let config = sandbox.write(
        "config.json",
        r#"{"plugins": {"dsh-from-the-future": {"enabled": true}}}"#,
    );
    let plugins = sandbox
        .json(&[Path::new("--config"), &config, Path::new("plugins")])
        .ok();
    assert!(
        !plugins.to_string().contains("dsh-from-the-future"),
        "{plugins}"
    );
}

#[test]
fn an_invalid_config_file_is_reported_in_human_mode_on_stderr() {
    let sandbox = Sandbox::new();
    let config = sandbox.write("config.json", "{ not json");
    let run = sandbox.human(&[Path::new("--config"), &config, Path::new("plugins")]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("CONFIG_INVALID"), "{}", run.stderr);
}

#[test]
fn a_config_file_that_is_a_json_array_is_config_invalid() {
    let sandbox = Sandbox::new();
    let elsewhere = sandbox.root().join("array-store");
    let config = sandbox.write("config.json", &json!([elsewhere]).to_string());
    sandbox
        .json(&[Path::new("--config"), &config, Path::new("plugins")])
        .error("CONFIG_INVALID");
    let config = sandbox.write("config.json", "[]");
    sandbox
        .json(&[Path::new("--config"), &config, Path::new("plugins")])
        .error("CONFIG_INVALID");
}

#[test]
fn an_empty_store_path_is_config_invalid_and_writes_nothing() {
    let sandbox = Sandbox::new();
    let config = sandbox.write("c.json", r#"{"store": ""}"#);
    let file = sandbox.write("s.jsonl", &complete_session("empty-store"));
    let run = sandbox.run(&[
        std::ffi::OsStr::new("--config"),
        config.as_os_str(),
        std::ffi::OsStr::new("--json"),
        std::ffi::OsStr::new("import"),
        file.as_os_str(),
    ]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.doc()["error"]["code"],
        serde_json::json!("CONFIG_INVALID")
    );
    let entries: Vec<_> = std::fs::read_dir(sandbox.root())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        entries,
        vec![std::ffi::OsString::from("files")],
        "nothing written"
    );
}

#[cfg(unix)]
#[test]
fn a_store_path_that_is_not_utf8_is_config_invalid_not_a_crash() {
    use std::os::unix::ffi::OsStrExt;
    let sandbox = Sandbox::new();
    let store = sandbox.root().join(std::ffi::OsStr::from_bytes(b"st\xff"));
    let run = sandbox.run(&[
        std::ffi::OsStr::new("--store"),
        store.as_os_str(),
        std::ffi::OsStr::new("--json"),
        std::ffi::OsStr::new("sessions"),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.doc()["error"]["code"],
        serde_json::json!("CONFIG_INVALID")
    );
}

/// How long a command may take before a test calls it hung (a guard, not a measurement).
#[cfg(unix)]
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// The most a config file may hold: 16 MiB.
const MAX_CONFIG_BYTES: usize = 16 << 20;

/// `dsh --store STORE --json --config CONFIG ARGS`, under a memory limit (a read that never
/// ends fails fast instead of taking the machine's memory) and killed if it hangs.
#[cfg(unix)]
fn with_config(sandbox: &Sandbox, config: &Path, args: &[&str]) -> Run {
    let dsh = sandbox.command();
    let mut command = std::process::Command::new("bash");
    command
        .current_dir(sandbox.root())
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
        .arg(dsh.get_program())
        .arg("--store")
        .arg(sandbox.store())
        .arg("--json")
        .arg("--config")
        .arg(config)
        .args(args);
    for (key, value) in dsh.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    Sandbox::finish_within(&mut command, PATIENCE).unwrap_or_else(|| {
        panic!(
            "dsh --config {} {args:?} hung (killed after {PATIENCE:?})",
            config.display()
        )
    })
}

/// A config file that is not a regular file (a FIFO nobody writes to, `/dev/zero`, a link to
/// it) is refused before it is read: `CONFIG_INVALID` saying what it is, fast, whatever the
/// command (`plugins --plan` reads its new config the same way); nothing is stored.
#[cfg(unix)]
#[test]
fn a_config_file_that_is_a_fifo_or_a_device_is_config_invalid_without_reading_it() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.root().join("files").join("fifo.json");
    make_fifo(&fifo);
    let link = sandbox.root().join("files").join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let folder = sandbox.root().join("files");
    for (config, what) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a character device"),
        (link.as_path(), "a character device"),
        (folder.as_path(), "a folder"),
    ] {
        for args in [&["sessions"][..], &["plugins"]] {
            let message = with_config(&sandbox, config, args).error("CONFIG_INVALID");
            assert!(
                message.starts_with(&format!(
                    "cannot read the config file {}: ",
                    config.display()
                )) && message.contains(&format!("it is {what}"))
                    && message.contains("not a regular file"),
                "{config:?} {args:?}: {message}"
            );
        }
        let good = sandbox.write("good.json", "{}");
        let run = with_config(
            &sandbox,
            &good,
            &["plugins", "--plan", config.to_str().unwrap()],
        );
        let message = run.error("CONFIG_INVALID");
        assert!(message.contains("not a regular file"), "{message}");
    }
    assert!(!sandbox.store().exists());
}

/// A config file larger than 16 MiB is refused before it is read, even when it is valid JSON;
/// one of exactly 16 MiB is read.
#[cfg(unix)]
#[test]
fn a_config_file_over_16_mib_is_config_invalid_saying_so() {
    let sandbox = Sandbox::new();
    let padded = |len: usize| format!("{{}}{}", " ".repeat(len - 2));
    let big = sandbox.write("big.json", &padded(MAX_CONFIG_BYTES + 1));
    let message = with_config(&sandbox, &big, &["plugins"]).error("CONFIG_INVALID");
    assert_eq!(
        message,
        format!(
            "cannot read the config file {}: it holds {} bytes, more than the 16 MiB a config \
             file may hold",
            big.display(),
            MAX_CONFIG_BYTES + 1
        )
    );
    let most = sandbox.write("most.json", &padded(MAX_CONFIG_BYTES));
    with_config(&sandbox, &most, &["plugins"]).ok();
}
