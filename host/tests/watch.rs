//! Live reload: a host watching its config file reconciles the running context with each edit;
//! an edit that does not resolve changes nothing and is reported.
#![cfg(feature = "session-fork")]

mod common;

#[cfg(unix)]
use common::make_fifo;
use common::watch::{drop_in_time, replace_with, save, wait_for, watch, Seen};
use dsh::session_fork::SessionFork;
use dsh::PluginState;
use dsh_host::{ConfigWatcher, HostConfig, Sources};
use serde_json::json;

#[test]
fn editing_the_config_file_switches_the_fork_plugin_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dsh.json");
    save(
        &file,
        &json!({"plugins": {"dsh-session-fork": {"enabled": true}}}).to_string(),
    );
    let sources = Sources::default()
        .store(dir.path().join("store"))
        .config_file(&file);
    let ctx = HostConfig::resolve(&sources).unwrap().build().unwrap();
    assert!(ctx.get::<SessionFork>().is_some());

    let (watcher, reports) = watch(&ctx, sources);

    save(
        &file,
        &json!({"plugins": {"dsh-session-fork": {"enabled": false}}}).to_string(),
    );
    let seen = wait_for(&reports, |seen| {
        seen.iter().any(|s| s.applied("disable dsh-session-fork"))
    });
    assert!(
        seen.iter().all(|s| matches!(s, Seen::Applied(_))),
        "{seen:?}"
    );
    assert!(ctx.get::<SessionFork>().is_none());
    assert_eq!(
        ctx.plugin_state("dsh-session-fork"),
        Some(PluginState::Disabled)
    );

    // An edit that is not a valid config is reported; the context keeps its state.
    let before = ctx.config();
    save(&file, "{\"plugins\": ");
    wait_for(&reports, |seen| {
        seen.iter().any(|s| s.refused("CONFIG_INVALID", ""))
    });
    // A config the plan refuses: one plugin's settings do not fit its config type.
    save(
        &file,
        &json!({"plugins": {"dsh-subagent-fork": {"config": {"x": 1}}}}).to_string(),
    );
    wait_for(&reports, |seen| {
        seen.iter().any(|s| s.refused("CONFIG_INVALID", ""))
    });
    assert_eq!(ctx.config(), before);
    assert!(ctx.get::<SessionFork>().is_none());

    // Switched back on by the next edit.
    save(&file, &json!({"plugins": {}}).to_string());
    wait_for(&reports, |seen| {
        seen.iter().any(|s| s.applied("enable dsh-session-fork"))
    });
    assert!(ctx.get::<SessionFork>().is_some());
    drop(watcher);
}

/// An edit that makes the config file a FIFO, a link to `/dev/zero`, or a file over 16 MiB is
/// refused without reading it (`CONFIG_INVALID` saying what the file is), the context keeps its
/// state, a later valid edit is applied, and dropping the watcher returns at once.
#[cfg(unix)]
#[test]
fn a_config_file_replaced_by_a_special_or_huge_file_is_refused_and_a_later_edit_applies() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dsh.json");
    save(&file, &json!({"plugins": {}}).to_string());
    let sources = Sources::default()
        .store(dir.path().join("store"))
        .config_file(&file);
    let ctx = HostConfig::resolve(&sources).unwrap().build().unwrap();
    let (watcher, reports) = watch(&ctx, sources);
    // A regression blocks the watcher's thread on the FIFO: the drop would wait for it, so
    // the watcher is only dropped once the test has passed.
    let watcher = std::mem::ManuallyDrop::new(watcher);
    let before = ctx.config();

    let refused = |why: &'static str| {
        move |seen: &[Seen]| {
            seen.iter().any(|s| {
                s.refused("CONFIG_INVALID", "cannot read the config file")
                    && s.refused("CONFIG_INVALID", why)
            })
        }
    };
    replace_with(&file, make_fifo);
    wait_for(&reports, refused("it is a FIFO, not a regular file"));
    replace_with(&file, |next| {
        std::os::unix::fs::symlink("/dev/zero", next).unwrap();
    });
    wait_for(
        &reports,
        refused("it is a character device, not a regular file"),
    );
    replace_with(&file, |next| {
        std::fs::write(next, format!("{{}}{}", " ".repeat(16 << 20))).unwrap();
    });
    wait_for(
        &reports,
        refused("more than the 16 MiB a config file may hold"),
    );
    assert_eq!(ctx.config(), before, "a refused edit changes nothing");
    assert!(ctx.get::<SessionFork>().is_some());

    save(
        &file,
        &json!({"plugins": {"dsh-session-fork": {"enabled": false}}}).to_string(),
    );
    wait_for(&reports, |seen| {
        seen.iter().any(|s| s.applied("disable dsh-session-fork"))
    });
    assert!(ctx.get::<SessionFork>().is_none());
    drop_in_time(std::mem::ManuallyDrop::into_inner(watcher));
}

#[test]
fn a_watcher_needs_a_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let sources = Sources::default().store(dir.path());
    let ctx = HostConfig::resolve(&sources).unwrap().build().unwrap();
    let refused = ConfigWatcher::start(ctx, sources, |_| {})
        .err()
        .expect("refused");
    assert_eq!(refused.code, "CONFIG_INVALID");
}

/// `dsh acp --config FILE` as an editor runs it: the watcher of a real process.
#[cfg(all(unix, feature = "acp"))]
mod acp_process {
    use super::common::make_fifo;
    use super::common::watch::{replace_with, save, PATIENCE};
    use serde_json::{json, Value};
    use std::io::{BufRead, BufReader, Write};
    use std::path::Path;
    use std::process::{Child, ChildStdin, Command, Stdio};
    use std::sync::mpsc;
    use std::time::Instant;

    /// The `dsh` process, its stdin, and its stdout and stderr line by line.
    struct Editor {
        child: Child,
        stdin: Option<ChildStdin>,
        stdout: mpsc::Receiver<String>,
        stderr: mpsc::Receiver<String>,
        next_id: u64,
    }

    fn lines(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        lines
    }

    impl Editor {
        /// Starts `dsh --store STORE --config FILE acp` under a 4 GiB address-space limit (a
        /// read that never ends fails fast instead of taking the machine's memory).
        fn start(dir: &Path, file: &Path) -> Editor {
            let mut child = Command::new("bash")
                .current_dir(dir)
                .arg("-c")
                .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
                .arg(env!("CARGO_BIN_EXE_dsh"))
                .arg("--store")
                .arg(dir.join("store"))
                .arg("--config")
                .arg(file)
                .arg("acp")
                .env_remove("DSH_STORE")
                .env_remove("DSH_LOG")
                .env("HOME", dir.join("home"))
                .env("XDG_DATA_HOME", dir.join("xdg"))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("dsh acp starts");
            let stdout = lines(child.stdout.take().expect("stdout"));
            let stderr = lines(child.stderr.take().expect("stderr"));
            let stdin = child.stdin.take();
            Editor {
                child,
                stdin,
                stdout,
                stderr,
                next_id: 0,
            }
        }

        /// Whether `initialize` advertises `session/fork` now.
        fn offers_fork(&mut self) -> bool {
            self.next_id += 1;
            let id = self.next_id;
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {}}});
            let stdin = self.stdin.as_mut().expect("stdin open");
            writeln!(stdin, "{request}").expect("write to dsh acp");
            stdin.flush().expect("flush");
            loop {
                let line = self
                    .stdout
                    .recv_timeout(PATIENCE)
                    .expect("dsh acp answers in time");
                let answer: Value = serde_json::from_str(&line).expect("JSON");
                if answer["id"] == json!(id) {
                    let capabilities = &answer["result"]["agentCapabilities"];
                    return !capabilities["sessionCapabilities"]["fork"].is_null();
                }
            }
        }

        /// Waits for a stderr line holding every one of `words`; returns it.
        fn warned(&self, words: &[&str]) -> String {
            let deadline = Instant::now() + PATIENCE;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.stderr.recv_timeout(left) {
                    Ok(line) if words.iter().all(|w| line.contains(w)) => return line,
                    Ok(_) => {}
                    Err(_) => panic!("dsh acp did not report {words:?} in time"),
                }
            }
        }

        /// Closes stdin and returns the exit status, or kills the process and fails when it
        /// does not exit.
        fn close(mut self) -> i32 {
            drop(self.stdin.take());
            let deadline = Instant::now() + PATIENCE;
            loop {
                if let Some(status) = self.child.try_wait().expect("wait") {
                    return status.code().unwrap_or(-1);
                }
                if Instant::now() > deadline {
                    self.child.kill().expect("kill the child it started");
                    self.child.wait().expect("reap");
                    panic!("dsh acp did not exit once stdin closed");
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }

    impl Drop for Editor {
        fn drop(&mut self) {
            // A failed test leaves no process behind.
            if let Ok(None) = self.child.try_wait() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }

    /// The config file of a running `dsh acp` replaced by a FIFO, a link to `/dev/zero` and a
    /// file over 16 MiB: each edit is refused with a warning saying why, the running plugins
    /// stay as they are, the next valid edit applies, and closing stdin ends the process.
    #[test]
    fn dsh_acp_refuses_special_config_files_applies_the_next_edit_and_exits_when_stdin_closes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("dsh.json");
        save(&file, "{}");
        let mut editor = Editor::start(dir.path(), &file);
        assert!(editor.offers_fork());

        replace_with(&file, make_fifo);
        editor.warned(&["CONFIG_INVALID", "it is a FIFO, not a regular file"]);
        replace_with(&file, |next| {
            std::os::unix::fs::symlink("/dev/zero", next).unwrap();
        });
        editor.warned(&["CONFIG_INVALID", "it is a character device"]);
        replace_with(&file, |next| {
            std::fs::write(next, format!("{{}}{}", " ".repeat(16 << 20))).unwrap();
        });
        editor.warned(&["CONFIG_INVALID", "more than the 16 MiB"]);
        assert!(editor.offers_fork(), "a refused edit changes nothing");

        save(
            &file,
            &json!({"plugins": {"dsh-session-fork": {"enabled": false}}}).to_string(),
        );
        let deadline = Instant::now() + PATIENCE;
        while editor.offers_fork() {
            assert!(
                Instant::now() < deadline,
                "the valid edit was not applied in time"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(editor.close(), 0);
    }
}
