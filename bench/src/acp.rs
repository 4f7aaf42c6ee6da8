//! `acp` figures: the ACP server of `dsh-acp`, served in process over in-memory pipes (the
//! server's framing and serialization included, the client's reading of each line too), next
//! to the store calls it makes.
//!
//! - `load_replay_events_per_s`: `session/load` of a stored 100,000-event session (JSONL),
//!   events replayed per second (the session's events over the round trip, every
//!   `session/update` read), against what `dsh history --json` does with the same session in
//!   the same context (load it from the store, derive the model history, serialize it as one
//!   JSON document): `load_replay_ratio` (target >= 0.5). The session is closed after each
//!   load, so every load reads the file.
//! - `fork_rpc_us_N`: a `session/fork` round trip of an open session of N = 1,000 and 100,000
//!   events in a store without a backend (the child lives in memory): the RPC and the fork
//!   itself, whose seed shares the source's events; `fork_rpc_growth` (100,000 over 1,000;
//!   target <= 1.2). `fork_rpc_persisted_us_N` is the same round trip with the JSONL backend,
//!   where the child's file is written with its seed before the answer (dsh's file format
//!   holds the whole seed), so it grows with N: shown, not targeted.
//! - `fork_message_rpc_us_N`: a `session/fork` round trip at a message
//!   (`_meta.jetbrains.air.fork`, the session's last user message: retry or edit the last
//!   prompt, where editors fork most) of a session of N = 1,000 and 100,000 events opened by
//!   a `session/load`, without a backend (the child shares the source's events): the id is
//!   resolved from the index the replay built, so it stays flat; `fork_message_growth`
//!   (100,000 over 1,000; target flat). `fork_message_oldest_rpc_us_N` forks at the user
//!   message of turn 2, which has left the bounded index at 100,000 events, so its id is
//!   looked up in the log: shown, not targeted.
//! - `load_first_update_ms_S` and `load_peak_bytes_S` ([`crate::acp_load`]): `session/load`
//!   of a stored JSONL session of S = 1, 10 and 100 MB.
//! - `prompt_rpc_us`: a `session/prompt` round trip of a one-step turn run by [`BenchRunner`]
//!   (the prompt, a yield where a model call would be, one assistant message), in a store
//!   without a backend; `prompt_rpc_persisted_us` the same with the JSONL backend, where the
//!   turn is written durably before the answer. Shown, not targeted: the persisted figure is
//!   what the durability of a turn costs.

use crate::generate;
use crate::measure::{median, paired_medians, time, us, Plan};
use dsh::acp::{AcpPlugin, AcpServer, Turn, TurnError, TurnFuture, TurnRunner};
use dsh::core::{BoxError, NoConfig, Plugin, Scope, ServiceKey};
use dsh::session::{
    CreateOptions, EventDraft, SessionId, SessionMeta, SessionPlugin, SessionStore, TurnEndReason,
};
use dsh::session_fork::SessionForkPlugin;
use dsh::session_jsonl::SessionJsonlPlugin;
use dsh::{Context, ContextConfig};
use futures::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use futures::StreamExt;
use serde_json::{json, Value};
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

/// Events of the replayed session.
pub const LOAD_EVENTS: usize = 100_000;
/// Source lengths of the fork round trips.
pub const FORK_SIZES: [usize; 2] = [1_000, 100_000];

/// Prompts timed per repetition of the prompt scenario.
pub const PROMPTS: usize = 20;

/// The turn runner of the prompt figures: a one-step turn as a model-backed runner writes it,
/// `turn/start`, the prompt as `user/message`, a yield to the runtime where the model call
/// would be, then `step/start`, one `assistant/message`, `step/end` and `turn/end`.
pub struct BenchRunner;

impl TurnRunner for BenchRunner {
    fn run(&self, turn: Turn) -> TurnFuture {
        Box::pin(bench_turn(turn))
    }
}

async fn bench_turn(turn: Turn) -> Result<(), TurnError> {
    let (number, text, session) = (turn.number(), turn.prompt_text(), &turn.session);
    session.append(EventDraft::turn_start(number))?;
    session.append(EventDraft::user_text(
        &format!("bench-user-{number}"),
        &text,
        "user",
    ))?;
    tokio::task::yield_now().await;
    session.append(EventDraft::step_start(number, 1))?;
    session.append(EventDraft::assistant_text(
        number,
        1,
        &format!("bench-assistant-{number}"),
        &text,
        "bench",
        "bench-1",
    ))?;
    session.append(EventDraft::step_end(number, 1))?;
    session.append(EventDraft::turn_end(number, TurnEndReason::Completed))?;
    Ok(())
}

/// The plugin providing [`BenchRunner`].
#[derive(Clone, Copy, Debug, Default)]
pub struct BenchRunnerPlugin;

impl Plugin for BenchRunnerPlugin {
    const NAME: &'static str = "bench-runner";
    const VERSION: &'static str = "0.1.0";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<dyn TurnRunner>()];
    type Config = NoConfig;
    type Deps = ();

    fn apply(&self, scope: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
        scope.provide::<dyn TurnRunner>(Arc::new(BenchRunner))?;
        Ok(())
    }
}

/// The session plugin, the fork plugin, the ACP plugin, the bench's turn runner, and (with
/// `root`) the JSONL backend storing under `root`.
///
/// # Panics
/// When the context does not build.
pub fn context(root: Option<&Path>) -> Context {
    let mut builder = Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(SessionForkPlugin)
        .add_plugin(AcpPlugin)
        .add_plugin(BenchRunnerPlugin);
    if let Some(root) = root {
        let mut config = ContextConfig::default();
        config.set_config(
            <SessionJsonlPlugin as dsh::Plugin>::NAME,
            json!({ "root": root }),
        );
        builder = builder.add_plugin(SessionJsonlPlugin).with_config(config);
    }
    builder.build().expect("the acp bench context builds")
}

/// The id of the last `user/message` of open session `id`: where an editor forks most often
/// (retry or edit the last prompt).
fn newest_user_message(ctx: &Context, id: &SessionId) -> String {
    let session = ctx
        .expect::<SessionStore>()
        .get(id)
        .expect("an open session");
    let events = session.events();
    let message = events
        .newest_first()
        .find(|event| event.kind == dsh::session::event_type::USER_MESSAGE)
        .expect("a generated session has a user message");
    let data: serde_json::Value = message.data.parse_as().expect("a generated user message");
    data["id"]
        .as_str()
        .expect("a generated user message has an id")
        .to_owned()
}

/// Creates session `id` seeded with `len` generated events (none for 0; else at least one
/// turn, 24 events), written to the backend, if any, and returns it open in the store.
///
/// # Panics
/// When the store refuses the log, or `len` is from 1 to 23.
pub fn create(ctx: &Context, id: &str, len: usize) -> SessionId {
    let store = ctx.expect::<SessionStore>();
    let meta = SessionMeta::default().cwd("/bench");
    let options = match len {
        0 => CreateOptions::meta(meta),
        len => CreateOptions::new(generate::events(len), meta),
    };
    let session = store
        .create(Some(SessionId::from(id)), options)
        .expect("the generated log is a valid seed");
    session.id().clone()
}

/// Bytes an in-memory pipe between the client and the server holds.
const PIPE_BYTES: usize = 1 << 20;

/// An ACP client connected in process to a server: requests written as lines, every line the
/// server writes read back.
pub struct Client {
    requests: piper::Writer,
    lines: Lines<BufReader<piper::Reader>>,
    next_id: u64,
}

impl Client {
    /// Connects to `server` (served on `runtime`) and initializes the connection.
    ///
    /// # Panics
    /// When `initialize` fails.
    pub fn connect(runtime: &tokio::runtime::Runtime, server: &AcpServer) -> Client {
        let (input, requests) = piper::pipe(PIPE_BYTES);
        let (lines, output) = piper::pipe(PIPE_BYTES);
        let lines = BufReader::new(lines).lines();
        let server = server.clone();
        runtime.spawn(async move { server.serve(input, output).await });
        let mut client = Client {
            requests,
            lines,
            next_id: 0,
        };
        let init = runtime.block_on(client.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        ));
        assert!(init.0["result"].is_object(), "initialize: {}", init.0);
        client
    }

    /// Sends request `method` and reads until its answer; returns the answer and how many
    /// notifications came before it.
    ///
    /// # Panics
    /// When the connection closes first.
    pub async fn call(&mut self, method: &str, params: Value) -> (Value, usize) {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let line = format!("{request}\n");
        self.requests
            .write_all(line.as_bytes())
            .await
            .expect("the server reads");
        let mut notifications = 0;
        loop {
            let line = self
                .lines
                .next()
                .await
                .expect("the server answers")
                .expect("the server's output reads");
            if line.contains("\"method\":\"session/update\"") {
                notifications += 1;
                black_box(&line);
                continue;
            }
            let answer: Value = serde_json::from_str(&line).expect("an answer is JSON");
            if answer["id"] == json!(id) {
                return (answer, notifications);
            }
        }
    }

    /// [`Client::call`], also timing the first `session/update` from the request's send:
    /// the answer, the notifications before it, and that time (`None` when none came).
    ///
    /// # Panics
    /// When the connection closes first.
    pub async fn call_timed(
        &mut self,
        method: &str,
        params: Value,
    ) -> (Value, usize, Option<std::time::Duration>) {
        let start = std::time::Instant::now();
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.requests
            .write_all(format!("{request}\n").as_bytes())
            .await
            .expect("the server reads");
        let (mut notifications, mut first) = (0, None);
        loop {
            let line = self
                .lines
                .next()
                .await
                .expect("the server answers")
                .expect("the server's output reads");
            if line.contains("\"method\":\"session/update\"") {
                first.get_or_insert_with(|| start.elapsed());
                notifications += 1;
                black_box(&line);
                continue;
            }
            let answer: Value = serde_json::from_str(&line).expect("an answer is JSON");
            if answer["id"] == json!(id) {
                return (answer, notifications, first);
            }
        }
    }

    /// [`Client::call`] for a request that must succeed: its result.
    ///
    /// # Panics
    /// When the answer is an error.
    pub async fn ok(&mut self, method: &str, params: Value) -> (Value, usize) {
        let (answer, notifications) = self.call(method, params).await;
        assert!(answer["error"].is_null(), "{method}: {answer}");
        (answer["result"].clone(), notifications)
    }
}

/// What `dsh history --json` does with stored session `id`: load it, derive the history,
/// serialize it; then close it. Returns the seconds of the first three and the event count.
///
/// # Panics
/// When the load fails.
pub fn history_once(store: &SessionStore, id: &SessionId) -> (f64, usize) {
    let mut len = 0;
    let elapsed = time(|| {
        let session = store.load(id).expect("the stored session loads");
        len = session.len();
        let messages = session.derive_messages();
        let document = Value::Array(messages.iter().map(|m| m.value()).collect()).to_string();
        black_box(document);
    });
    store.dispose(id).expect("the session closes");
    (elapsed.as_secs_f64(), len)
}

/// A `session/load` round trip of stored session `id`, then its close (untimed). Returns the
/// seconds and the number of updates replayed.
///
/// # Panics
/// When the load or the close fails.
pub fn load_once(
    runtime: &tokio::runtime::Runtime,
    client: &mut Client,
    id: &SessionId,
) -> (f64, usize) {
    let params = json!({"sessionId": id.as_str(), "cwd": "/bench", "mcpServers": []});
    let mut updates = 0;
    let elapsed = time(|| {
        updates = runtime.block_on(client.ok("session/load", params)).1;
    });
    runtime.block_on(client.ok("session/close", json!({"sessionId": id.as_str()})));
    (elapsed.as_secs_f64(), updates)
}

/// A `session/fork` round trip of open session `id` in microseconds; the child is closed
/// afterwards, untimed.
///
/// # Panics
/// When the fork fails.
pub fn fork_once(runtime: &tokio::runtime::Runtime, client: &mut Client, id: &SessionId) -> f64 {
    fork_once_with(runtime, client, id, None)
}

/// As [`fork_once`], with the request's `_meta` (a message anchor) when given.
///
/// # Panics
/// When the fork or the close fails.
pub fn fork_once_with(
    runtime: &tokio::runtime::Runtime,
    client: &mut Client,
    id: &SessionId,
    meta: Option<Value>,
) -> f64 {
    let mut params = json!({"sessionId": id.as_str(), "cwd": "/bench"});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    let mut child = Value::Null;
    let elapsed = time(|| child = runtime.block_on(client.ok("session/fork", params)).0);
    let child = child["sessionId"]
        .as_str()
        .expect("the child's id")
        .to_owned();
    runtime.block_on(client.ok("session/close", json!({"sessionId": child})));
    us(elapsed)
}

/// [`PROMPTS`] `session/prompt` round trips in session `id` (open); the median in
/// microseconds.
///
/// # Panics
/// When a prompt fails.
pub fn prompt_us(runtime: &tokio::runtime::Runtime, client: &mut Client, id: &SessionId) -> f64 {
    let params = json!({"sessionId": id.as_str(), "prompt": [{"type": "text", "text": "bench"}]});
    let samples = (0..PROMPTS)
        .map(|_| {
            let mut answer = Value::Null;
            let elapsed = time(|| {
                answer = runtime
                    .block_on(client.ok("session/prompt", params.clone()))
                    .0
            });
            assert_eq!(answer["stopReason"], "end_turn", "{answer}");
            us(elapsed)
        })
        .collect();
    median(samples)
}

/// The runtime the server runs on: two workers, as the machine has.
///
/// # Panics
/// When the runtime cannot start.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Runs the `acp` scenarios with `plan`, calling `progress` as each starts.
///
/// # Panics
/// When a scenario fails (see the functions above).
pub fn measure(plan: Plan, mut progress: impl FnMut(&str)) -> Vec<(String, f64)> {
    let quick = plan != Plan::FULL;
    let reps = if quick { 3 } else { 9 };
    let runtime = runtime();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut figures = Vec::new();

    progress("session/load of a 100,000-event session against dsh history");
    let ctx = context(Some(dir.path()));
    let id = create(&ctx, "acp-load", LOAD_EVENTS);
    let store = ctx.expect::<SessionStore>();
    store
        .dispose(&id)
        .expect("the source is written and closed");
    let server = ctx.expect::<AcpServer>();
    let mut client = Client::connect(&runtime, &server);
    load_once(&runtime, &mut client, &id); // warm-up
    let (acp_s, history_s) = paired_medians(
        reps,
        || load_once(&runtime, &mut client, &id).0,
        || history_once(&store, &id).0,
    );
    let acp_rate = LOAD_EVENTS as f64 / acp_s;
    let history_rate = LOAD_EVENTS as f64 / history_s;
    figures.push(("load_replay_events_per_s".to_owned(), acp_rate));
    figures.push(("baseline_history_events_per_s".to_owned(), history_rate));
    figures.push(("load_replay_ratio".to_owned(), acp_rate / history_rate));
    drop(client);
    drop(ctx);

    let mut fork_us = Vec::new();
    for len in FORK_SIZES {
        progress(&format!("session/fork of a {len}-event session"));
        let ctx = context(None);
        let id = create(&ctx, "acp-fork", len);
        let mut client = Client::connect(&runtime, &ctx.expect::<AcpServer>());
        fork_once(&runtime, &mut client, &id); // warm-up
        let rpc = median(
            (0..reps * 10)
                .map(|_| fork_once(&runtime, &mut client, &id))
                .collect(),
        );
        figures.push((format!("fork_rpc_us_{len}"), rpc));
        fork_us.push(rpc);
    }
    figures.push(("fork_rpc_growth".to_owned(), fork_us[1] / fork_us[0]));

    let mut message_us = Vec::new();
    for len in FORK_SIZES {
        progress(&format!(
            "session/fork at a message of a {len}-event session"
        ));
        let ctx = context(None);
        let id = create(&ctx, "acp-fork-message", len);
        let newest = newest_user_message(&ctx, &id);
        let mut client = Client::connect(&runtime, &ctx.expect::<AcpServer>());
        // Opened by a load, as an editor opens it: the replay indexes the message ids.
        let params = json!({"sessionId": id.as_str(), "cwd": "/bench", "mcpServers": []});
        runtime.block_on(client.ok("session/load", params));
        for (name, message) in [
            ("fork_message", newest.as_str()),
            ("fork_message_oldest", "user-2"),
        ] {
            let anchor =
                json!({"jetbrains": {"air": {"fork": {"version": 1, "messageId": message}}}});
            fork_once_with(&runtime, &mut client, &id, Some(anchor.clone())); // warm-up
            let rpc = median(
                (0..reps)
                    .map(|_| fork_once_with(&runtime, &mut client, &id, Some(anchor.clone())))
                    .collect(),
            );
            figures.push((format!("{name}_rpc_us_{len}"), rpc));
            if name == "fork_message" {
                message_us.push(rpc);
            }
        }
    }
    figures.push((
        "fork_message_growth".to_owned(),
        message_us[1] / message_us[0],
    ));

    figures.extend(crate::acp_load::measure(
        &runtime,
        dir.path(),
        reps.min(5),
        &mut progress,
    ));

    for len in FORK_SIZES {
        progress(&format!("session/fork of a {len}-event session, JSONL"));
        let ctx = context(Some(&dir.path().join(format!("fork-{len}"))));
        let id = create(&ctx, "acp-fork", len);
        let mut client = Client::connect(&runtime, &ctx.expect::<AcpServer>());
        let rpc = median(
            (0..reps)
                .map(|_| fork_once(&runtime, &mut client, &id))
                .collect(),
        );
        figures.push((format!("fork_rpc_persisted_us_{len}"), rpc));
    }

    for (figure, root) in [
        ("prompt_rpc_us", None),
        ("prompt_rpc_persisted_us", Some(dir.path().join("prompt"))),
    ] {
        progress(&format!("session/prompt of a one-step turn ({figure})"));
        let ctx = context(root.as_deref());
        let id = create(&ctx, "acp-prompt", 0);
        let mut client = Client::connect(&runtime, &ctx.expect::<AcpServer>());
        prompt_us(&runtime, &mut client, &id); // warm-up
        let rpc = median(
            (0..reps)
                .map(|_| prompt_us(&runtime, &mut client, &id))
                .collect(),
        );
        figures.push((figure.to_owned(), rpc));
    }
    figures
}
