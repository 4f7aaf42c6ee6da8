//! `dsh repair ID`: closes a crashed session's open turn durably, prints what it appended,
//! and appends nothing when run again; the read-only commands never write the source.

mod common;

use common::*;
use serde_json::json;

const ID: &str = "crashed";

fn with_open_turn() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.import_text("open.jsonl", &open_turn_session(ID));
    sandbox
}

#[test]
fn repair_appends_an_interrupted_turn_end_and_prints_it() {
    let sandbox = with_open_turn();
    let doc = sandbox.json(&["repair", ID]).ok();
    let appended = doc["appended"].as_array().expect("appended events");
    assert_eq!(appended.len(), 1);
    assert_eq!(appended[0]["type"], "turn/end");
    assert_eq!(appended[0]["seq"], 2);
    assert_eq!(
        appended[0]["data"],
        json!({"turn": 1, "reason": {"kind": "interrupted"}})
    );
    assert_eq!(appended[0]["time"], 1_764_460_800_000_u64 + 37);
    let show = sandbox.json(&["show", ID]).ok();
    assert_eq!(show["events"], 3);
    assert_eq!(show["forkable"], true);
}

#[test]
fn repairing_twice_appends_nothing_the_second_time() {
    let sandbox = with_open_turn();
    sandbox.json(&["repair", ID]).ok();
    let before = stored_bytes(&sandbox.store(), ID);
    assert_eq!(sandbox.json(&["repair", ID]).ok()["appended"], json!([]));
    assert_eq!(stored_bytes(&sandbox.store(), ID), before);
}

/// `dsh repair` processes racing on one crashed session (issue 22, item 5): in every round
/// exactly one reports the closers as appended, the others nothing (they find nothing left to
/// repair), `SEQ_MISMATCH`, or `SESSION_LOCKED` (the winner holds the session's file until it
/// exits), and the session holds the closers once. Bounded: a few rounds of three processes.
#[test]
fn racing_repairs_report_the_closers_once() {
    for round in 0..6 {
        let sandbox = with_open_turn();
        let racing: Vec<_> = (0..3)
            .map(|_| {
                sandbox
                    .command()
                    .arg("--store")
                    .arg(sandbox.store())
                    .args(["--json", "repair", ID])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("dsh starts")
            })
            .collect();
        let mut claims = 0;
        for child in racing {
            let out = child.wait_with_output().expect("waited");
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
            match doc["appended"].as_array() {
                Some(appended) if !appended.is_empty() => claims += 1,
                Some(_) => {}
                None => assert!(
                    ["SEQ_MISMATCH", "SESSION_LOCKED"]
                        .contains(&doc["error"]["code"].as_str().unwrap_or("")),
                    "round {round}: {doc}"
                ),
            }
        }
        assert_eq!(
            claims, 1,
            "round {round}: exactly one repair reports the closers"
        );
        assert_eq!(
            sandbox.json(&["show", ID]).ok()["events"],
            3,
            "round {round}"
        );
    }
}

#[test]
fn show_history_check_and_fork_never_write_an_open_session() {
    let sandbox = with_open_turn();
    let file = stored_file(&sandbox.store(), ID);
    let before = std::fs::read(&file).unwrap();
    sandbox.json(&["show", ID]).ok();
    sandbox.json(&["history", ID]).ok();
    sandbox.json(&["check", file.to_str().unwrap()]).ok();
    if cfg!(feature = "session-fork") {
        sandbox.json(&["fork", ID]).error("OPEN_TURN");
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[test]
fn repairing_an_unknown_session_is_session_not_found() {
    let sandbox = Sandbox::new();
    sandbox
        .json(&["repair", "nobody"])
        .error("SESSION_NOT_FOUND");
}

#[test]
fn human_repair_output_names_what_was_appended() {
    let sandbox = with_open_turn();
    let run = sandbox.human(&["repair", ID]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("appended 1 event\n"), "{}", run.stdout);
    assert!(run.stdout.contains("2 turn/end"), "{}", run.stdout);
}

/// A damaged line inside the open last turn, with complete records after it: dsh's load drops
/// the damaged line and everything after it (no `turn/end` follows), and `repair` says so,
/// naming the line and the bytes, rather than "a torn final record".
#[test]
fn repair_says_exactly_what_it_cut_after_a_damaged_line_of_the_open_turn() {
    let sandbox = with_open_turn();
    let file = stored_file(&sandbox.store(), ID);
    let text = std::fs::read_to_string(&file).expect("stored");
    let damage = format!(
        "{{not json\n{}\n",
        r#"{"type":"step/start","seq":3,"time":1764460800040,"data":{"turn":1,"step":1}}"#
    );
    std::fs::write(&file, format!("{text}{damage}")).expect("damaged");
    let run = sandbox.human(&["repair", ID]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = text.lines().count();
    let cut = damage.len();
    assert!(
        run.stdout.contains(&format!("line {lines} is unparsable"))
            && run
                .stdout
                .contains(&format!("{cut} trailing bytes dropped")),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("torn final record"), "{}", run.stdout);
}

/// Sets the mode of `path` and, for a folder, of everything under it (`folder_mode` for
/// folders, `file_mode` for files).
#[cfg(unix)]
fn set_modes(path: &std::path::Path, folder_mode: u32, file_mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let mode = if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("listable") {
            set_modes(&entry.expect("entry").path(), folder_mode, file_mode);
        }
        folder_mode
    } else {
        file_mode
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Makes the store read-only until dropped, then writable again (so the sandbox can go).
#[cfg(unix)]
struct ReadOnly(std::path::PathBuf);

#[cfg(unix)]
impl Drop for ReadOnly {
    fn drop(&mut self) {
        set_modes(&self.0, 0o755, 0o644);
    }
}

/// Whether the unprivileged user of [`unprivileged`] can do what the read-only case needs:
/// start the binary from the sandbox (every folder above the binary and above the sandbox
/// must let it in) and read the stored `file`. `Err(why)` otherwise: run as root from a clone
/// in `/root`, or with a temporary folder of mode 0700, `nobody` reaches neither.
#[cfg(unix)]
fn reachable(sandbox: &Sandbox, file: &std::path::Path) -> Result<(), String> {
    let hint = "a folder above it that other users cannot enter, e.g. a clone in /root or a \
                TMPDIR of mode 0700";
    let binary = env!("CARGO_BIN_EXE_dsh");
    let mut starts = unprivileged(sandbox.command());
    starts.arg("--version");
    match starts.output() {
        Ok(output) if output.status.success() => {}
        Ok(output) => {
            return Err(format!(
                "the unprivileged user ({}) cannot run {binary} ({}: {}); {hint}",
                unprivileged_name(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
        Err(error) => {
            return Err(format!(
                "the unprivileged user ({}) cannot start {binary} in {}: {error}; {hint}",
                unprivileged_name(),
                sandbox.root().display()
            ))
        }
    }
    let mut reads = unprivileged(std::process::Command::new("sh"));
    reads
        .current_dir("/")
        .args(["-c", "test -r \"$0\""])
        .arg(file);
    match reads.status() {
        Ok(status) if status.success() => Ok(()),
        outcome => Err(format!(
            "the unprivileged user ({}) cannot read the stored file {} ({outcome:?} for \
             `test -r`); {hint}",
            unprivileged_name(),
            file.display()
        )),
    }
}

/// Who [`unprivileged`] runs commands as.
#[cfg(unix)]
fn unprivileged_name() -> &'static str {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        "nobody"
    } else {
        "this user"
    }
}

/// `command` run as an unprivileged user: as itself, or, when the tests run as root (whom
/// file permissions do not bind), as `nobody` (uid and gid 65534).
#[cfg(unix)]
fn unprivileged(mut command: std::process::Command) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        command.uid(65534).gid(65534);
    }
    command
}

/// `repair` on a read-only store cannot take the write lock of the session's file (opening it
/// for writing is refused): the error says so, naming the lock, the file and the reason,
/// rather than blaming the load; nothing is written. As root the binary runs as `nobody`;
/// where that cannot be done (see [`repair_on_a_read_only_store`]), the test says why it
/// skips.
#[cfg(unix)]
#[test]
fn repair_on_a_read_only_store_names_the_write_lock_it_cannot_take() {
    if let Err(why) = repair_on_a_read_only_store(&with_open_turn()) {
        eprintln!("skipped: {why}");
    }
}

/// Run as root from a folder other users cannot enter (a clone in `/root`, a sandbox under a
/// `mktemp -d` folder of mode 0700), `nobody` can neither start the binary from the sandbox
/// nor read the store: the read-only case skips, saying so, instead of failing on an error
/// that is not the one it checks.
#[cfg(unix)]
#[test]
fn the_read_only_repair_case_skips_saying_why_when_nobody_cannot_reach_the_sandbox() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root, so the commands run as ourselves, who reach the sandbox");
        return;
    }
    let private = tempfile::tempdir().expect("temporary directory");
    set_modes(private.path(), 0o700, 0o600);
    let sandbox = Sandbox::new_in(private.path());
    sandbox.import_text("open.jsonl", &open_turn_session(ID));
    let why = repair_on_a_read_only_store(&sandbox).expect_err("the case cannot run here");
    assert!(
        why.starts_with(&format!(
            "the unprivileged user (nobody) cannot start {} in {}: ",
            env!("CARGO_BIN_EXE_dsh"),
            sandbox.root().display()
        )) && why.contains("Permission denied"),
        "{why}"
    );
}

/// The read-only case of [`repair_on_a_read_only_store_names_the_write_lock_it_cannot_take`]
/// on the store of `sandbox` (holding session [`ID`] with an open turn). `Err(why)` when it
/// cannot run here; it asserts everything else.
#[cfg(unix)]
fn repair_on_a_read_only_store(sandbox: &Sandbox) -> Result<(), String> {
    let file = stored_file(&sandbox.store(), ID);
    let before = contents(&sandbox.store());
    set_modes(sandbox.root(), 0o755, 0o644);
    let read_only = ReadOnly(sandbox.store());
    set_modes(&sandbox.store(), 0o555, 0o444);

    reachable(sandbox, &file)?;
    let mut probe = unprivileged(std::process::Command::new("sh"));
    probe
        .current_dir("/")
        .args(["-c", "test -w \"$0\""])
        .arg(&file);
    match probe.status() {
        Ok(status) if !status.success() => {}
        outcome => {
            return Err(format!(
                "a read-only file is not refused here ({outcome:?} for `test -w` as an \
                 unprivileged user)"
            ));
        }
    }
    let mut command = unprivileged(sandbox.command());
    command
        .arg("--store")
        .arg(sandbox.store())
        .args(["--json", "repair", ID]);
    let run = Sandbox::finish(&mut command);
    let message = run.error("IO_ERROR");
    assert!(
        message.starts_with(&format!(
            "cannot take the write lock of {}: opening it for writing failed: ",
            file.canonicalize().expect("stored file").display()
        )) && message.contains("Permission denied")
            && message.ends_with("; nothing was written"),
        "{message}"
    );
    assert!(!message.contains("load"), "{message}");
    drop(read_only);
    assert_eq!(contents(&sandbox.store()), before);
    Ok(())
}
