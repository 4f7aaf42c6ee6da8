//! The most common errors, word for word: one line on stderr that says what happened to what,
//! in the user's terms, with the stable code; no log line before it; the causes behind it only
//! with `--verbose`.

mod common;

use common::*;
#[cfg(any(feature = "session-fork", feature = "subagent-fork"))]
use serde_json::json;
#[cfg(feature = "session-fork")]
use std::path::Path;

#[cfg(feature = "session-fork")]
/// Runs `dsh ARGS` (human output) and returns its stderr with the sandbox folder written
/// `<root>`, after checking that the command failed.
fn error_text(sandbox: &Sandbox, args: &[&str]) -> String {
    let run = sandbox.run(args);
    assert_eq!(run.code, 1, "{args:?} fails: {}", run.stderr);
    assert!(
        run.stdout.is_empty(),
        "{args:?} prints nothing: {}",
        run.stdout
    );
    run.stderr
        .replace(&sandbox.root().display().to_string(), "<root>")
}

#[cfg(feature = "session-fork")]
/// A sandbox whose store holds the complete session `done` and the open session `open`.
fn with_sessions() -> (Sandbox, String) {
    let sandbox = Sandbox::new();
    sandbox.import_text("done.jsonl", &complete_session("done"));
    sandbox.import_text("open.jsonl", &open_turn_session("open"));
    let store = sandbox.store().display().to_string();
    (sandbox, store)
}

#[cfg(feature = "session-fork")]
#[test]
fn the_ten_most_common_errors_read_as_one_plain_line() {
    let (sandbox, store) = with_sessions();
    let mut taken = complete_events();
    taken[1]["data"]["content"][0]["text"] = json!("another question");
    sandbox.import_text("taken.jsonl", &jsonl(&header("taken"), &taken));
    let missing_config = sandbox.root().join("absent.json");
    let bad_config = sandbox.write(
        "bad.json",
        &json!({"plugins": {"dsh-session-jsonl": {"config": {"root": 5}}}}).to_string(),
    );
    let file_store = sandbox.write("a-file", "not a folder");
    let damaged = sandbox.write("damaged.jsonl", "this is not a session\n");
    let arg = |path: &Path| path.display().to_string();
    let cases: Vec<(Vec<String>, &str)> =
        vec![
        (
            vec!["--store".into(), store.clone(), "show".into(), "ghost".into()],
            "error [SESSION_NOT_FOUND]: session ghost is not in the store\n",
        ),
        (
            vec!["--store".into(), store.clone(), "fork".into(), "open".into()],
            "error [OPEN_TURN]: session open cannot be forked at its end: its last event is \
             user/message, and a fork must end at a turn/end (fork at an earlier turn/end)\n",
        ),
        (
            vec![
                "--store".into(),
                store.clone(),
                "fork".into(),
                "done".into(),
                "--at".into(),
                "1".into(),
            ],
            "error [OPEN_TURN]: session done cannot be forked at seq 1: that event is \
             user/message, and a fork must end at a turn/end\n",
        ),
        (
            vec![
                "--store".into(),
                store.clone(),
                "fork".into(),
                "done".into(),
                "--at".into(),
                "99".into(),
            ],
            "error [INVALID_BOUNDARY]: session done has no event at seq 99 (its seqs run from 0 \
             to 5)\n",
        ),
        (
            vec![
                "--store".into(),
                store.clone(),
                "fork".into(),
                "done".into(),
                "--id".into(),
                "taken".into(),
            ],
            "error [SESSION_ID_CONFLICT]: a different session is already stored under the id \
             taken\n",
        ),
        (
            vec![
                "--store".into(),
                store.clone(),
                "--disable".into(),
                "dsh-session-fork".into(),
                "fork".into(),
                "done".into(),
            ],
            "error [CAPABILITY_UNAVAILABLE]: forking is not available: plugin dsh-session-fork \
             is disabled\n",
        ),
        (
            vec!["--store".into(), arg(&file_store), "sessions".into()],
            "error [CAPABILITY_UNAVAILABLE]: the session store cannot be used: plugin \
             dsh-session-jsonl failed: i/o error on <root>/files/a-file: the store root is not \
             a folder\n",
        ),
        (
            vec!["--config".into(), arg(&bad_config), "sessions".into()],
            "error [CAPABILITY_UNAVAILABLE]: the session store cannot be used: the config of \
             plugin dsh-session-jsonl is invalid: root: invalid type: integer `5`, expected \
             path string\n",
        ),
        (
            vec![
                "--store".into(),
                store.clone(),
                "--config".into(),
                arg(&missing_config),
                "sessions".into(),
            ],
            "error [CONFIG_INVALID]: cannot read the config file <root>/absent.json: No such \
             file or directory (os error 2)\n",
        ),
        (
            vec!["--store".into(), store.clone(), "import".into(), arg(&damaged)],
            "",
        ),
    ];
    for (args, expected) in cases.iter().filter(|(_, expected)| !expected.is_empty()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(error_text(&sandbox, &args), *expected, "dsh {args:?}");
    }
    // A file that fails among the files of an import is one line of the output, the run
    // fails, and stderr stays empty.
    let (args, _) = &cases[cases.len() - 1];
    let run = sandbox.run(args);
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr, "");
    assert_eq!(
        run.stdout
            .replace(&sandbox.root().display().to_string(), "<root>"),
        "failed <root>/files/damaged.jsonl: [LOG_CORRUPT] the session file \
         <root>/files/damaged.jsonl is damaged: header line is not valid JSON\n"
    );
}

#[cfg(feature = "session-fork")]
#[test]
fn the_causes_behind_an_error_show_with_verbose_only() {
    let (sandbox, store) = with_sessions();
    let plain = sandbox.run(&["--store", &store, "fork", "done", "--id", "open"]);
    assert_eq!(plain.stderr.lines().count(), 1, "{}", plain.stderr);
    let verbose = sandbox.run(&[
        "--store",
        &store,
        "--verbose",
        "fork",
        "done",
        "--id",
        "open",
    ]);
    let lines: Vec<&str> = verbose
        .stderr
        .lines()
        .filter(|line| line.starts_with("error") || line.starts_with("  cause: "))
        .collect();
    assert_eq!(lines[0], plain.stderr.trim_end());
    assert!(
        lines[1..]
            .iter()
            .any(|cause| cause.contains("cannot create the fork child of session \"done\"")),
        "{}",
        verbose.stderr
    );
    let json = sandbox.run(&[
        "--store", &store, "--json", "-v", "fork", "done", "--id", "open",
    ]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert!(doc["error"]["causes"]
        .as_array()
        .is_some_and(|c| !c.is_empty()));
}

#[test]
fn a_failed_backend_is_reported_once_without_a_log_line() {
    let sandbox = Sandbox::new();
    let file_store = sandbox.write("a-file", "x");
    let run = sandbox.run(&["--store", &file_store.display().to_string(), "sessions"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("error [CAPABILITY_UNAVAILABLE]"));
}

#[cfg(feature = "subagent-fork")]
#[test]
fn a_plugin_that_failed_while_the_command_did_without_it_is_one_warning() {
    let sandbox = Sandbox::new();
    let config = sandbox.write(
        "c.json",
        &json!({"plugins": {"dsh-subagent-fork": {"config": {"x": 1}}}}).to_string(),
    );
    let run = sandbox.human(&["--config", &config.display().to_string(), "sessions"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "warning: plugin dsh-subagent-fork failed [CONFIG_INVALID]: invalid config for plugin \
         \"dsh-subagent-fork\": unknown field `x`: this plugin takes no config\n"
    );
}

/// A store in dsh's earlier flat layout (`<root>/cwd-<hash>/<id>.jsonl`) is not taken for an
/// empty store: `dsh sessions` and `dsh show` of such an id fail with `LAYOUT_UNSUPPORTED`,
/// naming the file, the layout and what to do, and write nothing.
#[test]
fn a_store_in_dshs_earlier_flat_layout_says_so_instead_of_listing_nothing() {
    let sandbox = Sandbox::new();
    let project = sandbox.store().join("cwd-0123456789ab");
    std::fs::create_dir_all(&project).expect("folders");
    let old = project.join("old.jsonl");
    std::fs::write(&old, complete_session("old")).expect("written");
    let before = contents(&sandbox.store());
    let message = sandbox.json(&["sessions"]).error("LAYOUT_UNSUPPORTED");
    for part in [old.to_str().expect("UTF-8"), "earlier layout", "dsh import"] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    sandbox.json(&["show", "old"]).error("LAYOUT_UNSUPPORTED");
    sandbox.json(&["repair", "old"]).error("LAYOUT_UNSUPPORTED");
    let human = sandbox.human(&["sessions"]);
    assert!(
        human.stderr.starts_with("error [LAYOUT_UNSUPPORTED]: "),
        "{}",
        human.stderr
    );
    assert_eq!(contents(&sandbox.store()), before, "nothing written");
}
