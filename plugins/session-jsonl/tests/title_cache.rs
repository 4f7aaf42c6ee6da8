//! The title cache beside a session file (`title-cache.json`,
//! [`dsh_session_jsonl::title_cache`]): a listing after another writer's append reads only
//! the appended bytes (the cache's offset moves, and what it recorded for the bytes before
//! is kept), and a cache of another generation, of another session, past the file's end,
//! over rewritten bytes, or damaged is rebuilt, never trusted.

use dsh_session::backend::SessionPersistence;
use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
use dsh_session_jsonl::title_cache::CACHE_FILE;
use dsh_session_jsonl::{Compression, JsonlPersistence};
use serde_json::{json, Value};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A stored session `s` of two events, its title "First"; returns the backend and its file.
fn titled(root: &Path, compression: Compression) -> (JsonlPersistence, PathBuf) {
    let backend = JsonlPersistence::new(root).with_compression(compression);
    let header = SessionHeader::new(SessionId::from("s"), 1, SessionMeta::default().cwd("/p"));
    let events = [
        SessionEvent::new("plugin/note", 0, 1, json!({})),
        SessionEvent::new("session/title", 1, 2, json!({"title": "First"})),
    ];
    let events: Vec<_> = events.into_iter().map(Arc::new).collect();
    backend.create(&header, &events).expect("created");
    let path = backend
        .locate(&header.id)
        .expect("located")
        .expect("stored");
    (backend, path)
}

fn title(backend: &JsonlPersistence) -> Option<String> {
    let listed = backend.list().expect("lists");
    assert_eq!(listed.len(), 1);
    listed.into_iter().next().unwrap().title
}

fn cache_path(file: &Path) -> PathBuf {
    file.with_file_name(CACHE_FILE)
}

fn cache(file: &Path) -> Value {
    serde_json::from_slice(&fs::read(cache_path(file)).expect("a cache")).expect("JSON")
}

fn set_cache(file: &Path, change: impl FnOnce(&mut Value)) {
    let mut value = cache(file);
    change(&mut value);
    fs::write(cache_path(file), serde_json::to_vec(&value).unwrap()).unwrap();
}

fn append_raw(file: &Path, bytes: &[u8]) {
    let mut out = OpenOptions::new().append(true).open(file).unwrap();
    out.write_all(bytes).unwrap();
}

fn len(file: &Path) -> u64 {
    fs::metadata(file).unwrap().len()
}

/// A raw append (another process) is found by reading only the appended bytes: a cache whose
/// title was changed behind the backend's back keeps that title through an append without a
/// title (nothing before the cached offset was read again), and its offset moves to the end.
#[test]
fn a_listing_after_an_append_reads_only_the_appended_bytes() {
    for compression in [Compression::None, Compression::Zstd] {
        let root = tempfile::tempdir().unwrap();
        let (backend, file) = titled(root.path(), compression);
        assert_eq!(title(&backend).as_deref(), Some("First"));
        assert_eq!(cache(&file)["scanned"], json!(len(&file)));
        // Marks the cache: only a listing that trusts it shows this title.
        set_cache(&file, |cache| cache["title"] = json!("Cached"));
        let note = b"{\"type\":\"plugin/note\",\"seq\":2,\"time\":3,\"data\":{}}\n";
        let title_line =
            b"{\"type\":\"session/title\",\"seq\":3,\"time\":4,\"data\":{\"title\":\"Appended\"}}\n";
        let frame = |text: &[u8]| match compression {
            Compression::None => text.to_vec(),
            Compression::Zstd => zstd::bulk::compress(text, 3).unwrap(),
        };
        append_raw(&file, &frame(note));
        assert_eq!(
            title(&backend).as_deref(),
            Some("Cached"),
            "{compression:?}: the bytes before the cached offset are not read again"
        );
        assert_eq!(
            cache(&file)["scanned"],
            json!(len(&file)),
            "the offset moved"
        );
        append_raw(&file, &frame(title_line));
        assert_eq!(
            title(&backend).as_deref(),
            Some("Appended"),
            "{compression:?}"
        );
        assert_eq!(cache(&file)["scanned"], json!(len(&file)));
    }
}

/// A torn last line is not scanned: the cache ends before it, and its title shows once the
/// line is complete.
#[test]
fn a_torn_line_is_scanned_once_complete() {
    let root = tempfile::tempdir().unwrap();
    let (backend, file) = titled(root.path(), Compression::None);
    let before = len(&file);
    append_raw(
        &file,
        b"{\"type\":\"session/title\",\"seq\":2,\"time\":4,\"data\":{\"title\":\"Torn\"",
    );
    assert_eq!(title(&backend).as_deref(), Some("First"));
    assert_eq!(cache(&file)["scanned"], json!(before));
    append_raw(&file, b"}}\n");
    assert_eq!(title(&backend).as_deref(), Some("Torn"));
}

/// A change made to a cache, given the file's length.
type Change = fn(&mut Value, u64);

/// Every cache that does not describe the file as it is now is rebuilt from the file.
#[test]
fn a_cache_that_does_not_match_the_file_is_rebuilt() {
    let cases: [(&str, Change); 6] = [
        ("another generation", |c, _| {
            c["file"] = json!("session.v3.jsonl")
        }),
        ("another session", |c, _| c["createdAt"] = json!(99)),
        ("past the end", |c, len| c["scanned"] = json!(len + 10)),
        ("other bytes before the offset", |c, _| {
            c["tail"] = json!("00")
        }),
        ("another shape", |c, _| c["shape"] = json!(2)),
        ("a wrong type", |c, _| c["scanned"] = json!("all")),
    ];
    for (what, change) in cases {
        let root = tempfile::tempdir().unwrap();
        let (backend, file) = titled(root.path(), Compression::None);
        assert_eq!(title(&backend).as_deref(), Some("First"));
        let n = len(&file);
        set_cache(&file, |cache| {
            cache["title"] = json!("Wrong");
            change(cache, n);
        });
        assert_eq!(title(&backend).as_deref(), Some("First"), "{what}");
        assert_eq!(cache(&file)["title"], json!("First"), "{what}: rewritten");
    }
    for damage in [&b"not json"[..], b"", &[0xff; 100][..]] {
        let root = tempfile::tempdir().unwrap();
        let (backend, file) = titled(root.path(), Compression::None);
        fs::write(cache_path(&file), damage).unwrap();
        assert_eq!(title(&backend).as_deref(), Some("First"), "{damage:?}");
        assert_eq!(cache(&file)["title"], json!("First"));
    }
}

/// A cache that cannot be written (a file's place taken by a folder) leaves the listing as it
/// is without one.
#[test]
fn a_cache_that_cannot_be_written_is_no_error_of_list() {
    let root = tempfile::tempdir().unwrap();
    let (backend, file) = titled(root.path(), Compression::None);
    fs::remove_file(cache_path(&file)).unwrap();
    fs::create_dir(cache_path(&file)).unwrap();
    assert_eq!(title(&backend).as_deref(), Some("First"));
    assert_eq!(title(&backend).as_deref(), Some("First"));
}

/// The backend's own writes keep the cache current, so that a listing after them reads
/// nothing but the cache: a create records its seed's title, an append moves the cache to the
/// file's end (a cache marked behind the backend's back keeps its mark: nothing before was
/// read again), a fork child's cache is seeded from the events it is created from, and a
/// migrated generation's cache names the new file.
#[test]
fn the_backend_writes_keep_the_cache_current() {
    use dsh_session::backend::StoredPrefix;
    use dsh_session::format::FormatVersion;
    use dsh_session::Events;
    for compression in [Compression::None, Compression::Zstd] {
        let root = tempfile::tempdir().unwrap();
        let (backend, file) = titled(root.path(), compression);
        assert_eq!(
            cache(&file)["scanned"],
            json!(len(&file)),
            "{compression:?}"
        );
        assert_eq!(cache(&file)["title"], json!("First"));
        set_cache(&file, |cache| cache["title"] = json!("Marked"));
        let id = SessionId::from("s");
        let note = SessionEvent::new("plugin/note", 2, 3, json!({}));
        let before = cache(&file)["scanned"].clone();
        backend.append(&id, &[Arc::new(note)]).unwrap();
        // An append without a title writes no cache (a flush costs no cache write): the
        // listing reads the appended bytes only, and moves the cache to the end.
        assert_eq!(cache(&file)["scanned"], before, "{compression:?}");
        assert_eq!(
            title(&backend).as_deref(),
            Some("Marked"),
            "{compression:?}"
        );
        assert_eq!(cache(&file)["scanned"], json!(len(&file)));
        let retitle = SessionEvent::new("session/title", 3, 4, json!({"title": "Second"}));
        backend.append_atomic(&id, &[Arc::new(retitle)]).unwrap();
        assert_eq!(cache(&file)["scanned"], json!(len(&file)));
        assert_eq!(cache(&file)["title"], json!("Second"));

        let stored = backend.load(&id).unwrap();
        let meta = SessionMeta::default().cwd("/p").lineage(id.clone(), 4);
        let child = SessionHeader::new(SessionId::from("child"), 2, meta);
        let prefix = StoredPrefix {
            parent: id.clone(),
            version: 0,
            len: 4,
        };
        backend
            .create_forked(&child, &Events::from_vec(stored.events.clone()), &prefix)
            .unwrap();
        let child_file = backend.locate(&child.id).unwrap().unwrap();
        assert_eq!(cache(&child_file)["scanned"], json!(len(&child_file)));
        assert_eq!(cache(&child_file)["title"], json!("Second"), "inherited");

        let meta = SessionMeta::default().cwd("/p").version(FormatVersion::V3);
        let mut v3 = SessionHeader::new(id.clone(), 1, meta);
        v3.is_seeded = Some(false);
        let migrated = [
            SessionEvent::new("plugin/note", 0, 1, json!({})),
            SessionEvent::new("session/title", 1, 2, json!({"title": "Migrated"})),
        ];
        let migrated: Vec<_> = migrated.into_iter().map(Arc::new).collect();
        backend
            .publish_successor(&v3, &migrated, len(&file))
            .unwrap();
        let cache = cache(&file);
        assert!(
            cache["file"]
                .as_str()
                .unwrap()
                .starts_with("session.v3.jsonl"),
            "{cache}"
        );
        assert_eq!(cache["title"], json!("Migrated"));
    }
}

#[test]
fn an_untitled_session_costs_its_writes_no_cache_file() {
    let root = tempfile::tempdir().unwrap();
    let backend = JsonlPersistence::new(root.path());
    let id = SessionId::from("plain");
    let header = SessionHeader::new(id.clone(), 1, SessionMeta::default().cwd("/p"));
    let note = |seq: u64| {
        Arc::new(SessionEvent::new(
            "plugin/note",
            seq,
            seq as i64 + 1,
            json!({}),
        ))
    };
    backend.create(&header, &[note(0)]).unwrap();
    backend.append(&id, &[note(1)]).unwrap();
    let file = backend.locate(&id).unwrap().unwrap();
    assert!(
        !cache_path(&file).exists(),
        "no cache written by create or append"
    );
    assert_eq!(title(&backend), None);
    assert_eq!(
        cache(&file)["scanned"],
        json!(len(&file)),
        "the listing wrote it"
    );
}

/// A page of the listing reads the titles of its own sessions only: of three sessions without
/// a cache, a page of the newest one writes (after reading it) the cache of that one alone,
/// and the next page that of the next one; the entries are those of the whole listing.
#[test]
fn a_page_reads_the_titles_of_its_sessions_only() {
    use dsh_session::backend::PageRequest;

    let root = tempfile::tempdir().unwrap();
    let backend = JsonlPersistence::new(root.path());
    let mut files = Vec::new();
    for (n, id) in ["old", "mid", "new"].into_iter().enumerate() {
        let id = SessionId::from(id);
        let header = SessionHeader::new(id.clone(), n as u64 + 1, SessionMeta::default().cwd("/p"));
        let title = SessionEvent::new("session/title", 0, 1, json!({"title": id.as_str()}));
        backend.create(&header, &[Arc::new(title)]).unwrap();
        let file = backend.locate(&id).unwrap().unwrap();
        // The create wrote the title's cache: gone, so only a listing's read makes it again.
        fs::remove_file(cache_path(&file)).unwrap();
        files.push(file);
    }
    let cached = || {
        files
            .iter()
            .map(|f| cache_path(f).exists())
            .collect::<Vec<_>>()
    };
    let mut request = PageRequest {
        after: None,
        cwd: None,
        limit: 1,
    };
    let page = backend.list_page(&request).unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].title.as_deref(), Some("new"));
    assert_eq!(cached(), [false, false, true], "the page's session only");
    request.after = Some((page[0].header.created_at, page[0].header.id.clone()));
    let next = backend.list_page(&request).unwrap();
    assert_eq!(next[0].title.as_deref(), Some("mid"));
    assert_eq!(cached(), [false, true, true]);
    let all = backend.list().unwrap();
    assert_eq!(next, request.page_of(all));
}
