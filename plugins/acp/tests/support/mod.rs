//! What the streamed-load tests share: JSONL persistence behind a wrapper ([`Gated`]) that can
//! hold its reader after some events and counts what it read, a runner that echoes the prompt,
//! generated logs, and a client of a connection served in process.

use dsh_acp::{AcpPlugin, AcpServer, Turn, TurnError, TurnFuture, TurnRunner};
use dsh_core::{BoxError, Context, ContextConfig, NoConfig, Plugin, Scope, ServiceKey};
use dsh_session::backend::{
    ListedSession, PersistenceError, SessionPersistence, StoredLog, StoredPrefix, StoredSession,
    StoredTail,
};
use dsh_session::format::FormatVersion;
use dsh_session::{
    CreateOptions, EventDraft, Events, SessionEvent, SessionHeader, SessionId, SessionMeta,
    SessionPlugin, SessionStore, TurnEndReason,
};
use dsh_session_jsonl::JsonlPersistence;
use futures::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// How long a test waits for a message before it fails (a guard against a hang, not a
/// measurement).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// What the tests see of the wrapper backend: its reader's gate and the reads it served.
#[derive(Default)]
pub struct Probe {
    /// When set: a log opened after this holds its reader after this many events, until the
    /// sender's message (or its drop).
    pub gate: Mutex<Option<(u64, mpsc::Receiver<()>)>>,
    /// Events handed out by the logs opened.
    pub events_read: AtomicU64,
    /// Whole reads (`load`) and logs opened (`open_log`).
    pub loads: AtomicU64,
    pub opened_logs: AtomicU64,
}

/// JSONL persistence behind the [`Probe`].
pub struct Gated {
    inner: JsonlPersistence,
    probe: Arc<Probe>,
}

/// A log whose reader waits at the gate.
pub struct GatedLog {
    inner: Box<dyn StoredLog>,
    probe: Arc<Probe>,
    pub gate: Option<(u64, mpsc::Receiver<()>)>,
    handed: u64,
}

impl StoredLog for GatedLog {
    fn header(&self) -> &SessionHeader {
        self.inner.header()
    }

    fn next_event(&mut self) -> Result<Option<SessionEvent>, PersistenceError> {
        if let Some((after, _)) = &self.gate {
            if self.handed == *after {
                let (_, open) = self.gate.take().expect("a gate");
                let _ = open.recv();
            }
        }
        let next = self.inner.next_event()?;
        if next.is_some() {
            self.handed += 1;
            self.probe.events_read.fetch_add(1, Ordering::SeqCst);
        }
        Ok(next)
    }

    fn event_at(&mut self, seq: u64) -> Result<Option<SessionEvent>, PersistenceError> {
        self.inner.event_at(seq)
    }

    fn dropped_tail(&self) -> Option<&str> {
        self.inner.dropped_tail()
    }

    fn revision(&self) -> u64 {
        self.inner.revision()
    }
}

impl SessionPersistence for Gated {
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        self.inner.create(header, seed)
    }

    fn create_forked(
        &self,
        header: &SessionHeader,
        events: &Events,
        prefix: &StoredPrefix,
    ) -> Result<(), PersistenceError> {
        self.inner.create_forked(header, events, prefix)
    }

    fn create_from_prefix(
        &self,
        header: &SessionHeader,
        prefix: &StoredPrefix,
        own: &[Arc<SessionEvent>],
        title: Option<&str>,
    ) -> Result<bool, PersistenceError> {
        self.inner.create_from_prefix(header, prefix, own, title)
    }

    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        self.inner.append(id, events)
    }

    fn append_atomic(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        self.inner.append_atomic(id, events)
    }

    fn load(&self, id: &SessionId) -> Result<StoredSession, PersistenceError> {
        self.probe.loads.fetch_add(1, Ordering::SeqCst);
        self.inner.load(id)
    }

    fn open_log(&self, id: &SessionId) -> Result<Box<dyn StoredLog>, PersistenceError> {
        self.probe.opened_logs.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(GatedLog {
            inner: self.inner.open_log(id)?,
            probe: self.probe.clone(),
            gate: self.probe.gate.lock().take(),
            handed: 0,
        }))
    }

    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        self.inner.read_prefix(id, len)
    }

    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError> {
        self.inner.read_from(id, from)
    }

    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        self.inner.list()
    }

    fn publish_successor(
        &self,
        header: &SessionHeader,
        events: &[Arc<SessionEvent>],
        source_revision: u64,
    ) -> Result<(), PersistenceError> {
        self.inner
            .publish_successor(header, events, source_revision)
    }

    fn new_session_version(&self) -> FormatVersion {
        self.inner.new_session_version()
    }

    fn release(&self, id: &SessionId) {
        self.inner.release(id);
    }
}

/// The plugin providing [`Gated`] over the JSONL store at its config's `root`.
pub struct GatedPlugin(Arc<Probe>);

#[derive(serde::Deserialize, Default)]
pub struct GatedConfig {
    root: PathBuf,
}

impl Plugin for GatedPlugin {
    const NAME: &'static str = "gated-jsonl";
    const VERSION: &'static str = "0.1.0";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<dyn SessionPersistence>()];
    type Config = GatedConfig;
    type Deps = ();

    fn apply(&self, scope: &Scope, config: GatedConfig, (): ()) -> Result<(), BoxError> {
        let backend: Arc<dyn SessionPersistence> = Arc::new(Gated {
            inner: JsonlPersistence::open(config.root)?,
            probe: self.0.clone(),
        });
        scope.provide(backend)?;
        Ok(())
    }
}

/// A runner whose turn answers the prompt in one step: `echo: PROMPT`.
pub struct EchoRunner;

impl TurnRunner for EchoRunner {
    fn run(&self, turn: Turn) -> TurnFuture {
        Box::pin(async move {
            let (n, session) = (turn.number(), &turn.session);
            session.append(EventDraft::turn_start(n))?;
            session.append(EventDraft::user_text(
                &format!("prompt-{n}"),
                &turn.prompt_text(),
                "user",
            ))?;
            session.append(EventDraft::step_start(n, 1))?;
            session.append(EventDraft::assistant_text(
                n,
                1,
                &format!("answer-{n}"),
                &format!("echo: {}", turn.prompt_text()),
                "p",
                "m",
            ))?;
            session.append(EventDraft::step_end(n, 1))?;
            session.append(EventDraft::turn_end(n, TurnEndReason::Completed))?;
            Ok::<(), TurnError>(())
        })
    }
}

pub struct EchoRunnerPlugin;

impl Plugin for EchoRunnerPlugin {
    const NAME: &'static str = "echo-runner";
    const VERSION: &'static str = "0.1.0";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<dyn TurnRunner>()];
    type Config = NoConfig;
    type Deps = ();

    fn apply(&self, scope: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
        scope.provide::<dyn TurnRunner>(Arc::new(EchoRunner))?;
        Ok(())
    }
}

/// A context: the session plugin over [`Gated`] JSONL under `root`, the fork plugin (when
/// built), `dsh-acp` and the echo runner.
pub async fn context(root: &Path, probe: Arc<Probe>) -> Context {
    let root = root.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut config = ContextConfig::default();
        config.set_config(GatedPlugin::NAME, json!({ "root": root }));
        let builder = Context::builder()
            .add_plugin(SessionPlugin)
            .add_plugin(GatedPlugin(probe))
            .add_plugin(AcpPlugin)
            .add_plugin(EchoRunnerPlugin);
        #[cfg(feature = "session-fork")]
        let builder = builder.add_plugin(dsh_session_fork::SessionForkPlugin);
        builder.with_config(config).build()
    })
    .await
    .expect("the build runs")
    .expect("the context builds")
}

/// The messages of `turns` completed turns, a user message and an assistant answer each, and
/// with `open` a last turn a crash interrupted after its prompt.
pub fn log(turns: u64, open: bool) -> Vec<SessionEvent> {
    log_padded(turns, open, 0)
}

/// As [`log`], each answer padded with `pad` bytes of text after its first line.
pub fn log_padded(turns: u64, open: bool, pad: usize) -> Vec<SessionEvent> {
    let padding = if pad == 0 {
        String::new()
    } else {
        format!("\n{}", "x".repeat(pad))
    };
    let mut drafts = Vec::new();
    for n in 1..=turns {
        drafts.push(EventDraft::turn_start(n));
        drafts.push(EventDraft::user_text(
            &format!("user-{n}"),
            &format!("q{n}"),
            "user",
        ));
        drafts.push(EventDraft::step_start(n, 1));
        drafts.push(EventDraft::assistant_text(
            n,
            1,
            &format!("asst-{n}"),
            &format!("a{n}{padding}"),
            "p",
            "m",
        ));
        drafts.push(EventDraft::step_end(n, 1));
        drafts.push(EventDraft::turn_end(n, TurnEndReason::Completed));
    }
    if open {
        let n = turns + 1;
        drafts.push(EventDraft::turn_start(n));
        drafts.push(EventDraft::user_text(
            &format!("user-{n}"),
            &format!("q{n}"),
            "user",
        ));
    }
    drafts
        .into_iter()
        .enumerate()
        .map(|(seq, draft)| draft.into_event(seq as u64, 1_700_000_000_000 + seq as i64))
        .collect()
}

/// Stores session `id` with `events` and leaves it closed (not live).
pub async fn store_session(ctx: &Context, id: &str, events: Vec<SessionEvent>) {
    store_session_in(ctx, id, events, FormatVersion::V0).await;
}

/// [`store_session`] in format `version`.
pub async fn store_session_in(
    ctx: &Context,
    id: &str,
    events: Vec<SessionEvent>,
    version: FormatVersion,
) {
    let store = ctx.expect::<SessionStore>();
    let id = SessionId::from(id);
    tokio::task::spawn_blocking(move || {
        let meta = SessionMeta::default().cwd("/work/stream").version(version);
        store
            .create(Some(id.clone()), CreateOptions::new(events, meta))
            .expect("a valid log");
        assert!(store.dispose(&id).expect("written"));
    })
    .await
    .expect("the store runs");
}

/// The stored events of session `id`.
pub async fn stored(ctx: &Context, id: &str) -> Vec<SessionEvent> {
    let store = ctx.expect::<SessionStore>();
    let id = SessionId::from(id);
    tokio::task::spawn_blocking(move || store.read_stored(&id, None))
        .await
        .expect("the read runs")
        .expect("the session is stored")
        .events
}

/// A client of a connection served in process, over pipes.
pub struct Client {
    requests: piper::Writer,
    lines: futures::io::Lines<BufReader<piper::Reader>>,
}

impl Client {
    pub async fn connect(ctx: &Context) -> Client {
        Client::connect_with(ctx, 1 << 16).await
    }

    /// A client whose end of the server's output holds `bytes` bytes.
    pub async fn connect_with(ctx: &Context, bytes: usize) -> Client {
        let server = ctx.expect::<AcpServer>();
        let (input, requests) = piper::pipe(1 << 16);
        let (lines, output) = piper::pipe(bytes);
        tokio::spawn(async move { server.serve(input, output).await });
        let mut client = Client {
            requests,
            lines: BufReader::new(lines).lines(),
        };
        client
            .send(
                0,
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        assert!(client.answer(0).await.0["result"].is_object());
        client
    }

    pub async fn send(&mut self, id: u64, method: &str, params: Value) {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.requests
            .write_all(format!("{request}\n").as_bytes())
            .await
            .expect("the server reads");
    }

    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.lines.next())
            .await
            .expect("a message in time (a hang guard)")
            .expect("a line")
            .expect("readable");
        serde_json::from_str(&line).expect("JSON")
    }

    /// Reads until the answer to request `id`: it and the updates before it.
    pub async fn answer(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut updates = Vec::new();
        loop {
            let message = self.next().await;
            if message["id"] == json!(id) {
                return (message, updates);
            }
            if message["method"] == "session/update" {
                updates.push(message["params"]["update"].clone());
            }
        }
    }

    pub async fn load(&mut self, id: u64, session: &str) -> (Value, Vec<Value>) {
        self.send(
            id,
            "session/load",
            json!({"sessionId": session, "cwd": "/work/stream", "mcpServers": []}),
        )
        .await;
        self.answer(id).await
    }
}
