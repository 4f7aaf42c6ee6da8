//! Issue 24 item 6: a session reads the same in every format version it is converted to.
//!
//! For every session of the converted corpus (`corpus/dsh-formats`: the rc.8 corpus written
//! forward as v1, v2 and v3 by dsh's own writers) and for generated rc.8 sessions (shaped as
//! dsh's agent writes them, with system prompts that change, compactions and pruned tool
//! results) migrated with [`migrate_records`], each form is loaded through this project's
//! reader (JSONL, the form's own version) and compared:
//!
//! - **turns**: the same number of turns, the same `turn/end` reasons in order, the same open
//!   turn, in every form; for the corpus also the oracle's stored counts (`expected.jsonl`:
//!   events, turns and last type as stored; for v3 its turn ends, reasons, last type and open
//!   turn, which are the restored view's);
//! - **history** (the derived model history: the projection of each surface node, in surface
//!   order, as JSON values): the v0, v1 and v2 forms have the same history, message for
//!   message; the v3 form's is that history with the system prompt as a message and v3's
//!   names: removing its `system`-role messages gives the v2 history with the code-mode tools
//!   plugin's messages named as v3 names it (`tools-ptc`), and it holds exactly one such message, first,
//!   when the v2 form has a `request/header` (v3's protected system head), and none otherwise;
//!   that head's text is the `header.system` of the v2 form's last `request/header` (`""`:
//!   no text part). The v3 zstd form reads as the plain one, event for event.
//!
//! Skips with a printed `skipped:` line when the shared folder is absent.

use dsh_session::event_type::REQUEST_HEADER;
use dsh_session::{migrate_records, RawSession};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::fs;
use std::io::Write as _;
use std::path::Path;

mod support;
use support::corpus::{rc8_names, shared_dir, stem};
use support::generated::{dsh_turn, generate_dsh, raw_rc8};
use support::loaded::{load, Loaded, Turns};

/// The `header.system` of the last `request/header` of `form` (`""` when it has none); `None`
/// when the log has no `request/header`.
fn last_prompt(form: &Loaded) -> Option<String> {
    let mut headers = form.events.iter().filter(|e| e.kind == REQUEST_HEADER);
    headers.next_back().map(|e| {
        e.data.to_value()["header"]["system"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    })
}

/// The text of a message's content: its text parts joined.
fn text_of(message: &Value) -> String {
    let parts = message["content"].as_array().cloned().unwrap_or_default();
    parts
        .iter()
        .filter_map(|part| part["text"].as_str())
        .collect()
}

/// `message` as v3 names its source: v3 renamed the code-mode tools plugin
/// (`{kind: "plugin", plugin: "tools-code-mode"}` is `"tools-ptc"` there).
fn ptc_named(mut message: Value) -> Value {
    let source = &mut message["source"];
    if source["kind"] == json!("plugin") && source["plugin"] == json!("tools-code-mode") {
        source["plugin"] = json!("tools-ptc");
    }
    message
}

/// The first message where `a` and `b` differ, described; `None` when they are equal.
fn first_difference(a: &[Value], b: &[Value]) -> Option<String> {
    if a == b {
        return None;
    }
    let at = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    Some(format!(
        "{} and {} messages, first difference at {at}:\n {}\n {}",
        a.len(),
        b.len(),
        a.get(at).map_or("(none)".into(), Value::to_string),
        b.get(at).map_or("(none)".into(), Value::to_string)
    ))
}

/// Whether the forms `older` (v0, v1, v2) and `v3` have the same history as the module doc
/// defines it; `Err` says the first difference.
fn same_history(older: &[&Loaded], v3: &Loaded) -> Result<(), String> {
    let base = older[0];
    for form in &older[1..] {
        if let Some(why) = first_difference(&form.history, &base.history) {
            return Err(format!(
                "v{} history differs from v{}'s: {why}",
                form.version(),
                base.version()
            ));
        }
    }
    let v2 = older.last().expect("a v2 form");
    let is_system = |m: &&Value| m["role"] == json!("system");
    let without: Vec<Value> = v3
        .history
        .iter()
        .filter(|m| !is_system(m))
        .cloned()
        .collect();
    let renamed: Vec<Value> = base.history.iter().cloned().map(ptc_named).collect();
    if let Some(why) = first_difference(&without, &renamed) {
        return Err(format!(
            "v3 history without its system messages differs: {why}"
        ));
    }
    let systems: Vec<usize> = (0..v3.history.len())
        .filter(|i| is_system(&&v3.history[*i]))
        .collect();
    match last_prompt(v2) {
        None if systems.is_empty() => Ok(()),
        Some(prompt) if systems == [0] && text_of(&v3.history[0]) == prompt => Ok(()),
        prompt => Err(format!(
            "v3 system messages at {systems:?} ({:?}), v2's last prompt {prompt:?}",
            systems.first().map(|i| &v3.history[*i])
        )),
    }
}

/// The rows of `session` written one per line.
fn write_rows(path: &Path, session: &RawSession) {
    let mut text = String::new();
    for row in std::iter::once(&session.header).chain(&session.events) {
        text.push_str(&serde_json::to_string(row).expect("a row serializes"));
        text.push('\n');
    }
    fs::write(path, text).expect("write");
}

#[test]
fn every_converted_session_has_the_same_turns_and_history_in_every_version() {
    let shared = shared_dir();
    let rc8 = shared.join("corpus/dsh-rc8");
    let corpus = shared.join("corpus/dsh-formats");
    let Ok(expected) = fs::read_to_string(corpus.join("expected.jsonl")) else {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {} is absent (set DSH_SHARED to the shared folder)",
            corpus.display()
        );
        return;
    };
    let rows: std::collections::HashMap<String, Value> = expected
        .lines()
        .map(|line| {
            let row: Value = serde_json::from_str(line).expect("JSON");
            (row["file"].as_str().expect("file").to_owned(), row)
        })
        .collect();
    let names = rc8_names(&rc8);
    let mut sessions = 0;
    let mut failures = Vec::new();
    for name in &names {
        let stem = stem(name);
        let v3_name = format!("{stem}.session.v3.jsonl");
        if !rows.contains_key(&v3_name) {
            continue; // dsh's chain refuses it (the migrate corpus test checks the reason)
        }
        let v0 = load(&rc8.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut forms = vec![v0];
        for file in [
            format!("{stem}.session.v1.jsonl"),
            format!("{stem}.session.v2.jsonl"),
            v3_name.clone(),
            format!("{v3_name}.zstd"),
        ] {
            let row = &rows[&file];
            let form =
                load(&corpus.join("files").join(&file)).unwrap_or_else(|e| panic!("{file}: {e}"));
            // The oracle's stored view of the form's own version.
            let stored = (
                Some(form.version()),
                Some(form.events.len() as u64),
                Some(form.count("turn/start") as u64),
                form.last_type(),
            );
            let oracle = (
                row["version"].as_u64(),
                row["stored_events"].as_u64(),
                row["stored_turns"].as_u64(),
                row["stored_last_type"].as_str(),
            );
            if stored != oracle {
                failures.push(format!("{file}: stored {stored:?}, oracle {oracle:?}"));
            }
            // Turns: seq-free facts in every version, the restored view's (v3's) as a whole.
            let turns = form.turns();
            let oracle_turns = Turns {
                turns: row["turns"].as_u64().expect("turns") as usize,
                reasons: row["turn_end_reasons"].as_array().expect("reasons").clone(),
                open_turn: row["open_turn"].as_bool().expect("open_turn"),
            };
            if turns != oracle_turns {
                failures.push(format!("{file}: turns {turns:?}, oracle {oracle_turns:?}"));
            }
            if form.version() == 3
                && (json!(form.turn_ends()) != row["turn_ends"]
                    || form.last_type() != row["last_type"].as_str())
            {
                failures.push(format!(
                    "{file}: turn ends or last type differ from the oracle's"
                ));
            }
            forms.push(form);
        }
        let [v0, v1, v2, v3, v3_zstd] = &forms[..] else {
            unreachable!()
        };
        if v0.turns() != v3.turns() {
            failures.push(format!(
                "{name}: v0 turns {:?}, v3 {:?}",
                v0.turns(),
                v3.turns()
            ));
        }
        if let Err(why) = same_history(&[v0, v1, v2], v3) {
            failures.push(format!("{stem}: {why}"));
        }
        if v3_zstd.events != v3.events || v3_zstd.history != v3.history {
            failures.push(format!("{stem}: the zstd v3 form reads differently"));
        }
        sessions += 1;
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(sessions, 60, "every converted session");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Generated rc.8 sessions shaped as dsh's agent writes them, migrated to v1, v2 and v3
    /// (dsh's chain takes every one): every
    /// form, written as a JSONL file of its version, loads with the same turns and the same
    /// history (as the module doc defines it).
    #[test]
    fn generated_sessions_have_the_same_turns_and_history_in_every_version(
        turns in prop::collection::vec(dsh_turn(), 0..4),
        open_end in any::<bool>(),
    ) {
        let events = generate_dsh(&turns, open_end);
        let dir = tempfile::tempdir().expect("temp dir");
        let source = raw_rc8("gen", &events);
        let path = dir.path().join("gen.jsonl");
        write_rows(&path, &source);
        let mut forms = vec![load(&path).expect("the generated v0 session loads")];
        for version in 1..=3u64 {
            let migrated = migrate_records(&source, version);
            // The generator writes what dsh's agent writes: the chain takes every session.
            let migrated = migrated.map_err(|e| TestCaseError::fail(format!("v{version}: {e}")))?;
            let path = dir.path().join(format!("gen.v{version}.jsonl"));
            write_rows(&path, &migrated);
            let form = load(&path).map_err(|e| TestCaseError::fail(format!("v{version}: {e}")))?;
            prop_assert_eq!(form.version(), version);
            forms.push(form);
        }
        let [v0, v1, v2, v3] = &forms[..] else { unreachable!() };
        for form in [v1, v2, v3] {
            prop_assert_eq!(form.turns(), v0.turns(), "v{}", form.version());
        }
        if let Err(why) = same_history(&[v0, v1, v2], v3) {
            return Err(TestCaseError::fail(why));
        }
    }
}
