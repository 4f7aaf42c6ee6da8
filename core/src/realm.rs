//! Isolation realms: [`Realm`], a part of a context where a set of service types has its own
//! providers while everything else stays shared (cordis's `ctx.isolate`), made with
//! [`Scope::isolate`] (or [`Context::isolate`] by a host or a test).

use crate::context::Context;
use crate::error::CoreError;
use crate::handle::{LoadOptions, PluginHandle, Ticket};
use crate::key::ServiceKey;
use crate::runtime::cells::ServiceValue;
use crate::runtime::plugin::AnyPlugin;
use crate::runtime::state::realms::Level;
use crate::runtime::state::{Owner, RealmId, SlotKey};
use crate::runtime::Runtime;
use crate::scope::Scope;
use std::any::TypeId;
use std::fmt;
use std::sync::{Arc, Weak};

/// An isolation realm: a named part of a context that has its own slot for each service type
/// it isolates.
///
/// Every instance lives in one realm: the root realm unless it was loaded through a realm's
/// handle ([`Realm::load`]); a child inherits its parent's. Resolving service `T` for an
/// instance (its [`crate::Dep`]s and [`crate::Optional`]s, its wait while pending, its
/// provides) walks its realm up to the root realm and stops at the first realm isolating `T`:
/// that realm's slot is the one it sees. So inside a realm that isolates `T`, a requirer waits
/// for the realm's provider (not the parent's), and a provider of `T` there is seen only by
/// the realm (never by [`Context::get`], nor by instances outside); a service the realm does
/// not isolate is shared: provided inside, it goes to the parent's slot, as cordis does.
///
/// A realm is owned by the scope that made it and disposed with it (an instance's
/// generation, or the root's on [`Context::dispose`]), or by [`Realm::dispose`]: its
/// instances are disposed (each after the instances using its services), then the services
/// its handle provided, then the realms nested in it. [`Scope::isolate`] with the name of a
/// live realm of the same parent and services joins it (the handle is not its owner).
/// Realm names are unique in a context.
///
/// ```
/// use dsh_core::{plugin_fn, Context, Dep, ServiceKey};
/// use std::sync::Arc;
///
/// pub struct Store(&'static str);
/// pub struct Report(String);
///
/// let reporter = || {
///     plugin_fn("reporter", |scope, store: Dep<Store>| {
///         Ok(scope.provide(Arc::new(Report(format!("using {}", store.get()?.0))))?)
///     })
///     .provides::<Report>()
/// };
/// let ctx = Context::builder().build()?;
/// ctx.provide(Arc::new(Store("shared")))?;
/// // A test replaces the store for one subtree; the report is shared (not isolated).
/// let fake = ctx.isolate("under-test", &[ServiceKey::of::<Store>()])?;
/// fake.provide(Arc::new(Store("fake")))?;
/// fake.load(reporter())?;
/// assert_eq!(ctx.expect::<Report>().0, "using fake");
/// assert_eq!(ctx.expect::<Store>().0, "shared"); // the fake never leaks out
/// assert_eq!(fake.get::<Store>().map(|store| store.0), Some("fake"));
/// assert_eq!(ctx.plugins()[0].realm.as_deref(), Some("under-test"));
/// fake.dispose()?; // its instances and services go with it
/// assert!(ctx.get::<Report>().is_none());
/// # Ok::<(), dsh_core::CoreError>(())
/// ```
#[derive(Clone)]
pub struct Realm {
    rt: Weak<Runtime>,
    id: RealmId,
    name: Arc<str>,
    /// The realm and those it nests in, innermost first (the root realm left out).
    chain: Arc<[Level]>,
    /// Whose loads the handle makes (children of that instance, or root instances).
    owner: Owner,
}

impl Realm {
    /// The realm's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn runtime(&self) -> Result<Arc<Runtime>, CoreError> {
        self.rt.upgrade().ok_or_else(|| self.gone())
    }

    fn gone(&self) -> CoreError {
        CoreError::RealmInvalid {
            realm: self.name.to_string(),
            reason: "the realm is disposed".into(),
        }
    }

    /// Loads an instance of `plugin` into this realm, owned by the scope that made the handle
    /// (a child of its instance, or a root instance). Without a label, the instance is
    /// labelled with the realm's name (`store:workspace-a`, or `parent/store:workspace-a`),
    /// so the same plugin can be loaded into several realms; a plugin that may be loaded
    /// once is once in the root realm and once in each realm.
    ///
    /// # Errors
    /// [`CoreError::RealmInvalid`] once the realm is disposed; otherwise as
    /// [`Scope::load`] ([`CoreError::DuplicatePlugin`], [`CoreError::StaleScope`], ...).
    pub fn load(&self, plugin: impl Into<AnyPlugin>) -> Result<PluginHandle, CoreError> {
        self.load_with(plugin, LoadOptions::default())
    }

    /// [`Realm::load`] with options (config, label, enabled).
    ///
    /// # Errors
    /// As [`Realm::load`].
    pub fn load_with(
        &self,
        plugin: impl Into<AnyPlugin>,
        options: LoadOptions,
    ) -> Result<PluginHandle, CoreError> {
        let rt = self.runtime()?;
        PluginHandle::load_in(&rt, self.owner, Some(self.id), plugin.into(), options)
    }

    /// Provides `value` as this realm's service of type `T` (a type the realm isolates):
    /// readable at once by the realm's instances, never outside; withdrawn when the realm is
    /// disposed (after its instances).
    ///
    /// # Errors
    /// [`CoreError::RealmInvalid`] when the realm is disposed or does not isolate `T`;
    /// [`CoreError::ServiceConflict`] when the realm already has a provider of `T`.
    pub fn provide<T: ?Sized + Send + Sync + 'static>(
        &self,
        value: Arc<T>,
    ) -> Result<(), CoreError> {
        let value = ServiceValue::new(value);
        self.runtime()?
            .provide_in(self.id, ServiceKey::of::<T>(), value)
            .map(drop)
    }

    /// The service of type `T` as an instance of this realm sees it: the realm's (or an
    /// enclosing realm's) own when one of them isolates `T`, else the root's. `None` while it
    /// is not readable, or once the realm is disposed. Lock-free, like [`Context::get`], plus
    /// a scan of the isolated types of each realm of the chain.
    #[inline]
    pub fn get<T: ?Sized + 'static>(&self) -> Option<Arc<T>> {
        self.read(Arc::clone)
    }

    /// Calls `f` with a borrow of the service of type `T` as [`Realm::get`] resolves it (no
    /// reference count touched, like [`Context::with`]).
    #[inline]
    pub fn with<T: ?Sized + 'static, R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.read::<T, _>(|service| f(service))
    }

    /// Calls `f` with service `T` as the chain resolves it: the cell of the first realm
    /// isolating `T` (the handle keeps that realm's index, so this touches no shared count),
    /// else the root's through the context.
    #[inline]
    fn read<T: ?Sized + 'static, R>(&self, f: impl FnOnce(&Arc<T>) -> R) -> Option<R> {
        let type_id = TypeId::of::<T>();
        match self
            .chain
            .iter()
            .find(|level| level.isolated.contains(&type_id))
        {
            None => self.rt.upgrade()?.with_service(f),
            Some(level) => {
                let at = SlotKey {
                    realm: level.realm,
                    type_id,
                };
                let locked = || self.rt.upgrade()?.published(at);
                level.cells.get(&type_id)?.with(f, locked)
            }
        }
    }

    /// Makes (or joins) a realm nested in this one, isolating `keys` (see
    /// [`Scope::isolate`]), owned by the scope that made this handle.
    ///
    /// # Errors
    /// As [`Scope::isolate`].
    pub fn isolate(&self, name: &str, keys: &[ServiceKey]) -> Result<Realm, CoreError> {
        make(&self.runtime()?, self.owner, Some(self.id), name, keys)
    }

    /// Disposes the realm: its instances (each after the instances using its services, and
    /// with them instances elsewhere that require a service provided in the realm but not
    /// isolated by it go back to pending), the services its handles provided, and the realms
    /// nested in it. Nothing happens for a realm already gone. Returns a ticket like
    /// [`PluginHandle::dispose`].
    ///
    /// # Errors
    /// None today; the `Result` leaves room for the lifecycle's.
    pub fn dispose(&self) -> Result<Ticket, CoreError> {
        let Some(rt) = self.rt.upgrade() else {
            return Ok(Ticket::done());
        };
        let seq = rt.submit_dispose_realm(self.id);
        Ok(Ticket {
            rt: self.rt.clone(),
            seq,
        })
    }
}

impl fmt::Debug for Realm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Realm").field("name", &self.name).finish()
    }
}

fn make(
    rt: &Arc<Runtime>,
    owner: Owner,
    parent: Option<RealmId>,
    name: &str,
    keys: &[ServiceKey],
) -> Result<Realm, CoreError> {
    let (id, chain) = rt.isolate(owner, parent, name, keys)?;
    Ok(Realm {
        rt: Arc::downgrade(rt),
        id,
        name: Arc::from(name),
        chain,
        owner,
    })
}

impl Scope {
    /// Makes an isolation realm named `name` that isolates the services `keys`, nested in
    /// this scope's realm and owned by this scope (disposed with its generation), or joins
    /// the live realm of that name when it has the same parent and services. Instances loaded
    /// through the returned [`Realm`] resolve those services in the realm.
    ///
    /// # Errors
    /// [`CoreError::RealmInvalid`] when `name` is empty, or names a realm with another parent
    /// or other services; [`CoreError::StaleScope`].
    pub fn isolate(&self, name: &str, keys: &[ServiceKey]) -> Result<Realm, CoreError> {
        make(&self.runtime()?, self.owner(), None, name, keys)
    }
}

impl Context {
    /// [`Scope::isolate`] through the root scope: a realm nested in the root realm, owned by
    /// the root (disposed with the context, or by [`Realm::dispose`]).
    ///
    /// # Errors
    /// As [`Scope::isolate`].
    pub fn isolate(&self, name: &str, keys: &[ServiceKey]) -> Result<Realm, CoreError> {
        make(&self.rt, Owner::Root, None, name, keys)
    }

    /// A handle on the live realm named `name` (loads through it are root instances).
    pub fn realm(&self, name: &str) -> Option<Realm> {
        let state = self.rt.lock();
        let id = state.realm_named(name)?;
        let chain = state.chain(id).into();
        let name = state.realm_name(id)?;
        drop(state);
        Some(Realm {
            rt: Arc::downgrade(&self.rt),
            id,
            name,
            chain,
            owner: Owner::Root,
        })
    }
}
