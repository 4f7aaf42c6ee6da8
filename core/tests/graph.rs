//! The static dependency graph: computed from the descriptors before anything is applied.
//! Cycles and duplicate providers are refused with the whole path or both names; missing
//! services are reported with the plugin that needs them; the graph prints as DOT.

mod common;

use common::{info, Log};
use dsh_core::{
    BoxError, Context, ContextConfig, CoreError, DependencyGraph, MissingService, OptionalMode,
    PluginDescriptor, PluginState, ServiceKey,
};
use std::sync::Arc;

pub struct SA;
pub struct SB;
pub struct SC;
pub struct Unprovided;

static APPLIED: Log = Log::new();

fn record(ctx: &Context) -> Result<(), BoxError> {
    APPLIED.push(ctx.plugin_name().unwrap_or("<root>"));
    Ok(())
}

static CYCLE_A: PluginDescriptor = PluginDescriptor::new("g-cycle-a", record)
    .requires(&[ServiceKey::of::<SB>()])
    .provides(&[ServiceKey::of::<SA>()]);
static CYCLE_B: PluginDescriptor = PluginDescriptor::new("g-cycle-b", record)
    .requires(&[ServiceKey::of::<SA>()])
    .provides(&[ServiceKey::of::<SB>()]);

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
    let error = Context::builder()
        .plugin(&CYCLE_A)
        .plugin(&CYCLE_B)
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
    assert!(APPLIED.entries().iter().all(|p| !p.starts_with("g-cycle")));
}

#[test]
fn a_three_plugin_cycle_behind_an_entry_plugin_is_reported_without_the_entry() {
    pub struct S1;
    pub struct S2;
    pub struct S3;
    pub struct S4;
    static ENTRY: PluginDescriptor = PluginDescriptor::new("g3-entry", record)
        .requires(&[ServiceKey::of::<S1>()])
        .provides(&[ServiceKey::of::<S4>()]);
    static ONE: PluginDescriptor = PluginDescriptor::new("g3-one", record)
        .requires(&[ServiceKey::of::<S2>()])
        .provides(&[ServiceKey::of::<S1>()]);
    static TWO: PluginDescriptor = PluginDescriptor::new("g3-two", record)
        .requires(&[ServiceKey::of::<S3>()])
        .provides(&[ServiceKey::of::<S2>()]);
    static THREE: PluginDescriptor = PluginDescriptor::new("g3-three", record)
        .requires(&[ServiceKey::of::<S1>()])
        .provides(&[ServiceKey::of::<S3>()]);

    let error = Context::builder()
        .plugins([&ENTRY, &ONE, &TWO, &THREE])
        .build()
        .unwrap_err();
    let CoreError::DependencyCycle { path } = &error else {
        panic!("not a cycle: {error:?}");
    };
    assert_whole_cycle(path, &["g3-one", "g3-two", "g3-three"]);
    assert_eq!(path.len(), 4, "{path:?}");
}

#[test]
fn a_self_requiring_plugin_is_a_cycle_of_one() {
    static SELF: PluginDescriptor = PluginDescriptor::new("g-self", record)
        .requires(&[ServiceKey::of::<SC>()])
        .provides(&[ServiceKey::of::<SC>()]);
    let error = Context::builder().plugin(&SELF).build().unwrap_err();
    assert_eq!(
        error,
        CoreError::DependencyCycle {
            path: vec!["g-self".to_owned(), "g-self".to_owned()]
        }
    );
}

#[test]
fn a_cycle_through_a_disabled_plugin_is_not_refused_and_the_other_waits() {
    let mut config = ContextConfig::default();
    config.set_enabled("g-cycle-b", false);
    let ctx = Context::builder()
        .plugin(&CYCLE_A)
        .plugin(&CYCLE_B)
        .config(config)
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
    let path: Vec<String> = ctx
        .graph()
        .cycle()
        .expect("the graph has a cycle now")
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_whole_cycle(&path, &["g-cycle-a", "g-cycle-b"]);
    assert_eq!(ctx.graph().check().unwrap_err().code(), "DEPENDENCY_CYCLE");
}

#[test]
fn an_optional_dependency_does_not_close_a_cycle() {
    pub struct X;
    pub struct Y;
    fn provide_x(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(X))?;
        Ok(())
    }
    fn provide_y(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Y))?;
        Ok(())
    }
    static XP: PluginDescriptor = PluginDescriptor::new("g-opt-x", provide_x)
        .optional(&[ServiceKey::of::<Y>()], OptionalMode::Callback)
        .provides(&[ServiceKey::of::<X>()]);
    static YP: PluginDescriptor = PluginDescriptor::new("g-opt-y", provide_y)
        .requires(&[ServiceKey::of::<X>()])
        .provides(&[ServiceKey::of::<Y>()]);
    let ctx = Context::builder().plugins([&XP, &YP]).build().unwrap();
    assert!(ctx.graph().cycle().is_none());
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    assert!(ctx.get::<X>().is_some() && ctx.get::<Y>().is_some());
}

fn provide_sc(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(SC))?;
    Ok(())
}

static DUP_ONE: PluginDescriptor =
    PluginDescriptor::new("g-dup-one", provide_sc).provides(&[ServiceKey::of::<SC>()]);
static DUP_TWO: PluginDescriptor =
    PluginDescriptor::new("g-dup-two", provide_sc).provides(&[ServiceKey::of::<SC>()]);

#[test]
fn two_enabled_providers_of_one_service_are_refused_naming_both() {
    let error = Context::builder()
        .plugins([&DUP_ONE, &DUP_TWO])
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
            .plugins([&DUP_ONE, &DUP_TWO])
            .config(config)
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
    static NEEDY: PluginDescriptor =
        PluginDescriptor::new("g-needy", record).requires(&[ServiceKey::of::<Unprovided>()]);
    static SATISFIED: PluginDescriptor =
        PluginDescriptor::new("g-satisfied", record).requires(&[ServiceKey::of::<SC>()]);
    let ctx = Context::builder()
        .plugins([&NEEDY, &SATISFIED, &DUP_ONE])
        .build()
        .expect("missing services are reported, not refused");
    assert_eq!(
        ctx.graph().missing(),
        [MissingService {
            plugin: "g-needy",
            service: "Unprovided",
        }]
    );
    assert_eq!(info(&ctx, "g-needy").pending_on, ["Unprovided"]);

    // Only enabled plugins provide: disabling the provider makes its users' needs missing.
    ctx.disable("g-dup-one").unwrap();
    let mut missing = ctx.graph().missing();
    missing.sort_by_key(|m| m.plugin);
    assert_eq!(
        missing,
        [
            MissingService {
                plugin: "g-needy",
                service: "Unprovided",
            },
            MissingService {
                plugin: "g-satisfied",
                service: "SC",
            },
        ]
    );
}

#[test]
fn the_graph_is_computed_before_anything_is_applied() {
    static NEEDY: PluginDescriptor =
        PluginDescriptor::new("g-before-needy", record).requires(&[ServiceKey::of::<SB>()]);
    static PROVIDER: PluginDescriptor =
        PluginDescriptor::new("g-before-provider", record).provides(&[ServiceKey::of::<SB>()]);
    let graph = DependencyGraph::new([(&NEEDY, true), (&PROVIDER, false)]);
    assert_eq!(
        graph.missing(),
        [MissingService {
            plugin: "g-before-needy",
            service: "SB",
        }]
    );
    assert!(graph.check().is_ok());
    assert!(graph.cycle().is_none());
    let graph = DependencyGraph::new([(&NEEDY, true), (&PROVIDER, true)]);
    assert!(graph.missing().is_empty());
    assert!(
        APPLIED.entries().iter().all(|p| !p.starts_with("g-before")),
        "nothing was applied"
    );
}

#[test]
fn to_dot_prints_every_plugin_and_an_edge_per_required_or_optional_service() {
    static PROVIDER: PluginDescriptor =
        PluginDescriptor::new("g-dot-provider", record).provides(&[ServiceKey::of::<SA>()]);
    static USER: PluginDescriptor = PluginDescriptor::new("g-dot-user", record)
        .requires(&[ServiceKey::of::<SA>()])
        .optional(&[ServiceKey::of::<SB>()], OptionalMode::Restart)
        .provides(&[ServiceKey::of::<SC>()]);
    static OPTIONAL: PluginDescriptor = PluginDescriptor::new("g-dot-optional", record)
        .provides(&[ServiceKey::of::<SB>()])
        .enabled_by_default(false);
    static NEEDY: PluginDescriptor =
        PluginDescriptor::new("g-dot-needy", record).requires(&[ServiceKey::of::<Unprovided>()]);
    let ctx = Context::builder()
        .plugins([&PROVIDER, &USER, &OPTIONAL, &NEEDY])
        .build()
        .unwrap();
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
