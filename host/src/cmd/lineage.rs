//! `dsh lineage ID`: the fork tree of a session over live and stored sessions, through the
//! `SessionFork` service's lineage query. Reads only.

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;

/// The tree rooted at the oldest known ancestor of `id`: with `--json`, nested nodes
/// `{id, parentSession, seedLength, branchTurn, children}`; otherwise one indented line per
/// session, `id` marked with `*`.
#[cfg(feature = "session-fork")]
pub fn run(app: &App, id: &str) -> Result<Output, HostError> {
    use dsh::session::SessionId;
    use dsh::session_fork::{LineageNode, SessionFork};

    /// One line per node, depth first, indented by depth (no recursion: a fork chain can
    /// be as deep as the sessions stored).
    fn render(tree: &LineageNode, target: &str) -> String {
        let mut out = String::new();
        let mut stack = vec![(tree, 0usize)];
        while let Some((node, depth)) = stack.pop() {
            let mark = if node.id.as_str() == target { " *" } else { "" };
            let branch = match node.seed_length {
                Some(seed) if node.parent_session.is_some() => {
                    format!(" (branched after turn {}, {seed} events)", node.branch_turn)
                }
                _ => String::new(),
            };
            out.push_str(&format!(
                "{}{}{branch}{mark}\n",
                "  ".repeat(depth),
                node.id
            ));
            stack.extend(node.children.iter().rev().map(|child| (child, depth + 1)));
        }
        out
    }

    let fork = app.require::<SessionFork>()?;
    let tree = fork.lineage(&SessionId::from(id))?;
    let human = render(&tree, id);
    Ok(Output::ok(serde_json::json!(tree), human))
}

/// This build has no fork plugin: always `CAPABILITY_UNAVAILABLE`.
#[cfg(not(feature = "session-fork"))]
pub fn run(_app: &App, _id: &str) -> Result<Output, HostError> {
    Err(crate::app::not_built(
        "SessionFork",
        crate::app::SESSION_FORK_PLUGIN,
    ))
}
