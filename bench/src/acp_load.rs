//! `acp` figures of a streamed `session/load` ([`measure`]): stored sessions of about 1, 10
//! and 100 MB as JSONL (generated turns, [`crate::generate`]; the same events in every
//! backend of [`Backend::all`]: `jsonl`, `sqlite`, and `postgres` when configured), each
//! loaded once over an in-process connection, figures named `..._BACKEND_Smb`:
//!
//! - `load_first_update_ms_S`: from the request written to the first `session/update` read
//!   by the client, in milliseconds (target: within 50 ms at 100 MB);
//! - `load_peak_bytes_S`: the most heap the process held during the request above what it
//!   held before it ([`crate::alloc::peak`]; 0 where the counting allocator is not installed),
//!   in bytes (target: flat in the size);
//! - `load_stored_mb_S` (JSONL): the stored file's size, in MB, as generated.
//!
//! The session is stored and closed before the load, so the load streams the file.

use crate::acp::{context, create, BenchRunnerPlugin, Client};
use crate::alloc;
use crate::measure::median;
use crate::persist::Backend;
use dsh::acp::{AcpPlugin, AcpServer};
use dsh::session::SessionStore;
use dsh::session_fork::SessionForkPlugin;
use serde_json::json;
use std::path::Path;

/// The sizes loaded, in MB (10^6 bytes), with the figure's suffix.
pub const SIZES_MB: [u64; 3] = [1, 10, 100];

/// Events generated per stored MB, measured on a small generated session (its file's bytes).
fn events_per_mb(root: &Path) -> f64 {
    let ctx = context(Some(root));
    let len = 2_300;
    let id = create(&ctx, "acp-size-probe", len);
    let store = ctx.expect::<SessionStore>();
    store.dispose(&id).expect("written and closed");
    let bytes = file_bytes(root);
    len as f64 / (bytes as f64 / 1e6)
}

/// The bytes of every file under `root`.
fn file_bytes(root: &Path) -> u64 {
    let mut total = 0;
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("the store folder reads") {
            let entry = entry.expect("an entry");
            let meta = entry.metadata().expect("its metadata");
            if meta.is_dir() {
                dirs.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}

/// One `session/load` of session `id` over `client`, then its close (untimed, so that the
/// next load starts with nothing of it held): the milliseconds to the first update, and the
/// most heap held above what was held before the request.
///
/// # Panics
/// When the load or the close fails, or the load replays nothing.
fn load_once(runtime: &tokio::runtime::Runtime, client: &mut Client, id: &str) -> (f64, u64) {
    let params = json!({"sessionId": id, "cwd": "/bench", "mcpServers": []});
    let before = alloc::live();
    alloc::reset_peak();
    let (answer, updates, first) = runtime.block_on(client.call_timed("session/load", params));
    let peak = alloc::peak().saturating_sub(before);
    assert!(answer["error"].is_null(), "session/load: {answer}");
    assert!(updates > 0, "the load replayed nothing");
    runtime.block_on(client.ok("session/close", json!({ "sessionId": id })));
    let first = first.expect("a first update");
    (first.as_secs_f64() * 1e3, peak)
}

/// Runs the streamed-load scenarios on `runtime` under `dir`, `reps` loads of each session,
/// calling `progress` as each starts; returns the figures: the median time to the first
/// update and the highest peak of the loads.
///
/// # Panics
/// When a session cannot be created, stored or loaded.
pub fn measure(
    runtime: &tokio::runtime::Runtime,
    dir: &Path,
    reps: usize,
    progress: &mut impl FnMut(&str),
) -> Vec<(String, f64)> {
    let per_mb = events_per_mb(&dir.join("load-probe"));
    let mut figures = Vec::new();
    for mb in SIZES_MB {
        let len = ((mb as f64 * per_mb) as usize).max(crate::generate::TURN_LEN + 1);
        for backend in Backend::all(&dir.join(format!("load-{mb}mb"))) {
            let name = backend.name;
            progress(&format!(
                "streamed session/load of a {mb} MB session ({len} events), {name}"
            ));
            let ctx = backend.context_with(vec![
                SessionForkPlugin.into(),
                AcpPlugin.into(),
                BenchRunnerPlugin.into(),
            ]);
            let id = create(&ctx, "acp-load-stream", len);
            ctx.expect::<SessionStore>()
                .dispose(&id)
                .expect("written and closed");
            if name == "jsonl" {
                let stored = file_bytes(&dir.join(format!("load-{mb}mb"))) as f64 / 1e6;
                figures.push((format!("load_stored_mb_{mb}mb"), stored));
            }
            let mut client = Client::connect(runtime, &ctx.expect::<AcpServer>());
            let (mut firsts, mut peak) = (Vec::new(), 0);
            for _ in 0..reps {
                let (first, held) = load_once(runtime, &mut client, id.as_str());
                firsts.push(first);
                peak = peak.max(held);
            }
            figures.push((
                format!("load_first_update_ms_{name}_{mb}mb"),
                median(firsts),
            ));
            figures.push((format!("load_peak_bytes_{name}_{mb}mb"), peak as f64));
            drop(client);
            drop(ctx);
        }
        std::fs::remove_dir_all(dir.join(format!("load-{mb}mb")))
            .expect("the sessions' folder is removed");
    }
    figures
}
