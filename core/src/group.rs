//! [`PluginGroup`]: a named list of plugins that a host adds to a context together, as
//! bevy_app's `PluginGroup` is added to an `App` with one `add_plugins` call.

use crate::registry::registered;
use crate::runtime::plugin::AnyPlugin;
use std::fmt;

/// A named, ordered list of plugins, added to a context together: the one place a crate
/// (a facade, a host) lists the plugins it ships, from which it derives everything else (the
/// plugins to build a context from, the names to check with
/// [`crate::Context::expect_plugins`]). It follows bevy_app's `PluginGroup`: a group value,
/// added with one call (`Context::builder().add_plugins(group)`, since a group is an
/// `IntoIterator` of plugins).
///
/// Naming the plugin values in code also links their crates, so a group cannot lose a plugin
/// the way a link-time registration can (a crate nothing references is not linked, and its
/// `submit_plugin!` never runs). The link-time registry stays the path for plugins the group
/// does not know: [`PluginGroup::with_registered`] adds them.
///
/// ```
/// use dsh_core::{plugin_fn, Context, PluginGroup};
/// use std::sync::Arc;
///
/// struct Clock(u64);
/// let group = PluginGroup::new("clocks")
///     .add_plugin(plugin_fn("clock", |scope, ()| Ok(scope.provide(Arc::new(Clock(7)))?)).provides::<Clock>())
///     .add_plugin(plugin_fn("tick", |_, ()| Ok(())));
/// assert_eq!(group.names(), ["clock", "tick"]);
///
/// let ctx = Context::builder().add_plugins(group.clone()).build()?;
/// ctx.expect_plugins(&group.names())?; // MISSING_PLUGINS when one is absent
/// assert_eq!(ctx.expect::<Clock>().0, 7);
/// # Ok::<(), dsh_core::CoreError>(())
/// ```
#[derive(Clone)]
pub struct PluginGroup {
    name: &'static str,
    plugins: Vec<AnyPlugin>,
}

impl PluginGroup {
    /// An empty group named `name` (for messages and `Debug`).
    pub fn new(name: &'static str) -> PluginGroup {
        PluginGroup {
            name,
            plugins: Vec::new(),
        }
    }

    /// The group with `plugin` added at its end. Adding a plugin whose name the group holds
    /// adds a second entry: a context built from the group refuses it as
    /// [`crate::CoreError::DuplicatePlugin`] unless the plugin may be loaded several times.
    pub fn add_plugin(mut self, plugin: impl Into<AnyPlugin>) -> PluginGroup {
        self.plugins.push(plugin.into());
        self
    }

    /// The group's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The plugins, in the order they were added.
    pub fn plugins(&self) -> &[AnyPlugin] {
        &self.plugins
    }

    /// The plugin names, in the order they were added.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(AnyPlugin::name).collect()
    }

    /// Whether the group holds a plugin named `plugin`.
    pub fn contains(&self, plugin: &str) -> bool {
        self.plugins.iter().any(|p| p.name() == plugin)
    }

    /// The group and every plugin of the link-time registry ([`crate::registered`]) whose
    /// name it does not hold, sorted by plugin name (the group's own entries in their order
    /// among equal names): the plugins a host builds its context from when it ships this
    /// group and also runs plugins it does not know. Sorted as `registered()` is, so a
    /// context built from it lists its instances in the order
    /// [`crate::Context::from_registry`] gives.
    ///
    /// ```
    /// use dsh_core::{plugin_fn, PluginGroup};
    ///
    /// let all = PluginGroup::new("mine").add_plugin(plugin_fn("zz-mine", |_, ()| Ok(()))).with_registered();
    /// assert!(all.contains("zz-mine"));
    /// let names = all.names();
    /// assert!(names.windows(2).all(|pair| pair[0] <= pair[1]), "sorted: {names:?}");
    /// ```
    pub fn with_registered(mut self) -> PluginGroup {
        let extra: Vec<AnyPlugin> = registered()
            .into_iter()
            .filter(|plugin| !self.contains(plugin.name()))
            .collect();
        self.plugins.extend(extra);
        self.plugins.sort_by_key(AnyPlugin::name);
        self
    }
}

impl IntoIterator for PluginGroup {
    type Item = AnyPlugin;
    type IntoIter = std::vec::IntoIter<AnyPlugin>;

    fn into_iter(self) -> Self::IntoIter {
        self.plugins.into_iter()
    }
}

impl fmt::Debug for PluginGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginGroup")
            .field("name", &self.name)
            .field("plugins", &self.names())
            .finish()
    }
}
