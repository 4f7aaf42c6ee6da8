//! A connection whose input fails while a turn runs (a read error: what the `dsh` binary
//! cannot be made to meet on a pipe): the turn is cancelled, closed and written before
//! `serve` returns `CONNECTION_FAILED`. In process, over a JSONL store.

use dsh_acp::{AcpPlugin, AcpServer, Turn, TurnError, TurnFuture, TurnRunner};
use dsh_core::{BoxError, Context, ContextConfig, NoConfig, Plugin, Scope, ServiceKey};
use dsh_session::event::ASSISTANT_CHUNK;
use dsh_session::{EventDraft, SessionId, SessionPlugin, SessionStore, TurnEndReason};
use dsh_session_jsonl::SessionJsonlPlugin;
use futures::channel::mpsc;
use futures::io::{AsyncBufReadExt, BufReader};
use futures::{StreamExt, TryStreamExt};
use serde_json::{json, Value};
use std::io;
use std::sync::Arc;

/// A runner whose turn streams one chunk, then waits until it is cancelled and ends
/// `aborted`.
struct WaitingRunner;

impl TurnRunner for WaitingRunner {
    fn run(&self, turn: Turn) -> TurnFuture {
        Box::pin(async move {
            let (n, session) = (turn.number(), &turn.session);
            session.append(EventDraft::turn_start(n))?;
            session.append(EventDraft::user_text("user", &turn.prompt_text(), "user"))?;
            session.append(EventDraft::step_start(n, 1))?;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_error_mid_turn_ends_the_connection_after_the_turn_is_closed_and_written() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = dir.path().to_owned();
    let ctx = tokio::task::spawn_blocking(move || {
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
    .expect("the context builds");
    let server = ctx.expect::<AcpServer>();
    let (input, chunks) = mpsc::unbounded::<io::Result<Vec<u8>>>();
    let (lines, output) = piper::pipe(1 << 16);
    let serving = tokio::spawn(async move { server.serve(chunks.into_async_read(), output).await });
    let mut lines = BufReader::new(lines).lines();
    let send = |request: Value| {
        input
            .unbounded_send(Ok(format!("{request}\n").into_bytes()))
            .expect("the server reads");
    };
    let mut next = async || -> Value {
        let line = lines.next().await.expect("a line").expect("readable");
        serde_json::from_str(&line).expect("JSON")
    };
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    assert!(next().await["result"].is_object());
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                "params": {"cwd": "/work/read-error", "mcpServers": []}}));
    let id = next().await["result"]["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned();
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                "params": {"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}}),
    );
    let update = next().await;
    assert_eq!(
        update["params"]["update"]["content"]["text"], "waiting",
        "{update}"
    );
    input
        .unbounded_send(Err(io::Error::other("the pipe broke")))
        .expect("the server reads");
    // The prompt is answered before the connection ends.
    assert_eq!(next().await["result"]["stopReason"], "cancelled");
    let error = serving
        .await
        .expect("serve runs")
        .expect_err("a read error fails the connection");
    assert_eq!(error.code(), "CONNECTION_FAILED");
    assert!(error.to_string().contains("the pipe broke"), "{error}");
    let store = ctx.expect::<SessionStore>();
    let id = SessionId::from(id.as_str());
    let stored = tokio::task::spawn_blocking(move || store.read_stored(&id, None))
        .await
        .expect("the read runs")
        .expect("the session is stored");
    let last = stored.events.last().expect("events");
    assert_eq!(last.kind, "turn/end");
    assert_eq!(last.data.to_value()["reason"]["kind"], "aborted");
    tokio::task::spawn_blocking(move || drop(ctx))
        .await
        .expect("the context goes");
}
