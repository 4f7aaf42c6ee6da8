//! The static dependency graph of a set of plugins: computed before anything is applied,
//! from what each plugin's manifest declares.

use crate::error::CoreError;
use crate::key::ServiceKey;
use crate::manifest::{Declared, Manifest};
use crate::runtime::plugin::AnyPlugin;
use std::any::TypeId;
use std::fmt::Write;
use std::sync::Arc;

/// A requirement that no enabled plugin of the graph provides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingService {
    /// The instance that requires it.
    pub plugin: String,
    /// Short type name of the service.
    pub service: &'static str,
}

/// One instance of a graph: its name, the service keys of its manifest (copied when the
/// node is made, while the manifest is at hand: a build of thousands of plugins then checks
/// its graph without reading every manifest again), whether it is enabled, and where it lives
/// when not in the root realm. Kept small (112 bytes), as a check walks every node twice.
pub(crate) struct Node {
    name: Arc<str>,
    declared: Declared,
    /// The optional services (only drawn, never checked).
    optional: Box<[ServiceKey]>,
    enabled: bool,
    /// `None` for an instance of the root realm whose services all resolve there.
    place: Option<Box<Place>>,
}

/// Where a node of an isolation realm lives.
struct Place {
    /// The node's isolation realm, `None` for the root realm.
    realm: Option<Arc<str>>,
    /// The service types of its manifest that resolve to a realm's slot, with that realm.
    slots: Vec<(TypeId, Arc<str>)>,
}

/// Where a node's service lives: the realm whose slot it is (`None`: the root's), its type.
type Slot = (Option<Arc<str>>, TypeId);

/// The nodes providing one slot, in node order: held in the map's entry when there are at most
/// two (one, unless the graph is refused for a duplicate provider).
type Providers = smallvec::SmallVec<[usize; 2]>;

impl Node {
    /// Instance `name` of a plugin declaring `manifest`, in the root realm.
    pub(crate) fn new(name: Arc<str>, manifest: &Manifest, enabled: bool) -> Node {
        Node {
            name,
            declared: manifest.declared().clone(),
            optional: manifest.optional().iter().map(|(key, _)| *key).collect(),
            enabled,
            place: None,
        }
    }

    /// The node in isolation realm `realm` (`None`: the root's), its service types in
    /// `slots` resolving to the slots of the realms named beside them.
    pub(crate) fn in_realm(self, realm: Option<Arc<str>>, slots: Vec<(TypeId, Arc<str>)>) -> Node {
        let place =
            (realm.is_some() || !slots.is_empty()).then(|| Box::new(Place { realm, slots }));
        Node { place, ..self }
    }

    /// The node's isolation realm, `None` for the root realm.
    fn realm(&self) -> Option<&Arc<str>> {
        self.place.as_ref()?.realm.as_ref()
    }

    fn slot(&self, key: &ServiceKey) -> Slot {
        let id = key.id();
        let slots = self
            .place
            .as_ref()
            .map_or(&[][..], |place| &place.slots[..]);
        let realm = slots
            .iter()
            .find(|(type_id, _)| *type_id == id)
            .map(|(_, realm)| realm.clone());
        (realm, id)
    }
}

/// Plugin instances (enabled or not) and the edges "requires a service provided by".
///
/// ```
/// use dsh_core::{plugin_fn, DependencyGraph, Dep};
/// struct A;
/// let user = plugin_fn("user", |_, _: Dep<A>| Ok(()));
/// let graph = DependencyGraph::new([(user.into(), true)]);
/// assert_eq!(graph.missing()[0].service, "A");
/// assert!(graph.check().is_ok()); // missing services are reported, not refused
/// ```
pub struct DependencyGraph {
    nodes: Vec<Node>,
}

impl DependencyGraph {
    /// The graph of `plugins` (each under its plugin name), each with whether it is enabled.
    /// Only enabled plugins provide.
    pub fn new(plugins: impl IntoIterator<Item = (AnyPlugin, bool)>) -> DependencyGraph {
        DependencyGraph::of_nodes(
            plugins
                .into_iter()
                .map(|(plugin, enabled)| {
                    Node::new(Arc::from(plugin.name()), plugin.manifest(), enabled)
                })
                .collect(),
        )
    }

    /// The graph of instances, which may live in isolation realms: a requirement links to
    /// the providers of the slot it resolves to, so the instances of two realms isolating a
    /// service never link to each other's providers.
    pub(crate) fn of_nodes(nodes: Vec<Node>) -> DependencyGraph {
        DependencyGraph { nodes }
    }

    /// Providers of each service among enabled plugins (or all plugins), in node order.
    fn providers(&self, include_disabled: bool) -> rustc_hash::FxHashMap<Slot, Providers> {
        self.providers_counted(include_disabled).0
    }

    /// [`DependencyGraph::providers`], and whether some service has more than one.
    fn providers_counted(
        &self,
        include_disabled: bool,
    ) -> (rustc_hash::FxHashMap<Slot, Providers>, bool) {
        let mut providers = rustc_hash::FxHashMap::<Slot, Providers>::with_capacity_and_hasher(
            self.nodes.len(),
            Default::default(),
        );
        let mut shared = false;
        for (i, node) in self.nodes.iter().enumerate() {
            if node.enabled || include_disabled {
                for key in node.declared.provides() {
                    let list = providers.entry(node.slot(key)).or_default();
                    list.push(i);
                    shared |= list.len() > 1;
                }
            }
        }
        (providers, shared)
    }

    /// Required services that no enabled plugin provides, with the plugin that needs each.
    /// (The root may still provide them at run time; such plugins wait, pending.)
    pub fn missing(&self) -> Vec<MissingService> {
        let providers = self.providers(false);
        self.nodes
            .iter()
            .filter(|n| n.enabled)
            .flat_map(|n| {
                n.declared
                    .requires()
                    .iter()
                    .filter(|key| !providers.contains_key(&n.slot(key)))
                    .map(|key| MissingService {
                        plugin: n.name.to_string(),
                        service: key.name(),
                    })
            })
            .collect()
    }

    /// Refuses a graph that can never settle: two enabled providers of one service
    /// ([`CoreError::DuplicateProvider`], naming both) or a cycle of requirements
    /// ([`CoreError::DependencyCycle`], with the whole path).
    pub fn check(&self) -> Result<(), CoreError> {
        let (providers, shared) = self.providers_counted(false);
        // The nodes are walked again for the first duplicate in node order only when there is
        // one: a graph of thousands of plugins is then walked twice, not three times.
        let duplicate = shared
            .then(|| {
                self.nodes
                    .iter()
                    .filter(|n| n.enabled)
                    .flat_map(|n| n.declared.provides().iter().map(|key| (key, n.slot(key))))
                    .find_map(|(key, slot)| match providers[&slot].as_slice() {
                        [first, second, ..] => Some((key, *first, *second)),
                        _ => None,
                    })
            })
            .flatten();
        if let Some((key, first, second)) = duplicate {
            return Err(CoreError::DuplicateProvider {
                service: key.name(),
                first: self.nodes[first].name.to_string(),
                second: self.nodes[second].name.to_string(),
            });
        }
        match self.cycle_among(&providers) {
            Some(path) => Err(CoreError::DependencyCycle { path }),
            None => Ok(()),
        }
    }

    /// The edge of enabled node `node` after `at` (its `at.0`-th required service's
    /// `at.1`-th enabled provider, in that order), and where the next one is looked for;
    /// `None` past its last edge. Walked in place, so that a walk of the graph makes no list
    /// of edges per node.
    fn next_edge(
        &self,
        providers: &rustc_hash::FxHashMap<Slot, Providers>,
        node: usize,
        (mut required, mut nth): (usize, usize),
    ) -> Option<(usize, (usize, usize))> {
        let node = &self.nodes[node];
        let keys = node.declared.requires();
        while let Some(key) = keys.get(required) {
            if let Some(&to) = providers
                .get(&node.slot(key))
                .and_then(|list| list.get(nth))
            {
                return Some((to, (required, nth + 1)));
            }
            (required, nth) = (required + 1, 0);
        }
        None
    }

    /// A cycle of requirements among enabled plugins, as the path of plugin names that
    /// starts and ends with the same plugin; iterative, so deep graphs are fine.
    pub fn cycle(&self) -> Option<Vec<String>> {
        self.cycle_among(&self.providers(false))
    }

    /// [`DependencyGraph::cycle`] with the enabled providers already found.
    fn cycle_among(
        &self,
        providers: &rustc_hash::FxHashMap<Slot, Providers>,
    ) -> Option<Vec<String>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            OnPath,
            Done,
        }
        let mut mark = vec![Mark::New; self.nodes.len()];
        // The path walked from the current start: each node with where its next edge is.
        let mut stack = Vec::new();
        for start in 0..self.nodes.len() {
            if !self.nodes[start].enabled || mark[start] != Mark::New {
                continue;
            }
            stack.push((start, (0, 0)));
            mark[start] = Mark::OnPath;
            while let Some((node, at)) = stack.last_mut() {
                if let Some((to, next)) = self.next_edge(providers, *node, *at) {
                    *at = next;
                    match mark[to] {
                        Mark::New => {
                            mark[to] = Mark::OnPath;
                            stack.push((to, (0, 0)));
                        }
                        Mark::OnPath => {
                            let from = stack.iter().position(|(n, _)| *n == to)?;
                            let mut path: Vec<String> = stack[from..]
                                .iter()
                                .map(|(n, _)| self.nodes[*n].name.to_string())
                                .collect();
                            path.push(self.nodes[to].name.to_string());
                            return Some(path);
                        }
                        Mark::Done => {}
                    }
                } else {
                    mark[*node] = Mark::Done;
                    stack.pop();
                }
            }
        }
        None
    }

    /// The graph in Graphviz DOT: one node per plugin (dashed when disabled), one edge per
    /// required service from the user to its provider (labelled with the service; dashed for
    /// optional ones), a red `missing` node for a required service nobody provides, and a
    /// grey dashed `absent` node for an optional one nobody provides (not an error). The
    /// instances of an isolation realm are drawn in a cluster subgraph `cluster_realm_<name>`
    /// labelled `realm <name>`.
    pub fn to_dot(&self) -> String {
        let providers = self.providers(true);
        let mut out = String::from("digraph plugins {\n  rankdir=LR;\n  node [shape=box];\n");
        let mut realms: Vec<&Arc<str>> = Vec::new();
        for node in &self.nodes {
            match node.realm() {
                Some(realm) if !realms.contains(&realm) => realms.push(realm),
                _ => {}
            }
        }
        for node in self.nodes.iter().filter(|node| node.realm().is_none()) {
            let style = if node.enabled { "solid" } else { "dashed" };
            let _ = writeln!(out, "  \"{}\" [style={style}];", node.name);
        }
        for realm in realms {
            let _ = writeln!(
                out,
                "  subgraph \"cluster_realm_{realm}\" {{\n    label=\"realm {realm}\";\n    style=rounded;"
            );
            for node in &self.nodes {
                if node.realm() == Some(realm) {
                    let style = if node.enabled { "solid" } else { "dashed" };
                    let _ = writeln!(out, "    \"{}\" [style={style}];", node.name);
                }
            }
            out.push_str("  }\n");
        }
        let edge = |out: &mut String, from: &Node, key: &ServiceKey, optional: bool| {
            let style = if optional { ", style=dashed" } else { "" };
            let slot = from.slot(key);
            let from = &from.name;
            match providers.get(&slot) {
                Some(list) => {
                    for &p in list {
                        let _ = writeln!(
                            out,
                            "  \"{from}\" -> \"{}\" [label=\"{}\"{style}];",
                            self.nodes[p].name,
                            key.name()
                        );
                    }
                }
                // A required service nobody provides is an error of the graph (red); an
                // optional one is only absent (grey), which a stock build may well be.
                None if optional => {
                    let _ = writeln!(
                        out,
                        "  \"absent {0}\" [shape=ellipse, style=dashed, color=gray, label=\"{0}\\n(optional, absent)\"];\n  \"{from}\" -> \"absent {0}\" [label=\"{0}\"{style}];",
                        key.name()
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "  \"missing {0}\" [shape=ellipse, color=red];\n  \"{from}\" -> \"missing {0}\" [label=\"{0}\"{style}];",
                        key.name()
                    );
                }
            }
        };
        for node in &self.nodes {
            for key in node.declared.requires() {
                edge(&mut out, node, key, false);
            }
            for key in node.optional.iter() {
                edge(&mut out, node, key, true);
            }
        }
        out.push_str("}\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin_fn;

    #[test]
    fn a_node_copies_its_manifests_keys_into_112_bytes() {
        struct A;
        struct B;
        struct C;
        let plugin: AnyPlugin = plugin_fn("p", |_, _: crate::Dep<A>| Ok(()))
            .provides::<B>()
            .into();
        let mut manifest = plugin.manifest().clone();
        manifest
            .optional
            .push((ServiceKey::of::<C>(), crate::OptionalMode::Live));
        let node = Node::new(Arc::from("p"), &manifest, true);
        drop(manifest);
        assert_eq!(node.declared.requires(), [ServiceKey::of::<A>()]);
        assert_eq!(node.declared.provides(), [ServiceKey::of::<B>()]);
        assert_eq!(&*node.optional, [ServiceKey::of::<C>()]);
        assert!(node.realm().is_none() && node.place.is_none());
        // A check walks every node of a build twice; a node in two cache lines, not three.
        assert!(std::mem::size_of::<Node>() <= 112);
    }
}
