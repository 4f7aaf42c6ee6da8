//! What a follower reads: `read_from` returns exactly the events of `load` from a seq on (the
//! same length and dropped tail), for plain and compressed files, packed chunk rows, torn
//! tails and files that grow; and the revision moves with every write and only then.

mod support;

use dsh_session::backend::{SessionPersistence, StoredSession};
use dsh_session::SessionId;
use dsh_session_jsonl::layout::{compressed_session_file, session_file};
use dsh_session_jsonl::{Compression, JsonlPersistence};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use support::{event, header, header_line, line, turn};

const CWD: &str = "/p";

/// The body lines of `turns` turns of 17 events each from seq `first`, as dsh writes them:
/// verbatim events and packed rows of all three kinds, the last record of a turn a row.
fn body(first: u64, turns: u64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut seq = first;
    for turn in 0..turns {
        let verbatim = |kind: &str, seq: u64| line(&event(kind, seq));
        lines.push(verbatim("turn/start", seq));
        lines.push(verbatim("step/start", seq + 1));
        lines.push(format!(
            r#"{{"type":"text-chunks","seq0":{},"time0":{turn},"data":{{"turn":1,"step":1,"index":0,"dt":[1,2],"texts":["a","b","c"]}}}}"#,
            seq + 2
        ));
        lines.push(format!(
            r#"{{"type":"reasoning-chunks","seq0":{},"time0":7,"data":{{"turn":1,"step":1,"index":1,"dt":[0,0,5],"texts":["r","s","t","u"]}}}}"#,
            seq + 5
        ));
        lines.push(format!(
            r#"{{"type":"tool-call-chunks","seq0":{},"time0":9,"data":{{"turn":1,"step":1,"index":2,"id":"c{turn}","name":"read","dt":[1,1],"args":["{{","\"p\":1","}}"]}}}}"#,
            seq + 9
        ));
        lines.push(verbatim("step/end", seq + 12));
        lines.push(verbatim("turn/end", seq + 13));
        lines.push(format!(
            r#"{{"type":"text-chunks","seq0":{},"time0":3,"data":{{"turn":1,"step":2,"index":0,"dt":[0,0],"texts":["x","y","z"]}}}}"#,
            seq + 14
        ));
        seq += 17;
    }
    lines
}

/// The text of a session file for `id`: the header line, then `lines`.
fn text(id: &str, lines: &[String]) -> String {
    let mut text = header_line(id);
    text.push('\n');
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// `text` as one zstd frame.
fn frame(text: &str) -> Vec<u8> {
    zstd::encode_all(text.as_bytes(), 3).expect("compresses")
}

/// Writes session `id` under `root` in `form`: the header and `lines` (a compressed file: a
/// frame for the header, two for the body). Returns the file's path.
fn write_session(root: &Path, id: &str, form: Compression, lines: &[String]) -> PathBuf {
    let (path, bytes) = match form {
        Compression::None => (
            session_file(root, Some(CWD), id),
            text(id, lines).into_bytes(),
        ),
        Compression::Zstd => {
            let (early, late) = lines.split_at(lines.len() / 2);
            let mut bytes = frame(&text(id, &[]));
            for part in [early, late] {
                let body: String = part.iter().map(|l| format!("{l}\n")).collect();
                bytes.extend(frame(&body));
            }
            (compressed_session_file(root, Some(CWD), id), bytes)
        }
    };
    fs::create_dir_all(path.parent().expect("a folder")).expect("folders");
    fs::write(&path, bytes).expect("written");
    path
}

/// Appends raw `bytes` to the file at `path` (a torn write, or damage).
fn append_raw(path: &Path, bytes: &[u8]) {
    OpenOptions::new()
        .append(true)
        .open(path)
        .expect("opens")
        .write_all(bytes)
        .expect("appends");
}

/// Checks `read_from(id, from)` against `load(id)` for `from` = every seq up to five past the
/// stored length; returns what `load` read.
fn check_tails(store: &JsonlPersistence, id: &str) -> StoredSession {
    let id = SessionId::new(id);
    let stored = store.load(&id).expect("loaded");
    let len = stored.events.len() as u64;
    for from in 0..=len + 5 {
        let tail = store.read_from(&id, from).expect("tail read");
        let at = usize::try_from(from.min(len)).expect("small");
        assert_eq!(tail.events, stored.events[at..], "from {from}");
        assert_eq!(tail.len, len, "from {from}");
        assert_eq!(tail.dropped_tail, stored.dropped_tail, "from {from}");
        assert_eq!(tail.header, stored.header, "from {from}");
        assert_eq!(tail.revision, stored.revision, "from {from}");
    }
    stored
}

/// The seqs of a stored log, for the ends of a tail.
fn seqs(stored: &StoredSession) -> Vec<u64> {
    stored.events.iter().map(|e| e.seq).collect()
}

#[test]
fn a_tail_read_is_the_end_of_a_load_with_packed_rows() {
    for form in [Compression::None, Compression::Zstd] {
        let dir = tempfile::tempdir().expect("temp dir");
        write_session(dir.path(), "s", form, &body(0, 4));
        let store = JsonlPersistence::new(dir.path());
        let stored = check_tails(&store, "s");
        assert_eq!(seqs(&stored), (0..68).collect::<Vec<_>>(), "{form:?}");
        assert_eq!(stored.dropped_tail, None);
        // The last record is a row: a tail from inside it starts at the seq asked for.
        let tail = store
            .read_from(&SessionId::new("s"), 66)
            .expect("tail read");
        assert_eq!(
            tail.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [66, 67]
        );
        assert_eq!(tail.events[0].data.to_value()["chunk"]["text"], "y");
    }
}

#[test]
fn a_header_only_file_has_an_empty_tail() {
    for form in [Compression::None, Compression::Zstd] {
        let dir = tempfile::tempdir().expect("temp dir");
        write_session(dir.path(), "e", form, &[]);
        let stored = check_tails(&JsonlPersistence::new(dir.path()), "e");
        assert!(stored.events.is_empty(), "{form:?}");
    }
}

#[test]
fn a_torn_tail_is_dropped_as_load_drops_it_and_cut_by_the_next_append() {
    for form in [Compression::None, Compression::Zstd] {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write_session(dir.path(), "t", form, &body(0, 2));
        let torn = match form {
            Compression::None => br#"{"type":"step/start","seq":34,"ti"#.to_vec(),
            Compression::Zstd => {
                let whole = frame(&format!("{}\n", line(&event("step/start", 34))));
                whole[..whole.len() / 2].to_vec()
            }
        };
        append_raw(&path, &torn);
        let store = JsonlPersistence::new(dir.path());
        let stored = check_tails(&store, "t");
        assert_eq!(stored.events.len(), 34, "{form:?}");
        assert!(stored.dropped_tail.is_some(), "{form:?}");

        // The next append cuts the torn tail; the file grows, the tails follow.
        let id = SessionId::new("t");
        store.append(&id, &turn(34, 3)).expect("appended");
        let stored = check_tails(&store, "t");
        assert_eq!(seqs(&stored), (0..37).collect::<Vec<_>>(), "{form:?}");
        assert_eq!(stored.dropped_tail, None);
        store.append(&id, &turn(37, 4)).expect("appended");
        assert_eq!(check_tails(&store, "t").events.len(), 41, "{form:?}");
    }
}

#[test]
fn damage_at_the_end_is_judged_as_load_judges_it() {
    let turn_end = line(&event("turn/end", 35));
    let cases: [(&str, Vec<String>); 3] = [
        // An unparsable line with no committed turn after it: tail, dropped.
        (
            "unparsable",
            vec!["{oops".into(), line(&event("step/start", 35))],
        ),
        // A seq gap with no committed turn after it: tail, dropped.
        ("gap", vec![line(&event("step/start", 40))]),
        // A committed turn after the damage: the log is refused.
        ("fatal", vec!["{oops".into(), turn_end]),
    ];
    for (name, damage) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut lines = body(0, 2);
        lines.push(line(&event("step/start", 34)));
        lines.extend(damage);
        write_session(dir.path(), "d", Compression::None, &lines);
        let store = JsonlPersistence::new(dir.path());
        let id = SessionId::new("d");
        match store.load(&id) {
            Ok(_) => {
                let stored = check_tails(&store, "d");
                assert_eq!(stored.events.len(), 35, "{name}");
                assert!(stored.dropped_tail.is_some(), "{name}");
            }
            Err(error) => {
                assert_eq!(name, "fatal", "{error}");
                for from in [0, 30, 35, 36] {
                    let refused = store.read_from(&id, from).expect_err("refused");
                    assert_eq!(refused.to_string(), error.to_string(), "from {from}");
                }
            }
        }
    }
}

#[test]
fn a_long_plain_log_reads_its_tail_as_load_reads_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_session(dir.path(), "long", Compression::None, &body(0, 600));
    let store = JsonlPersistence::new(dir.path());
    let id = SessionId::new("long");
    let stored = store.load(&id).expect("loaded");
    let len = stored.events.len() as u64;
    assert_eq!(len, 600 * 17);
    for from in [0, 1, len / 2, len - 100, len - 2, len - 1, len, len + 5] {
        let tail = store.read_from(&id, from).expect("tail read");
        let at = usize::try_from(from.min(len)).expect("small");
        assert_eq!(tail.events, stored.events[at..], "from {from}");
        assert_eq!((tail.len, tail.revision), (len, stored.revision));
    }
}

#[test]
fn a_tail_read_of_a_plain_file_reads_only_its_end() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut lines = body(0, 50);
    // Damage early in the file, which `load` refuses (a turn was committed after it), sits
    // before the lines a tail read reads.
    lines.insert(3, "{damaged".to_owned());
    write_session(dir.path(), "far", Compression::None, &lines);
    let store = JsonlPersistence::new(dir.path());
    let id = SessionId::new("far");
    assert_eq!(store.load(&id).expect_err("refused").code(), "LOG_CORRUPT");
    let tail = store.read_from(&id, 840).expect("the end is clean");
    assert_eq!(tail.len, 850);
    assert_eq!(tail.events.first().map(|e| e.seq), Some(840));
    assert_eq!(tail.events.len(), 10);
}

/// The revision `list` reports for session `id`.
fn listed_revision(store: &JsonlPersistence, id: &SessionId) -> u64 {
    let listed = store.list().expect("listed");
    let entry = listed
        .iter()
        .find(|l| l.header.id == *id)
        .expect("the session is listed");
    entry.revision
}

#[test]
fn the_revision_moves_with_every_write_and_only_then() {
    for form in [Compression::None, Compression::Zstd] {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = JsonlPersistence::new(dir.path()).with_compression(form);
        let id = SessionId::new("r");
        store
            .create(&header("r", Some(CWD), 1), &turn(0, 2))
            .expect("created");
        let path = store.locate(&id).expect("located").expect("stored");
        let revision = |store: &JsonlPersistence| {
            let loaded = store.load(&id).expect("loaded").revision;
            assert_eq!(listed_revision(store, &id), loaded, "{form:?}");
            assert_eq!(store.read_from(&id, 1).expect("tail").revision, loaded);
            assert_eq!(store.read_prefix(&id, 1).expect("prefix").revision, loaded);
            assert_eq!(fs::metadata(&path).expect("metadata").len(), loaded);
            loaded
        };

        let created = revision(&store);
        assert_eq!(revision(&store), created, "reads change nothing");
        // Another backend over the same files sees the same revision.
        assert_eq!(revision(&JsonlPersistence::new(dir.path())), created);

        store.append(&id, &turn(2, 2)).expect("appended");
        let appended = revision(&store);
        assert_ne!(appended, created, "{form:?}");
        assert_eq!(revision(&store), appended);

        append_raw(&path, b"torn");
        let torn = revision(&store);
        assert_ne!(torn, appended, "{form:?}");
        // An empty append only cuts the torn tail: back to the committed length.
        store.append(&id, &[]).expect("cut");
        assert_eq!(revision(&store), appended, "{form:?}");
    }
}
