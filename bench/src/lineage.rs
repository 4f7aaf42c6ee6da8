//! Lineage figures: `SessionFork::lineage` of the last session of a fork chain N sessions deep,
//! stored in a JSONL store as dsh stores fork children (a header with `parentSession` and
//! `seedLength`, then the two-event seed), for N = 10,000 and 50,000: the time, and the most
//! bytes the query holds at once (counted by [`crate::alloc::Counting`]), per session of the
//! chain. A query that is linear in the chain keeps both per-session figures flat from one N to
//! the next.

use crate::alloc;
use crate::measure::{time, us};
use dsh::session::{SessionId, SessionPlugin};
use dsh::session_fork::{LineageNode, SessionFork, SessionForkPlugin};
use dsh::session_jsonl::SessionJsonlPlugin;
use dsh::{Context, ContextConfig, Plugin};
use std::path::Path;

/// The chain depths measured.
pub const DEPTHS: [usize; 2] = [10_000, 50_000];

/// The chain depths of the quick plan.
pub const QUICK_DEPTHS: [usize; 2] = [1_000, 5_000];

/// The seed every session of the chain holds: one complete turn.
const SEED: &str = concat!(
    r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
    "\n",
    r#"{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
    "\n"
);

/// The id of session `n` of a chain.
pub fn chain_id(n: usize) -> SessionId {
    SessionId::from(format!("s{n}").as_str())
}

/// Writes a fork chain `depth` sessions deep under `root` (cwd `/p`): session `s0` is the
/// root, `s{n}` the child of `s{n-1}` forked at its one turn.
///
/// # Panics
/// When a folder or file cannot be written.
pub fn write_chain(root: &Path, depth: usize) {
    for n in 0..depth {
        let parent = match n {
            0 => String::new(),
            n => format!(r#","parentSession":"s{}","seedLength":2"#, n - 1),
        };
        let folder = root.join("--p--").join(format!("s{n}"));
        std::fs::create_dir_all(&folder).expect("the chain's folders");
        let header = format!(
            r#"{{"type":"session","version":0,"id":"s{n}","createdAt":{},"cwd":"/p"{parent},"delegationDepth":0}}"#,
            n + 1
        );
        std::fs::write(folder.join("session.jsonl"), format!("{header}\n{SEED}"))
            .expect("a chain session file");
    }
}

/// A context with the session, fork and JSONL plugins over the store at `root`.
///
/// # Panics
/// When the context does not build.
pub fn context(root: &Path) -> Context {
    let mut config = ContextConfig::default();
    config.set_config(
        SessionJsonlPlugin::NAME,
        serde_json::json!({ "root": root }),
    );
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(SessionForkPlugin)
        .add_plugin(SessionJsonlPlugin)
        .with_config(config)
        .build()
        .expect("session + fork + JSONL context builds")
}

/// The depth of `tree`, taken apart level by level (a deep tree dropped whole would recurse
/// once per level).
pub fn depth_of(tree: LineageNode) -> usize {
    let mut depth = 0;
    let mut level = vec![tree];
    while !level.is_empty() {
        depth += 1;
        level = level.into_iter().flat_map(|node| node.children).collect();
    }
    depth
}

/// One lineage query of the leaf of the chain of `depth` sessions stored at `root`: the time
/// in microseconds and the most bytes held at once during it (0 without the counting
/// allocator). The context is built before and dropped after the measurement.
///
/// # Panics
/// When the query fails or the tree is not the whole chain.
pub fn lineage_once(root: &Path, depth: usize) -> (f64, u64) {
    let ctx = context(root);
    let fork = ctx.expect::<SessionFork>();
    let leaf = chain_id(depth - 1);
    let mut tree = None;
    let before = alloc::reset_peak();
    let elapsed = time(|| tree = Some(fork.lineage(&leaf).expect("the chain's lineage")));
    let peak = alloc::peak().saturating_sub(before);
    let tree = tree.expect("measured");
    assert_eq!(tree.id, chain_id(0), "the tree starts at the chain's root");
    assert_eq!(depth_of(tree), depth, "the tree holds the whole chain");
    (us(elapsed), peak)
}

/// Figures for one chain depth.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LineageFigures {
    /// Sessions in the chain.
    pub depth: usize,
    /// The query's time, microseconds.
    pub lineage_us: f64,
    /// The most bytes the query held at once.
    pub lineage_peak_bytes: f64,
}

/// Measures the lineage of chains of each of `depths`, each written to a fresh temporary
/// store, calling `progress` as each starts.
///
/// # Panics
/// As [`lineage_once`], or when the temporary store cannot be made.
pub fn measure(depths: &[usize], mut progress: impl FnMut(&str)) -> Vec<LineageFigures> {
    depths
        .iter()
        .map(|&depth| {
            progress(&format!("lineage of a fork chain {depth} deep"));
            let dir = tempfile::tempdir().expect("a temporary store");
            write_chain(dir.path(), depth);
            let (lineage_us, peak) = lineage_once(dir.path(), depth);
            LineageFigures {
                depth,
                lineage_us,
                lineage_peak_bytes: peak as f64,
            }
        })
        .collect()
}

/// The figures of `measured` in output order: per depth `lineage_us_N`,
/// `lineage_peak_bytes_N` and `lineage_us_per_session_N`, then `lineage_growth` (time per
/// session at the deepest chain over the shallowest: 1 for a linear query) and
/// `lineage_peak_growth` (the same for the peak bytes).
pub fn figures(measured: &[LineageFigures]) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for f in measured {
        out.push((format!("lineage_us_{}", f.depth), f.lineage_us));
        out.push((
            format!("lineage_peak_bytes_{}", f.depth),
            f.lineage_peak_bytes,
        ));
        out.push((
            format!("lineage_us_per_session_{}", f.depth),
            f.lineage_us / f.depth as f64,
        ));
    }
    if let (Some(first), Some(last)) = (measured.first(), measured.last()) {
        let per = |value: f64, depth: usize| value / depth as f64;
        out.push((
            "lineage_growth".into(),
            per(last.lineage_us, last.depth) / per(first.lineage_us, first.depth),
        ));
        out.push((
            "lineage_peak_growth".into(),
            per(last.lineage_peak_bytes, last.depth) / per(first.lineage_peak_bytes, first.depth),
        ));
    }
    out
}
