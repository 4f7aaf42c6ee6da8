//! Typed dependency handles, injected into `apply`: [`Dep<T>`] for a required service,
//! `Option<Dep<T>>` for an optional one the plugin restarts on, [`Optional<T>`] for an optional
//! one it follows live, [`Provide<T>`] for a service it provides, and the [`Deps`] sets
//! (tuples of them) a plugin declares as its `Deps` type. What a plugin requires and provides
//! is exactly what its `apply` receives: there is no list to keep in step with the body, no way
//! to ask for an undeclared service and, through `Provide<T>`, none to provide one.

use crate::error::{CoreError, Unavailable};
use crate::key::ServiceKey;
use crate::manifest::{Manifest, OptionalMode};
use crate::runtime::cells::ServiceCell;
use crate::runtime::plugin::Applying;
use crate::runtime::state::SlotKey;
use crate::runtime::{Resolved, Runtime};
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Weak};

/// A required service, resolved once when the instance is applied.
///
/// Clonable and cheap to keep in a service. Reading it ([`Dep::get`]) is one atomic load and
/// a compare (no hash, no lock, no reference count): the handle checks that its provider is
/// still the one it was resolved from. The consumer is torn down before its provider goes, so
/// inside the consumer's life the read always succeeds; a handle kept beyond it (a service value
/// someone still holds after its plugin was torn down) reads `Err(Unavailable)` once the
/// provider has gone, even if another provider has taken its place. Like an `Arc`, it keeps the
/// service value alive while it exists.
pub struct Dep<T: ?Sized> {
    value: Arc<T>,
    link: Link,
}

/// What a [`Dep`] keeps beside its value: the service's cell, the epoch it was resolved at and
/// who provided it. The same for every service type, so the code that makes, checks, clones
/// and drops it exists once, not once per type a host's plugins depend on.
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) cell: Arc<ServiceCell>,
    pub(crate) epoch: u64,
    /// The instance the service was resolved from, named in the error once it has gone.
    pub(crate) provider: Arc<str>,
}

impl Link {
    /// Whether the provider resolved from is still the one publishing the service.
    #[inline]
    fn is_current(&self) -> bool {
        self.cell.epoch() == self.epoch
    }

    /// The error of a read once the provider has gone.
    #[cold]
    fn unavailable(&self) -> Unavailable {
        Unavailable {
            service: self.cell.key.name(),
            provider: Some(self.provider.to_string()),
            state: None,
            failure: None,
        }
    }
}

impl<T: ?Sized + Send + Sync + 'static> Dep<T> {
    /// The service, while its provider is the one this handle was resolved from.
    ///
    /// # Errors
    /// [`Unavailable`] (code `CAPABILITY_UNAVAILABLE`) naming the service and the provider it
    /// was resolved from, once that provider has gone (even if another generation or another
    /// plugin provides the service now: resolve it anew).
    #[inline]
    pub fn get(&self) -> Result<&T, Unavailable> {
        if self.link.is_current() {
            Ok(&self.value)
        } else {
            Err(self.link.unavailable())
        }
    }

    /// The service as an `Arc` (one reference count more), like [`Dep::get`].
    ///
    /// # Errors
    /// As [`Dep::get`].
    pub fn arc(&self) -> Result<Arc<T>, Unavailable> {
        self.get().map(|_| self.value.clone())
    }

    /// Whether [`Dep::get`] succeeds now.
    pub fn is_available(&self) -> bool {
        self.link.is_current()
    }

    // Inlined, as the other per-type steps of an apply (`Deps::resolve`, `FnApply::call`,
    // `Scope::provide`), into the one function each plugin type's apply compiles to: a context
    // of many plugin types then runs one stretch of code a plugin instead of half a dozen
    // scattered functions (callgrind: 25 % fewer instruction-cache misses in a 10,000 chain).
    #[inline]
    fn resolve(cx: &DepsCx<'_>) -> Option<Dep<T>> {
        let resolved = cx.resolve(&ServiceKey::of::<T>())?;
        let value = resolved.value.downcast_ref::<Arc<T>>()?.clone();
        Some(Dep {
            value,
            link: resolved.link,
        })
    }
}

impl<T: ?Sized> Clone for Dep<T> {
    fn clone(&self) -> Dep<T> {
        Dep {
            value: self.value.clone(),
            link: self.link.clone(),
        }
    }
}

impl<T: ?Sized> fmt::Debug for Dep<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dep")
            .field("service", &self.link.cell.key)
            .field("available", &self.link.is_current())
            .finish()
    }
}

/// An optional service the instance follows without restarting: reads see whichever provider
/// is active now (or nothing). Declared as `Optional<T>` in a plugin's `Deps`; the plugin can
/// hear before the service goes with [`crate::Scope::before_leave`], while it is still
/// readable.
///
/// A read goes through the service's cell with a hazard pointer: a few atomic operations, no
/// lock and no shared write, so it scales across threads.
pub struct Optional<T: ?Sized> {
    cell: Arc<ServiceCell>,
    /// The slot the cell is of (in the realm of the instance that took the handle).
    slot: SlotKey,
    rt: Weak<Runtime>,
    _service: PhantomData<fn() -> Arc<T>>,
}

impl<T: ?Sized + Send + Sync + 'static> Optional<T> {
    /// Calls `f` with a borrow of the service if it is readable now; `None` otherwise.
    pub fn with<R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.read(|service| f(service))
    }

    /// The service if it is readable now (one reference count more).
    pub fn get(&self) -> Option<Arc<T>> {
        self.read(Arc::clone)
    }

    /// The service if it is readable now, or why not.
    ///
    /// # Errors
    /// [`Unavailable`] naming the service, its provider and that provider's state.
    pub fn require(&self) -> Result<Arc<T>, Unavailable> {
        self.get()
            .ok_or_else(|| unavailable(&self.rt, &self.cell.key))
    }

    fn read<R>(&self, f: impl FnOnce(&Arc<T>) -> R) -> Option<R> {
        self.cell
            .with(f, || self.rt.upgrade()?.published(self.slot))
    }

    /// Whether a provider is active now.
    pub fn is_available(&self) -> bool {
        self.with(|_| ()).is_some()
    }

    /// The key of the service.
    pub fn key(&self) -> ServiceKey {
        self.cell.key
    }
}

impl<T: ?Sized> Clone for Optional<T> {
    fn clone(&self) -> Optional<T> {
        Optional {
            cell: self.cell.clone(),
            slot: self.slot,
            rt: self.rt.clone(),
            _service: PhantomData,
        }
    }
}

impl<T: ?Sized> fmt::Debug for Optional<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Optional")
            .field("service", &self.cell.key)
            .finish()
    }
}

/// Why service `key` of the context behind `rt` cannot be read (provider gone with it, when
/// the context is gone).
fn unavailable(rt: &Weak<Runtime>, key: &ServiceKey) -> Unavailable {
    match rt.upgrade() {
        Some(rt) => rt.unavailable(key),
        None => Unavailable {
            service: key.name(),
            provider: None,
            state: None,
            failure: None,
        },
    }
}

/// What `Deps::resolve` reads from: the apply in progress. Not constructible outside the core.
#[doc(hidden)]
pub struct DepsCx<'a> {
    pub(crate) applying: &'a Applying,
}

impl DepsCx<'_> {
    /// The service `key` resolves to for the instance being applied, if it is published.
    fn resolve(&self, key: &ServiceKey) -> Option<Resolved> {
        self.applying.rt.resolve(self.applying.id, key)
    }

    /// Why service `key` cannot be resolved.
    #[cold]
    fn unavailable(&self, key: &ServiceKey) -> Unavailable {
        self.applying.rt.unavailable(key)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A set of dependency handles a plugin declares as its `Deps` type and receives in `apply`:
/// `()`, a [`Dep<T>`] (required), an `Option<Dep<T>>` (optional; the instance restarts when the
/// service appears or goes, so apply sees it), an [`Optional<T>`] (optional, followed live), a
/// [`Provide<T>`] (a service it provides), or a tuple of up to eight of these.
///
/// ```
/// use dsh_core::{Dep, Optional, Provide};
/// # struct Store; struct Clock; trait Metrics {} struct Index;
/// type Deps = (Dep<Store>, Option<Dep<Clock>>, Optional<dyn Metrics>, Provide<Index>);
/// ```
///
/// Sealed: the core resolves only the handles it knows.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a set of dependency handles",
    label = "not `()`, `Dep<T>`, `Option<Dep<T>>`, `Optional<T>`, `Provide<T>` or a tuple of them",
    note = "a plugin receives its dependencies as handles: `Dep<T>` (required), `Option<Dep<T>>` (optional, restarts), `Optional<T>` (optional, live), `Provide<T>` (provided), `()` for none, or a tuple of up to eight"
)]
pub trait Deps: sealed::Sealed + Sized + Send + 'static {
    /// Adds the declarations of the set to `manifest`.
    #[doc(hidden)]
    fn declare(manifest: &mut Manifest);

    /// Resolves the set for the apply in progress.
    #[doc(hidden)]
    fn resolve(cx: &DepsCx<'_>) -> Result<Self, Unavailable>;
}

impl sealed::Sealed for () {}
impl Deps for () {
    fn declare(_: &mut Manifest) {}
    fn resolve(_: &DepsCx<'_>) -> Result<(), Unavailable> {
        Ok(())
    }
}

impl<T: ?Sized + Send + Sync + 'static> sealed::Sealed for Dep<T> {}
impl<T: ?Sized + Send + Sync + 'static> Deps for Dep<T> {
    fn declare(manifest: &mut Manifest) {
        manifest.require(ServiceKey::of::<T>());
    }
    #[inline]
    fn resolve(cx: &DepsCx<'_>) -> Result<Dep<T>, Unavailable> {
        Dep::resolve(cx).ok_or_else(|| cx.unavailable(&ServiceKey::of::<T>()))
    }
}

impl<T: ?Sized + Send + Sync + 'static> sealed::Sealed for Option<Dep<T>> {}
impl<T: ?Sized + Send + Sync + 'static> Deps for Option<Dep<T>> {
    fn declare(manifest: &mut Manifest) {
        manifest
            .optional
            .push((ServiceKey::of::<T>(), OptionalMode::Restart));
    }
    fn resolve(cx: &DepsCx<'_>) -> Result<Option<Dep<T>>, Unavailable> {
        Ok(Dep::resolve(cx))
    }
}

impl<T: ?Sized + Send + Sync + 'static> sealed::Sealed for Optional<T> {}
impl<T: ?Sized + Send + Sync + 'static> Deps for Optional<T> {
    fn declare(manifest: &mut Manifest) {
        manifest
            .optional
            .push((ServiceKey::of::<T>(), OptionalMode::Live));
    }
    fn resolve(cx: &DepsCx<'_>) -> Result<Optional<T>, Unavailable> {
        let (cell, slot) = cx.applying.rt.cell(cx.applying.id, &ServiceKey::of::<T>());
        Ok(Optional {
            cell,
            slot,
            rt: Arc::downgrade(&cx.applying.rt),
            _service: PhantomData,
        })
    }
}

/// A service the plugin provides, declared by its type: `Provide<T>` in a plugin's `Deps` adds
/// `T` to what it provides (as `PROVIDES` does: the dependency graph, the pending reasons and
/// the duplicate-provider check see it before anything runs), and `apply` receives the one
/// handle that provides a `T`. A service the plugin does not declare cannot be provided
/// through a handle it does not have, and one it declares cannot be left out of a list: the
/// last declaration mistake [`crate::Scope::provide`] reports at run time
/// (`UNDECLARED_SERVICE`) is a compile error here.
///
/// ```
/// use dsh_core::{plugin_fn, Context, Dep, Provide};
/// use std::sync::Arc;
///
/// struct Clock(u64);
/// struct Greeting(String);
///
/// let clock = plugin_fn("clock", |_, clock: Provide<Clock>| Ok(clock.provide(Arc::new(Clock(7)))?));
/// let greeter = plugin_fn("greeter", |_, (clock, greeting): (Dep<Clock>, Provide<Greeting>)| {
///     greeting.provide(Arc::new(Greeting(format!("hello at {}", clock.get()?.0))))?;
///     Ok(())
/// });
/// let ctx = Context::builder().add_plugin(greeter).add_plugin(clock).build()?;
/// assert_eq!(ctx.expect::<Greeting>().0, "hello at 7");
/// assert!(ctx.plugin("clock").unwrap().info().unwrap().provides.contains(&"Clock"));
/// # Ok::<(), dsh_core::CoreError>(())
/// ```
pub struct Provide<T: ?Sized> {
    scope: crate::Scope,
    _service: PhantomData<fn(Arc<T>)>,
}

impl<T: ?Sized + Send + Sync + 'static> Provide<T> {
    /// Provides `value` as this generation's service `T` ([`crate::Scope::provide`]): readable
    /// once the instance is active (at once for an active one), withdrawn when it is torn
    /// down, after the instances using it.
    ///
    /// # Errors
    /// [`CoreError::ServiceConflict`] when `T` is already provided (naming both plugins),
    /// [`CoreError::StaleScope`] once this generation has ended, [`CoreError::ShuttingDown`].
    pub fn provide(&self, value: Arc<T>) -> Result<(), CoreError> {
        self.scope.provide(value)
    }
}

impl<T: ?Sized> Clone for Provide<T> {
    fn clone(&self) -> Provide<T> {
        Provide {
            scope: self.scope.clone(),
            _service: PhantomData,
        }
    }
}

impl<T: ?Sized + 'static> fmt::Debug for Provide<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provide")
            .field("service", &ServiceKey::of::<T>())
            .field("plugin", &self.scope.name())
            .finish()
    }
}

impl<T: ?Sized + Send + Sync + 'static> sealed::Sealed for Provide<T> {}
impl<T: ?Sized + Send + Sync + 'static> Deps for Provide<T> {
    fn declare(manifest: &mut Manifest) {
        let key = ServiceKey::of::<T>();
        if !manifest.provides().contains(&key) {
            manifest.provide(key);
        }
    }
    fn resolve(cx: &DepsCx<'_>) -> Result<Provide<T>, Unavailable> {
        Ok(Provide {
            scope: crate::Scope::new(cx.applying),
            _service: PhantomData,
        })
    }
}

macro_rules! tuple_deps {
    ($($name:ident),+) => {
        impl<$($name: Deps),+> sealed::Sealed for ($($name,)+) {}
        impl<$($name: Deps),+> Deps for ($($name,)+) {
            fn declare(manifest: &mut Manifest) {
                $($name::declare(manifest);)+
            }
            fn resolve(cx: &DepsCx<'_>) -> Result<Self, Unavailable> {
                Ok(($($name::resolve(cx)?,)+))
            }
        }
    };
}

tuple_deps!(A);
tuple_deps!(A, B);
tuple_deps!(A, B, C);
tuple_deps!(A, B, C, D);
tuple_deps!(A, B, C, D, E);
tuple_deps!(A, B, C, D, E, F);
tuple_deps!(A, B, C, D, E, F, G);
tuple_deps!(A, B, C, D, E, F, G, H);
