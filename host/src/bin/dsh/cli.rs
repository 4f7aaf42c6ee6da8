//! The command line: global options and one subcommand per `cmd/` module.

use clap::{Parser, Subcommand};
use dsh_host::Sources;
use std::path::PathBuf;

/// Keep, inspect, fork and serve your DeepSeek Harness (dsh) sessions.
///
/// List and show the sessions of a store, fork one at any turn, import and export dsh session
/// files, migrate them to newer dsh formats, delete them or apply a retention policy, and
/// serve them to an editor over the Agent Client Protocol (`dsh acp`).
#[derive(Debug, Parser)]
#[command(name = "dsh", version)]
pub struct Cli {
    /// Session store: a JSONL folder DIR or jsonl:DIR, an SQLite database sqlite:FILE, or a
    /// PostgreSQL database postgres:URL (builds with the session-postgres feature) (default: $DSH_STORE, then the config file's "store", then the platform data
    /// directory, e.g. ~/.local/share/dsh/sessions).
    #[arg(long, global = true, value_name = "STORE")]
    pub store: Option<PathBuf>,
    /// JSON config file: {"store": DIR, "plugins": {NAME: {"enabled": BOOL, "config": {...}}}}.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Disable a plugin by name (repeatable), e.g. --disable dsh-session-fork.
    #[arg(long, global = true, value_name = "NAME")]
    pub disable: Vec<String>,
    /// Print exactly one JSON document on stdout (errors as {"error":{"code","message"}}).
    #[arg(long, global = true)]
    pub json: bool,
    /// Refuse plugin names this build does not contain (in --disable or the config file)
    /// instead of ignoring them with a warning.
    #[arg(long, global = true)]
    pub strict: bool,
    /// Show the causes behind an error and debug logs (as DSH_LOG=debug does).
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The host configuration's sources: these flags, then `DSH_STORE`.
    pub fn sources(&self) -> Sources {
        let mut sources = Sources::from_env();
        sources.store.clone_from(&self.store);
        sources.config_file.clone_from(&self.config);
        sources.disable.clone_from(&self.disable);
        if self.strict {
            sources = sources.strict();
        }
        sources
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the plugins of the context: state, services, what a pending one waits for.
    Plugins {
        /// Print the dependency graph in Graphviz DOT instead.
        #[arg(long, conflicts_with = "plan")]
        dot: bool,
        /// Print what reconciling the context with the config file NEW_CONFIG would do to
        /// each plugin (keep, update, restart, enable, disable, add, remove, and why),
        /// without doing it. Flags and DSH_STORE apply to it as to the current config.
        #[arg(long, value_name = "NEW_CONFIG")]
        plan: Option<PathBuf>,
    },
    /// List the services of the context and their providers.
    Services,
    /// Copy dsh session files, and the sessions of bundles `dsh export` wrote (ancestors
    /// first, every file checked against the bundle's manifest), into the store, as dsh's
    /// reader reads them (never repaired).
    Import {
        /// Session files (session.jsonl) or export bundles (tar).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Store every session imported with DIR (an absolute path) as its cwd; without it a
        /// session keeps its stored cwd (which a bundle's entry reports: `cwd kept: ...`).
        #[arg(long, value_name = "DIR", value_parser = absolute_cwd)]
        cwd: Option<String>,
    },
    /// Write a stored session as one bundle (a tar of dsh JSONL files laid out as a store,
    /// manifest.json first) that `dsh import` reads back, to stdout (refused on a terminal)
    /// or to --output FILE; --raw prints the session's stored text instead.
    Export {
        /// Session id.
        id: String,
        /// Add the stored sessions its parentSession leads to, ancestors first; one not
        /// stored ends the chain and is named (manifest `missingAncestor`, and on stderr).
        #[arg(long, conflicts_with = "raw")]
        with_ancestors: bool,
        /// Write to FILE (a temporary file beside it, renamed over it) and print a summary.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Print the session's stored text as it is (JSONL: the current file, zstd decoded;
        /// SQLite, PostgreSQL: the canonical rendering), no bundle.
        #[arg(long)]
        raw: bool,
    },
    /// List the stored sessions (headers only).
    Sessions,
    /// Summarize a stored session: header, counts, turn boundaries, forkability.
    Show {
        /// Session id.
        id: String,
    },
    /// Print the derived model history of a stored session.
    History {
        /// Session id.
        id: String,
    },
    /// Fork a stored session at its end (it must be at a turn boundary), or at an earlier
    /// turn/end with --at, and store the child. The source is read, never loaded or written.
    Fork {
        /// Source session id.
        id: String,
        /// Child session id (default: a generated UUID v7).
        #[arg(long = "id", value_name = "CHILD")]
        child: Option<String>,
        /// Fork at the turn/end with this seq (exact; INVALID_BOUNDARY or OPEN_TURN otherwise).
        #[arg(long = "at", value_name = "SEQ", allow_hyphen_values = true)]
        at: Option<String>,
    },
    /// Print the fork tree of a session, rooted at its oldest ancestor: each node's id,
    /// parentSession, seedLength, branchTurn (last inherited turn) and children.
    Lineage {
        /// Session id (live or stored).
        id: String,
    },
    /// Migrate a stored session to a later dsh format version through dsh's chain (v0 -> v1 ->
    /// v2 -> v3), refusing what dsh refuses, and store the result as a new generation beside
    /// the source (session.vN.jsonl next to session.jsonl), which is left unchanged; the
    /// session then reads as the new generation. The session must not be open elsewhere.
    Migrate {
        /// Session id.
        id: String,
        /// The format version to migrate to (1, 2 or 3; default 3, what dsh 0.1.5 writes).
        #[arg(long, value_name = "N", default_value_t = 3)]
        to: u64,
        /// Say what would change (the versions, the event counts, the event types whose
        /// counts change), and write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Delete a stored session for good (every generation of it). Its fork children stay
    /// and keep reading their events unless --with-descendants deletes them too. A session
    /// another process is writing makes that writer fail; it is never recreated.
    Delete {
        /// Session id.
        id: String,
        /// Delete the session's fork subtree too (children before parents).
        #[arg(long)]
        with_descendants: bool,
        /// Say what would be deleted, and delete nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Close the turn a crash left open in a stored session (appends the crash-repair closers
    /// durably, as dsh does on resume) and print what was appended.
    Repair {
        /// Session id.
        id: String,
    },
    /// Serve the Agent Client Protocol (ACP v1) on stdin and stdout, for editors: sessions of
    /// the store, session/fork while the fork plugin is enabled, prompts through a turn-runner
    /// plugin. Runs until stdin closes (or stdin or stdout fails), then cancels, closes and
    /// writes its running turns before it exits; with --config, edits of the file apply at
    /// once.
    Acp,
    /// Read dsh session files or folders without a store and report whether each loads.
    Check {
        /// Files or folders (searched recursively for *.jsonl and *.jsonl.zstd).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Also run the invariant checker (turn and step structure, tool calls answered in
        /// their step) over each file that loads, and report every violation.
        #[arg(long)]
        invariants: bool,
    },
    /// Config files: print their JSON Schema (for editors: point a file's "$schema" member
    /// at it), or check one without starting anything.
    Config {
        /// What to do with config files.
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Print a completion script for SHELL on stdout, e.g. `dsh completions bash >
    /// ~/.local/share/bash-completion/completions/dsh` (zsh: a file `_dsh` on $fpath; fish:
    /// ~/.config/fish/completions/dsh.fish).
    Completions {
        /// The shell: bash, elvish, fish, powershell or zsh.
        shell: clap_complete::Shell,
    },
    /// Print the man page of dsh (roff) on stdout, e.g. `dsh man >
    /// ~/.local/share/man/man1/dsh.1`, then `man dsh`.
    Man,
    /// Apply the retention policy of plugin dsh-session-retention (enabled with its policy in
    /// the config file): delete the stored sessions it selects and no keep rule protects,
    /// never a live one, and report each; exit status 1 when a delete failed.
    Gc {
        /// Print what the policy would delete or keep and why, and delete nothing.
        #[arg(long)]
        plan: bool,
    },
}

/// What `dsh config` does.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Print the JSON Schema of a config file of this build: the store, every linked plugin's
    /// entry with its own config schema, groups.
    Schema,
    /// Check a config file as every command reads it (the JSON, each plugin's config, the
    /// store value, plugin names, strictly: an unknown name is an error), starting nothing;
    /// every problem is named by its path in the file.
    Check {
        /// The config file.
        file: PathBuf,
    },
}

/// The value of `import --cwd`: an absolute path, in UTF-8 (a header's cwd is text).
fn absolute_cwd(value: &str) -> Result<String, String> {
    if std::path::Path::new(value).is_absolute() {
        Ok(value.to_owned())
    } else {
        Err(format!("{value:?} is not an absolute path"))
    }
}
