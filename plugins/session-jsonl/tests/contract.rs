//! The shared persistence contract (`dsh-session-contract`) and its fault tests run against
//! the JSONL backend, in both physical forms: plain `session.jsonl` and dsh's compressed
//! `session.jsonl.zstd`.

use dsh_core::AnyPlugin;
use dsh_session::backend::SessionPersistence;
use dsh_session::SessionId;
use dsh_session_contract::Fixture;
use dsh_session_jsonl::{Compression, JsonlPersistence, SessionJsonlPlugin};
use serde_json::{json, Value};
use std::any::Any;
use std::fs::{self, File};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A temporary store folder, written in one form.
struct JsonlFixture {
    root: tempfile::TempDir,
    compression: Compression,
}

impl JsonlFixture {
    fn new(compression: Compression) -> JsonlFixture {
        JsonlFixture {
            root: tempfile::tempdir().expect("a temporary folder"),
            compression,
        }
    }

    fn backend(&self) -> JsonlPersistence {
        JsonlPersistence::new(self.root.path())
            .with_compression(self.compression)
            .with_lock_timeout(Duration::from_millis(300))
    }

    fn file(&self, id: &SessionId) -> PathBuf {
        self.backend()
            .locate(id)
            .expect("locates")
            .expect("the session is stored")
    }

    /// The file's text (decoded when compressed).
    fn text(&self, id: &SessionId) -> String {
        let bytes = fs::read(self.file(id)).expect("reads the session file");
        let text = match self.compression {
            Compression::None => bytes,
            Compression::Zstd => zstd::decode_all(&bytes[..]).expect("decodes"),
        };
        String::from_utf8(text).expect("UTF-8")
    }

    /// Bytes holding `text` in the fixture's form: compressed as dsh frames it, its first line
    /// in a checksummed frame of its own and the rest in a second one.
    fn encode(&self, text: &str) -> Vec<u8> {
        match self.compression {
            Compression::None => text.as_bytes().to_vec(),
            Compression::Zstd => {
                let first_line = text.find('\n').map_or(text.len(), |newline| newline + 1);
                let (first, rest) = text.split_at(first_line);
                let mut bytes = Vec::new();
                for part in [first, rest].into_iter().filter(|part| !part.is_empty()) {
                    let mut encoder = zstd::Encoder::new(Vec::new(), 3).expect("an encoder");
                    encoder.include_checksum(true).expect("checksums");
                    encoder.write_all(part.as_bytes()).expect("encodes");
                    bytes.extend(encoder.finish().expect("a frame"));
                }
                bytes
            }
        }
    }

    /// Rewrites the session file with its lines passed through `edit`.
    fn edit_lines(&self, id: &SessionId, edit: impl FnOnce(&mut Vec<String>)) {
        let mut lines: Vec<String> = self.text(id).lines().map(str::to_owned).collect();
        edit(&mut lines);
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        fs::write(self.file(id), self.encode(&text)).expect("rewrites the session file");
    }
}

impl Fixture for JsonlFixture {
    fn open(&self) -> Arc<dyn SessionPersistence> {
        Arc::new(self.backend())
    }

    fn plugin(&self) -> (AnyPlugin, Value) {
        let compression = match self.compression {
            Compression::None => "none",
            Compression::Zstd => "zstd",
        };
        (
            SessionJsonlPlugin.into(),
            json!({ "root": self.root.path(), "compression": compression }),
        )
    }

    fn hold_writer_lock(&self, id: &SessionId) -> Box<dyn Any + Send> {
        let file = File::open(self.file(id)).expect("opens the session file");
        file.lock().expect("takes the lock");
        Box::new(file)
    }

    fn remove_stored_event(&self, id: &SessionId, seq: u64) {
        // Line 1 is the header; the samples have no packed rows, so event `seq` is line seq + 2.
        self.edit_lines(id, |lines| {
            lines.remove(seq as usize + 1);
        });
    }

    fn set_stored_version(&self, id: &SessionId, version: u64) {
        self.edit_lines(id, |lines| {
            let mut header: Value = serde_json::from_str(&lines[0]).expect("a header line");
            header["version"] = json!(version);
            lines[0] = header.to_string();
        });
    }

    fn tear_tail(&self, id: &SessionId) -> bool {
        let torn = self.encode("{\"type\":\"step/start\",\"seq\":99,\"da\n");
        let cut = match self.compression {
            Compression::None => torn.len() - 1,
            Compression::Zstd => torn.len() / 2,
        };
        let mut file = fs::OpenOptions::new()
            .append(true)
            .open(self.file(id))
            .expect("opens the session file");
        file.write_all(&torn[..cut]).expect("appends a torn record");
        true
    }
}

mod plain {
    use super::*;
    dsh_session_contract::contract_tests!(JsonlFixture::new(Compression::None));
    dsh_session_contract::fault_tests!(JsonlFixture::new(Compression::None), SessionJsonlPlugin);
    dsh_session_contract::drain_tests!(JsonlFixture::new(Compression::None));
}

mod zstd_frames {
    use super::*;
    dsh_session_contract::contract_tests!(JsonlFixture::new(Compression::Zstd));
    dsh_session_contract::fault_tests!(JsonlFixture::new(Compression::Zstd), SessionJsonlPlugin);
    dsh_session_contract::drain_tests!(JsonlFixture::new(Compression::Zstd));
}
