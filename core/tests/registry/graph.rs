//! The static dependency graph: computed from the plugins' declarations before anything is
//! applied. Cycles and duplicate providers are refused with the whole path or both names;
//! missing services are reported with the plugin that needs them; the graph prints as DOT.

use crate::common::{info, Log};
use dsh_core::{
    plugin_fn, AnyPlugin, BoxError, Context, ContextConfig, CoreError, Dep, DependencyGraph, Deps,
    FnPlugin, MissingService, Optional, PluginState, Scope,
};
use std::sync::Arc;

pub struct SA;
pub struct SB;
pub struct SC;
pub struct Unprovided;

/// A plugin named `name` with dependencies `D` that records its name in `applied` when it is
/// applied.
fn recorder<D: Deps>(
    name: &'static str,
    applied: &Log,
) -> FnPlugin<D, impl Fn(&Scope, D) -> Result<(), BoxError> + Send + Sync + 'static> {
    let applied = applied.clone();
    plugin_fn(name, move |scope: &Scope, _: D| {
        applied.push(scope.name());
        Ok(())
    })
}

/// The two halves of a cycle: `g-cycle-a` requires `SB` and provides `SA`, `g-cycle-b` the
/// other way round.
fn cycle(applied: &Log) -> [AnyPlugin; 2] {
    [
        recorder::<Dep<SB>>("g-cycle-a", applied)
            .provides::<SA>()
            .into(),
        recorder::<Dep<SA>>("g-cycle-b", applied)
            .provides::<SB>()
            .into(),
    ]
}

/// A provider of `SC` named `name`.
fn provide_sc(name: &'static str) -> AnyPlugin {
    plugin_fn(name, |scope, ()| {
        scope.provide(Arc::new(SC))?;
        Ok(())
    })
    .provides::<SC>()
    .into()
}

/// Checks that `path` is a whole cycle over exactly `members`: it closes on itself and every
/// step follows a requirement.
fn assert_whole_cycle(path: &[String], members: &[&str]) {
    assert!(path.len() >= 2, "{path:?}");
    assert_eq!(path.first(), path.last(), "the path closes: {path:?}");
    let mut inside: Vec<&str> = path[1..].iter().map(String::as_str).collect();
    inside.sort_unstable();
    let mut expected = members.to_vec();
    expected.sort_unstable();
    assert_eq!(inside, expected, "every member once: {path:?}");
}

#[test]
fn building_a_context_with_a_dependency_cycle_is_refused_with_the_whole_path() {
    let applied = Log::new();
    let error = Context::builder()
        .add_plugins(cycle(&applied))
        .build()
        .expect_err("a cycle can never settle");
    assert_eq!(error.code(), "DEPENDENCY_CYCLE");
    let CoreError::DependencyCycle { path } = &error else {
        panic!("not a cycle: {error:?}");
    };
    assert_whole_cycle(path, &["g-cycle-a", "g-cycle-b"]);
    let text = error.to_string();
    assert!(
        text == "dependency cycle: g-cycle-a -> g-cycle-b -> g-cycle-a"
            || text == "dependency cycle: g-cycle-b -> g-cycle-a -> g-cycle-b",
        "{text}"
    );
    assert_eq!(
        applied.entries(),
        Vec::<String>::new(),
        "nothing was applied"
    );
}

#[test]
fn a_three_plugin_cycle_behind_an_entry_plugin_is_reported_without_the_entry() {
    pub struct S1;
    pub struct S2;
    pub struct S3;
    pub struct S4;
    let applied = Log::new();
    let plugins: [AnyPlugin; 4] = [
        recorder::<Dep<S1>>("g3-entry", &applied)
            .provides::<S4>()
            .into(),
        recorder::<Dep<S2>>("g3-one", &applied)
            .provides::<S1>()
            .into(),
        recorder::<Dep<S3>>("g3-two", &applied)
            .provides::<S2>()
            .into(),
        recorder::<Dep<S1>>("g3-three", &applied)
            .provides::<S3>()
            .into(),
    ];

    let error = Context::builder().add_plugins(plugins).build().unwrap_err();
    let CoreError::DependencyCycle { path } = &error else {
        panic!("not a cycle: {error:?}");
    };
    assert_whole_cycle(path, &["g3-one", "g3-two", "g3-three"]);
    assert_eq!(path.len(), 4, "{path:?}");
}

#[test]
fn a_self_requiring_plugin_is_a_cycle_of_one() {
    let applied = Log::new();
    let self_requiring = recorder::<Dep<SC>>("g-self", &applied).provides::<SC>();
    let error = Context::builder()
        .add_plugin(self_requiring)
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        CoreError::DependencyCycle {
            path: vec!["g-self".to_owned(), "g-self".to_owned()]
        }
    );
}

#[test]
fn a_cycle_through_a_disabled_plugin_is_not_refused_and_the_other_waits() {
    let applied = Log::new();
    let mut config = ContextConfig::default();
    config.set_enabled("g-cycle-b", false);
    let ctx = Context::builder()
        .add_plugins(cycle(&applied))
        .with_config(config)
        .build()
        .unwrap();
    let a = info(&ctx, "g-cycle-a");
    assert_eq!(a.state, PluginState::Pending);
    assert_eq!(a.pending_on, ["SB"]);

    // Completed at run time, the cycle cannot settle: both wait, nothing hangs, and the
    // graph names it.
    ctx.enable("g-cycle-b").unwrap();
    assert_eq!(info(&ctx, "g-cycle-a").pending_on, ["SB"]);
    assert_eq!(info(&ctx, "g-cycle-b").pending_on, ["SA"]);
    let path = ctx.graph().cycle().expect("the graph has a cycle now");
    assert_whole_cycle(&path, &["g-cycle-a", "g-cycle-b"]);
    assert_eq!(ctx.graph().check().unwrap_err().code(), "DEPENDENCY_CYCLE");
}

#[test]
fn an_optional_dependency_does_not_close_a_cycle() {
    pub struct X;
    pub struct Y;
    let xp = plugin_fn("g-opt-x", |scope, _: Optional<Y>| {
        scope.provide(Arc::new(X))?;
        Ok(())
    })
    .provides::<X>();
    let yp = plugin_fn("g-opt-y", |scope, _: Dep<X>| {
        scope.provide(Arc::new(Y))?;
        Ok(())
    })
    .provides::<Y>();
    let ctx = Context::builder()
        .add_plugin(xp)
        .add_plugin(yp)
        .build()
        .unwrap();
    assert!(ctx.graph().cycle().is_none());
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    assert!(ctx.get::<X>().is_some() && ctx.get::<Y>().is_some());
}

#[test]
fn two_enabled_providers_of_one_service_are_refused_naming_both() {
    let error = Context::builder()
        .add_plugins([provide_sc("g-dup-one"), provide_sc("g-dup-two")])
        .build()
        .unwrap_err();
    assert_eq!(error.code(), "DUPLICATE_PROVIDER");
    assert_eq!(
        error,
        CoreError::DuplicateProvider {
            service: "SC",
            first: "g-dup-one".to_owned(),
            second: "g-dup-two".to_owned(),
        }
    );
    let text = error.to_string();
    assert!(
        text.contains("\"g-dup-one\"") && text.contains("\"g-dup-two\"") && text.contains("SC"),
        "{text}"
    );
}

#[test]
fn two_providers_of_one_service_are_allowed_when_the_config_disables_one() {
    for off in ["g-dup-one", "g-dup-two"] {
        let mut config = ContextConfig::default();
        config.set_enabled(off, false);
        let ctx = Context::builder()
            .add_plugins([provide_sc("g-dup-one"), provide_sc("g-dup-two")])
            .with_config(config)
            .build()
            .unwrap();
        assert_eq!(info(&ctx, off).state, PluginState::Disabled);
        let on = if off == "g-dup-one" {
            "g-dup-two"
        } else {
            "g-dup-one"
        };
        assert_eq!(info(&ctx, on).state, PluginState::Active);
        let provider = ctx.services().into_iter().find(|s| s.service == "SC");
        assert_eq!(provider.and_then(|s| s.provider), Some(on));
    }
}

#[test]
fn the_graph_reports_a_requirement_nobody_provides_with_the_plugin_that_needs_it() {
    let applied = Log::new();
    let ctx = Context::builder()
        .add_plugin(recorder::<Dep<Unprovided>>("g-needy", &applied))
        .add_plugin(recorder::<Dep<SC>>("g-satisfied", &applied))
        .add_plugin(provide_sc("g-dup-one"))
        .build()
        .expect("missing services are reported, not refused");
    assert_eq!(
        ctx.graph().missing(),
        [MissingService {
            plugin: "g-needy".to_owned(),
            service: "Unprovided",
        }]
    );
    assert_eq!(info(&ctx, "g-needy").pending_on, ["Unprovided"]);

    // Only enabled plugins provide: disabling the provider makes its users' needs missing.
    ctx.disable("g-dup-one").unwrap();
    let mut missing = ctx.graph().missing();
    missing.sort_by(|a, b| a.plugin.cmp(&b.plugin));
    assert_eq!(
        missing,
        [
            MissingService {
                plugin: "g-needy".to_owned(),
                service: "Unprovided",
            },
            MissingService {
                plugin: "g-satisfied".to_owned(),
                service: "SC",
            },
        ]
    );
}

#[test]
fn the_graph_is_computed_before_anything_is_applied() {
    let applied = Log::new();
    let needy: AnyPlugin = recorder::<Dep<SB>>("g-before-needy", &applied).into();
    let provider: AnyPlugin = recorder::<()>("g-before-provider", &applied)
        .provides::<SB>()
        .into();
    let graph = DependencyGraph::new([(needy.clone(), true), (provider.clone(), false)]);
    assert_eq!(
        graph.missing(),
        [MissingService {
            plugin: "g-before-needy".to_owned(),
            service: "SB",
        }]
    );
    assert!(graph.check().is_ok());
    assert!(graph.cycle().is_none());
    let graph = DependencyGraph::new([(needy, true), (provider, true)]);
    assert!(graph.missing().is_empty());
    assert_eq!(
        applied.entries(),
        Vec::<String>::new(),
        "nothing was applied"
    );
}

#[test]
fn to_dot_prints_every_plugin_and_an_edge_per_required_or_optional_service() {
    let applied = Log::new();
    let plugins: [AnyPlugin; 4] = [
        recorder::<()>("g-dot-provider", &applied)
            .provides::<SA>()
            .into(),
        recorder::<(Dep<SA>, Option<Dep<SB>>)>("g-dot-user", &applied)
            .provides::<SC>()
            .into(),
        recorder::<()>("g-dot-optional", &applied)
            .provides::<SB>()
            .enabled_by_default(false)
            .into(),
        recorder::<Dep<Unprovided>>("g-dot-needy", &applied).into(),
    ];
    let ctx = Context::builder().add_plugins(plugins).build().unwrap();
    let dot = ctx.graph().to_dot();
    assert!(dot.starts_with("digraph"), "{dot}");
    assert!(dot.trim_end().ends_with('}'), "{dot}");
    for line in [
        "\"g-dot-provider\" [style=solid];",
        "\"g-dot-optional\" [style=dashed];",
        "\"g-dot-user\" -> \"g-dot-provider\" [label=\"SA\"];",
        "\"g-dot-user\" -> \"g-dot-optional\" [label=\"SB\", style=dashed];",
        "\"g-dot-needy\" -> \"missing Unprovided\" [label=\"Unprovided\"];",
    ] {
        assert!(dot.contains(line), "missing {line} in\n{dot}");
    }
    assert_eq!(dot.matches("->").count(), 3, "{dot}");
}

#[test]
fn to_dot_draws_an_optional_service_nobody_provides_as_absent_not_missing() {
    let applied = Log::new();
    let ctx = Context::builder()
        .add_plugin(recorder::<Option<Dep<Unprovided>>>(
            "g-dot-hopeful",
            &applied,
        ))
        .build()
        .unwrap();
    let dot = ctx.graph().to_dot();
    assert!(
        dot.contains(
            "\"g-dot-hopeful\" -> \"absent Unprovided\" [label=\"Unprovided\", style=dashed];"
        ),
        "{dot}"
    );
    assert!(dot.contains("color=gray"), "{dot}");
    assert!(
        !dot.contains("red"),
        "an optional service is not an error: {dot}"
    );
}
