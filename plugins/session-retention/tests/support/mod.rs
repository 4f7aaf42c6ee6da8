//! What the retention tests share: an in-memory backend that deletes (the shipped backends'
//! deletes are not on this branch), a context over it with the retention plugin enabled, and
//! time in days.

#![allow(dead_code)] // Each test target uses part of it.

use dsh_core::{BoxError, Context, ContextConfig, NoConfig, Plugin, Scope, ServiceKey};
use dsh_session::backend::{
    ListedSession, PersistenceError, SessionPersistence, StoredSession, StoredTail,
};
use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta, SessionPlugin};
use dsh_session_retention::SessionRetentionPlugin;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

/// One day in milliseconds.
pub const DAY: u64 = 86_400_000;

/// "Now" in the tests: 1,000 days after the epoch.
pub const NOW: u64 = 1_000 * DAY;

/// A stored session: its header, events and title.
struct Stored {
    header: SessionHeader,
    events: Vec<SessionEvent>,
    title: Option<String>,
}

/// An in-memory store whose delete removes the session, except those told to fail.
#[derive(Default)]
pub struct Memory {
    sessions: Mutex<BTreeMap<SessionId, Stored>>,
    failing: Mutex<HashSet<SessionId>>,
}

impl Memory {
    /// Stores session `id` created `days_ago` days before [`NOW`], in `cwd`, forked from
    /// `parent`, titled `title`.
    pub fn put(
        &self,
        id: &str,
        days_ago: u64,
        cwd: Option<&str>,
        parent: Option<&str>,
        title: Option<&str>,
    ) {
        self.put_at(id, NOW - days_ago * DAY, cwd, parent, title);
    }

    /// [`Memory::put`] with `createdAt` itself (milliseconds).
    pub fn put_at(
        &self,
        id: &str,
        created_at: u64,
        cwd: Option<&str>,
        parent: Option<&str>,
        title: Option<&str>,
    ) {
        let mut meta = SessionMeta::default();
        meta.cwd = cwd.map(str::to_owned);
        meta.parent_session = parent.map(SessionId::from);
        let header = SessionHeader::new(SessionId::from(id), created_at, meta);
        let stored = Stored {
            header,
            events: Vec::new(),
            title: title.map(str::to_owned),
        };
        self.sessions
            .lock()
            .unwrap()
            .insert(SessionId::from(id), stored);
    }

    /// Makes every delete of `id` fail with `SESSION_LOCKED`, the session left whole.
    pub fn fail_delete(&self, id: &str) {
        self.failing.lock().unwrap().insert(SessionId::from(id));
    }

    /// The stored ids, sorted.
    pub fn ids(&self) -> Vec<String> {
        let sessions = self.sessions.lock().unwrap();
        sessions.keys().map(|id| id.as_str().to_owned()).collect()
    }

    fn with<T>(
        &self,
        id: &SessionId,
        read: impl FnOnce(&mut Stored) -> T,
    ) -> Result<T, PersistenceError> {
        let mut sessions = self.sessions.lock().unwrap();
        let stored = sessions
            .get_mut(id)
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        Ok(read(stored))
    }
}

impl SessionPersistence for Memory {
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        let stored = Stored {
            header: header.clone(),
            events: seed.iter().map(|e| SessionEvent::clone(e)).collect(),
            title: None,
        };
        self.sessions
            .lock()
            .unwrap()
            .insert(header.id.clone(), stored);
        Ok(())
    }

    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        self.with(id, |s| {
            s.events
                .extend(events.iter().map(|e| SessionEvent::clone(e)))
        })
    }

    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError> {
        self.with(id, |s| StoredTail {
            header: s.header.clone(),
            events: s.events.iter().skip(from as usize).cloned().collect(),
            len: s.events.len() as u64,
            dropped_tail: None,
            revision: s.events.len() as u64,
        })
    }

    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        self.with(id, |s| StoredSession {
            header: s.header.clone(),
            events: s.events.iter().take(len as usize).cloned().collect(),
            dropped_tail: None,
            revision: s.events.len() as u64,
        })
    }

    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        let sessions = self.sessions.lock().unwrap();
        let mut listed: Vec<ListedSession> = sessions
            .values()
            .map(|s| ListedSession {
                header: s.header.clone(),
                revision: s.events.len() as u64,
                title: s.title.clone(),
            })
            .collect();
        listed.sort_by(|a, b| {
            (a.header.created_at, &a.header.id).cmp(&(b.header.created_at, &b.header.id))
        });
        Ok(listed)
    }

    fn can_delete(&self) -> bool {
        true
    }

    fn delete(&self, id: &SessionId) -> Result<(), PersistenceError> {
        if self.failing.lock().unwrap().contains(id) {
            return Err(PersistenceError::Locked {
                id: id.clone(),
                reason: "held by the test".to_owned(),
            });
        }
        self.sessions
            .lock()
            .unwrap()
            .remove(id)
            .map(drop)
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })
    }
}

/// The backend plugin of the tests: provides the storage it carries.
pub struct MemoryPlugin(pub Arc<Memory>);

impl Plugin for MemoryPlugin {
    const NAME: &'static str = "test-memory";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<dyn SessionPersistence>()];
    type Config = NoConfig;
    type Deps = ();

    fn apply(&self, scope: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
        let backend: Arc<dyn SessionPersistence> = self.0.clone();
        scope.provide(backend)?;
        Ok(())
    }
}

/// A context over `memory` with the retention plugin enabled with `policy`.
pub fn context(memory: &Arc<Memory>, policy: Value) -> Context {
    let mut config = ContextConfig::default();
    config.set_enabled("dsh-session-retention", true);
    config.set_config("dsh-session-retention", policy);
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(MemoryPlugin(memory.clone()))
        .add_plugin(SessionRetentionPlugin)
        .with_config(config)
        .build()
        .unwrap()
}
