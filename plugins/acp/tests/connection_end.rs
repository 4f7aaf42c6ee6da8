//! A connection whose input fails while a turn runs (a read error: what the `dsh` binary
//! cannot be made to meet on a pipe): the turn is cancelled, closed and written before
//! `serve` returns `CONNECTION_FAILED`; and a runner that panics mid-turn. In process, over a
//! JSONL store.

use dsh_acp::{AcpPlugin, AcpServer, Turn, TurnError, TurnFuture, TurnRunner};
use dsh_core::{BoxError, Context, ContextConfig, NoConfig, Plugin, Scope, ServiceKey};
use dsh_session::event_type::ASSISTANT_CHUNK;
use dsh_session::{EventDraft, SessionId, SessionPlugin, SessionStore, TurnEndReason};
use dsh_session_jsonl::SessionJsonlPlugin;
use futures::channel::mpsc;
use futures::io::{AsyncBufReadExt, BufReader};
use futures::{StreamExt, TryStreamExt};
use serde_json::{json, Value};
use std::io;
use std::sync::Arc;

/// A runner whose turn streams one chunk, then waits until it is cancelled and ends
/// `aborted`; the prompt `panic` makes it panic once the step has started.
struct WaitingRunner;

impl TurnRunner for WaitingRunner {
    fn run(&self, turn: Turn) -> TurnFuture {
        Box::pin(async move {
            let (n, session) = (turn.number(), &turn.session);
            session.append(EventDraft::turn_start(n))?;
            session.append(EventDraft::user_text("user", &turn.prompt_text(), "user"))?;
            session.append(EventDraft::step_start(n, 1))?;
            tokio::task::yield_now().await;
            assert_ne!(turn.prompt_text(), "panic", "the runner has a bug");
            let chunk = json!({"turn": n, "step": 1,
                               "chunk": {"type": "text-delta", "index": 0, "text": "waiting"}});
            session.append(EventDraft::new(ASSISTANT_CHUNK, chunk))?;
            turn.cancel.cancelled().await;
            session.append(EventDraft::step_end(n, 1))?;
            let reason = TurnEndReason::Aborted(Some(json!({"kind": "user"})));
            session.append(EventDraft::turn_end(n, reason))?;
            Ok::<(), TurnError>(())
        })
    }
}

struct WaitingRunnerPlugin;

impl Plugin for WaitingRunnerPlugin {
    const NAME: &'static str = "waiting-runner";
    const VERSION: &'static str = "0.1.0";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<dyn TurnRunner>()];
    type Config = NoConfig;
    type Deps = ();

    fn apply(&self, scope: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
        scope.provide::<dyn TurnRunner>(Arc::new(WaitingRunner))?;
        Ok(())
    }
}

/// A context with the session plugin, JSONL under `root`, `dsh-acp` and the waiting runner.
async fn context(root: std::path::PathBuf) -> Context {
    tokio::task::spawn_blocking(move || {
        let mut config = ContextConfig::default();
        config.set_config(SessionJsonlPlugin::NAME, json!({ "root": root }));
        Context::builder()
            .add_plugin(SessionPlugin)
            .add_plugin(SessionJsonlPlugin)
            .add_plugin(AcpPlugin)
            .add_plugin(WaitingRunnerPlugin)
            .with_config(config)
            .build()
    })
    .await
    .expect("the build runs")
    .expect("the context builds")
}

/// A client of a connection served in process: its input is a channel of chunks (a chunk may
/// be a read error), its output a pipe read line by line.
struct Client {
    input: mpsc::UnboundedSender<io::Result<Vec<u8>>>,
    lines: futures::io::Lines<BufReader<piper::Reader>>,
    serving: tokio::task::JoinHandle<Result<(), dsh_acp::AcpError>>,
}

impl Client {
    fn connect(ctx: &Context) -> Client {
        let server = ctx.expect::<AcpServer>();
        let (input, chunks) = mpsc::unbounded::<io::Result<Vec<u8>>>();
        let (lines, output) = piper::pipe(1 << 16);
        let serving =
            tokio::spawn(async move { server.serve(chunks.into_async_read(), output).await });
        Client {
            input,
            lines: BufReader::new(lines).lines(),
            serving,
        }
    }

    fn send(&self, request: Value) {
        self.input
            .unbounded_send(Ok(format!("{request}\n").into_bytes()))
            .expect("the server reads");
    }

    async fn next(&mut self) -> Value {
        let line = self.lines.next().await.expect("a line").expect("readable");
        serde_json::from_str(&line).expect("JSON")
    }

    /// `initialize`, then `session/new`: the session's id.
    async fn open(&mut self) -> String {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
        assert!(self.next().await["result"].is_object());
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                         "params": {"cwd": "/work/connection-end", "mcpServers": []}}));
        self.next().await["result"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned()
    }

    fn prompt(&self, session: &str, text: &str) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                         "params": {"sessionId": session,
                                    "prompt": [{"type": "text", "text": text}]}}),
        );
    }
}

/// The stored events of session `id`.
async fn stored(ctx: &Context, id: &str) -> Vec<dsh_session::SessionEvent> {
    let store = ctx.expect::<SessionStore>();
    let id = SessionId::from(id);
    tokio::task::spawn_blocking(move || store.read_stored(&id, None))
        .await
        .expect("the read runs")
        .expect("the session is stored")
        .events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_error_mid_turn_ends_the_connection_after_the_turn_is_closed_and_written() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let ctx = context(dir.path().to_owned()).await;
    let mut client = Client::connect(&ctx);
    let id = client.open().await;
    client.prompt(&id, "hi");
    let update = client.next().await;
    assert_eq!(
        update["params"]["update"]["content"]["text"], "waiting",
        "{update}"
    );
    client
        .input
        .unbounded_send(Err(io::Error::other("the pipe broke")))
        .expect("the server reads");
    // The prompt is answered before the connection ends.
    assert_eq!(client.next().await["result"]["stopReason"], "cancelled");
    let error = client
        .serving
        .await
        .expect("serve runs")
        .expect_err("a read error fails the connection");
    assert_eq!(error.code(), "CONNECTION_FAILED");
    assert!(error.to_string().contains("the pipe broke"), "{error}");
    let events = stored(&ctx, &id).await;
    let last = events.last().expect("events");
    assert_eq!(last.kind, "turn/end");
    assert_eq!(last.data.to_value()["reason"]["kind"], "aborted");
    tokio::task::spawn_blocking(move || drop(ctx))
        .await
        .expect("the context goes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_that_panics_has_its_turn_closed_as_interrupted_with_the_prompt_kept() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let ctx = context(dir.path().to_owned()).await;
    let mut client = Client::connect(&ctx);
    let id = client.open().await;
    client.prompt(&id, "panic");
    let answer = client.next().await;
    assert_eq!(
        answer["error"]["data"]["code"], "RUNNER_PANICKED",
        "{answer}"
    );
    let message = answer["error"]["data"]["message"]
        .as_str()
        .expect("a message");
    assert!(message.contains("the runner has a bug"), "{message}");
    let events = stored(&ctx, &id).await;
    let kinds: Vec<&str> = events.iter().map(|event| event.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "turn/start",
            "user/message",
            "step/start",
            "step/end",
            "turn/end"
        ]
    );
    assert_eq!(events[4].data.to_value()["reason"]["kind"], "interrupted");
    drop(client.input);
    client
        .serving
        .await
        .expect("serve runs")
        .expect("the input ended");
    tokio::task::spawn_blocking(move || drop(ctx))
        .await
        .expect("the context goes");
}
