//! `dsh lineage ID`: the fork tree of a session over live and stored sessions, through the
//! `SessionFork` service's lineage query. Reads only.

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;

/// How deep the text output indents: a line deeper than this many levels is indented as a line
/// of this depth and names its depth (`[depth 40] ID`), so that a deep chain prints in space
/// linear in its length.
#[cfg(feature = "session-fork")]
const MAX_INDENTED_DEPTH: usize = 32;

/// The tree rooted at the oldest known ancestor of `id`: with `--json`, nested nodes
/// `{id, parentSession, seedLength, branchTurn, children}`; otherwise one line per session,
/// depth first, indented two spaces per level down to [`MAX_INDENTED_DEPTH`] levels (a deeper
/// line begins with `[depth N]`), `id` marked with `*`. Written as it is produced: neither form
/// is built whole first.
#[cfg(feature = "session-fork")]
pub fn run(app: &App, id: &str) -> Result<Output, HostError> {
    use crate::output::Form;
    use dsh::session::SessionId;
    use dsh::session_fork::{LineageNode, SessionFork};
    use std::io::{self, Write};

    /// One line per node, depth first (no recursion: a fork chain can be as deep as the
    /// sessions stored).
    fn render(tree: &LineageNode, target: &str, out: &mut dyn Write) -> io::Result<()> {
        let mut stack = vec![(tree, 0usize)];
        while let Some((node, depth)) = stack.pop() {
            let mark = if node.id.as_str() == target { " *" } else { "" };
            let branch = match node.seed_length {
                Some(seed) if node.parent_session.is_some() => {
                    format!(" (branched after turn {}, {seed} events)", node.branch_turn)
                }
                _ => String::new(),
            };
            let branch = if node.missing {
                " (not stored: deleted, or never in this store)".to_owned()
            } else {
                branch
            };
            let indent = "  ".repeat(depth.min(MAX_INDENTED_DEPTH));
            let deep = if depth > MAX_INDENTED_DEPTH {
                format!("[depth {depth}] ")
            } else {
                String::new()
            };
            writeln!(out, "{indent}{deep}{}{branch}{mark}", node.id)?;
            stack.extend(node.children.iter().rev().map(|child| (child, depth + 1)));
        }
        Ok(())
    }

    let fork = app.require::<SessionFork>()?;
    let tree = fork.lineage(&SessionId::from(id))?;
    let target = id.to_owned();
    Ok(Output::streamed(move |out, form| match form {
        Form::Json => {
            serde_json::to_writer(&mut *out, &tree)?;
            writeln!(out)
        }
        Form::Human => render(&tree, &target, out),
    }))
}

/// This build has no fork plugin: always `CAPABILITY_UNAVAILABLE`.
#[cfg(not(feature = "session-fork"))]
pub fn run(_app: &App, _id: &str) -> Result<Output, HostError> {
    Err(crate::app::not_built(
        "SessionFork",
        crate::app::SESSION_FORK_PLUGIN,
    ))
}
