//! `dsh import BUNDLE [--cwd DIR]`: the cwd of an imported session kept and said, or
//! remapped; a bundle that does not match its manifest, or holds an unsafe entry, refused
//! whole with nothing of it imported.

mod common;

use common::bundle::*;
use common::*;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

#[test]
fn cwd_is_kept_and_said_or_remapped_with_cwd() {
    let sandbox = Sandbox::new();
    sandbox.import_text("a.jsonl", &complete_session("a"));
    let store = sandbox.store();
    let (_, bundle) = export(&sandbox, store.as_os_str(), "a", &[], "b.tar");
    let path = "--home-dev-project--/a/session.jsonl";

    let kept = sandbox.root().join("kept");
    let run = sandbox.run(&[
        OsStr::new("--store"),
        kept.as_os_str(),
        OsStr::new("import"),
        bundle.as_os_str(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "imported a (6 events) from {} ({path})\n  cwd kept: {CWD}\n",
            bundle.display()
        )
    );

    let moved = sandbox.root().join("moved");
    let args = [
        OsStr::new("import"),
        bundle.as_os_str(),
        OsStr::new("--cwd"),
        OsStr::new("/srv/elsewhere"),
    ];
    let doc = on(&sandbox, moved.as_os_str(), &args).ok();
    assert_eq!(
        doc,
        json!([{
            "file": bundle.display().to_string(), "entry": path, "id": "a", "events": 6,
            "imported": true, "ok": true, "error": null, "droppedTail": null,
            "cwd": "/srv/elsewhere", "cwdRemapped": true,
        }])
    );
    let listed = on(&sandbox, moved.as_os_str(), &["sessions"]).ok();
    assert_eq!(listed[0]["cwd"], json!("/srv/elsewhere"));
    assert!(moved.join("--srv-elsewhere--/a/session.jsonl").is_file());
    assert_eq!(
        on(&sandbox, moved.as_os_str(), &["history", "a"]).ok(),
        complete_history()
    );
    // Again: unchanged.
    let again = on(&sandbox, moved.as_os_str(), &args).ok();
    assert_eq!(again[0]["imported"], json!(false), "{again}");
    // A plain file with --cwd is remapped too, and says so.
    let file = sandbox.write("f.jsonl", &complete_session("f"));
    let run = sandbox.run(&[
        OsStr::new("--store"),
        moved.as_os_str(),
        OsStr::new("import"),
        file.as_os_str(),
        OsStr::new("--cwd"),
        OsStr::new("/srv/elsewhere"),
    ]);
    assert!(
        run.stdout
            .ends_with(&format!("  cwd remapped: {CWD} -> /srv/elsewhere\n")),
        "{}",
        run.stdout
    );
    // A relative --cwd is a usage error.
    let run = on(
        &sandbox,
        moved.as_os_str(),
        &[
            OsStr::new("import"),
            bundle.as_os_str(),
            OsStr::new("--cwd"),
            OsStr::new("rel/dir"),
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("not an absolute path"),
        "{}",
        run.stderr
    );
}

/// Imports the bundle `bad` into a fresh store and asserts it is refused whole with `code`:
/// one failed entry, nothing stored. Returns the message.
fn refused(sandbox: &Sandbox, bad: &Path, code: &str) -> String {
    let target = sandbox.root().join(format!("target-{code}"));
    let run = on(
        sandbox,
        target.as_os_str(),
        &[OsStr::new("import"), bad.as_os_str()],
    );
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    let doc = run.doc();
    let message = doc[0]["error"]["message"]
        .as_str()
        .expect("a message")
        .to_owned();
    assert_eq!(
        doc,
        json!([{
            "file": bad.display().to_string(), "id": null, "events": null, "imported": false,
            "ok": false, "error": {"code": code, "message": message}, "droppedTail": null,
        }])
    );
    assert_eq!(
        files_under(&target),
        Vec::<PathBuf>::new(),
        "nothing stored"
    );
    message
}

#[test]
fn a_tampered_bundle_is_refused_whole_and_nothing_of_it_is_imported() {
    let sandbox = Sandbox::new();
    sandbox.import_text("a.jsonl", &complete_session("a"));
    sandbox.import_text("b.jsonl", &compaction_session("b"));
    let store = sandbox.store();
    let (_, good) = export(&sandbox, store.as_os_str(), "b", &[], "good.tar");
    let all = entries(&good);
    let (manifest_text, (path, text)) = (&all[0].1, &all[1]);
    let regular = tar::EntryType::Regular;

    // One byte of the session file changed: its sha256 no longer matches.
    let mut changed = text.clone();
    let at = changed.len() - 10;
    changed[at] ^= 0x01;
    let tampered = sandbox.root().join("sha.tar");
    write_tar(
        &tampered,
        &[
            (b"manifest.json", manifest_text, regular, ""),
            (path.as_bytes(), &changed, regular, ""),
        ],
    );
    let message = refused(&sandbox, &tampered, "BUNDLE_MISMATCH");
    assert!(
        message.contains("sha256") && message.contains(path.as_str()),
        "{message}"
    );

    // An entry with a `..` part, and a symbolic link, each after the valid file.
    let dotdot = sandbox.root().join("dotdot.tar");
    write_tar(
        &dotdot,
        &[
            (b"manifest.json", manifest_text, regular, ""),
            (path.as_bytes(), text, regular, ""),
            (b"../escape/session.jsonl", text, regular, ""),
        ],
    );
    let message = refused(&sandbox, &dotdot, "BUNDLE_ENTRY_UNSAFE");
    assert!(message.contains(".."), "{message}");
    let link = sandbox.root().join("link.tar");
    write_tar(
        &link,
        &[
            (b"manifest.json", manifest_text, regular, ""),
            (path.as_bytes(), text, regular, ""),
            (
                b"--x--/l/session.jsonl",
                b"",
                tar::EntryType::Symlink,
                "/etc/passwd",
            ),
        ],
    );
    let message = refused(&sandbox, &link, "BUNDLE_ENTRY_UNSAFE");
    assert!(message.contains("symbolic link"), "{message}");

    // A session file missing, an entry the manifest does not list, no manifest first.
    let missing = sandbox.root().join("missing.tar");
    write_tar(&missing, &[(b"manifest.json", manifest_text, regular, "")]);
    refused(&sandbox, &missing, "BUNDLE_MISMATCH");
    let extra = sandbox.root().join("extra.tar");
    write_tar(
        &extra,
        &[
            (b"manifest.json", manifest_text, regular, ""),
            (path.as_bytes(), text, regular, ""),
            (
                b"--home-dev-project--/other/session.jsonl",
                text,
                regular,
                "",
            ),
        ],
    );
    refused(&sandbox, &extra, "BUNDLE_MISMATCH");
    let headless = sandbox.root().join("headless.tar");
    write_tar(&headless, &[(path.as_bytes(), text, regular, "")]);
    refused(&sandbox, &headless, "BUNDLE_INVALID");

    // A manifest that lies about the header (another cwd) with the file's true sha256.
    let mut lying: Value = serde_json::from_slice(manifest_text).expect("JSON");
    lying["sessions"][0]["cwd"] = json!("/elsewhere");
    let lying = serde_json::to_vec(&lying).expect("JSON");
    let liar = sandbox.root().join("liar.tar");
    write_tar(
        &liar,
        &[
            (b"manifest.json", &lying, regular, ""),
            (path.as_bytes(), text, regular, ""),
        ],
    );
    let message = refused(&sandbox, &liar, "BUNDLE_MISMATCH");
    assert!(message.contains("cwd"), "{message}");

    // The untouched bundle imports.
    let target = sandbox.root().join("fine");
    let doc = on(
        &sandbox,
        target.as_os_str(),
        &[OsStr::new("import"), good.as_os_str()],
    )
    .ok();
    assert_eq!(doc[0]["ok"], json!(true), "{doc}");
}
