//! Instance names: the name a new instance gets (unique in the context, checked), the live
//! instance a name stands for, the name of an owner, and what a config entry's name stands for
//! (a managed instance, or a new instance of a catalog plugin).

use super::{RealmId, State, ROOT};
use crate::error::CoreError;
use crate::runtime::plugin::AnyPlugin;
use crate::state::InstanceId;
use std::sync::Arc;

impl State {
    pub(crate) fn name_of(&self, owner: Option<InstanceId>) -> Arc<str> {
        owner
            .and_then(|id| self.instances.get(&id))
            .map_or_else(|| Arc::from(ROOT), |inst| inst.name.clone())
    }

    /// The span of `owner`'s current generation (none for the root).
    pub(crate) fn span_of(&self, owner: Option<InstanceId>) -> tracing::Span {
        owner
            .and_then(|id| self.instances.get(&id))
            .map_or_else(tracing::Span::none, |inst| inst.span.clone())
    }

    pub(super) fn plugin_name(&self, id: InstanceId) -> &'static str {
        self.instances
            .get(&id)
            .map_or(ROOT, |inst| inst.plugin.manifest().name())
    }

    /// A name for a new instance of `plugin`, unique in the context: for a root instance its
    /// plugin name, or `name:label`, or for a plugin that may be loaded several times the first
    /// free `name:N` (N from 2); for a child, the same after its parent's name and a `/`
    /// (`parent/name`), so the children of different parents never share a name.
    ///
    /// # Errors
    ///
    /// [`CoreError::InvalidName`] for a plugin name or label that is empty or holds a
    /// `/`, a `:` or a control character; [`CoreError::DuplicatePlugin`] when the name is
    /// taken, or when `plugin` may be loaded only once and the context has a root instance of
    /// it.
    pub(crate) fn instance_name(
        &self,
        plugin: &AnyPlugin,
        label: Option<&str>,
        parent: Option<InstanceId>,
    ) -> Result<Arc<str>, CoreError> {
        self.instance_name_in(plugin, label, parent, RealmId::ROOT)
    }

    /// [`State::instance_name`] for an instance of `realm`: a plugin that may be loaded once
    /// is once per context's root realm, so a root instance in another realm (named with a
    /// label, its realm's name unless given) does not clash with it.
    ///
    /// # Errors
    ///
    /// As [`State::instance_name`].
    pub(crate) fn instance_name_in(
        &self,
        plugin: &AnyPlugin,
        label: Option<&str>,
        parent: Option<InstanceId>,
        realm: RealmId,
    ) -> Result<Arc<str>, CoreError> {
        let manifest = plugin.manifest();
        let plugin_name = manifest.name();
        check_name(plugin_name, "plugin name")?;
        if let Some(label) = label {
            check_name(label, "label")?;
        }
        let base: std::borrow::Cow<'static, str> =
            match parent.and_then(|id| self.instances.get(&id)) {
                Some(parent) => format!("{}/{plugin_name}", parent.name).into(),
                None => plugin_name.into(),
            };
        let taken = |name: &str| self.names.contains_key(name);
        let root_unique_clash = parent.is_none()
            && realm == RealmId::ROOT
            && manifest.is_unique()
            && self.root_plugins.get(plugin_name).is_some_and(|&n| n > 0);
        if root_unique_clash {
            return Err(CoreError::DuplicatePlugin {
                plugin: base.into_owned(),
            });
        }
        let name = match label {
            Some(label) => format!("{base}:{label}").into(),
            None if !taken(&base) => base,
            None if parent.is_none() && manifest.is_unique() => base,
            None => (2..)
                .map(|n| format!("{base}:{n}"))
                .find(|name| !taken(name))
                .expect("a free number")
                .into(),
        };
        if taken(&name) {
            return Err(CoreError::DuplicatePlugin {
                plugin: name.into_owned(),
            });
        }
        Ok(Arc::from(name.as_ref()))
    }

    /// The live instance named `name` (a root instance's name, or a child's `parent/name`).
    pub(crate) fn find(&self, name: &str) -> Result<InstanceId, CoreError> {
        self.names
            .get(name)
            .copied()
            .ok_or_else(|| CoreError::UnknownPlugin {
                plugin: name.to_owned(),
            })
    }

    /// What the config entry `name` stands for: the managed root instance of that name, else
    /// a new instance of a catalog plugin when `name` is the plugin's name or, for a plugin
    /// that may be loaded several times, `plugin:label`.
    ///
    /// # Errors
    ///
    /// [`CoreError::UnknownPlugin`] for any other name (no such catalog plugin, a
    /// label on a plugin that may be loaded once, an invalid label, a child's name);
    /// [`CoreError::DuplicatePlugin`] when the name (or, for a plugin that may be loaded once,
    /// the plugin) is taken by a root instance the config does not manage.
    pub(crate) fn entry_target(&self, name: &str) -> Result<EntryTarget, CoreError> {
        let unknown = || CoreError::UnknownPlugin {
            plugin: name.to_owned(),
        };
        if let Ok(id) = self.find(name) {
            if self.roster.managed(id).is_some() {
                return Ok(EntryTarget::Managed(id));
            }
        }
        let (plugin_name, label) = match name.split_once(':') {
            Some((plugin, label)) => (plugin, Some(label)),
            None => (name, None),
        };
        let plugin = self.roster.plugin(plugin_name).ok_or_else(unknown)?;
        if label.is_some() && plugin.manifest().is_unique() {
            return Err(unknown());
        }
        match self.instance_name(plugin, label, None) {
            Ok(given) if &*given == name => Ok(EntryTarget::New {
                plugin: plugin.clone(),
                name: given,
            }),
            // The bare name is taken, so the context would number a new instance instead.
            Ok(_) => Err(CoreError::DuplicatePlugin {
                plugin: name.to_owned(),
            }),
            Err(CoreError::InvalidName { .. }) => Err(unknown()),
            Err(other) => Err(other),
        }
    }
}

/// Refuses an empty name part or one holding a separator of instance names (`/`, `:`) or a
/// control character.
fn check_name(name: &str, what: &str) -> Result<(), CoreError> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.contains(['/', ':']) {
        Some("`/` and `:` separate the parts of instance names")
    } else if name.chars().any(char::is_control) {
        Some("it holds a control character")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(CoreError::InvalidName {
            name: name.escape_debug().to_string(),
            reason: format!("the {what} is refused: {reason}"),
        }),
        None => Ok(()),
    }
}

/// What a config entry's name stands for.
#[derive(Clone, Debug)]
pub(crate) enum EntryTarget {
    /// A live managed instance.
    Managed(InstanceId),
    /// An instance to create: a catalog plugin and the instance name it gets.
    New { plugin: AnyPlugin, name: Arc<str> },
}

impl EntryTarget {
    /// The plugin whose config type the entry's config is checked against.
    pub(crate) fn plugin<'a>(&'a self, state: &'a State) -> Option<&'a AnyPlugin> {
        match self {
            EntryTarget::Managed(id) => state.instance(*id).map(|inst| &inst.plugin),
            EntryTarget::New { plugin, .. } => Some(plugin),
        }
    }
}
