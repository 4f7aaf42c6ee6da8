//! What plugins hang on the store's write path: sessions owned by a plugin's scope (closed
//! when it goes, unless handed over) and pre-commit append hooks (removed when their plugin
//! goes).

use super::{CreateOptions, SessionStore, StoreError};
use crate::hooks::{AppendCandidate, HookInfo, Veto};
use crate::id::SessionId;
use crate::owner::SessionOwner;
use crate::session::Session;
use dsh_core::{CoreError, Scope};
use std::sync::Arc;

impl SessionStore {
    /// [`SessionStore::create`] of a session owned by `scope`'s instance (this generation of
    /// it, [`Session::owner`]): when that generation is torn down (the plugin disabled,
    /// restarted or disposed), the store disposes the session through the ordinary
    /// [`SessionStore::dispose`] (what was appended is written to the backend first), unless
    /// it was handed over before ([`SessionStore::hand_over`], [`SessionStore::release_owner`]).
    /// A dispose that cannot write the session is logged with its code and the session id,
    /// and the session stays live, owned by nobody (nothing lost: the store's own disposal
    /// writes it again).
    ///
    /// ```
    /// use dsh_core::{plugin_fn, Context, Dep};
    /// use dsh_session::{EventDraft, SessionPlugin, SessionStore};
    /// use std::sync::{Arc, Mutex};
    ///
    /// let made = Arc::new(Mutex::new(None));
    /// let slot = made.clone();
    /// let agent = plugin_fn("agent", move |scope, store: Dep<SessionStore>| {
    ///     let session = store.get()?.create_in(scope, None, Default::default())?;
    ///     session.append(EventDraft::turn_start(1))?;
    ///     *slot.lock().unwrap() = Some(session);
    ///     Ok(())
    /// });
    /// let ctx = Context::builder().add_plugin(SessionPlugin).add_plugin(agent).build()?;
    /// let session = made.lock().unwrap().clone().unwrap();
    /// assert_eq!(session.owner().unwrap().plugin(), "agent");
    /// ctx.disable("agent")?;
    /// assert!(!session.is_live(), "closed with its owner");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`SessionStore::create`], and [`StoreError::Scope`] (code `STALE_SCOPE`) when
    /// `scope`'s generation has ended: before the call (nothing is created), or during it
    /// (the session, created meanwhile, is disposed as the owner's teardown disposes its
    /// sessions).
    pub fn create_in(
        &self,
        scope: &Scope,
        id: Option<SessionId>,
        mut options: CreateOptions,
    ) -> Result<Arc<Session>, StoreError> {
        let owner = self.watch(scope)?;
        options.owner = Some(owner.clone());
        let session = self.create(id, options)?;
        if self.watching(&owner) {
            return Ok(session);
        }
        // The owner went while the session was being created, its teardown finding nothing to
        // close yet: the session is closed as that teardown would have closed it.
        self.release_owned(&owner);
        Err(gone(scope))
    }

    /// Hands live `session` over to `scope`'s instance: it is closed when that generation
    /// goes, no longer when its former owner goes (the root scope, [`dsh_core::Context::root`],
    /// keeps it until the context is disposed).
    ///
    /// # Errors
    /// [`StoreError::NotLive`] when `session` is not live in this store, [`StoreError::Scope`]
    /// when `scope`'s generation has ended; the owner is then unchanged.
    pub fn hand_over(&self, session: &Arc<Session>, scope: &Scope) -> Result<(), StoreError> {
        self.entry(session)?;
        let owner = self.watch(scope)?;
        let before = session.owner();
        session.set_owner(Some(owner.clone()));
        if self.watching(&owner) {
            return Ok(());
        }
        // The new owner went meanwhile: the hand-over did not happen.
        session.set_owner(before);
        Err(gone(scope))
    }

    /// Releases live `session` from its owner: owned by nobody, it stays live until disposed
    /// (or until the store goes), as a session made with [`SessionStore::create`].
    ///
    /// # Errors
    /// [`StoreError::NotLive`] when `session` is not live in this store.
    pub fn release_owner(&self, session: &Arc<Session>) -> Result<(), StoreError> {
        self.entry(session)?;
        session.set_owner(None);
        Ok(())
    }

    /// Registers `hook`, named `name`, to run before each append to a live session of this
    /// store is committed, for as long as `scope`'s generation lives (removed when it is torn
    /// down). Hooks run after the built-in invariant hook ([`crate::INVARIANTS_HOOK`], when
    /// the plugin's `check_invariants` is on), in registration order, each seeing the
    /// candidate that passed every check before it. A hook observes (count, trace: it may
    /// open a `tracing` span) or vetoes with a [`Veto`]; the append then fails with
    /// [`crate::AppendError::Vetoed`] (code `APPEND_VETOED`, naming the session, the hook's
    /// plugin and name, its reason and code) and commits nothing. A panicking hook vetoes
    /// (its veto's code is `HOOK_PANICKED`). Hooks run on the appending thread with no lock a
    /// reader or another session's append needs (appends to the same session wait, as they
    /// always do); an append from a hook is refused as re-entrant. Events a follower reads
    /// back from the backend are stored already: they do not go through the hooks.
    ///
    /// ```
    /// use dsh_core::{plugin_fn, Context, Dep};
    /// use dsh_session::{codes, AppendError, EventDraft, SessionPlugin, SessionStore, Veto};
    ///
    /// let guard = plugin_fn("no-shell", |scope, store: Dep<SessionStore>| {
    ///     store.get()?.hook_append(scope, "no-shell/deny", |candidate| {
    ///         match candidate.event().data.get_str("name").as_deref() {
    ///             Some("sh") => Err(Veto::new("no shell").with_code("TOOL_DENIED")),
    ///             _ => Ok(()),
    ///         }
    ///     })?;
    ///     Ok(())
    /// });
    /// let ctx = Context::builder().add_plugin(SessionPlugin).add_plugin(guard).build()?;
    /// let session = ctx.expect::<SessionStore>().create(None, dsh_session::CreateOptions::at("/home/dev/project"))?;
    /// session.append(EventDraft::turn_start(1))?;
    /// session.append(EventDraft::step_start(1, 1))?;
    /// let error = session.append(EventDraft::tool_call(1, 1, "c1", "sh", "{}")).unwrap_err();
    /// assert_eq!(error.code(), codes::APPEND_VETOED);
    /// assert!(matches!(&error, AppendError::Vetoed { by, .. }
    ///     if by.plugin == "no-shell" && by.veto.code() == Some("TOOL_DENIED")));
    /// assert_eq!(session.len(), 2, "nothing committed");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`StoreError::Scope`] (code `STALE_SCOPE`) when `scope`'s generation has ended (the
    /// hook is not installed).
    pub fn hook_append(
        &self,
        scope: &Scope,
        name: &str,
        hook: impl Fn(&AppendCandidate<'_>) -> Result<(), Veto> + Send + Sync + 'static,
    ) -> Result<(), StoreError> {
        let id = self.hooks.add(scope.name(), name, Box::new(hook));
        let hooks = self.hooks.clone();
        scope
            .on_dispose(move || hooks.remove(id))
            .map_err(|source| {
                self.hooks.remove(id);
                scope_error(scope, source)
            })
    }

    /// The append hooks installed, in the order they run: the built-in invariant hook first
    /// when on, then the plugins' hooks.
    pub fn append_hooks(&self) -> Vec<HookInfo> {
        self.hooks.list()
    }

    /// The owner `scope` stands for, the store watching its teardown (once per generation).
    fn watch(&self, scope: &Scope) -> Result<SessionOwner, StoreError> {
        let owner = SessionOwner::of(scope);
        let key = (owner.instance(), owner.generation());
        let mut watched = self.owners.lock();
        if !watched.contains(&key) {
            let store = self.this.clone();
            let gone = owner.clone();
            // Registering takes the core's lock briefly and runs nothing of ours.
            scope
                .on_dispose(move || {
                    if let Some(store) = store.upgrade() {
                        store.release_owned(&gone);
                    }
                })
                .map_err(|source| scope_error(scope, source))?;
            watched.insert(key);
        }
        Ok(owner)
    }

    /// Whether the store still watches `owner`'s teardown: `false` once it has begun.
    fn watching(&self, owner: &SessionOwner) -> bool {
        self.owners
            .lock()
            .contains(&(owner.instance(), owner.generation()))
    }

    /// Disposes every live session `owner` owns, newest first: its generation is being torn
    /// down.
    fn release_owned(&self, owner: &SessionOwner) {
        self.owners
            .lock()
            .remove(&(owner.instance(), owner.generation()));
        let owned: Vec<Arc<Session>> = self
            .list()
            .into_iter()
            .rev()
            .filter(|session| session.is_owned_by(owner))
            .collect();
        for session in owned {
            if let Err(error) = self.dispose(session.id()) {
                session.set_owner(None);
                tracing::error!(session = %session.id(), owner = %owner, code = error.code(), %error, "session of a plugin that went could not be written; it stays live, owned by nobody");
            }
        }
    }
}

/// [`StoreError::Scope`] for `scope`, whose generation ended.
fn gone(scope: &Scope) -> StoreError {
    scope_error(
        scope,
        CoreError::StaleScope {
            plugin: scope.name().to_owned(),
            generation: scope.generation(),
        },
    )
}

/// [`StoreError::Scope`] for `scope`.
fn scope_error(scope: &Scope, source: CoreError) -> StoreError {
    StoreError::Scope {
        plugin: scope.name().to_owned(),
        source,
    }
}
