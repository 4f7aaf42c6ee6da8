//! Every plugin linked into `dsh` appears in `dsh plugins`: the plugins the facade links
//! (`dsh::builtin_plugins()`, and whatever reaches the link-time registry through it) are the
//! ones the binary lists, active. `.ci/run` runs this test in debug and in release, since a
//! release build's linker is the one that could drop an unreferenced plugin's registration.

mod common;

use common::Sandbox;
use std::collections::BTreeSet;

#[test]
fn every_plugin_linked_into_dsh_appears_in_dsh_plugins() {
    let linked: BTreeSet<&str> = dsh::builtin_plugins()
        .iter()
        .chain(dsh::registered().iter())
        .map(|d| d.name())
        .collect();
    assert!(linked.contains("dsh-session"), "{linked:?}");
    assert!(linked.contains("dsh-session-jsonl"), "{linked:?}");
    assert_eq!(
        linked.contains("dsh-session-fork"),
        cfg!(feature = "session-fork"),
        "{linked:?}"
    );
    assert_eq!(
        linked.contains("dsh-subagent-fork"),
        cfg!(feature = "subagent-fork"),
        "{linked:?}"
    );
    assert_eq!(
        linked.contains("dsh-session-retention"),
        cfg!(feature = "session-retention"),
        "{linked:?}"
    );

    let sandbox = Sandbox::new();
    let doc = sandbox.json(&["plugins"]).ok();
    let entries = doc.as_array().expect("plugins prints an array");
    let listed: BTreeSet<&str> = entries
        .iter()
        .map(|p| p["name"].as_str().expect("each entry has a name"))
        .collect();
    assert_eq!(entries.len(), listed.len(), "each plugin once: {doc}");
    for name in &linked {
        assert!(
            listed.contains(name),
            "{name} is linked but not listed: {doc}"
        );
    }
    assert_eq!(listed, linked, "nothing listed that is not linked");
    for plugin in entries {
        // One backend provides SessionPersistence: with a JSONL store, the others are disabled.
        // The retention plugin is disabled until a config enables it.
        let expected = match plugin["name"].as_str() {
            Some("dsh-session-sqlite" | "dsh-session-postgres" | "dsh-session-retention") => {
                "disabled"
            }
            _ => "active",
        };
        assert_eq!(plugin["state"], expected, "{plugin}");
    }
}
