//! Issue 24 item 6: a fork at every turn boundary of a v3 session reads back as dsh would.
//!
//! Every v3 session of the converted corpus (`corpus/dsh-formats`) and generated dsh-shaped
//! sessions migrated to v3 ([`migrate_records`]) are put in a JSONL store and forked through
//! the fork service ([`SessionFork::fork_stored`]) at each `turn/end`; each child is stored,
//! then read back from its file:
//!
//! - a v3 file (`session.v3.jsonl`) whose header has `isSeeded: true` and the source as
//!   `parentSession`, and no `seedLength`;
//! - its rows: the source's rows through the cut, as stored (JSON values), then one
//!   `session/end-seed {"inherited": true}` at seq cut + 1, and nothing else;
//! - it loads (the store's restore rules), its inherited cut is the marker, and its history is
//!   the history of the source's prefix through the cut;
//! - the child of the last cut forks again at its inherited last `turn/end` (a grandchild:
//!   v3, its cut marked the same way).
//!
//! With `DSH_FORMATS_ORACLE` naming a folder where `shared/tools/dsh-formats/setup.sh` has run
//! (`oracle-v.mjs` and dsh's packages), the ignored test also reads every child with dsh's own
//! v3 reader: accepted as current v3, with the turns, turn ends, reasons, last type, open turn,
//! `isSeeded` and inherited event count this reader finds.
//!
//! Skips with a printed `skipped:` line when the shared folder is absent.

use dsh_core::{Context, LoadOptions};
use dsh_session::format::inherited_cut;
use dsh_session::{migrate_records, SessionId, SessionPlugin, SessionStore};
use dsh_session_fork::{ForkSessionOptions, SessionFork, SessionForkPlugin};
use dsh_session_jsonl::layout::session_dir;
use dsh_session_jsonl::{JsonlPersistence, SessionJsonlPlugin};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::{json, Value};
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

#[allow(dead_code)] // the session crate's generators; these tests use the dsh-shaped one
#[path = "../../session/tests/support/generated.rs"]
mod generated;
#[allow(dead_code)]
#[path = "../../session/tests/support/loaded.rs"]
mod loaded;
use loaded::{load, Loaded};

/// `DSH_SHARED`, else `<workspace root>/../shared`.
fn shared_dir() -> PathBuf {
    match std::env::var_os("DSH_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

/// The converted corpus, or `None` after printing why the test skips.
fn formats_corpus() -> Option<PathBuf> {
    let corpus = shared_dir().join("corpus/dsh-formats");
    if corpus.join("expected.jsonl").is_file() {
        return Some(corpus);
    }
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {} is absent (set DSH_SHARED to the shared folder)",
        corpus.display()
    );
    None
}

/// The plain v3 files of the converted corpus.
fn corpus_v3_files(corpus: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(corpus.join("files"))
        .expect("the corpus lists")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.to_string_lossy().ends_with(".session.v3.jsonl"))
        .collect();
    files.sort();
    files
}

fn read_back(path: &Path) -> Loaded {
    load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A context of the session, JSONL (storing under `root`) and fork plugins.
fn context(root: &Path) -> Context {
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin_with(
            SessionJsonlPlugin,
            LoadOptions::with_config(json!({ "root": root })),
        )
        .add_plugin(SessionForkPlugin)
        .build()
        .expect("the context builds")
}

/// A stored v3 session forked at every `turn/end`: the children's files.
struct Forked {
    children: Vec<Child>,
}

/// One child: its file, the source's id and the cut (the seq of the source's `turn/end`).
struct Child {
    file: PathBuf,
    parent: String,
    cut: u64,
}

/// Puts the v3 session file `source` (rows as text) in a new store under `root`, forks it at
/// each of its `turn/end`s through the fork service, and checks each child as the module doc
/// says. Returns the children's files.
fn fork_everywhere(root: &Path, source_text: &str, label: &str) -> Forked {
    let header: Value =
        serde_json::from_str(source_text.lines().next().expect("a header")).expect("JSON");
    let id = header["id"].as_str().expect("an id").to_owned();
    let cwd = header["cwd"].as_str();
    let folder = session_dir(root, cwd, &id);
    fs::create_dir_all(&folder).expect("a session folder");
    let source_file = folder.join("session.v3.jsonl");
    fs::write(&source_file, source_text).expect("write the source");
    let source = read_back(&source_file);
    assert_eq!(source.version(), 3, "{label}");

    let ctx = context(root);
    let store = ctx.expect::<SessionStore>();
    let fork = ctx.expect::<SessionFork>();
    let located = |child: &str| {
        JsonlPersistence::new(root)
            .locate(&SessionId::from(child))
            .expect("located")
            .expect("stored")
    };
    let ends = source.turn_ends();
    let prefixes = tempfile::tempdir().expect("temp dir");
    let mut children = Vec::new();
    for &cut in &ends {
        let at = format!("{label} at {cut}");
        let child_id = format!("child-{cut}");
        let child = fork
            .fork_stored(
                ForkSessionOptions::new(id.as_str())
                    .at(cut)
                    .session_id(child_id.as_str()),
            )
            .unwrap_or_else(|e| panic!("{at}: {}: {e}", e.code()));
        store.flush(&child).expect("flushed");
        let file = located(&child_id);
        assert!(
            file.ends_with("session.v3.jsonl"),
            "{at}: {}",
            file.display()
        );
        let back = read_back(&file);
        let inherited = usize::try_from(cut + 1).expect("small");
        // The header: v3, seeded, the source as parent, no seedLength.
        assert_eq!(back.header.version, 3, "{at}");
        assert_eq!(back.header.is_seeded, Some(true), "{at}");
        assert_eq!(back.header.seed_length, None, "{at}");
        assert_eq!(
            back.header.parent_session.as_ref().map(ToString::to_string),
            Some(id.clone()),
            "{at}"
        );
        assert_eq!(back.rows[0]["isSeeded"], json!(true), "{at}");
        assert!(back.rows[0].get("seedLength").is_none(), "{at}");
        // The rows: the source's through the cut, then the inherited marker.
        assert_eq!(back.rows.len(), inherited + 2, "{at}");
        assert_eq!(back.rows[1..=inherited], source.rows[1..=inherited], "{at}");
        assert_eq!(
            back.rows[inherited + 1],
            json!({"type": "session/end-seed", "seq": cut + 1, "time": back.rows[inherited + 1]["time"], "data": {"inherited": true}}),
            "{at}"
        );
        assert_eq!(back.events[..inherited], source.events[..inherited], "{at}");
        assert_eq!(inherited_cut(&back.events), Some(cut + 1), "{at}");
        // The history: the source's prefix's.
        let prefix = prefixes
            .path()
            .join(format!("prefix-{cut}.session.v3.jsonl"));
        let prefix_text: String = source_text
            .lines()
            .take(inherited + 1)
            .map(|line| format!("{line}\n"))
            .collect();
        fs::write(&prefix, prefix_text).expect("write the prefix");
        assert_eq!(back.history, read_back(&prefix).history, "{at}");
        children.push(Child {
            file,
            parent: id.clone(),
            cut,
        });
    }
    // The last child forks again at its inherited last turn/end.
    if let Some(&cut) = ends.last() {
        let at = format!("{label}: the grandchild at {cut}");
        let grandchild = fork
            .fork_stored(
                ForkSessionOptions::new(format!("child-{cut}").as_str())
                    .at(cut)
                    .session_id("grandchild"),
            )
            .unwrap_or_else(|e| panic!("{at}: {}: {e}", e.code()));
        store.flush(&grandchild).expect("flushed");
        let file = located("grandchild");
        let back = read_back(&file);
        assert_eq!(
            (back.header.version, back.header.is_seeded),
            (3, Some(true)),
            "{at}"
        );
        assert_eq!(inherited_cut(&back.events), Some(cut + 1), "{at}");
        assert_eq!(back.events.len() as u64, cut + 2, "{at}");
        children.push(Child {
            file,
            parent: format!("child-{cut}"),
            cut,
        });
    }
    Forked { children }
}

/// Every v3 corpus session forked at every turn end, in a store under `root` each: the
/// children.
fn fork_the_corpus(corpus: &Path, root: &Path) -> Vec<Child> {
    let mut children = Vec::new();
    for (n, file) in corpus_v3_files(corpus).iter().enumerate() {
        let text = fs::read_to_string(file).expect("read");
        let label = file.file_name().expect("a name").to_string_lossy();
        let store = root.join(format!("store-{n}"));
        children.extend(fork_everywhere(&store, &text, &label).children);
    }
    children
}

/// The text of the v3 form of a generated dsh-shaped rc.8 session (`generated::generate_dsh`).
fn generated_v3(turns: &[generated::DshTurn], open_end: bool, id: &str) -> String {
    let source = generated::raw_rc8(id, &generated::generate_dsh(turns, open_end));
    let v3 = migrate_records(&source, 3).expect("dsh's chain takes a dsh-shaped session");
    std::iter::once(&v3.header)
        .chain(&v3.events)
        .map(|row| format!("{}\n", Value::Object(row.clone())))
        .collect()
}

#[test]
fn every_v3_corpus_session_forks_at_every_turn_end_into_a_v3_child_that_reads_back() {
    let Some(corpus) = formats_corpus() else {
        return;
    };
    let root = tempfile::tempdir().expect("temp dir");
    let children = fork_the_corpus(&corpus, root.path());
    // 60 v3 sessions, most of one or two turns; each with turns gives a grandchild too.
    assert!(children.len() >= 60, "{} children", children.len());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Generated dsh-shaped sessions migrated to v3 fork at every turn end into v3 children
    /// that read back as the module doc says.
    #[test]
    fn generated_v3_sessions_fork_at_every_turn_end_into_v3_children_that_read_back(
        turns in prop::collection::vec(generated::dsh_turn(), 1..4),
        open_end in any::<bool>(),
    ) {
        let root = tempfile::tempdir().expect("temp dir");
        let text = generated_v3(&turns, open_end, "gen");
        let forked = fork_everywhere(root.path(), &text, "generated");
        let closed = turns.len() - usize::from(open_end);
        // A turn end each, and the grandchild when there is one.
        prop_assert_eq!(forked.children.len(), closed + usize::from(closed > 0));
    }
}

/// dsh's v3 reader (`oracle-v.mjs` in `DSH_FORMATS_ORACLE`) on every child of the corpus's v3
/// sessions and of 16 generated ones: each is current v3 with the facts this reader finds.
#[test]
#[ignore = "needs DSH_FORMATS_ORACLE, a folder where shared/tools/dsh-formats/setup.sh has run (node)"]
fn every_v3_child_is_read_by_dshs_v3_reader_as_here() {
    let oracle = PathBuf::from(
        std::env::var_os("DSH_FORMATS_ORACLE").expect("DSH_FORMATS_ORACLE names the oracle"),
    );
    let Some(corpus) = formats_corpus() else {
        return;
    };
    let root = tempfile::tempdir().expect("temp dir");
    let mut children = fork_the_corpus(&corpus, &root.path().join("corpus"));
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (
        prop::collection::vec(generated::dsh_turn(), 1..4),
        any::<bool>(),
    );
    for n in 0..16 {
        let (turns, open_end) = strategy.new_tree(&mut runner).expect("a sample").current();
        let text = generated_v3(&turns, open_end, &format!("gen-{n}"));
        let store = root.path().join(format!("gen-{n}"));
        children.extend(fork_everywhere(&store, &text, &format!("generated {n}")).children);
    }
    let output = std::process::Command::new("node")
        .arg(oracle.join("oracle-v.mjs"))
        .args(children.iter().map(|c| &c.file))
        .output()
        .expect("node runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<Value> = String::from_utf8(output.stdout)
        .expect("UTF-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("an oracle row"))
        .collect();
    assert_eq!(rows.len(), children.len());
    let mut failures = Vec::new();
    for (child, row) in children.iter().zip(&rows) {
        let back = read_back(&child.file);
        let turns = back.turns();
        let ours = json!({
            "error": null,
            "version": 3,
            "status": "current",
            "parentSession": child.parent,
            "stored_events": back.events.len(),
            "turns": turns.turns,
            "turn_ends": back.turn_ends(),
            "turn_end_reasons": turns.reasons,
            "last_type": back.last_type(),
            "open_turn": turns.open_turn,
            "isSeeded": true,
            "inheritedEventCount": child.cut + 1,
        });
        let theirs = json!({
            "error": row["error"],
            "version": row["version"],
            "status": row["status"],
            "parentSession": row["parentSession"],
            "stored_events": row["stored_events"],
            "turns": row["turns"],
            "turn_ends": row["turn_ends"],
            "turn_end_reasons": row["turn_end_reasons"],
            "last_type": row["last_type"],
            "open_turn": row["open_turn"],
            "isSeeded": row["restored_header"]["isSeeded"],
            "inheritedEventCount": row["inheritedEventCount"],
        });
        if ours != theirs {
            failures.push(format!(
                "{}:\n ours   {ours}\n theirs {theirs}",
                child.file.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} children differ:\n{}",
        failures.len(),
        children.len(),
        failures.join("\n")
    );
    let _ = writeln!(
        std::io::stderr(),
        "{} children read by dsh's v3 reader as here",
        children.len()
    );
}
