//! Pre-commit append hooks: what a sibling plugin registers with
//! [`crate::SessionStore::hook_append`] to see each candidate event of an append before it is
//! committed, and observe it, trace it or veto it (dsh's pre-commit dispatch hook).
//!
//! The built-in invariant check is the first hook, named [`INVARIANTS_HOOK`] (installed
//! when the plugin's `check_invariants` is on, the default); the hooks plugins register run
//! after it, in registration order. A host replaces it by switching `check_invariants` off and
//! registering its own, or extends it by registering one after it.

use crate::codes;
use crate::event::SessionEvent;
use crate::id::SessionId;
use crate::session::{AppendError, Session};
use parking_lot::RwLock;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The name of the built-in invariant hook (the plugin's `check_invariants`).
pub const INVARIANTS_HOOK: &str = "dsh-session/invariants";

/// An event about to be appended, as a pre-commit hook sees it: valid by the envelope,
/// message-shape and surface rules and (when the store checks them) the invariants, stamped
/// with the seq and time it will have, not committed yet.
#[derive(Clone, Copy)]
pub struct AppendCandidate<'a> {
    session: &'a Session,
    event: &'a SessionEvent,
}

impl<'a> AppendCandidate<'a> {
    pub(crate) fn new(session: &'a Session, event: &'a SessionEvent) -> AppendCandidate<'a> {
        AppendCandidate { session, event }
    }

    /// The session appended to (its log does not hold the candidate yet).
    pub fn session(&self) -> &'a Session {
        self.session
    }

    /// The session's id.
    pub fn session_id(&self) -> &'a SessionId {
        self.session.id()
    }

    /// The candidate event: type, seq (the session's length), time (epoch ms) and data.
    pub fn event(&self) -> &'a SessionEvent {
        self.event
    }
}

impl fmt::Debug for AppendCandidate<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppendCandidate")
            .field("session", self.session.id())
            .field("type", &self.event.kind)
            .field("seq", &self.event.seq)
            .finish()
    }
}

/// A hook's refusal of a candidate: why, and the hook's own stable code when it has one.
/// The append then fails with [`AppendError::Vetoed`] (code `APPEND_VETOED`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Veto {
    reason: String,
    code: Option<&'static str>,
}

impl Veto {
    /// A veto for `reason`, without a code of its own.
    pub fn new(reason: impl Into<String>) -> Veto {
        Veto {
            reason: reason.into(),
            code: None,
        }
    }

    /// The same veto carrying the hook's own stable code (SCREAMING_SNAKE, e.g.
    /// `QUOTA_EXCEEDED`).
    pub fn with_code(mut self, code: &'static str) -> Veto {
        self.code = Some(code);
        self
    }

    /// Why the hook refused the candidate.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The hook's own code, when it gave one.
    pub fn code(&self) -> Option<&'static str> {
        self.code
    }
}

/// The veto of an append, with the hook it came from ([`AppendError::Vetoed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HookVeto {
    /// The seq the event would have had.
    pub seq: u64,
    /// The plugin that registered the hook.
    pub plugin: String,
    /// The hook's name.
    pub hook: String,
    /// The hook's reason, and its own code when it gave one.
    pub veto: Veto,
}

impl fmt::Display for HookVeto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seq {} vetoed by hook \"{}\" of plugin \"{}\"",
            self.seq, self.hook, self.plugin
        )?;
        if let Some(code) = self.veto.code {
            write!(f, " [{code}]")?;
        }
        write!(f, ": {}", self.veto.reason)
    }
}

/// What a hook is: called with each candidate of every live session's `append`.
pub(crate) type HookFn = dyn Fn(&AppendCandidate<'_>) -> Result<(), Veto> + Send + Sync;

/// A registered hook.
struct Hook {
    id: u64,
    plugin: Arc<str>,
    name: Arc<str>,
    run: Box<HookFn>,
}

/// One installed hook, as [`crate::SessionStore::append_hooks`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HookInfo {
    /// The plugin that registered it (`dsh-session` for the built-in invariant hook).
    pub plugin: String,
    /// Its name (e.g. [`INVARIANTS_HOOK`]).
    pub name: String,
}

/// The hooks of a store, shared with its sessions, and what else each of its appends does.
pub(crate) struct AppendHooks {
    invariants: bool,
    /// Whether an append serialises its event's line for the next flush
    /// ([`crate::backend::EncodedLines`]): set by each write, to what its backend uses.
    encode_lines: AtomicBool,
    /// The hooks plugins registered, in registration order (replaced whole on each change, so
    /// an append runs the list it read without holding a lock).
    custom: RwLock<Arc<[Arc<Hook>]>>,
    /// Whether `custom` is not empty: the one check an append makes when it is.
    any: AtomicBool,
    next_id: AtomicU64,
}

/// The hooks plugins registered, as one append runs them.
pub(crate) struct HookList(Arc<[Arc<Hook>]>);

impl AppendHooks {
    /// The hooks of a store that checks invariants or not, no plugin hook yet.
    pub(crate) fn new(invariants: bool) -> Arc<AppendHooks> {
        Arc::new(AppendHooks {
            invariants,
            encode_lines: AtomicBool::new(false),
            custom: RwLock::new(Arc::from(Vec::new())),
            any: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
        })
    }

    /// Whether appends serialise their events' lines for the next flush.
    pub(crate) fn encodes_lines(&self) -> bool {
        self.encode_lines.load(Ordering::Relaxed)
    }

    /// Makes appends serialise their events' lines for the next flush, or not: what the
    /// backend the store last wrote to uses.
    pub(crate) fn set_encode_lines(&self, encode: bool) {
        if self.encodes_lines() != encode {
            self.encode_lines.store(encode, Ordering::Relaxed);
        }
    }

    /// Whether the built-in invariant hook is installed.
    pub(crate) fn invariants(&self) -> bool {
        self.invariants
    }

    /// The plugin hooks to run, `None` when there is none (the default: one atomic load).
    pub(crate) fn custom(&self) -> Option<HookList> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let list = self.custom.read().clone();
        (!list.is_empty()).then_some(HookList(list))
    }

    /// Adds `run` after every hook installed; returns its id (for [`AppendHooks::remove`]).
    pub(crate) fn add(&self, plugin: &str, name: &str, run: Box<HookFn>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let hook = Arc::new(Hook {
            id,
            plugin: Arc::from(plugin),
            name: Arc::from(name),
            run,
        });
        let mut custom = self.custom.write();
        let mut list: Vec<Arc<Hook>> = custom.iter().cloned().collect();
        list.push(hook);
        *custom = Arc::from(list);
        self.any.store(true, Ordering::Release);
        id
    }

    /// Removes hook `id` (nothing when it is gone already).
    pub(crate) fn remove(&self, id: u64) {
        let mut custom = self.custom.write();
        let list: Vec<Arc<Hook>> = custom.iter().filter(|h| h.id != id).cloned().collect();
        self.any.store(!list.is_empty(), Ordering::Release);
        *custom = Arc::from(list);
    }

    /// Every installed hook, in the order they run.
    pub(crate) fn list(&self) -> Vec<HookInfo> {
        let builtin = self.invariants.then(|| HookInfo {
            plugin: "dsh-session".into(),
            name: INVARIANTS_HOOK.into(),
        });
        let custom = self.custom.read().clone();
        builtin
            .into_iter()
            .chain(custom.iter().map(|hook| HookInfo {
                plugin: hook.plugin.to_string(),
                name: hook.name.to_string(),
            }))
            .collect()
    }
}

impl HookList {
    /// Runs every hook on `candidate`, in order, until one vetoes: the veto as the append's
    /// error. A panicking hook vetoes (code `HOOK_PANICKED`): an append no hook could judge is
    /// not committed, and the caller hears why.
    pub(crate) fn run(&self, candidate: AppendCandidate<'_>) -> Result<(), AppendError> {
        for hook in self.0.iter() {
            let verdict =
                catch_unwind(AssertUnwindSafe(|| (hook.run)(&candidate))).unwrap_or_else(|_| {
                    Err(Veto::new("the hook panicked").with_code(codes::HOOK_PANICKED))
                });
            if let Err(veto) = verdict {
                return Err(AppendError::Vetoed {
                    id: candidate.session_id().clone(),
                    by: Box::new(HookVeto {
                        seq: candidate.event().seq,
                        plugin: hook.plugin.to_string(),
                        hook: hook.name.to_string(),
                        veto,
                    }),
                });
            }
        }
        Ok(())
    }
}
