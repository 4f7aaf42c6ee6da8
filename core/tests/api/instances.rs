//! Plugins are values: one plugin may be loaded several times with different configs when it
//! allows it, each instance with its own name, id and config; plugin values carry state.

use dsh_core::{
    plugin_fn, BoxError, Context, ContextConfig, CoreError, Dep, LoadOptions, NoConfig, Plugin,
    PluginState, Scope,
};
use serde::Deserialize;
use std::sync::{Arc, Mutex};

#[derive(Deserialize, Default)]
#[serde(default)]
struct Target {
    folder: String,
}

/// An exporter that may run several times (one per folder); it records what it was given.
#[derive(Clone, Default)]
struct Exporter {
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

impl Plugin for Exporter {
    const NAME: &'static str = "exporter";
    const UNIQUE: bool = false;
    type Config = Target;
    type Deps = ();

    fn apply(&self, scope: &Scope, config: Target, (): ()) -> Result<(), BoxError> {
        self.seen
            .lock()
            .unwrap()
            .push((scope.name().to_owned(), config.folder));
        Ok(())
    }
}

#[test]
fn a_plugin_that_allows_it_is_loaded_several_times_with_its_own_config_and_name() {
    let exporter = Exporter::default();
    let ctx = Context::builder()
        .add_plugin_with(
            exporter.clone(),
            LoadOptions::with_config(serde_json::json!({"folder": "a"})),
        )
        .add_plugin_with(
            exporter.clone(),
            LoadOptions::with_config(serde_json::json!({"folder": "b"})),
        )
        .build()
        .unwrap();
    let third = ctx
        .load_with(
            exporter.clone(),
            LoadOptions::with_config(serde_json::json!({"folder": "c"})).label("archive"),
        )
        .unwrap();
    assert_eq!(third.name(), "exporter:archive");
    let names: Vec<String> = ctx.plugins().into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["exporter", "exporter:2", "exporter:archive"]);
    assert_eq!(
        *exporter.seen.lock().unwrap(),
        [
            ("exporter".to_owned(), "a".to_owned()),
            ("exporter:2".to_owned(), "b".to_owned()),
            ("exporter:archive".to_owned(), "c".to_owned()),
        ]
    );
    ctx.disable("exporter:2").unwrap();
    assert_eq!(ctx.plugin_state("exporter"), Some(PluginState::Active));
    assert_eq!(ctx.plugin_state("exporter:2"), Some(PluginState::Disabled));
    let taken = ctx
        .load_with(exporter, LoadOptions::default().label("archive"))
        .unwrap_err();
    assert_eq!(
        taken,
        CoreError::DuplicatePlugin {
            plugin: "exporter:archive".into()
        }
    );
}

#[test]
fn a_config_entry_names_an_instance() {
    let exporter = Exporter::default();
    let mut config = ContextConfig::default();
    config.set_config("exporter:2", serde_json::json!({"folder": "second"}));
    config.set_enabled("exporter", false);
    let ctx = Context::builder()
        .add_plugin(exporter.clone())
        .add_plugin(exporter.clone())
        .with_config(config)
        .build()
        .unwrap();
    assert_eq!(ctx.plugin_state("exporter"), Some(PluginState::Disabled));
    assert_eq!(
        *exporter.seen.lock().unwrap(),
        [("exporter:2".to_owned(), "second".to_owned())]
    );
}

#[test]
fn a_unique_plugin_loaded_twice_at_the_root_is_a_duplicate_but_its_value_may_be_shared_by_children()
{
    let ctx = Context::builder()
        .add_plugin(plugin_fn("single", |_, ()| Ok(())))
        .build()
        .unwrap();
    let again = ctx.load(plugin_fn("single", |_, ()| Ok(()))).unwrap_err();
    assert_eq!(again.code(), "DUPLICATE_PLUGIN");
    let parent = plugin_fn("parent", |scope, ()| {
        scope.load(plugin_fn("single", |_, ()| Ok(())))?;
        scope.load(plugin_fn("single", |_, ()| Ok(())))?;
        Ok(())
    });
    ctx.load(parent).unwrap();
    let children = ctx
        .plugins()
        .into_iter()
        .filter(|p| p.parent.as_deref() == Some("parent"))
        .count();
    assert_eq!(children, 2, "uniqueness is about root instances");
}

/// A plugin value with state: a counter shared by every generation of its instance.
struct Counting(Arc<Mutex<u32>>);

impl Plugin for Counting {
    const NAME: &'static str = "counting";
    type Config = NoConfig;
    type Deps = ();
    fn apply(&self, _: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
        *self.0.lock().unwrap() += 1;
        Ok(())
    }
}

#[test]
fn every_generation_of_an_instance_is_applied_with_the_same_plugin_value() {
    let count = Arc::new(Mutex::new(0));
    let ctx = Context::builder()
        .add_plugin(Counting(count.clone()))
        .build()
        .unwrap();
    let counting = ctx.plugin("counting").unwrap();
    counting.restart().unwrap();
    counting.update_config(serde_json::json!({})).unwrap();
    assert_eq!(*count.lock().unwrap(), 3);
}

pub struct X;
pub struct Y;
pub struct Z;

#[test]
fn loading_a_plugin_that_closes_a_requirement_cycle_is_refused_with_the_whole_path() {
    let a = plugin_fn("a", |_, _: Dep<Y>| Ok(())).provides::<X>();
    let b = plugin_fn("b", |_, _: Dep<Z>| Ok(())).provides::<Y>();
    let ctx = Context::builder()
        .add_plugin(a)
        .add_plugin(b)
        .build()
        .unwrap();
    let c = plugin_fn("c", |_, _: Dep<X>| Ok(())).provides::<Z>();
    let refused = ctx.load(c).unwrap_err();
    assert_eq!(
        refused,
        CoreError::DependencyCycle {
            path: vec!["c".into(), "a".into(), "b".into(), "c".into()]
        }
    );
    assert!(ctx.plugin("c").is_none(), "nothing was added");
    let own = plugin_fn("own", |_, _: Dep<Z>| Ok(())).provides::<Z>();
    assert_eq!(ctx.load(own).unwrap_err().code(), "DEPENDENCY_CYCLE");
    let disabled = plugin_fn("c", |_, _: Dep<X>| Ok(())).provides::<Z>();
    let handle = ctx
        .load_with(disabled, LoadOptions::default().enable(false))
        .unwrap();
    assert_eq!(
        handle.state(),
        PluginState::Disabled,
        "a disabled instance closes nothing"
    );
}

#[test]
fn the_cycle_check_of_a_load_finds_the_path_from_either_side() {
    // The new plugin is required by the existing chain (the backward search finds it) ...
    let top = plugin_fn("top", |_, _: Dep<Y>| Ok(())).provides::<X>();
    let ctx = Context::builder().add_plugin(top).build().unwrap();
    let closing = plugin_fn("closing", |_, _: Dep<X>| Ok(())).provides::<Y>();
    assert_eq!(
        ctx.load(closing).unwrap_err(),
        CoreError::DependencyCycle {
            path: vec!["closing".into(), "top".into(), "closing".into()]
        }
    );
    // ... and a chain loaded out of order loads without a cycle.
    let ctx = Context::builder().build().unwrap();
    ctx.load(plugin_fn("y", |_, _: Dep<Z>| Ok(())).provides::<Y>())
        .unwrap();
    ctx.load(plugin_fn("x", |_, _: Dep<Y>| Ok(())).provides::<X>())
        .unwrap();
    ctx.load(plugin_fn("z", |_, ()| Ok(())).provides::<Z>())
        .unwrap();
    assert_eq!(ctx.plugins().len(), 3, "every load was accepted");
}

#[test]
fn every_instance_name_is_unique_in_the_context_children_under_their_parents_name() {
    let parent = |name: &'static str| {
        plugin_fn(name, |scope, ()| {
            scope.load(plugin_fn("kid", |_, ()| Ok(())).unique(false))?;
            scope.load(plugin_fn("kid", |_, ()| Ok(())).unique(false))?;
            scope.load_with(
                plugin_fn("kid", |_, ()| Ok(())),
                LoadOptions::default().label("named"),
            )?;
            Ok(())
        })
    };
    let ctx = Context::builder()
        .add_plugin(parent("left"))
        .add_plugin(parent("right"))
        .add_plugin(plugin_fn("kid", |_, ()| Ok(())))
        .build()
        .unwrap();
    let mut names: Vec<String> = ctx.plugins().into_iter().map(|p| p.name).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "kid",
            "left",
            "left/kid",
            "left/kid:2",
            "left/kid:named",
            "right",
            "right/kid",
            "right/kid:2",
            "right/kid:named"
        ]
    );
    let child = ctx
        .plugin("right/kid:2")
        .expect("a child is found by its name");
    assert_eq!(child.info().unwrap().parent.as_deref(), Some("right"));
}

#[test]
fn a_plugin_name_or_label_that_cannot_be_part_of_an_instance_name_is_refused() {
    let ctx = Context::builder().build().unwrap();
    for bad in ["", "a/b", "a:b", "line\nbreak"] {
        let refused = ctx.load(plugin_fn(bad, |_, ()| Ok(()))).unwrap_err();
        assert_eq!(refused.code(), "PLUGIN_NAME_INVALID", "{bad:?}: {refused}");
        let labelled = ctx
            .load_with(
                plugin_fn("fine", |_, ()| Ok(())),
                LoadOptions::default().label(bad),
            )
            .unwrap_err();
        assert_eq!(labelled.code(), "PLUGIN_NAME_INVALID", "label {bad:?}");
    }
    assert!(ctx.plugins().is_empty());
    let built = Context::builder()
        .add_plugin(plugin_fn("a:b", |_, ()| Ok(())))
        .build()
        .map(drop)
        .unwrap_err();
    assert_eq!(built.code(), "PLUGIN_NAME_INVALID");
}
