//! Session owners: the plugin instance (one generation of it) a session belongs to, and the
//! listeners that hear the events of one owner's sessions only.
//!
//! A session created with [`crate::SessionStore::create_in`] is owned by the scope's
//! instance: when that generation is torn down, the store closes it through the ordinary
//! dispose path (its events written to the backend first), unless it was handed over
//! ([`crate::SessionStore::hand_over`], [`crate::SessionStore::release_owner`]) before.

use crate::session::{Session, SessionEventAppended};
use crate::store::{SessionCreated, SessionDisposed, SessionFlush};
use dsh_core::{BoxError, CoreError, InstanceId, ListenerHandle, Scope};
use std::fmt;
use std::sync::Arc;

/// The owner of a session: one generation of a plugin instance (or the root scope, for what
/// the host creates through [`dsh_core::Context::root`]). Two owners are equal when they are
/// the same instance at the same generation: a restarted plugin is a new owner.
#[derive(Clone)]
pub struct SessionOwner {
    plugin: Arc<str>,
    instance: InstanceId,
    generation: u64,
}

impl SessionOwner {
    /// The owner a session created from `scope` gets: its instance at its generation.
    pub fn of(scope: &Scope) -> SessionOwner {
        SessionOwner {
            plugin: Arc::from(scope.name()),
            instance: scope.instance(),
            generation: scope.generation(),
        }
    }

    /// The owning instance's name (`<root>` for the root scope).
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// The owning instance (`#0` for the root scope).
    pub fn instance(&self) -> InstanceId {
        self.instance
    }

    /// The owning generation (0 for the root scope).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Listens, for as long as `listening`'s generation lives, to the events `E` of the
    /// sessions this owner owns when the event is published (a session handed over to another
    /// owner is heard no more). `E` is one of the store's session events: [`SessionCreated`],
    /// [`SessionEventAppended`], [`SessionFlush`], [`SessionDisposed`]. The other listeners of
    /// `E` pay nothing for it: the owner is checked in this listener only.
    ///
    /// ```
    /// use dsh_core::Context;
    /// use dsh_session::{EventDraft, SessionEventAppended, SessionOwner, SessionPlugin, SessionStore};
    /// use std::sync::{Arc, Mutex};
    ///
    /// let ctx = Context::builder().add_plugin(SessionPlugin).build()?;
    /// let store = ctx.expect::<SessionStore>();
    /// let heard = Arc::new(Mutex::new(Vec::new()));
    /// let sink = heard.clone();
    /// // The root's sessions only (a plugin passes its own scope, or another plugin's owner).
    /// SessionOwner::of(&ctx.root()).on::<SessionEventAppended>(&ctx.root(), move |appended| {
    ///     sink.lock().unwrap().push(appended.event.seq);
    ///     Ok(())
    /// })?;
    /// let owned = store.create_in(&ctx.root(), None, Default::default())?;
    /// let other = store.create(None, dsh_session::CreateOptions::at("/home/dev/project"))?;
    /// other.append(EventDraft::turn_start(1))?;
    /// owned.append(EventDraft::turn_start(1))?;
    /// assert_eq!(*heard.lock().unwrap(), [0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CoreError::StaleScope`] when `listening`'s generation has ended.
    pub fn on<E: OfSession + 'static>(
        &self,
        listening: &Scope,
        handler: impl Fn(&E) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        let owner = self.clone();
        listening.on::<E>(move |event| {
            if event.session().is_owned_by(&owner) {
                handler(event)
            } else {
                Ok(())
            }
        })
    }
}

impl PartialEq for SessionOwner {
    fn eq(&self, other: &SessionOwner) -> bool {
        self.instance == other.instance && self.generation == other.generation
    }
}

impl Eq for SessionOwner {}

impl fmt::Debug for SessionOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({:?}, generation {})",
            self.plugin, self.instance, self.generation
        )
    }
}

impl fmt::Display for SessionOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.plugin)
    }
}

/// A store event about one session: what [`SessionOwner::on`] filters by owner.
pub trait OfSession {
    /// The session the event is about.
    fn session(&self) -> &Arc<Session>;
}

impl OfSession for SessionCreated {
    fn session(&self) -> &Arc<Session> {
        &self.session
    }
}

impl OfSession for SessionEventAppended {
    fn session(&self) -> &Arc<Session> {
        &self.session
    }
}

impl OfSession for SessionFlush {
    fn session(&self) -> &Arc<Session> {
        &self.session
    }
}

impl OfSession for SessionDisposed {
    fn session(&self) -> &Arc<Session> {
        &self.session
    }
}
