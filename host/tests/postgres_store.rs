//! `--store postgres:URL`: several `dsh` processes against one PostgreSQL database share its
//! sessions and fork each other's stored sessions (through the cold path,
//! `SessionFork::fork_stored`). Each test uses a database of its own on the server that
//! `DSH_TEST_POSTGRES_URL` names (`scripts/with-postgres.sh` starts a throwaway one): those
//! tests are ignored unless asked for (`-- --include-ignored`) and fail without the variable.
//! Built with the host's `session-postgres` feature; without it, `postgres:URL` is refused as
//! a build that lacks the plugin.

mod common;

#[cfg(feature = "session-postgres")]
mod with_the_plugin {
    use super::common::postgres::TestDatabase;
    use super::common::{Run, Sandbox, EXAMPLE, EXAMPLE_ID};
    use serde_json::{json, Value};
    use std::process::Stdio;

    /// `dsh --store postgres:URL --json ARGS` in `host`'s sandbox (its own HOME and data
    /// folder: the database is all two hosts share).
    fn dsh(host: &Sandbox, db: &TestDatabase, args: &[&str]) -> Run {
        let store = format!("postgres:{}", db.store);
        let mut all = vec!["--store", &store, "--json"];
        all.extend_from_slice(args);
        host.run(&all)
    }

    fn ids(doc: &Value) -> Vec<&str> {
        doc.as_array()
            .expect("an array")
            .iter()
            .map(|s| s["id"].as_str().expect("an id"))
            .collect()
    }

    #[test]
    #[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
    fn two_dsh_processes_on_one_database_see_and_fork_each_others_sessions() {
        let db = TestDatabase::new("shared");
        let (one, two) = (Sandbox::new(), Sandbox::new());
        let imported = dsh(&one, &db, &["import", EXAMPLE]).ok();
        assert_eq!(imported[0]["ok"], json!(true), "{imported}");

        // Host two sees what host one stored, and forks it: the source is only stored.
        assert_eq!(ids(&dsh(&two, &db, &["sessions"]).ok()), [EXAMPLE_ID]);
        let plugins = dsh(&two, &db, &["plugins"]).ok();
        let backend = plugins
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "dsh-session-postgres")
            .expect("the plugin is listed");
        assert_eq!(backend["state"], "active", "{plugins}");
        let source = dsh(&two, &db, &["show", EXAMPLE_ID]).ok();
        let forked = dsh(&two, &db, &["fork", EXAMPLE_ID, "--id", "child-of-two"]).ok();
        assert_eq!(forked["id"], "child-of-two", "{forked}");

        // Host one sees the child with its lineage and its whole seed.
        let listed = dsh(&one, &db, &["sessions"]).ok();
        assert_eq!(ids(&listed), [EXAMPLE_ID, "child-of-two"], "{listed}");
        let child = dsh(&one, &db, &["show", "child-of-two"]).ok();
        assert_eq!(child["header"]["parentSession"], EXAMPLE_ID, "{child}");
        assert_eq!(child["header"]["seedLength"], source["events"], "{child}");
        assert_eq!(child["events"], source["events"], "{child}");
        assert_eq!(
            dsh(&one, &db, &["history", "child-of-two"]).ok(),
            dsh(&two, &db, &["history", EXAMPLE_ID]).ok(),
            "the child's derived history is its parent's"
        );

        // ... forks the child in turn, and host two reads the three-session lineage.
        dsh(&one, &db, &["fork", "child-of-two", "--id", "grandchild"]).ok();
        let lineage = dsh(&two, &db, &["lineage", "grandchild"]).ok();
        let text = lineage.to_string();
        for id in [EXAMPLE_ID, "child-of-two", "grandchild"] {
            assert!(text.contains(id), "{id} in {lineage}");
        }
        // Nothing was written to the source by either fork.
        assert_eq!(dsh(&one, &db, &["show", EXAMPLE_ID]).ok(), source);
    }

    #[test]
    #[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
    fn dsh_processes_forking_one_session_under_one_child_id_all_succeed_and_store_it_once() {
        let db = TestDatabase::new("racing");
        let sandbox = Sandbox::new();
        dsh(&sandbox, &db, &["import", EXAMPLE]).ok();
        let store = format!("postgres:{}", db.store);
        let racers: Vec<_> = (0..6)
            .map(|_| {
                sandbox
                    .command()
                    .args([
                        "--store", &store, "--json", "fork", EXAMPLE_ID, "--id", "one",
                    ])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("dsh starts")
            })
            .collect();
        let runs: Vec<Run> = racers
            .into_iter()
            .map(|child| {
                let output = child.wait_with_output().expect("dsh ends");
                Run {
                    code: output.status.code().unwrap_or(-1),
                    stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
                }
            })
            .collect();
        // One creates the child; the others find the same child stored and take it over
        // (dsh's rule: same cwd, same lineage, the stored log a prefix), changing nothing.
        let failed: Vec<&Run> = runs.iter().filter(|run| run.code != 0).collect();
        assert!(failed.is_empty(), "{failed:#?}");
        let source = dsh(&sandbox, &db, &["show", EXAMPLE_ID]).ok();
        let child = dsh(&sandbox, &db, &["show", "one"]).ok();
        assert_eq!(
            child["events"], source["events"],
            "the child is stored once, whole"
        );
        assert_eq!(
            dsh(&sandbox, &db, &["history", "one"]).ok(),
            dsh(&sandbox, &db, &["history", EXAMPLE_ID]).ok()
        );
    }

    /// `dsh delete` from one host while another reads: the parent goes for both, the
    /// children keep their history, lineage shows the gap, and the subtree goes at last.
    #[cfg(feature = "session-fork")]
    #[test]
    #[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
    fn delete_on_postgres_keeps_forked_children_reading_for_every_host() {
        let db = TestDatabase::new("delete");
        let (one, two) = (Sandbox::new(), Sandbox::new());
        dsh(&one, &db, &["import", EXAMPLE]).ok();
        dsh(
            &one,
            &db,
            &["fork", EXAMPLE_ID, "--id", "child", "--at", "20"],
        )
        .ok();
        dsh(&two, &db, &["fork", "child", "--id", "grandchild"]).ok();
        let history = dsh(&two, &db, &["history", "grandchild"]).ok();
        let deleted = dsh(&one, &db, &["delete", EXAMPLE_ID]).ok();
        assert_eq!(deleted["deleted"], json!([EXAMPLE_ID]));
        assert_eq!(
            ids(&dsh(&two, &db, &["sessions"]).ok()),
            ["child", "grandchild"]
        );
        assert_eq!(dsh(&two, &db, &["history", "grandchild"]).ok(), history);
        dsh(&two, &db, &["show", EXAMPLE_ID]).error("SESSION_NOT_FOUND");
        let tree = dsh(&two, &db, &["lineage", "grandchild"]).ok();
        assert_eq!(tree["missing"], json!(true), "{tree}");
        dsh(&two, &db, &["delete", EXAMPLE_ID]).error("SESSION_NOT_FOUND");
        dsh(&one, &db, &["delete", "child", "--with-descendants"]).ok();
        assert!(ids(&dsh(&two, &db, &["sessions"]).ok()).is_empty());
    }

    /// The race of `stress.rs` on PostgreSQL: racing `import`, `repair` and `fork` processes
    /// lose no event any of them reported stored.
    #[cfg(feature = "session-fork")]
    #[test]
    #[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
    fn racing_imports_repairs_and_forks_on_postgres_lose_nothing_reported_stored() {
        let db = TestDatabase::new("race");
        let sandbox = Sandbox::new();
        let store = std::ffi::OsString::from(format!("postgres:{}", db.store));
        let outcome = super::common::race::race(&sandbox, &store, 8, 8, |_| {});
        super::common::race::check(&sandbox, &store, &outcome);
        eprintln!(
            "race on PostgreSQL: {} processes, {} events stored, {} forks, nothing lost",
            outcome.processes,
            outcome.imported,
            outcome.forks.len()
        );
    }

    #[test]
    fn a_postgres_store_whose_server_cannot_be_reached_names_the_store_without_the_password() {
        let sandbox = Sandbox::new();
        let run = sandbox.run(&[
            "--store",
            "postgres://dsh:secret@127.0.0.1:1/none?connect_timeout=2",
            "--json",
            "sessions",
        ]);
        let message = run.error("CAPABILITY_UNAVAILABLE");
        assert!(message.contains("dsh-session-postgres"), "{message}");
        assert!(message.contains("127.0.0.1:1"), "{message}");
        assert!(!message.contains("secret"), "{message}");
    }
}

#[cfg(not(feature = "session-postgres"))]
#[test]
fn a_build_without_the_postgres_plugin_refuses_a_postgres_store_as_config_invalid() {
    let sandbox = common::Sandbox::new();
    let run = sandbox.run(&["--store", "postgres://127.0.0.1/db", "--json", "sessions"]);
    let message = run.error("CONFIG_INVALID");
    assert!(message.contains("session-postgres"), "{message}");
}
