//! The law of a reconcile: over a small catalog, for random configs A and B, building from A
//! then reconfiguring to B gives the instances (names, states, configs, error codes) and the
//! effective config that building from B gives; and reconfiguring to B again is all `keep`.
//! Entries sit at the top or in (nested) groups switched at random, so entries move between
//! groups and groups switch together from A to B.

use crate::common::Log;
use crate::support::{builder, snapshot, REFUSED, UNLUCKY};
use dsh_core::{ContextConfig, PluginSettings};
use proptest::prelude::*;
use serde_json::{json, Value};

/// The entry names a config may hold: every catalog plugin, and two labelled exporters.
const NAMES: [&str; 8] = [
    "store",
    "alt-store",
    "index",
    "exporter",
    "tuner",
    "extra",
    "exporter:a",
    "exporter:b",
];

/// The config an entry sets.
#[derive(Clone, Debug)]
enum Setting {
    /// None (null: the instance's default).
    Default,
    /// `{"value": n}`.
    Value(u32),
    /// A value of the wrong type.
    Invalid,
}

/// A config, and whether one of its entries has a config of the wrong type.
#[derive(Clone, Debug)]
struct Generated {
    config: ContextConfig,
    invalid: bool,
}

fn setting() -> impl Strategy<Value = Setting> {
    prop_oneof![
        3 => Just(Setting::Default),
        6 => prop::sample::select(vec![0u32, 1, 2, UNLUCKY, REFUSED]).prop_map(Setting::Value),
        1 => Just(Setting::Invalid),
    ]
}

/// Where an entry sits: at the top, in `group:a`, in `group:b`, or in `group:inner` inside
/// `group:a`.
const PLACES: [&[&str]; 4] = [&[], &["group:a"], &["group:b"], &["group:a", "group:inner"]];

/// The entries of the place at `path` in `config`, the groups on the way made with `switches`
/// (one optional switch per group name, in the order `a`, `b`, `inner`).
fn place<'c>(
    config: &'c mut ContextConfig,
    path: &[&str],
    switches: &[Option<bool>; 3],
) -> &'c mut std::collections::BTreeMap<String, PluginSettings> {
    let mut entries = &mut config.plugins;
    for group in path {
        let switch = match *group {
            "group:a" => switches[0],
            "group:b" => switches[1],
            _ => switches[2],
        };
        let settings = entries
            .entry((*group).to_owned())
            .or_insert_with(|| PluginSettings {
                enabled: switch,
                ..PluginSettings::default()
            });
        entries = &mut settings.plugins;
    }
    entries
}

fn generated() -> impl Strategy<Value = Generated> {
    let entry = prop::option::of((prop::option::of(any::<bool>()), setting(), 0..PLACES.len()));
    let switches = [
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
    ];
    (prop::collection::vec(entry, NAMES.len()), switches).prop_map(|(entries, switches)| {
        let mut config = ContextConfig::default();
        let mut invalid = false;
        for (name, entry) in NAMES.iter().zip(entries) {
            let Some((enabled, setting, at)) = entry else {
                continue;
            };
            let value = match setting {
                Setting::Default => Value::Null,
                Setting::Value(n) => json!({ "value": n }),
                Setting::Invalid => {
                    invalid = true;
                    json!({ "value": "many" })
                }
            };
            let settings = PluginSettings {
                enabled,
                config: value,
                ..PluginSettings::default()
            };
            place(&mut config, PLACES[at], &switches).insert((*name).to_owned(), settings);
        }
        Generated { config, invalid }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn reconfiguring_from_a_to_b_gives_what_building_from_b_gives(
        a in generated(),
        b in generated(),
    ) {
        let log = Log::new();
        let Ok(ctx) = builder(&log).with_config(a.config.clone()).build() else {
            return Ok(()); // A itself cannot be built (two stores)
        };
        let fresh = builder(&log).with_config(b.config.clone()).build();
        let before = (snapshot(&ctx), ctx.config());
        match ctx.reconfigure(&b.config) {
            Err(error) => {
                let expected = if b.invalid {
                    "CONFIG_INVALID"
                } else {
                    fresh.as_ref().err().map_or("none", |e| e.code())
                };
                prop_assert_eq!(error.code(), expected);
                prop_assert_eq!((snapshot(&ctx), ctx.config()), before, "nothing changed");
            }
            Ok(report) => {
                prop_assert!(!b.invalid, "an invalid config was accepted: {}", report);
                let fresh = fresh.expect("building from B succeeds when reconfiguring to it does");
                prop_assert_eq!(snapshot(&ctx), snapshot(&fresh), "plan:\n{}", report);
                prop_assert_eq!(ctx.config(), fresh.config());

                let again = ctx.reconfigure(&b.config).unwrap();
                prop_assert!(again.plan().changes_nothing(), "again:\n{}", again);
                let effective = ctx.plan(&ctx.config()).unwrap();
                prop_assert!(effective.changes_nothing(), "to its own config:\n{}", effective);
                prop_assert_eq!(snapshot(&ctx), snapshot(&fresh));
            }
        }
    }
}
