//! A tokio host of dsh-rs: sessions written from concurrent tasks through the async face, a
//! fork of a stored session, the lineage, all without blocking a runtime worker.
//!
//! ```text
//! cargo run --example tokio_host --features tokio -- jsonl DIR
//! cargo run --example tokio_host --features tokio -- sqlite FILE
//! cargo run --example tokio_host --features tokio,session-postgres -- postgres URL
//! ```
//!
//! Prints one JSON line: the events each task stored, the fork child and the lineage. The
//! context is built by the host layer (`HostConfig`, from the store value `KIND:TARGET`, as
//! `dsh --store` reads it), and built and dropped on the blocking pool: a backend plugin may do I/O in its
//! apply and its teardown (the PostgreSQL one connects; every store drains its sessions).

use dsh::session::{
    AsyncSessionStore, CreateOptions, EventDraft, SessionId, SessionMeta, SessionStore,
    TurnEndReason,
};
use dsh::session_fork::{AsyncSessionFork, ForkSessionOptions, SessionFork};
use dsh_host::{HostConfig, Sources};
use serde_json::json;

/// Tasks writing at once, and the turns each writes (flushing after every one).
const TASKS: usize = 4;
const TURNS: u64 = 5;

fn turn(turn: u64) -> Vec<EventDraft> {
    vec![
        EventDraft::turn_start(turn),
        EventDraft::user_text(&format!("u{turn}"), "What next?", "user"),
        EventDraft::step_start(turn, 1),
        EventDraft::assistant_text(turn, 1, &format!("a{turn}"), "This.", "deepseek", "v3"),
        EventDraft::step_end(turn, 1),
        EventDraft::turn_end(turn, TurnEndReason::Completed),
    ]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    match host().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("tokio_host: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn host() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, target] = args.as_slice() else {
        return Err("usage: tokio_host jsonl DIR | sqlite FILE | postgres URL".into());
    };
    // The host layer: the store value picks the backend, as `dsh --store KIND:TARGET` does.
    let mut config = HostConfig::resolve(&Sources::default().store(format!("{kind}:{target}")))?;
    if kind == "postgres" {
        // A schema of this run's own, so that runs never see each other's sessions.
        let schema = format!("tokio_host_{}", std::process::id());
        config
            .plugins
            .entry("dsh-session-postgres".into())
            .or_default()
            .config = json!({ "schema": schema });
    }
    let ctx = tokio::task::spawn_blocking(move || config.build()).await??;
    let store = AsyncSessionStore::new(ctx.expect::<SessionStore>());
    let run = std::process::id();

    let tasks: Vec<_> = (0..TASKS)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move {
                let id = SessionId::from(format!("tokio-host-{run}-{n}"));
                let meta = SessionMeta::default().cwd("/work/project");
                let session = store.create(Some(id), CreateOptions::meta(meta)).await?;
                for n in 1..=TURNS {
                    for draft in turn(n) {
                        session.append(draft)?;
                    }
                    store.flush(&session).await?;
                }
                store.dispose(session.id()).await?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>((
                    session.id().as_str().to_owned(),
                    session.len(),
                ))
            })
        })
        .collect();
    let mut stored = Vec::new();
    for task in tasks {
        stored.push(task.await?.map_err(|e| e.to_string())?);
    }

    let fork = AsyncSessionFork::new(ctx.expect::<SessionFork>());
    let source = SessionId::from(stored[0].0.as_str());
    let child = fork
        .fork_stored(ForkSessionOptions::new(source.clone()).at(11))
        .await?;
    store.flush(&child).await?;
    let lineage = fork.lineage(child.id()).await?;
    let loaded = store.load(&source).await?;
    println!(
        "{}",
        json!({
            "backend": kind,
            "sessions": stored.iter().map(|(id, len)| json!({"id": id, "events": len})).collect::<Vec<_>>(),
            "reloaded": loaded.len(),
            "child": {"id": child.id(), "seedLength": child.seed_len()},
            "lineage": lineage,
        })
    );
    drop((store, fork, child, loaded));
    tokio::task::spawn_blocking(move || drop(ctx)).await?;
    Ok(())
}
