//! The link-time plugin registry: every plugin type submitted with
//! [`crate::submit_plugin!`] by a crate linked into the binary.

use crate::runtime::plugin::AnyPlugin;

/// An entry of the link-time registry; made by [`crate::submit_plugin!`].
#[doc(hidden)]
pub struct Registration {
    /// Makes the plugin value (its `Default`).
    pub make: fn() -> AnyPlugin,
}

inventory::collect!(Registration);

/// A fresh value of every plugin submitted by a crate linked into this binary, sorted by
/// name: the second registration path beside an explicit list (such as the facade's
/// `builtin_plugins()`).
///
/// A plugin crate that nothing references is not linked, so its plugin is absent: a host
/// references each plugin crate it ships (`use dsh_session_fork as _;`) and can assert the
/// set with [`crate::Context::expect_plugins`].
pub fn registered() -> Vec<AnyPlugin> {
    let mut all: Vec<AnyPlugin> = inventory::iter::<Registration>
        .into_iter()
        .map(|registration| (registration.make)())
        .collect();
    all.sort_by_key(AnyPlugin::name);
    all
}
