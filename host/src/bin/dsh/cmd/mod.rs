//! One module per command.

pub mod acp;
pub mod check;
pub mod completions;
pub mod config;
pub mod delete;
pub mod export;
pub mod fork;
pub mod gc;
pub mod history;
pub mod import;
pub mod lineage;
pub mod migrate;
pub mod plugins;
pub mod repair;
pub mod services;
pub mod sessions;
pub mod show;

/// The human line part naming a fork's parent: `forked from P (seed length N)`, or `(seed
/// length not recorded)` for a header without `seedLength`.
pub(crate) fn forked_from(parent: &impl std::fmt::Display, seed_length: Option<u64>) -> String {
    match seed_length {
        Some(len) => format!("forked from {parent} (seed length {len})"),
        None => format!("forked from {parent} (seed length not recorded)"),
    }
}

/// `n events`, or `1 event`, for the text output.
pub(crate) fn events(n: usize) -> String {
    if n == 1 {
        "1 event".into()
    } else {
        format!("{n} events")
    }
}

/// `text` on one line of the text output: control characters (a newline in a stored `cwd`)
/// escaped as Rust escapes them (`\n`, `\u{1b}`).
pub(crate) fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
