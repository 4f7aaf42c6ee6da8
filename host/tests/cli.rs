//! The command line itself: usage errors exit 2, `--json` prints exactly one document,
//! errors are `{"error":{"code","message"}}`.

mod common;

use common::*;
use serde_json::json;

#[test]
fn an_unknown_subcommand_is_a_usage_error_with_exit_status_2() {
    let sandbox = Sandbox::new();
    for json in [false, true] {
        let run = if json {
            sandbox.json(&["frobnicate"])
        } else {
            sandbox.human(&["frobnicate"])
        };
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains("frobnicate"), "{}", run.stderr);
    }
    assert!(!sandbox.store().exists());
}

#[test]
fn no_subcommand_is_a_usage_error() {
    let sandbox = Sandbox::new();
    assert_eq!(sandbox.run::<&str>(&[]).code, 2);
    assert_eq!(sandbox.json::<&str>(&[]).code, 2);
}

#[test]
fn a_missing_argument_is_a_usage_error_with_exit_status_2() {
    let sandbox = Sandbox::new();
    for args in [
        &["show"][..],
        &["history"],
        &["fork"],
        &["import"],
        &["check"],
        &["fork", "x", "--id"],
        &["--store"],
        &["--disable"],
        &["--config"],
    ] {
        let run = sandbox.json(args);
        assert_eq!(run.code, 2, "{args:?}: {} {}", run.stdout, run.stderr);
        assert!(!run.stderr.is_empty(), "{args:?}");
    }
    assert!(!sandbox.store().exists());
}

#[test]
fn an_unexpected_argument_or_flag_is_a_usage_error() {
    let sandbox = Sandbox::new();
    for args in [
        &["show", "a", "b"][..],
        &["sessions", "extra"],
        &["plugins", "--bogus"],
        &["--bogus", "plugins"],
    ] {
        let run = sandbox.json(args);
        assert_eq!(run.code, 2, "{args:?}: {} {}", run.stdout, run.stderr);
    }
}

#[test]
fn help_and_version_exit_zero() {
    let sandbox = Sandbox::new();
    let help = sandbox.run(&["--help"]);
    assert_eq!(help.code, 0);
    for command in [
        "plugins", "services", "import", "sessions", "show", "history", "fork", "check",
    ] {
        assert!(help.stdout.contains(command), "{command}: {}", help.stdout);
    }
    let version = sandbox.run(&["--version"]);
    assert_eq!(version.code, 0);
    assert!(version.stdout.starts_with("dsh "), "{}", version.stdout);
}

#[test]
fn a_json_error_is_exactly_one_document_with_code_and_message() {
    let sandbox = Sandbox::new();
    let run = sandbox.json(&["show", "ghost"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    let doc = run.doc();
    assert_eq!(
        doc,
        json!({"error": {"code": "SESSION_NOT_FOUND", "message": "session ghost is not in the store"}})
    );
}

#[test]
fn global_options_may_follow_the_subcommand() {
    let sandbox = Sandbox::new();
    let store = sandbox.store();
    let run = sandbox.run(&[
        std::ffi::OsStr::new("sessions"),
        std::ffi::OsStr::new("--json"),
        std::ffi::OsStr::new("--store"),
        store.as_os_str(),
    ]);
    assert_eq!(run.ok(), json!([]));
}

#[test]
fn every_json_command_prints_exactly_one_line() {
    let sandbox = Sandbox::new();
    sandbox.import(&[std::path::Path::new(EXAMPLE)]);
    for args in [
        &["plugins"][..],
        &["services"],
        &["sessions"],
        &["show", EXAMPLE_ID],
        &["history", EXAMPLE_ID],
        &["check", EXAMPLE],
        &["import", EXAMPLE],
    ] {
        let run = sandbox.json(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        run.doc();
    }
}

#[test]
fn logs_go_to_stderr_and_leave_the_json_document_alone() {
    let sandbox = Sandbox::new();
    let run = Sandbox::finish(
        sandbox
            .command()
            .env("DSH_LOG", "debug")
            .arg("--store")
            .arg(sandbox.store())
            .arg("--json")
            .arg("import")
            .arg(EXAMPLE),
    );
    assert_eq!(run.ok()[0]["ok"], json!(true));
}
