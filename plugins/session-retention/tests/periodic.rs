//! The periodic run of `every` in a tokio host (feature `tokio`): at start, then once a
//! period, through the store's async face, and stopped with the plugin (disabled, or the
//! context disposed). Tokio's clock is paused, so the periods pass at once; the sessions'
//! ages are measured against the system clock, which the run reads.
#![cfg(feature = "tokio")]

mod support;

use dsh_core::Context;
use dsh_session_retention::RetentionRun;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{context, Memory, DAY};
use tokio::sync::mpsc;

/// The period of the tests.
const EVERY: Duration = Duration::from_secs(3600);

/// Stores `id` created 90 days before the system clock's now.
fn put_old(memory: &Memory, id: &str) {
    let now = u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    memory.put_at(id, now - 90 * DAY, None, None, None);
}

/// A context over `memory` running `maxAgeDays: 30` every hour, and the deleted counts of
/// its runs as they end.
fn periodic(memory: &Arc<Memory>) -> (Context, mpsc::UnboundedReceiver<usize>) {
    let ctx = context(memory, json!({"maxAgeDays": 30, "every": "1h"}));
    let (runs, ran) = mpsc::unbounded_channel();
    ctx.root()
        .on::<RetentionRun>(move |run| {
            let report = run.outcome.as_ref().expect("the run reaches the store");
            let _ = runs.send(report.deleted);
            Ok(())
        })
        .unwrap();
    (ctx, ran)
}

/// The deleted count of the next run, which must end within two periods.
async fn next_run(ran: &mut mpsc::UnboundedReceiver<usize>) -> usize {
    tokio::time::timeout(EVERY * 2, ran.recv())
        .await
        .expect("a run within two periods")
        .expect("the context is up")
}

#[tokio::test(start_paused = true)]
async fn the_periodic_run_deletes_at_start_then_once_a_period() {
    let memory = Arc::new(Memory::default());
    put_old(&memory, "first");
    let (_ctx, mut ran) = periodic(&memory);
    assert_eq!(next_run(&mut ran).await, 1, "the first run is at start");
    assert!(memory.ids().is_empty());
    put_old(&memory, "second");
    assert_eq!(next_run(&mut ran).await, 1, "the next one a period later");
    assert!(memory.ids().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_periodic_run_stops_when_the_plugin_is_disabled() {
    let memory = Arc::new(Memory::default());
    let (ctx, mut ran) = periodic(&memory);
    assert_eq!(next_run(&mut ran).await, 0);
    ctx.plugin("dsh-session-retention")
        .unwrap()
        .disable()
        .unwrap();
    put_old(&memory, "survivor");
    tokio::time::sleep(EVERY * 5).await;
    assert!(ran.try_recv().is_err(), "no run once disabled");
    assert_eq!(memory.ids(), ["survivor"]);
}

#[tokio::test(start_paused = true)]
async fn the_periodic_run_stops_when_the_context_is_disposed() {
    let memory = Arc::new(Memory::default());
    let (ctx, mut ran) = periodic(&memory);
    assert_eq!(next_run(&mut ran).await, 0);
    ctx.dispose();
    put_old(&memory, "survivor");
    tokio::time::sleep(EVERY * 5).await;
    assert_eq!(ran.recv().await, None, "the listener went with the context");
    assert_eq!(memory.ids(), ["survivor"]);
}

#[tokio::test(start_paused = true)]
async fn a_period_beyond_the_clock_runs_at_start_and_never_panics() {
    // 300 billion years: more seconds than a clock instant holds (Instant + period overflows).
    let memory = Arc::new(Memory::default());
    put_old(&memory, "old");
    let ctx = context(&memory, json!({"maxAgeDays": 30, "every": "300000000000y"}));
    let (runs, mut ran) = mpsc::unbounded_channel();
    ctx.root()
        .on::<RetentionRun>(move |run| {
            let _ = runs.send(run.outcome.as_ref().map(|r| r.deleted).ok());
            Ok(())
        })
        .unwrap();
    let first = tokio::time::timeout(EVERY, ran.recv()).await;
    assert_eq!(first.ok().flatten(), Some(Some(1)), "the run at start");
    assert!(memory.ids().is_empty());
}
