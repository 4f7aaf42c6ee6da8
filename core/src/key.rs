//! [`ServiceKey`]: the identity of a service type in the registry.

use std::any::TypeId;
use std::fmt;

/// Identifies a service by the `TypeId` of its type, which may be a concrete type or a
/// `dyn Trait`. Built in const context with [`ServiceKey::of`], so a plugin's `PROVIDES` list
/// is a constant.
#[derive(Clone, Copy)]
pub struct ServiceKey {
    /// Held, not computed per call: a call through a per-type function would jump into code
    /// of its own for every service type, which a context of thousands of types pays in
    /// instruction-cache misses on every lookup of a key.
    type_id: TypeId,
    type_name: fn() -> &'static str,
}

impl ServiceKey {
    /// The key of service type `T`.
    pub const fn of<T: ?Sized + 'static>() -> ServiceKey {
        ServiceKey {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>,
        }
    }

    /// The `TypeId` the registry stores the service under. (Named `id`, not `type_id`, so that
    /// it is never shadowed by `Any::type_id` on a reference to a key.)
    pub fn id(&self) -> TypeId {
        self.type_id
    }

    /// The short type name, e.g. `SessionStore` or `SessionPersistence` (module paths and
    /// `dyn` stripped): the name hosts print.
    pub fn name(&self) -> &'static str {
        short_type_name((self.type_name)())
    }
}

impl PartialEq for ServiceKey {
    fn eq(&self, other: &ServiceKey) -> bool {
        self.id() == other.id()
    }
}

impl Eq for ServiceKey {}

impl fmt::Debug for ServiceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `a::b::Foo<c::Bar>` -> `Foo<c::Bar>`; `dyn a::Trait` -> `Trait`.
pub(crate) fn short_type_name(full: &'static str) -> &'static str {
    let full = full.strip_prefix("dyn ").unwrap_or(full);
    let head_end = full.find('<').unwrap_or(full.len());
    // A path's colons come in pairs, so the last one ends the last `::` (a one-byte search:
    // searching for the two-byte `::` set up a substring searcher for every name, a tenth
    // of the cost of adding a plugin).
    match full[..head_end].rfind(':') {
        Some(i) => &full[i + 1..],
        None => full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_paths_and_dyn() {
        assert_eq!(short_type_name("a::b::Store"), "Store");
        assert_eq!(short_type_name("dyn a::Persist"), "Persist");
        assert_eq!(short_type_name("a::Wrap<b::C>"), "Wrap<b::C>");
        assert_eq!(short_type_name("u8"), "u8");
    }

    #[test]
    fn service_keys_compare_by_type() {
        assert_eq!(ServiceKey::of::<u8>(), ServiceKey::of::<u8>());
        assert_ne!(ServiceKey::of::<u8>(), ServiceKey::of::<u16>());
        assert_eq!(ServiceKey::of::<dyn fmt::Debug>().name(), "Debug");
    }
}
