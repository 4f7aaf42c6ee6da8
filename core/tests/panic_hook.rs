//! `expect`'s panic runs the process's panic hook: a host hook that prints the plugin table
//! must be able to read the context. Its own binary, since a panic hook is process-global.

mod common;

use common::{panic_text, Log, Stash};
use dsh_core::{BoxError, Context, PluginDescriptor, ServiceKey};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::Duration;

pub struct Missing;

fn nothing(_: &Context) -> Result<(), BoxError> {
    Ok(())
}

#[test]
fn a_panic_hook_can_read_the_context_while_expect_panics() {
    static ROOT: Stash = Stash::new();
    static HOOK_SAW: Log = Log::new();
    static PROVIDER: PluginDescriptor = PluginDescriptor::new("ph-provider", nothing)
        .provides(&[ServiceKey::of::<Missing>()])
        .enabled_by_default(false);

    let ctx = Context::builder().plugin(&PROVIDER).build().unwrap();
    ROOT.put(&ctx);
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some("expect-worker") {
            if let Some(root) = ROOT.try_get() {
                let table: Vec<String> = root
                    .plugins()
                    .iter()
                    .map(|p| format!("{}={}", p.name, p.state))
                    .collect();
                HOOK_SAW.push(table.join(","));
            }
        } else {
            default_hook(info);
        }
    }));

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
    assert_eq!(HOOK_SAW.take(), ["ph-provider=disabled"]);
    ROOT.clear();
}
