//! The CLI as an installed tool: `dsh --help` says what it does for its user, shell completions
//! and the man page come from the same definitions as the commands, and progress never reaches
//! a stderr that is not a terminal.

mod common;

use common::*;

#[test]
fn help_opens_with_what_dsh_does_for_its_user() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["--help"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let first = run.stdout.lines().next().unwrap_or_default();
    assert!(
        first.contains("DeepSeek Harness") && first.contains("sessions"),
        "{first}"
    );
    assert!(
        !run.stdout.contains("host layer"),
        "not the crate's description"
    );
}

#[test]
fn completions_are_printed_for_every_shell_and_know_every_command() {
    let sandbox = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = sandbox.run(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        for command in ["import", "export", "fork", "lineage", "gc", "completions"] {
            assert!(run.stdout.contains(command), "{shell} lacks {command}");
        }
    }
    let run = sandbox.run(&["completions", "tcsh"]);
    assert_eq!(run.code, 2, "an unknown shell is a usage error");
    assert!(
        run.stderr.contains("bash"),
        "the shells are named: {}",
        run.stderr
    );
}

#[test]
fn the_man_page_is_roff_naming_every_command() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["man"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(".TH dsh 1"), "{}", &run.stdout[..200]);
    for command in ["import", "export", "fork", "delete", "gc", "acp", "man"] {
        assert!(run.stdout.contains(command), "the page lacks {command}");
    }
    assert!(!sandbox.store().exists(), "no store was touched");
}

#[test]
fn importing_many_files_draws_no_progress_on_a_stderr_that_is_not_a_terminal() {
    let sandbox = Sandbox::new();
    let files: Vec<_> = (0..40)
        .map(|n| {
            let id = format!("s{n}");
            sandbox.write(
                &format!("{id}.jsonl"),
                &jsonl(&header(&id), &complete_events()),
            )
        })
        .collect();
    let mut args = vec![std::path::PathBuf::from("import")];
    args.extend(files);
    let run = sandbox.run(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "", "nothing but the report");
}
