//! A turn-runner plugin for `dsh acp`, the worked example for plugin authors: it answers each
//! prompt with the prompt's own text, and a host that links it is `dsh acp` with prompts.
//!
//! ```text
//! cargo run -p dsh-host --example acp_echo_runner -- --store /tmp/acp-demo
//! ```
//!
//! takes the flags of `dsh` (`--store`, `--config`, `--disable`) and speaks ACP on stdin and
//! stdout exactly as `dsh acp` does, plus `session/prompt`. The runner is a plugin like any
//! other: a type implementing `Plugin` whose `apply` provides the `dyn TurnRunner` service of
//! `dsh-acp`, registered with `submit_plugin!`; `dsh-acp` finds it through the context, so
//! neither crate names the other beyond that trait.
//!
//! Each turn it writes `turn/start`, the prompt as `user/message`, one step holding the
//! answer as `assistant/message` (`echo: ` and the prompt's text), and `turn/end`; `dsh-acp`
//! streams the answer to the client, flushes the session and answers `end_turn`. A prompt
//! `/sleep MS` waits that many milliseconds before it answers, and a turn cancelled meanwhile
//! ends with `turn/end` reason `aborted` (stop reason `cancelled`), with no answer.
//!
//! Two prompts keep a turn running, for tests of what `dsh acp` does meanwhile (a crash, the
//! editor going away, a fork): `/wait` answers in a first step, opens a second one, streams
//! `waiting` as an `assistant/chunk` (the client sees it once the first step is durable; in a
//! v0 or v1 session, whose vocabulary has chunks) and
//! waits until the turn is cancelled, then ends it `aborted`; `/hang` does the same but never
//! heeds the cancellation (a runner stuck in a call), so only `dsh acp`'s bounded wait ends
//! it.

use clap::Parser;
use dsh::acp::acp::v1::schema::ContentBlock;
use dsh::acp::{Turn, TurnError, TurnFuture, TurnRunner};
use dsh::core::{BoxError, NoConfig, Plugin, Scope, ServiceKey};
use dsh::session::{EventDraft, TurnEndReason};
use dsh_host::{HostConfig, HostError, Sources};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The runner: the service the plugin provides.
struct EchoRunner;

impl TurnRunner for EchoRunner {
    fn run(&self, turn: Turn) -> TurnFuture {
        Box::pin(echo(turn))
    }
}

/// One turn: the prompt, an optional wait, the echo, and for `/wait` and `/hang` a second
/// step that waits.
async fn echo(turn: Turn) -> Result<(), TurnError> {
    let number = turn.number();
    let text = turn.prompt_text();
    let session = &turn.session;
    let waits = match text.trim() {
        "/wait" => Some(Heed::Cancel),
        "/hang" => Some(Heed::Nothing),
        _ => None,
    };
    session.append(EventDraft::turn_start(number))?;
    let user = json!({
        "id": format!("echo-user-{number}"),
        "role": "user",
        "content": turn.prompt.iter().filter_map(block).collect::<Vec<_>>(),
        "source": { "kind": "user" },
    });
    session.append(
        EventDraft::new(dsh::session::event_type::USER_MESSAGE, user)
            .surface(dsh::session::SurfaceOp::Append),
    )?;
    session.append(EventDraft::step_start(number, 1))?;
    if let Some(ms) = text
        .strip_prefix("/sleep ")
        .and_then(|ms| ms.trim().parse().ok())
    {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(ms)) => {}
            () = turn.cancel.cancelled() => {}
        }
    }
    if turn.cancel.is_cancelled() {
        session.append(EventDraft::step_end(number, 1))?;
        let reason = TurnEndReason::Aborted(Some(json!({ "kind": "user" })));
        session.append(EventDraft::turn_end(number, reason))?;
        return Ok(());
    }
    session.append(EventDraft::assistant_text(
        number,
        1,
        &format!("echo-assistant-{number}"),
        &format!("echo: {text}"),
        "echo",
        "echo-1",
    ))?;
    session.append(EventDraft::step_end(number, 1))?;
    if let Some(heed) = waits {
        session.append(EventDraft::step_start(number, 2))?;
        let chunk = json!({
            "turn": number,
            "step": 2,
            "chunk": { "type": "text-delta", "index": 0, "text": "waiting" },
        });
        // `assistant/chunk` is rc.8's (v0 and v1) vocabulary: a v2 or v3 session folds a
        // stream into its `assistant/message`, so nothing is streamed there.
        let kind = dsh::session::event_type::ASSISTANT_CHUNK;
        if session.header().format().is_known_type(kind) {
            session.append(EventDraft::new(kind, chunk))?;
        }
        match heed {
            Heed::Cancel => turn.cancel.cancelled().await,
            Heed::Nothing => std::future::pending().await,
        }
        session.append(EventDraft::step_end(number, 2))?;
        let reason = TurnEndReason::Aborted(Some(json!({ "kind": "user" })));
        session.append(EventDraft::turn_end(number, reason))?;
        return Ok(());
    }
    session.append(EventDraft::turn_end(number, TurnEndReason::Completed))?;
    Ok(())
}

/// What a waiting turn (`/wait`, `/hang`) waits for.
#[derive(Clone, Copy)]
enum Heed {
    /// The turn's cancellation.
    Cancel,
    /// Nothing: it waits until it is dropped.
    Nothing,
}

/// A prompt block as a dsh content block: text as it is, anything else named by its type.
fn block(block: &ContentBlock) -> Option<serde_json::Value> {
    match block {
        ContentBlock::Text(text) => Some(json!({ "type": "text", "text": text.text })),
        _ => None,
    }
}

/// The plugin: provides `dyn TurnRunner`.
#[derive(Clone, Copy, Debug, Default)]
struct EchoRunnerPlugin;

impl Plugin for EchoRunnerPlugin {
    const NAME: &'static str = "acp-echo-runner";
    const VERSION: &'static str = "0.1.0";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<dyn TurnRunner>()];
    type Config = NoConfig;
    type Deps = ();

    fn apply(&self, scope: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
        scope.provide::<dyn TurnRunner>(Arc::new(EchoRunner))?;
        Ok(())
    }
}

dsh::core::submit_plugin!(EchoRunnerPlugin);

/// `dsh acp` with the echo runner: the global flags of `dsh`.
#[derive(Debug, Parser)]
#[command(
    name = "acp_echo_runner",
    about = "dsh acp with an echoing turn runner"
)]
struct Args {
    /// Session store (as `dsh --store`).
    #[arg(long)]
    store: Option<std::path::PathBuf>,
    /// JSON config file (as `dsh --config`), watched for edits.
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Disable a plugin by name (repeatable).
    #[arg(long)]
    disable: Vec<String>,
}

fn serve(args: Args) -> Result<(), HostError> {
    let mut sources = Sources::from_env();
    sources.store = args.store;
    sources.config_file = args.config;
    sources.disable = args.disable;
    let runtime = dsh_host::acp::runtime()?;
    let ctx = {
        let _inside = runtime.enter();
        HostConfig::resolve(&sources)?.build()?
    };
    ctx.expect_plugins(&[EchoRunnerPlugin::NAME, dsh::acp::AcpPlugin::NAME])?;
    dsh_host::acp::serve_stdio(&runtime, &ctx, &sources)
}

fn main() -> std::process::ExitCode {
    match serve(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error [{}]: {}", error.code, error.message);
            std::process::ExitCode::FAILURE
        }
    }
}
