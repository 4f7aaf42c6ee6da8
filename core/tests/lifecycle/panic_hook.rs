//! `expect`'s panic runs the process's panic hook: a host hook that prints the plugin table
//! must be able to read the context.
//!
//! A panic hook is process-global and this binary runs its tests in parallel: the hook
//! installed here acts only on its own worker thread (by name) and hands every other panic to
//! the hook it replaced, then the default hook is put back.

use crate::common::{panic_text, Log, Slot};
use dsh_core::{plugin_fn, Context};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::Duration;

pub struct Missing;

#[test]
fn a_panic_hook_can_read_the_context_while_expect_panics() {
    let root: Slot<Context> = Slot::new();
    let hook_saw = Log::new();
    let provider = plugin_fn("ph-provider", |_, ()| Ok(()))
        .provides::<Missing>()
        .enabled_by_default(false);

    let ctx = Context::builder().add_plugin(provider).build().unwrap();
    root.put(ctx.clone());
    let default_hook = std::panic::take_hook();
    {
        let root = root.clone();
        let hook_saw = hook_saw.clone();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some("expect-worker") {
                if let Some(root) = root.try_get() {
                    let table: Vec<String> = root
                        .plugins()
                        .iter()
                        .map(|p| format!("{}={}", p.name, p.state))
                        .collect();
                    hook_saw.push(table.join(","));
                }
            } else {
                default_hook(info);
            }
        }));
    }

    let (tx, rx) = mpsc::channel();
    let worker_ctx = ctx.clone();
    std::thread::Builder::new()
        .name("expect-worker".into())
        .spawn(move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                worker_ctx.expect::<Missing>();
            }));
            let _ = tx.send(panic_text(outcome.unwrap_err().as_ref()));
        })
        .unwrap();
    let Ok(message) = rx.recv_timeout(Duration::from_secs(10)) else {
        // The worker is stuck inside the panic hook, which holds the process's hook lock: a
        // panic here could hang too, so leave at once.
        eprintln!("expect's panic deadlocked the panic hook (registry lock held while panicking)");
        std::process::abort();
    };
    let _ = std::panic::take_hook();
    assert_eq!(
        message,
        "service Missing is not available: its provider plugin \"ph-provider\" is disabled"
    );
    assert_eq!(hook_saw.take(), ["ph-provider=disabled"]);
    root.clear();
}
